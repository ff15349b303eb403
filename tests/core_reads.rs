//! The filesystem core without a mount: reads without an open handle (how
//! read-only mounts serve files) and the mtime that tells the kernel when
//! a file's content changed.

use crate::common;

use std::ffi::OsStr;
use std::time::Duration;
use worldfs::fs::{ErrorKind, Options, WorldFs};
use worldfs::worlds::luanti::inode;
use worldfs_codec::luanti::Block;
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, Change, MapStore, Note};

/// The inode of blocks/0,0,0/NAME.
fn block_file(fs: &WorldFs, name: &str) -> u64 {
    let dir = fs.lookup(inode::BLOCKS, OsStr::new("0,0,0")).unwrap().ino;
    fs.lookup(dir, OsStr::new(name)).unwrap().ino
}

/// Change param1 of every node of block 0,0,0 behind the mount's back.
fn bump_param1(world: &std::path::Path) {
    let store = SqliteStore::open(&world.join("map.sqlite"), false).unwrap();
    let p = BlockPos::new(0, 0, 0);
    let mut b = Block::decode(&store.get(p).unwrap().unwrap()).unwrap();
    for v in &mut b.param1 {
        *v = v.wrapping_add(1);
    }
    store.apply(&[Change::Put(p, b.encode().unwrap())], &Note::default()).unwrap();
}

#[test]
fn a_file_read_in_pieces_without_a_handle_is_one_version() {
    let world = common::demo_world();
    let ttl = Duration::from_millis(300);
    let fs = worldfs::open::open_world(world.path(), Options { read_only: true, ttl, ..Options::default() }).unwrap();
    assert!(fs.opens_are_local());
    let ino = block_file(&fs, "param1");
    let whole = fs.read_unopened(ino, 0, 1 << 20).unwrap();
    assert_eq!(whole.len(), 4096);
    let head = fs.read_unopened(ino, 0, 1000).unwrap();
    assert_eq!(head, whole[..1000]);
    // A read continued after the TTL takes a new copy: the new content.
    let _ = fs.read_unopened(ino, 0, 1000).unwrap();
    bump_param1(world.path());
    std::thread::sleep(ttl + Duration::from_millis(100));
    let tail = fs.read_unopened(ino, 1000, 1 << 20).unwrap();
    let new = fs.read_unopened(ino, 0, 1 << 20).unwrap();
    assert_ne!(new, whole);
    assert_eq!(tail, new[1000..]);
    // Within the TTL, a continued read gets the copy its first read took.
    bump_param1(world.path());
    std::thread::sleep(ttl + Duration::from_millis(100));
    let first = fs.read_unopened(ino, 0, 1000).unwrap();
    bump_param1(world.path());
    let rest = fs.read_unopened(ino, 1000, 1 << 20).unwrap();
    assert_eq!(first, new[..1000].iter().map(|v| v.wrapping_add(1)).collect::<Vec<u8>>());
    assert_eq!(rest, new[1000..].iter().map(|v| v.wrapping_add(1)).collect::<Vec<u8>>());
    // Directories cannot be read.
    assert_eq!(fs.read_unopened(inode::BLOCKS, 0, 10).unwrap_err().kind, ErrorKind::IsDir);
}

#[test]
fn mtime_changes_with_the_content_and_only_then() {
    let world = common::demo_world();
    let ttl = Duration::from_millis(200);
    let fs = worldfs::open::open_world(world.path(), Options { read_only: true, ttl, ..Options::default() }).unwrap();
    let ino = block_file(&fs, "param1");
    let before = fs.getattr(ino).unwrap();
    std::thread::sleep(ttl + Duration::from_millis(100));
    // Checked again against the store, unchanged: the same mtime.
    assert_eq!(fs.getattr(ino).unwrap().mtime, before.mtime);
    bump_param1(world.path());
    std::thread::sleep(ttl + Duration::from_millis(100));
    let after = fs.getattr(ino).unwrap();
    assert_eq!(after.size, before.size);
    assert_ne!(after.mtime, before.mtime, "same size, new content: the mtime must differ");
    // Writable mounts keep their handles.
    let rw = worldfs::open::open_world(world.path(), Options { read_only: false, ..Options::default() }).unwrap();
    assert!(!rw.opens_are_local());
}

