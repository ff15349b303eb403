//! A write of one block reads that block, not the world (issue 28): on
//! every backend, a `sed -i` of a block's `names` through the core, with
//! the name index built (the warning about a name found nowhere consults
//! it), makes no page query (`scan_after`, `list_after`: a whole-world scan
//! when the index is built again, every key on Redis) and a few single-block
//! reads whatever the world's size. The mount must know its own commits:
//! PostgreSQL's data version (the WAL position) moves by more than one per
//! commit, and must not be taken for another process's change.

use crate::common;

use std::ffi::OsStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use worldfs::fs::{Options, ROOT, WorldFs};
use worldfs::worlds::luanti::inode;
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, Change, MapStore, Note};

const TTL: Duration = Duration::from_secs(1);

/// Store calls: the blocks read one at a time, and the page queries.
#[derive(Default)]
struct Calls {
    gets: parking_lot::Mutex<Vec<BlockPos>>,
    pages: AtomicUsize,
}

impl Calls {
    fn take(&self) -> (Vec<BlockPos>, usize) {
        (std::mem::take(&mut *self.gets.lock()), self.pages.swap(0, Ordering::SeqCst))
    }
}

/// A real store whose reads are counted.
struct Counting(Box<dyn MapStore>, Arc<Calls>);

impl MapStore for Counting {
    fn describe(&self) -> String {
        self.0.describe()
    }
    fn get(&self, pos: BlockPos) -> worldfs_store::Result<Option<Vec<u8>>> {
        self.1.gets.lock().push(pos);
        self.0.get(pos)
    }
    fn contains(&self, pos: BlockPos) -> worldfs_store::Result<bool> {
        self.1.gets.lock().push(pos);
        self.0.contains(pos)
    }
    fn list_after(&self, after: Option<BlockPos>, limit: usize) -> worldfs_store::Result<Vec<BlockPos>> {
        self.1.pages.fetch_add(1, Ordering::SeqCst);
        self.0.list_after(after, limit)
    }
    fn scan_after(&self, a: Option<BlockPos>, limit: usize) -> worldfs_store::Result<Vec<(BlockPos, Vec<u8>)>> {
        self.1.pages.fetch_add(1, Ordering::SeqCst);
        self.0.scan_after(a, limit)
    }
    fn apply(&self, changes: &[Change], note: &Note) -> worldfs_store::Result<()> {
        self.0.apply(changes, note)
    }
    fn count(&self) -> worldfs_store::Result<u64> {
        self.0.count()
    }
    fn is_read_only(&self) -> bool {
        self.0.is_read_only()
    }
    fn data_version(&self) -> Option<u64> {
        self.0.data_version()
    }
    fn last_commit_versions(&self) -> Option<(u64, u64)> {
        self.0.last_commit_versions()
    }
}

fn append_world_mt(world: &std::path::Path, extra: &str) {
    let mt = std::fs::read_to_string(world.join("world.mt")).unwrap();
    std::fs::write(world.join("world.mt"), format!("{mt}{extra}")).unwrap();
}

/// Every block of the demo world, and the world with its map moved out.
fn demo_blocks(world: &std::path::Path) -> Vec<(BlockPos, Vec<u8>)> {
    let all = SqliteStore::open(&world.join("map.sqlite"), true).unwrap().scan_after(None, 100_000).unwrap();
    std::fs::rename(world.join("map.sqlite"), world.join("old-map.sqlite.bak")).unwrap();
    all
}

fn fill(store: &dyn MapStore, all: &[(BlockPos, Vec<u8>)]) {
    let puts: Vec<Change> = all.iter().map(|(p, b)| Change::Put(*p, b.clone())).collect();
    store.apply(&puts, &Note::new("fill")).unwrap();
}

/// The core over the world's own store (journal on, as a mount), counted,
/// with the mount's default TTL (how long a check of the map is trusted).
/// Also the world's block count.
fn counted_core(world: &std::path::Path, cache: &std::path::Path) -> (WorldFs, Arc<Calls>, usize) {
    let w = worldfs_store::world::World::open(world).unwrap();
    let store = w.open_store(false, true).unwrap();
    let blocks = store.count().unwrap() as usize;
    let calls = Arc::new(Calls::default());
    let opts = Options { read_only: false, index_dir: Some(cache.to_path_buf()), ttl: TTL, ..Options::default() };
    (worldfs::open::world_with_store(w, Box::new(Counting(store, calls.clone())), opts), calls, blocks)
}

fn read_all(fs: &WorldFs, ino: u64) -> String {
    String::from_utf8(fs.read_unopened(ino, 0, 1 << 30).unwrap()).unwrap()
}

/// Write `data` to the file `ino` as `sed -i` ends (open, write, close).
fn write_file(fs: &WorldFs, ino: u64, data: &[u8]) {
    let pid = std::process::id();
    let o = fs.open(ino, libc::O_WRONLY | libc::O_TRUNC, pid).unwrap();
    fs.write(o.fh, 0, data).unwrap();
    fs.flush(o.fh, pid).unwrap();
    fs.release(o.fh).unwrap();
}

