//! Snapshots (issue 40): `worldfs snapshot` records every block and record
//! of a world byte for byte, stores a blob once, adds only what changed;
//! `snapshot verify` finds a blob that no longer matches its hash; a writer
//! committing during a snapshot is never seen in part (SQLite in both
//! journal modes, PostgreSQL, Redis); `snapshot prune` keeps what restic's
//! rules keep and every kept snapshot as it was; SIGKILL during a snapshot
//! or a prune never harms a completed snapshot.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use worldfs_store::records::Collection;
use worldfs_store::snapshots::{Policy, Snapshots};
use worldfs_store::sqlite::{Schema, SqliteStore};
use worldfs_store::world::World;
use worldfs_store::{BlockPos, Change, MapStore, Note};

fn worldfs(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_worldfs")).args(args).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

fn snapshot_json(world: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["snapshot", world.to_str().unwrap(), "--json"];
    args.extend(extra);
    let (code, out, err) = worldfs(&args);
    assert_eq!(code, 0, "worldfs snapshot: {out}{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Every block of the world's map, by position.
fn world_blocks(world: &Path) -> BTreeMap<BlockPos, Vec<u8>> {
    let store = World::open(world).unwrap().open_store(true, false).unwrap();
    store.scan_after(None, 1_000_000).unwrap().into_iter().collect()
}

/// Every block snapshot `name` of the store in `dir` holds.
fn snapshot_blocks(dir: &Path, name: &str) -> BTreeMap<BlockPos, Vec<u8>> {
    let s = Snapshots::open(dir, false).unwrap();
    let info = s.find(name).unwrap();
    s.block_ids(info.id).unwrap().into_iter().map(|(p, id)| (p, s.blob(id).unwrap())).collect()
}

fn snapshot_records(dir: &Path, name: &str) -> BTreeMap<(String, String), Vec<u8>> {
    let s = Snapshots::open(dir, false).unwrap();
    let info = s.find(name).unwrap();
    s.record_ids(info.id).unwrap().into_iter().map(|(k, id)| (k, s.blob(id).unwrap())).collect()
}

fn world_records(world: &Path) -> BTreeMap<(String, String), Vec<u8>> {
    let w = World::open(world).unwrap();
    let mut out = BTreeMap::new();
    for c in Collection::ALL {
        let store = w.open_records(c, true, false).unwrap();
        for name in store.names().unwrap() {
            out.insert((c.name().to_string(), name.clone()), store.get(&name).unwrap().unwrap());
        }
    }
    out
}

/// A demo world with a player, an account and a mod's storage.
fn demo_with_records() -> tempfile::TempDir {
    use worldfs_codec::luanti::{auth::AuthEntry, mod_storage::ModStorage, player::Player};
    let world = common::demo_world();
    let w = World::open(world.path()).unwrap();
    let player = Player {
        hp: 20,
        breath: 11,
        pos: [10.5, 8.5, -4.25],
        pitch: 0.0,
        yaw: 90.0,
        meta: Default::default(),
        inventory: b"List main 2\nWidth 0\nItem default:dirt 42\nEmpty\nEndInventoryList\nEndInventory\n".to_vec(),
    };
    let auth = AuthEntry { password: "#1#salt#verifier".into(), privileges: vec!["interact".into()], last_login: 7 };
    let mut storage = ModStorage::default();
    storage.entries.insert(b"key".to_vec(), b"value".to_vec());
    let put = |c: Collection, name: &str, bytes: Vec<u8>| {
        w.open_records(c, false, false).unwrap().put(name, None, Some(&bytes), &Note::new("test")).unwrap();
    };
    put(Collection::Players, "alice", player.encode());
    put(Collection::Auth, "alice", auth.encode());
    put(Collection::ModStorage, "testmod", storage.encode());
    world
}

fn map_store(world: &Path) -> SqliteStore {
    SqliteStore::open(&world.join("map.sqlite"), false).unwrap()
}

#[test]
fn a_snapshot_holds_every_block_and_record_byte_for_byte_and_adds_only_what_changed() {
    let world = demo_with_records();
    let w = world.path();
    let store = w.join("worldfs-snapshots");
    let first = snapshot_json(w, &["--name", "first"]);
    assert_eq!(first["name"], "first");
    assert_eq!(first["one_instant"], true, "{first}");
    assert_eq!(first["blocks"].as_u64().unwrap() as usize, world_blocks(w).len());
    assert_eq!(first["records"], 3, "{first}");
    assert!(first["consistency"].as_str().unwrap().contains("backup API"), "{first}");
    let blocks = world_blocks(w);
    assert_eq!(snapshot_blocks(&store, "first"), blocks);
    assert_eq!(snapshot_records(&store, "first"), world_records(w));
    // The demo repeats its blocks: fewer blobs than blocks.
    let distinct: std::collections::BTreeSet<&Vec<u8>> = blocks.values().collect();
    assert_eq!(first["new_blobs"].as_u64().unwrap() as usize, distinct.len() + 3);

    // Unchanged: nothing added but its row.
    let second = snapshot_json(w, &[]);
    assert_eq!((second["new_blobs"].as_u64(), second["index_rows"].as_u64()), (Some(0), Some(0)), "{second}");
    assert!(second["name"].as_str().unwrap().starts_with("20"), "named by the time: {second}");

    // One block changed, one removed: two rows, one new blob.
    let (changed, removed) = (BlockPos::new(0, 0, 0), BlockPos::new(1, 0, 0));
    let mut blob = blocks[&changed].clone();
    blob.push(0);
    map_store(w).apply(&[Change::Put(changed, blob.clone()), Change::Delete(removed)], &Note::new("t")).unwrap();
    let third = snapshot_json(w, &["--name", "third"]);
    // Both blocks are in one part of the index: one row, the part as it is now.
    assert_eq!((third["new_blobs"].as_u64(), third["index_rows"].as_u64()), (Some(1), Some(1)), "{third}");
    let s = Snapshots::open(&store, false).unwrap();
    let diff: Vec<(BlockPos, bool, bool)> = s
        .changed_blocks(s.find("first").unwrap().id, s.find("third").unwrap().id)
        .unwrap()
        .into_iter()
        .map(|c| (c.pos, c.before.is_some(), c.after.is_some()))
        .collect();
    assert_eq!(diff, [(changed, true, true), (removed, true, false)]);
    assert_eq!(snapshot_blocks(&store, "third"), world_blocks(w));
    assert_eq!(snapshot_blocks(&store, "first"), blocks, "an older snapshot holds what it held");

    let (code, out, err) = worldfs(&["snapshot", "list", w.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let names: Vec<&str> = out.lines().skip(1).map(|l| l.split_whitespace().next().unwrap()).collect();
    assert_eq!(names.len(), 3);
    assert_eq!((names[0], names[2]), ("first", "third"));
    let (code, _, err) = worldfs(&["snapshot", w.to_str().unwrap(), "--name", "first"]);
    assert_eq!(code, 2);
    assert!(err.contains("a snapshot named \"first\" exists already"), "{err}");
    let (code, _, err) = worldfs(&["snapshot", w.to_str().unwrap(), "--name", "a/b"]);
    assert_eq!(code, 2);
    assert!(err.contains("must not start with '.' nor hold '/'"), "{err}");
}

#[test]
fn verify_finds_a_blob_that_no_longer_matches_its_hash() {
    let world = common::demo_world();
    let w = world.path();
    snapshot_json(w, &["--name", "one"]);
    let (code, out, err) = worldfs(&["snapshot", "verify", w.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("every one matches its SHA-256"), "{out}");
    // One byte of blob 2 changed inside its pack (which still unpacks).
    let db = rusqlite::Connection::open(w.join("worldfs-snapshots/snapshots.sqlite")).unwrap();
    let (first, sizes, data): (i64, Vec<u8>, Vec<u8>) = db
        .query_row("SELECT first, sizes, data FROM packs WHERE first <= 2 ORDER BY first DESC LIMIT 1", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    let mut raw = zstd::decode_all(&data[..]).unwrap();
    let mut offset = 0;
    let mut at = 0;
    for _ in first..2 {
        let (mut n, mut shift) = (0usize, 0);
        while sizes[at] & 0x80 != 0 {
            n |= ((sizes[at] & 0x7f) as usize) << shift;
            (at, shift) = (at + 1, shift + 7);
        }
        n |= (sizes[at] as usize) << shift;
        at += 1;
        offset += n;
    }
    raw[offset] ^= 0x40;
    let packed = zstd::encode_all(&raw[..], 3).unwrap();
    db.execute("UPDATE packs SET data = ?1 WHERE first = ?2", rusqlite::params![packed, first]).unwrap();
    drop(db);
    let (code, out, _) = worldfs(&["snapshot", "verify", w.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("problem: blob 2 (") && out.contains("does not match its SHA-256"), "{out}");
    assert_eq!(out.matches("problem:").count(), 1, "only that blob: {out}");
}

#[test]
fn a_store_of_an_older_format_is_refused_with_the_reason_and_left_as_it_was() {
    let world = common::demo_world();
    let w = world.path();
    let dir = w.join("worldfs-snapshots");
    std::fs::create_dir(&dir).unwrap();
    let file = dir.join("snapshots.sqlite");
    // The first format's layout: a row per blob and per block.
    let db = rusqlite::Connection::open(&file).unwrap();
    db.execute_batch(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID; INSERT INTO meta VALUES ('format', 1);
         CREATE TABLE blobs (id INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE, size INTEGER NOT NULL, data BLOB);
         CREATE TABLE block_index (pos INTEGER, snap INTEGER, blob INTEGER, PRIMARY KEY (pos, snap)) WITHOUT ROWID;",
    )
    .unwrap();
    drop(db);
    let before = std::fs::read(&file).unwrap();
    for args in [vec!["snapshot", w.to_str().unwrap()], vec!["snapshot", "list", w.to_str().unwrap()]] {
        let (code, out, err) = worldfs(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(
            err.contains("a snapshot store of format 1, written by an earlier worldfs")
                && err.contains("move it away (or remove it) and take a new snapshot"),
            "{err}"
        );
    }
    assert_eq!(std::fs::read(&file).unwrap(), before, "the old store is left as it was");
}

#[test]
fn the_split_schema_and_a_wal_map_are_recorded_too_and_another_store_directory_can_hold_them() {
    let world = common::demo_world();
    let w = world.path();
    let blocks = world_blocks(w);
    std::fs::rename(w.join("map.sqlite"), w.join("legacy.bak")).unwrap();
    let split = SqliteStore::create(&w.join("map.sqlite"), Schema::Split).unwrap();
    split.apply(&blocks.iter().map(|(p, b)| Change::Put(*p, b.clone())).collect::<Vec<_>>(), &Note::new("t")).unwrap();
    drop(split);
    let other = tempfile::tempdir().unwrap();
    let dir = other.path().join("store");
    let t = snapshot_json(w, &["--name", "split", "--store", dir.to_str().unwrap()]);
    assert!(t["map"].as_str().unwrap().contains("x,y,z schema"), "{t}");
    assert_eq!(snapshot_blocks(&dir, "split"), blocks);
    assert!(!w.join("worldfs-snapshots").exists(), "--store: nothing in the world");

    let c = rusqlite::Connection::open(w.join("map.sqlite")).unwrap();
    let mode: String = c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    let t = snapshot_json(w, &["--name", "wal", "--store", dir.to_str().unwrap()]);
    assert!(t["consistency"].as_str().unwrap().contains("WAL"), "{t}");
    assert_eq!(t["index_rows"], 0, "the same blocks: {t}");
    assert_eq!(snapshot_blocks(&dir, "wal"), blocks);
}

/// 50 blocks that a writer sets to one counter value per transaction,
/// spread over the key space: 0,0,Z for Z < 50, each followed in key order
/// by `FILLERS` blocks X,0,Z (so that no one page of a paged read holds
/// them all: a read page by page would see a save in part).
const COUNTED: i16 = 50;
const FILLERS: i16 = 200;

fn counted_pos(z: i16) -> BlockPos {
    BlockPos::new(0, 0, z)
}

fn fillers() -> impl Iterator<Item = BlockPos> {
    (0..COUNTED).flat_map(|z| (1..=FILLERS).map(move |x| BlockPos::new(x, 0, z)))
}

fn counted(n: u64) -> Vec<u8> {
    format!("counter {n:08}").into_bytes()
}

/// Each snapshot's counted blocks hold a single counter value; returns
/// the values seen.
fn counters_agree(dir: &Path) -> Vec<String> {
    let s = Snapshots::open(dir, false).unwrap();
    let mut seen = Vec::new();
    for info in s.list().unwrap() {
        let values: std::collections::BTreeSet<Vec<u8>> =
            (0..COUNTED).map(|z| s.block(info.id, counted_pos(z)).unwrap().unwrap()).collect();
        assert_eq!(values.len(), 1, "snapshot {} saw a save in part: {values:?}", info.name);
        seen.push(String::from_utf8_lossy(values.first().unwrap()).into_owned());
    }
    seen
}

/// Take `n` snapshots of `world` while `write(counter)` runs in a loop on
/// another thread; every snapshot sees whole writes only.
fn snapshots_while_writing(world: &Path, n: usize, write: impl Fn(u64) + Send) {
    /// Stops the writer also when a snapshot fails (the test then fails
    /// instead of waiting for the writer for ever).
    struct Stop<'a>(&'a std::sync::atomic::AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
    let stop = &std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let writer = s.spawn(move || {
            let mut i = 1;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                write(i);
                i += 1;
            }
            i
        });
        let guard = Stop(stop);
        for k in 0..n {
            snapshot_json(world, &["--name", &format!("s{k}")]);
        }
        drop(guard);
        assert!(writer.join().unwrap() > n as u64, "the writer wrote during the snapshots");
    });
    let seen = counters_agree(&world.join("worldfs-snapshots"));
    let distinct: std::collections::BTreeSet<_> = seen.iter().collect();
    assert!(distinct.len() > 1, "the snapshots saw the writer's progress: {seen:?}");
}

fn counted_sqlite_world(wal: bool) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("world.mt"), "backend = sqlite3\n").unwrap();
    let store = SqliteStore::create(&d.path().join("map.sqlite"), Schema::Legacy).unwrap();
    let puts: Vec<Change> = (0..COUNTED)
        .map(|z| Change::Put(counted_pos(z), counted(0)))
        .chain(fillers().map(|p| Change::Put(p, format!("filler {p}").into_bytes())))
        .collect();
    store.apply(&puts, &Note::new("t")).unwrap();
    if wal {
        let c = rusqlite::Connection::open(d.path().join("map.sqlite")).unwrap();
        c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)).unwrap();
    }
    d
}

fn sqlite_writer(world: &Path) -> impl Fn(u64) + Send + use<> {
    let c = std::sync::Mutex::new(rusqlite::Connection::open(world.join("map.sqlite")).unwrap());
    c.lock().unwrap().busy_timeout(std::time::Duration::from_secs(10)).unwrap();
    move |i| {
        let mut c = c.lock().unwrap();
        let tx = c.transaction().unwrap();
        for z in 0..COUNTED {
            let key = counted_pos(z).legacy_key();
            tx.execute("UPDATE blocks SET data = ?1 WHERE pos = ?2", rusqlite::params![counted(i), key]).unwrap();
        }
        tx.commit().unwrap();
        drop(c);
        // A server commits a save at most every server_map_save_interval;
        // a writer that never pauses would keep every reader out
        // (SQLite's busy wait polls, and always finds it locked).
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn a_sqlite_writer_committing_during_snapshots_is_never_seen_in_part() {
    for wal in [false, true] {
        let world = counted_sqlite_world(wal);
        snapshots_while_writing(world.path(), 15, sqlite_writer(world.path()));
    }
}

#[test]
fn a_postgresql_writer_committing_during_snapshots_is_never_seen_in_part() {
    let Some(pg) = common::pg::start_or_skip("a_postgresql_writer_committing_during_snapshots_is_never_seen_in_part")
    else {
        return;
    };
    pg.create_db("mt");
    pg.sql(
        "mt",
        "CREATE TABLE blocks (posX INT NOT NULL, posY INT NOT NULL, posZ INT NOT NULL, data BYTEA, \
         PRIMARY KEY (posX, posY, posZ))",
    );
    let values: Vec<String> = (0..COUNTED).map(|z| format!("(0, 0, {z}, 'counter 00000000')")).collect();
    pg.sql("mt", &format!("INSERT INTO blocks VALUES {}", values.join(", ")));
    pg.sql(
        "mt",
        &format!(
            "INSERT INTO blocks SELECT x, 0, z, 'filler' FROM generate_series(1, {FILLERS}) x, \
             generate_series(0, {}) z",
            COUNTED - 1
        ),
    );
    let world = tempfile::tempdir().unwrap();
    std::fs::write(
        world.path().join("world.mt"),
        format!("backend = postgresql\npgsql_connection = {}\n", pg.conninfo("mt")),
    )
    .unwrap();
    let client = std::sync::Mutex::new(postgres::Client::connect(&pg.conninfo("mt"), postgres::NoTls).unwrap());
    snapshots_while_writing(world.path(), 10, move |i| {
        let mut c = client.lock().unwrap();
        let mut tx = c.transaction().unwrap();
        for z in 0..COUNTED as i32 {
            tx.execute("UPDATE blocks SET data = $1 WHERE posX = 0 AND posY = 0 AND posZ = $2", &[&counted(i), &z])
                .unwrap();
        }
        tx.commit().unwrap();
    });
}

#[test]
fn a_redis_writer_saving_during_snapshots_is_never_seen_in_part() {
    if let Some(why) = common::redis::unavailable() {
        common::skip("a_redis_writer_saving_during_snapshots_is_never_seen_in_part", "redis", &why);
        return;
    }
    let r = common::redis::Redis::start(None);
    let client = redis::Client::open(format!("redis://127.0.0.1:{}/", r.port)).unwrap();
    let c = std::sync::Mutex::new(client.get_connection().unwrap());
    // As the engine saves: MULTI, one HSET a block, EXEC.
    let save = move |i: u64| {
        let mut pipe = redis::pipe();
        pipe.atomic();
        for z in 0..COUNTED {
            pipe.hset("mt", counted_pos(z).legacy_key().to_string(), counted(i)).ignore();
        }
        pipe.query::<()>(&mut *c.lock().unwrap()).unwrap();
    };
    save(0);
    let mut fill = redis::pipe();
    for p in fillers() {
        fill.hset("mt", p.legacy_key().to_string(), "filler").ignore();
    }
    fill.query::<()>(&mut client.get_connection().unwrap()).unwrap();
    let world = tempfile::tempdir().unwrap();
    std::fs::write(
        world.path().join("world.mt"),
        format!("backend = redis\nredis_address = 127.0.0.1\nredis_port = {}\nredis_hash = mt\n", r.port),
    )
    .unwrap();
    snapshots_while_writing(world.path(), 10, save);
}

/// The world's blocks after `round` of `change_world`: a few blocks of the
/// demo changed, one removed and one added each round.
fn change_world(world: &Path, round: u8) {
    let store = map_store(world);
    let p = BlockPos::new(0, 0, 0);
    let mut blob = store.get(p).unwrap().unwrap();
    blob.push(round);
    let extra = BlockPos::new(100, round as i16, 0);
    let gone = BlockPos::new(100, round as i16 - 1, 0);
    store
        .apply(&[Change::Put(p, blob), Change::Put(extra, vec![round; 10]), Change::Delete(gone)], &Note::new("t"))
        .unwrap();
}

#[test]
fn prune_keeps_what_the_rules_keep_each_as_it_was_and_drops_blobs_nobody_needs() {
    let world = common::demo_world();
    let w = world.path();
    let dir = w.join("worldfs-snapshots");
    let mut expect = BTreeMap::new();
    for round in 1..=5u8 {
        change_world(w, round);
        let name = format!("r{round}");
        snapshot_json(w, &["--name", &name]);
        expect.insert(name, world_blocks(w));
    }
    // r1 at 10:00, r2 11:00, r3 11:30, r4 12:00, r5 12:10 (UTC, one day).
    let db = rusqlite::Connection::open(dir.join("snapshots.sqlite")).unwrap();
    for (name, minute) in [("r1", 600), ("r2", 660), ("r3", 690), ("r4", 720), ("r5", 730)] {
        db.execute(
            "UPDATE snapshots SET taken = ?1 WHERE name = ?2",
            rusqlite::params![1_700_000_000 / 86400 * 86400 + minute * 60, name],
        )
        .unwrap();
    }
    drop(db);
    let blobs_before = Snapshots::open(&dir, false).unwrap().verify(|_| {}).unwrap().1;
    // Hourly 3: r5 (12h), r3 (11h), r1 (10h); r2 and r4 go: a middle one
    // whose rows move on, and one just before the newest.
    let (code, out, err) = worldfs(&["snapshot", "prune", w.to_str().unwrap(), "--keep-hourly", "3", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("would remove r2") && out.contains("would remove r4") && out.contains("keep   r5 (hourly)"),
        "{out}"
    );
    assert_eq!(Snapshots::open(&dir, false).unwrap().list().unwrap().len(), 5, "a dry run removes nothing");
    let (code, out, err) = worldfs(&["snapshot", "prune", w.to_str().unwrap(), "--keep-hourly", "3", "--json"]);
    assert_eq!(code, 0, "{err}");
    let p: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(p["removed"], serde_json::json!(["r2", "r4"]));
    // The blobs of r2 and r4 alone: their changed block 0,0,0 and their added block.
    assert_eq!(p["blobs_removed"], 4, "{p}");
    let s = Snapshots::open(&dir, false).unwrap();
    let (problems, blobs) = s.verify(|_| {}).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(blobs, blobs_before - 4);
    for name in ["r1", "r3", "r5"] {
        assert_eq!(snapshot_blocks(&dir, name), expect[name], "{name} holds what it held");
    }
    // keep-last 1: only r5, which now holds every block itself.
    let pruned = Snapshots::open(&dir, false).unwrap().prune(&Policy { last: 1, ..Policy::default() }, false).unwrap();
    assert_eq!(pruned.removed, ["r1", "r3"]);
    assert_eq!(snapshot_blocks(&dir, "r5"), expect["r5"]);
    let db = rusqlite::Connection::open(dir.join("snapshots.sqlite")).unwrap();
    let empty: i64 =
        db.query_row("SELECT count(*) FROM block_index WHERE length(entries) = 0", [], |r| r.get(0)).unwrap();
    assert_eq!(empty, 0, "the only snapshot left needs no 'gone' rows");
    let (code, _, err) = worldfs(&["snapshot", "prune", w.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("say what to keep"), "{err}");
}

/// A world of `n` blocks of 1 KiB that repeat nothing, changed in part by
/// `round` (a round rewrites every 8th block).
fn write_noisy_blocks(world: &Path, n: i16, round: u64) {
    let store = map_store(world);
    let mut changes = Vec::new();
    for i in 0..n {
        if round > 0 && !(i as u64 + round).is_multiple_of(8) {
            continue;
        }
        let mut x = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ round.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let blob: Vec<u8> = (0..128)
            .flat_map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_le_bytes()
            })
            .collect();
        changes.push(Change::Put(BlockPos::new(i % 100, i / 100, 7), blob));
    }
    store.apply(&changes, &Note::new("noise")).unwrap();
}

/// Pseudo-random numbers for kill moments (the seed is printed).
struct Moments(u64);

impl Moments {
    fn next_ms(&mut self, max_ms: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % max_ms.max(1)
    }
}

/// Run worldfs with `args`, SIGKILL it after `ms` (if still running).
fn killed_after(args: &[&str], ms: u64) -> bool {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_worldfs"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(ms));
    let killed = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    child.wait().unwrap();
    killed
}

fn ok_prune(args: &[&str]) {
    let (code, out, err) = worldfs(args);
    assert_eq!(code, 0, "{args:?}: {out}{err}");
}

fn ok_restore(world: &str, name: &str, a: &str, b: &str) {
    let (code, out, err) = worldfs(&["restore", world, name, "--area", a, b]);
    assert_eq!(code, 0, "restore {name} {a} {b}: {out}{err}");
}

/// Every snapshot listed verifies and holds what the world held when it
/// was taken.
fn every_snapshot_as_taken(dir: &Path, expect: &BTreeMap<String, BTreeMap<BlockPos, Vec<u8>>>) {
    let s = Snapshots::open(dir, false).unwrap();
    let (problems, _) = s.verify(|_| {}).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    for info in s.list().unwrap() {
        assert!(snapshot_blocks(dir, &info.name) == expect[&info.name], "snapshot {} changed", info.name);
    }
}

#[test]
fn sigkill_during_a_snapshot_or_a_prune_never_harms_a_completed_snapshot() {
    let world = tempfile::tempdir().unwrap();
    let w = world.path();
    std::fs::write(w.join("world.mt"), "backend = sqlite3\n").unwrap();
    SqliteStore::create(&w.join("map.sqlite"), Schema::Legacy).unwrap();
    let dir = w.join("worldfs-snapshots");
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    eprintln!("kill moments seed {seed}");
    let mut moments = Moments(seed);
    let mut expect = BTreeMap::new();
    let ws = w.to_str().unwrap();
    let mut killed = 0;
    let mut full_ms = 0;
    for round in 0..9u64 {
        write_noisy_blocks(w, 20_000, round);
        let name = format!("k{round}");
        expect.insert(name.clone(), world_blocks(w));
        if round <= 1 {
            // How long a snapshot of a changed world takes here (round 1;
            // the first, storing every blob, takes longer): kills fall
            // within it.
            let t = std::time::Instant::now();
            snapshot_json(w, &["--name", &name]);
            full_ms = t.elapsed().as_millis() as u64;
            continue;
        }
        killed += killed_after(&["snapshot", ws, "--name", &name], moments.next_ms(full_ms)) as u32;
        every_snapshot_as_taken(&dir, &expect);
    }
    // Prunes that each fold the oldest snapshot into the next: a snapshot
    // more, then keep the newest two.
    let mut prune_ms = 0;
    for round in 9..14u64 {
        write_noisy_blocks(w, 20_000, round);
        let name = format!("k{round}");
        expect.insert(name.clone(), world_blocks(w));
        snapshot_json(w, &["--name", &name]);
        let args = ["snapshot", "prune", ws, "--keep-last", "2"];
        if round == 9 {
            let t = std::time::Instant::now();
            ok_prune(&args);
            prune_ms = t.elapsed().as_millis() as u64;
        } else {
            let was_killed = killed_after(&args, moments.next_ms(prune_ms));
            eprintln!("prune killed: {was_killed}");
            killed += was_killed as u32;
        }
        every_snapshot_as_taken(&dir, &expect);
    }
    assert!(killed >= 3, "at least a few runs were killed midway ({killed})");
    // Every snapshot left restores the world byte for byte (in parts of
    // 4000 blocks: one restore changes at most 4096).
    for info in Snapshots::open(&dir, false).unwrap().list().unwrap() {
        for part in 0..5 {
            let (y0, y1) = (part * 640, part * 640 + 639);
            ok_restore(ws, &info.name, &format!("0,{y0},112"), &format!("1599,{y1},127"));
        }
        assert!(world_blocks(w) == expect[&info.name], "the world restored from {} differs", info.name);
    }
    let (code, out, err) = worldfs(&["snapshot", "prune", ws, "--keep-last", "1"]);
    assert_eq!(code, 0, "{out}{err}");
    every_snapshot_as_taken(&dir, &expect);
}

/// The hourly snapshot units of contrib/: systemd accepts them, and their
/// commands, run as the service runs them, take a snapshot and prune.
#[test]
fn the_hourly_snapshot_units_are_valid_and_their_commands_work() {
    let contrib = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib");
    let service = std::fs::read_to_string(contrib.join("worldfs-snapshot@.service")).unwrap();
    let timer = std::fs::read_to_string(contrib.join("worldfs-snapshot@.timer")).unwrap();
    assert!(timer.contains("OnCalendar=hourly"), "{timer}");
    let bin = env!("CARGO_BIN_EXE_worldfs");
    let worlds = tempfile::tempdir().unwrap();
    let world = worlds.path().join("main");
    worldfs::worlds::luanti::demo::write_demo(&world).unwrap();
    let service =
        service.replace("/usr/local/bin/worldfs", bin).replace("/srv/luanti/worlds", worlds.path().to_str().unwrap());
    for _ in 0..2 {
        for line in service.lines().filter(|l| l.starts_with("ExecStart")) {
            let cmd = line.split_once('=').unwrap().1.replace("%i", "main");
            let out = std::process::Command::new("sh").arg("-c").arg(&cmd).output().unwrap();
            assert!(out.status.success(), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    // Two hourly runs within one hour: the prune keeps the newer.
    let s = Snapshots::open(&world.join("worldfs-snapshots"), false).unwrap();
    assert_eq!(s.list().unwrap().len(), 1);
    let Some(analyze) = common::mount::which("systemd-analyze") else {
        common::skip("the_hourly_snapshot_units_are_valid_and_their_commands_work", "systemd", "no systemd-analyze");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("worldfs-snapshot@main.service"), &service).unwrap();
    std::fs::write(dir.path().join("worldfs-snapshot@main.timer"), &timer).unwrap();
    let out = std::process::Command::new(analyze)
        .arg("verify")
        .arg(dir.path().join("worldfs-snapshot@main.service"))
        .arg(dir.path().join("worldfs-snapshot@main.timer"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.lines().any(|l| l.contains("worldfs-snapshot@")), "{err}");
    assert!(out.status.success(), "systemd-analyze verify: {err}");
}