/// A store that counts the reads of single blocks it serves.
struct CountingStore {
    inner: SqliteStore,
    reads: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl CountingStore {
    fn count(&self) {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl MapStore for CountingStore {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn get(&self, pos: BlockPos) -> worldfs_store::Result<Option<Vec<u8>>> {
        self.count();
        self.inner.get(pos)
    }
    fn contains(&self, pos: BlockPos) -> worldfs_store::Result<bool> {
        self.count();
        self.inner.contains(pos)
    }
    fn list_after(&self, after: Option<BlockPos>, limit: usize) -> worldfs_store::Result<Vec<BlockPos>> {
        self.inner.list_after(after, limit)
    }
    fn scan_after(&self, after: Option<BlockPos>, limit: usize) -> worldfs_store::Result<Vec<(BlockPos, Vec<u8>)>> {
        self.inner.scan_after(after, limit)
    }
    fn apply(&self, changes: &[Change], note: &Note) -> worldfs_store::Result<()> {
        self.inner.apply(changes, note)
    }
    fn count(&self) -> worldfs_store::Result<u64> {
        self.inner.count()
    }
    fn is_read_only(&self) -> bool {
        self.inner.is_read_only()
    }
}

/// What `cat MNT/blocks/X/names` asks for (LOOKUP of the block directory
/// and of the file, OPEN, READ, RELEASE) reads the map once: every query
/// costs SQLite a lock cycle of about eight system calls, which is most of
/// what a walk over a world costs the daemon.
#[test]
fn reading_a_block_file_queries_the_map_once() {
    let world = common::demo_world();
    let reads = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let store = CountingStore {
        inner: SqliteStore::open(&world.path().join("map.sqlite"), true).unwrap(),
        reads: reads.clone(),
    };
    let w = worldfs_store::world::World::open(world.path()).unwrap();
    let fs = worldfs::open::world_with_store(w, Box::new(store), Options { read_only: true, ..Options::default() });
    let n = || reads.load(std::sync::atomic::Ordering::SeqCst);

    let ino = block_file(&fs, "names");
    let fh = fs.open(ino, libc::O_RDONLY, 0).unwrap().fh;
    let names = fs.read(fh, 0, 1 << 20).unwrap();
    fs.release(fh).unwrap();
    assert!(String::from_utf8(names).unwrap().lines().count() > 0);
    assert_eq!(n(), 1, "store reads for one block file");

    // A block that is not there: one read, and the answer is ENOENT.
    let err = fs.lookup(inode::BLOCKS, OsStr::new("999,999,999")).unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
    assert_eq!(n(), 2);
}

/// Read-only mounts of a map with a change counter let the kernel keep a
/// block file's attributes until told (no GETATTR per `stat` on a walk):
/// the watcher polls the counter and, when another process changed the map,
/// invalidates every file handed out, and again in the next polls. Writable
/// mounts and world files keep the plain TTL.
#[test]
fn files_kept_until_told_are_invalidated_after_an_outside_change() {
    let world = common::demo_world();
    let ttl = Duration::from_millis(500);
    let opts = Options { read_only: true, ttl, ..Options::default() };
    let fs = std::sync::Arc::new(worldfs::open::open_world(world.path(), opts.clone()).unwrap());
    let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s2 = sent.clone();
    // Before a poller runs nothing is kept past the TTL.
    let names = fs.lookup(fs.lookup(inode::BLOCKS, OsStr::new("0,0,0")).unwrap().ino, OsStr::new("names")).unwrap();
    assert_eq!(fs.attr_ttl(&names), ttl);
    fs.set_invalidator(Box::new(move |list| s2.lock().unwrap().extend(list)));
    let param1 = fs.getattr(block_file(&fs, "param1")).unwrap();
    assert_eq!(fs.attr_ttl(&param1), fs.entry_ttl(), "a block file is kept until told");
    assert_eq!(fs.attr_ttl(&names), fs.entry_ttl());
    let world_mt = fs.lookup(worldfs::fs::ROOT, OsStr::new("world.mt")).unwrap();
    assert_eq!(fs.attr_ttl(&world_mt), ttl, "world files change without the map's counter");
    assert_eq!(fs.watched_count(), 2);
    // Nothing changes: nothing is invalidated.
    std::thread::sleep(ttl * 3);
    let inval = |ino: u64| worldfs::fs::Inval::Inode(ino);
    assert!(!sent.lock().unwrap().contains(&inval(param1.ino)));
    // The kernel forgot names: it is not invalidated later.
    fs.forget(names.ino, 1);
    bump_param1(world.path());
    let invalidated = || sent.lock().unwrap().contains(&inval(param1.ino));
    common::wait_until("param1 invalidated after the outside change", invalidated);
    assert!(!sent.lock().unwrap().contains(&inval(names.ino)), "a forgotten file is not invalidated");
    assert_eq!(fs.watched_count(), 0);
    // Handed out again in the polls after the change: invalidated again
    // (the reply may have been made from a block cached before the change).
    sent.lock().unwrap().clear();
    assert_eq!(fs.attr_ttl(&param1), fs.entry_ttl());
    common::wait_until("param1 invalidated in a later poll", invalidated);
    drop(fs);
    // Writable mounts keep them until told too: a commit through the mount
    // invalidates its block's files at once, and so does another process's.
    let rw =
        std::sync::Arc::new(worldfs::open::open_world(world.path(), Options { read_only: false, ..opts }).unwrap());
    let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s2 = sent.clone();
    rw.set_invalidator(Box::new(move |list| s2.lock().unwrap().extend(list)));
    let param1 = rw.getattr(block_file(&rw, "param1")).unwrap();
    assert_eq!(rw.attr_ttl(&param1), rw.entry_ttl(), "kept until told on a writable mount");
    let invalidated = || sent.lock().unwrap().contains(&inval(param1.ino));
    bump_param1(world.path());
    common::wait_until("param1 invalidated after an outside change (writable mount)", invalidated);
    common::wait_until("the invalidation rounds after it end", || {
        sent.lock().unwrap().clear();
        std::thread::sleep(ttl * 2);
        sent.lock().unwrap().is_empty()
    });
    assert_eq!(rw.attr_ttl(&param1), rw.entry_ttl());
    let fh = rw.open(param1.ino, libc::O_RDONLY, 0).unwrap().fh;
    let first = rw.read(fh, 0, 1).unwrap()[0];
    rw.release(fh).unwrap();
    let fh = rw.open(param1.ino, libc::O_WRONLY, 0).unwrap().fh;
    rw.write(fh, 0, &[first ^ 1]).unwrap();
    rw.release(fh).unwrap();
    assert!(invalidated(), "a commit through the mount invalidates its block's files when it is made");
}

/// After the reply to a look-up of a small file the kernel keeps until told,
/// its content is pushed (the FUSE layer stores it in the page cache, so
/// the program that looked it up reads it without a READ request); files
/// not kept so (world files) and files of writable mounts are not pushed.
#[test]
fn small_files_kept_until_told_are_pushed_after_their_look_up() {
    let world = common::demo_world();
    let ttl = Duration::from_millis(500);
    let opts = Options { read_only: true, ttl, ..Options::default() };
    let fs = std::sync::Arc::new(worldfs::open::open_world(world.path(), opts.clone()).unwrap());
    fs.set_invalidator(Box::new(|_| {}));
    let pushed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let p2 = pushed.clone();
    fs.set_pusher(Box::new(move |ino, data| p2.lock().unwrap().push((ino, data))));
    let block = fs.lookup(inode::BLOCKS, OsStr::new("0,0,0")).unwrap();
    fs.looked_up(&block);
    let names = fs.lookup(block.ino, OsStr::new("names")).unwrap();
    // The reply hands the attributes out (and the file to the watch).
    assert_eq!(fs.attr_ttl(&names), fs.entry_ttl());
    fs.looked_up(&names);
    let fh = fs.open(names.ino, libc::O_RDONLY, 0).unwrap().fh;
    let content = fs.read(fh, 0, 1 << 20).unwrap();
    fs.release(fh).unwrap();
    assert!(!content.is_empty());
    assert_eq!(*pushed.lock().unwrap(), vec![(names.ino, std::sync::Arc::new(content))], "only the file, as read");
    // A world file changes without the map's counter: not pushed.
    let world_mt = fs.lookup(worldfs::fs::ROOT, OsStr::new("world.mt")).unwrap();
    assert_eq!(fs.attr_ttl(&world_mt), ttl);
    fs.looked_up(&world_mt);
    assert_eq!(pushed.lock().unwrap().len(), 1);
    // Writable mounts read with direct I/O: nothing is pushed.
    let rw =
        std::sync::Arc::new(worldfs::open::open_world(world.path(), Options { read_only: false, ..opts }).unwrap());
    rw.set_invalidator(Box::new(|_| {}));
    let p3 = pushed.clone();
    rw.set_pusher(Box::new(move |ino, data| p3.lock().unwrap().push((ino, data))));
    let names = rw.lookup(rw.lookup(inode::BLOCKS, OsStr::new("0,0,0")).unwrap().ino, OsStr::new("names")).unwrap();
    assert_eq!(rw.attr_ttl(&names), rw.entry_ttl());
    rw.looked_up(&names);
    assert_eq!(pushed.lock().unwrap().len(), 1);
}

/// Small worlds are listed with attributes on every page (no LOOKUP of each
/// block directory a glob then uses); above `plus_max` blocks, or with 0,
/// the kernel's adaptive mode stays (no kernel inode per block for `ls`).
#[test]
fn small_worlds_are_listed_with_attributes_everywhere() {
    let world = common::demo_world();
    let open = |plus_max| worldfs::open::open_world(world.path(), Options { plus_max, ..Options::default() }).unwrap();
    let blocks = open(0).block_count();
    assert!(blocks > 1);
    assert!(open(blocks).plus_everywhere());
    assert!(!open(blocks - 1).plus_everywhere());
    assert!(!open(0).plus_everywhere());
}