/// Build the index, then edit one block's names twice (a name the world
/// lacks, then back) and list the world's names: no page query, and few
/// single-block reads, for each step.
fn one_block_edits_read_only_that_block(backend: &str, world: &std::path::Path) {
    let cache = tempfile::tempdir().unwrap();
    let (fs, calls, blocks) = counted_core(world, cache.path());
    let names_of_world = fs.lookup(ROOT, OsStr::new("names")).unwrap().ino;
    assert!(read_all(&fs, names_of_world).contains("default:stone"), "{backend}: the index lists the world's names");
    let dir = fs.lookup(inode::BLOCKS, OsStr::new("0,0,0")).unwrap().ino;
    let names = fs.lookup(dir, OsStr::new("names")).unwrap().ino;
    let before = read_all(&fs, names);
    let last = before.lines().last().unwrap().to_string();
    let (id, name) = last.split_once(' ').unwrap();
    let renamed = before.replace(&last, &format!("{id} worldfs_test:not_in_the_world"));
    for (step, content) in [("rename to a new name", &renamed), ("rename back", &before)] {
        // Past the TTL: the write's first use of the index checks the map.
        std::thread::sleep(TTL + Duration::from_millis(100));
        calls.take();
        write_file(&fs, names, content.as_bytes());
        assert!(read_all(&fs, names_of_world).contains("default:stone"));
        let (gets, pages) = calls.take();
        assert_eq!(pages, 0, "{backend}, {step}: page queries (a scan of the world) for a one-block write");
        // The block itself, and the 8 blocks the index's fingerprint samples
        // (read at the check and again after the commit): none per world
        // size. The world has twice as many blocks, so a write that read
        // them all would show.
        let distinct: std::collections::BTreeSet<BlockPos> = gets.iter().copied().collect();
        assert!(blocks >= 18, "{backend}: the test needs a world of 18 blocks or more, it has {blocks}");
        assert!(
            distinct.len() <= 9 && gets.len() <= 20,
            "{backend}, {step}: {} reads of {} blocks of {blocks} for a one-block write: {distinct:?}",
            gets.len(),
            distinct.len()
        );
        let block = BlockPos::new(0, 0, 0);
        assert!(distinct.contains(&block), "{backend}, {step}: the written block was not read: {distinct:?}");
    }
    assert_eq!(read_all(&fs, names), before, "{backend}: {name} is back");
}

#[test]
fn a_one_block_write_on_sqlite_reads_only_its_block() {
    let world = common::demo_world();
    one_block_edits_read_only_that_block("sqlite3", world.path());
}

#[test]
fn a_one_block_write_on_postgresql_reads_only_its_block() {
    let test = "a_one_block_write_on_postgresql_reads_only_its_block";
    let Some(pg) = common::pg::start_or_skip(test) else { return };
    pg.create_db("mt");
    pg.sql(
        "mt",
        "CREATE TABLE blocks (posX INT NOT NULL, posY INT NOT NULL, posZ INT NOT NULL, data BYTEA, \
         PRIMARY KEY (posX, posY, posZ))",
    );
    let world = common::demo_world();
    let all = demo_blocks(world.path());
    fill(&worldfs_store::postgres::PgStore::open(&pg.conninfo("mt"), false).unwrap(), &all);
    append_world_mt(world.path(), &format!("backend = postgresql\npgsql_connection = {}\n", pg.conninfo("mt")));
    one_block_edits_read_only_that_block("postgresql", world.path());
}

#[test]
fn a_one_block_write_on_redis_reads_only_its_block() {
    let test = "a_one_block_write_on_redis_reads_only_its_block";
    if let Some(why) = common::redis::unavailable() {
        common::skip(test, "redis", &why);
        return;
    }
    let r = common::redis::Redis::start(None);
    let world = common::demo_world();
    let all = demo_blocks(world.path());
    fill(&worldfs_store::redis::RedisStore::open("127.0.0.1", r.port, "mt", None, false).unwrap(), &all);
    append_world_mt(
        world.path(),
        &format!("backend = redis\nredis_address = 127.0.0.1\nredis_port = {}\nredis_hash = mt\n", r.port),
    );
    one_block_edits_read_only_that_block("redis", world.path());
}

#[test]
fn a_one_block_write_on_leveldb_reads_only_its_block() {
    let world = common::demo_world();
    let all = demo_blocks(world.path());
    let map_db = world.path().join("map.db");
    common::leveldb::create_empty(&map_db);
    fill(&worldfs_store::leveldb::LevelDbStore::open(&map_db, false).unwrap(), &all);
    append_world_mt(world.path(), "backend = leveldb\n");
    one_block_edits_read_only_that_block("leveldb", world.path());
}
