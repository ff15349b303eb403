//! What a walk costs in FUSE requests, counted by the daemon itself
//! (`MNT/.worldfs-stats`, src/fs/stats.rs): a read-only mount reads its
//! decoded files without OPEN, FLUSH or RELEASE, and still shows another
//! writer's change within the TTL.

use crate::common;

use common::mount::Mounted;
use std::collections::HashMap;
use worldfs_codec::luanti::Block;
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, Change, MapStore};

/// The daemon's counters: kind → (count, microseconds).
fn counters(m: &Mounted) -> HashMap<String, (u64, u64)> {
    worldfs::fs::stats::parse(&m.ok("cat $MNT/.worldfs-stats"))
}

/// How many more requests of `kind` `after` counted than `before`.
fn more(before: &HashMap<String, (u64, u64)>, after: &HashMap<String, (u64, u64)>, kind: &str) -> u64 {
    let n = |c: &HashMap<String, (u64, u64)>| c.get(kind).map_or(0, |v| v.0);
    n(after) - n(before)
}

/// Reads every decoded file of every block (what `grep -r` over blocks/
/// does), each by its own process; prints how many.
const WALK: &str = "cd $MNT/blocks && n=0; for f in */names */param1 */nodes */layers */raw */meta/*/*; do \
                    [ -f \"$f\" ] || continue; cat -- \"$f\" >/dev/null; n=$((n+1)); done; echo $n";

#[test]
fn the_stats_file_counts_requests_and_is_not_listed() {
    require_fuse!("the_stats_file_counts_requests_and_is_not_listed");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &["ro"]);
    let before = counters(&m);
    m.ok("ls $MNT/blocks >/dev/null; cat $MNT/blocks/0,0,0/names >/dev/null");
    let after = counters(&m);
    assert!(more(&before, &after, "LOOKUP") >= 2, "{after:?}");
    assert!(more(&before, &after, "READ") >= 1, "{after:?}");
    assert!(more(&before, &after, "decode") + more(&before, &after, "fetch") >= 1, "the parts are counted: {after:?}");
    assert!(!m.ok("ls -a $MNT").contains(".worldfs-stats"), "hidden from listings");
    let (code, _, err) = m.sh("echo x > $MNT/.worldfs-stats");
    assert_ne!(code, 0, "the stats file is not writable: {err}");
}

#[test]
fn a_read_only_mount_reads_decoded_files_without_open_flush_or_release() {
    require_fuse!("a_read_only_mount_reads_decoded_files_without_open_flush_or_release");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &["ro"]);
    // The first open reaches the daemon once (it answers ENOSYS, which the
    // kernel keeps for the mount).
    m.ok("cat $MNT/README >/dev/null");
    let before = counters(&m);
    let files: u64 = m.ok(WALK).trim().parse().unwrap();
    let after = counters(&m);
    assert!(files > 50, "the demo world has many decoded files: {files}");
    for kind in ["OPEN", "FLUSH", "RELEASE"] {
        assert_eq!(more(&before, &after, kind), 0, "{kind} during a read-only walk of {files} files: {after:?}");
    }
    assert!(more(&before, &after, "LOOKUP") >= files, "the walk was counted: {after:?}");

    // Another writer (a running server) changes a block: the new content
    // shows within the TTL, still without OPEN.
    let store = SqliteStore::open(&world.path().join("map.sqlite"), false).unwrap();
    let p = BlockPos::new(0, 0, 0);
    let mut b = Block::decode(&store.get(p).unwrap().unwrap()).unwrap();
    let id = b.mapping.iter().map(|e| e.id).max().unwrap() + 1;
    b.mapping.push(worldfs_codec::luanti::MappingEntry { id, name: b"default:goldblock".to_vec() });
    b.param0[7] = id;
    store.apply(&[Change::Put(p, b.encode().unwrap())], &worldfs_store::Note::default()).unwrap();
    drop(store);
    common::wait_until("the other writer's change", || {
        m.ok("cat $MNT/blocks/0,0,0/names").contains("default:goldblock")
    });
    let last = counters(&m);
    assert_eq!(more(&before, &last, "OPEN") + more(&before, &last, "RELEASE"), 0, "{last:?}");
}

/// The same walk on a writable mount opens every file (the counter sees
/// OPEN and RELEASE where there are some), and never flushes a file opened
/// for reading.
#[test]
fn a_writable_mount_opens_each_file_once_and_never_flushes_reads() {
    require_fuse!("a_writable_mount_opens_each_file_once_and_never_flushes_reads");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &["rw"]);
    let before = counters(&m);
    let files: u64 = m.ok(WALK).trim().parse().unwrap();
    let after = counters(&m);
    assert!(more(&before, &after, "OPEN") >= files, "{files} files: {after:?}");
    assert!(more(&before, &after, "RELEASE") >= files, "{files} files: {after:?}");
    assert_eq!(more(&before, &after, "FLUSH"), 0, "{after:?}");
}

/// A looked-up file's content is pushed into the kernel's page cache
/// only while nobody has read it: a program that reads what it just
/// looked up (`xargs grep`) has filled the page cache by its READ, and
/// the push would be work for nothing.
#[test]
fn a_push_is_dropped_once_the_file_was_read() {
    use common::core_fs::{Source, open_core};
    use std::ffi::OsStr;
    use std::sync::Arc;
    let world = common::demo_world();
    let opts = worldfs::fs::Options { read_only: true, ..worldfs::fs::Options::default() };
    let fs = Arc::new(open_core(Source::Directory(world.path()), opts));
    // The watch (which the pushes need) runs once invalidations have a way out.
    fs.set_invalidator(Box::new(|_| {}));
    let pushed = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let into = pushed.clone();
    fs.set_pusher(Box::new(move |ino, _| into.lock().push(ino)));
    let blocks = fs.lookup(worldfs::fs::ROOT, OsStr::new("blocks")).unwrap().ino;
    let dir = fs.lookup(blocks, OsStr::new("0,0,0")).unwrap().ino;
    let names = fs.lookup(dir, OsStr::new("names")).unwrap();
    fs.attr_ttl(&names); // handed to the kernel until told
    fs.looked_up(&names);
    assert_eq!(*pushed.lock(), [names.ino], "pushed after the look-up");
    assert!(fs.push_still_wanted(names.ino), "not read yet: the push goes");
    assert!(!fs.push_still_wanted(names.ino), "one push per look-up");
    fs.looked_up(&names);
    fs.read_unopened(names.ino, 0, 4096).unwrap();
    assert!(!fs.push_still_wanted(names.ino), "read before the push: dropped");
}
