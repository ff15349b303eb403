//! One test body for every map store: what the `MapStore` trait promises
//! (crates/store/src/lib.rs), run over SQLite (both schemas), the in-memory store,
//! PostgreSQL (int4 and smallint columns) and Redis, the last two on real
//! servers started for the test.

use crate::common;

use std::collections::BTreeMap;
use worldfs_store::journal::Journal;
use worldfs_store::{BlockPos, Change, MapStore, Note, StoreError};

/// A store to test, a second handle on the same map (another process or
/// machine), a read-only handle on it when the store has such a mode, and
/// the journal file if it keeps one.
struct Subject {
    store: Box<dyn MapStore>,
    other: Box<dyn MapStore>,
    read_only: Option<Box<dyn MapStore>>,
    journal: Option<std::path::PathBuf>,
}

fn p(x: i16, y: i16, z: i16) -> BlockPos {
    BlockPos::new(x, y, z)
}

fn contract(name: &str, s: Subject) {
    let st = s.store.as_ref();
    let note = |w: &str| Note::new(w);
    // Empty, then a few blocks across the whole range.
    assert_eq!(st.count().unwrap(), 0, "{name}");
    assert_eq!(st.get(p(0, 0, 0)).unwrap(), None, "{name}");
    let mut model: BTreeMap<BlockPos, Vec<u8>> = BTreeMap::new();
    let mut puts = Vec::new();
    for (i, pos) in [p(0, 0, 0), p(-2048, -2048, -2048), p(2047, 2047, 2047), p(1, -1, 3), p(-5, 7, -9), p(1, 2, -3)]
        .iter()
        .enumerate()
    {
        let data = vec![i as u8 + 1; 10 + i];
        model.insert(*pos, data.clone());
        puts.push(Change::Put(*pos, data));
    }
    st.apply(&puts, &note("first")).unwrap();
    for (pos, data) in &model {
        assert_eq!(st.get(*pos).unwrap().as_ref(), Some(data), "{name}: {pos}");
        assert_eq!(s.other.get(*pos).unwrap().as_ref(), Some(data), "{name}: {pos} seen by another handle");
        assert!(st.contains(*pos).unwrap());
    }
    assert_eq!(st.count().unwrap(), model.len() as u64, "{name}");
    // Listing: every block once, resumable from any position, any page size.
    for page in [1, 2, 5, 100] {
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let got = st.list_after(after, page).unwrap();
            assert!(got.len() <= page);
            if got.is_empty() {
                break;
            }
            after = got.last().copied();
            seen.extend(got);
        }
        let mut sorted = seen.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), seen.len(), "{name}: a block listed twice (page {page})");
        assert_eq!(sorted, model.keys().copied().collect::<Vec<_>>(), "{name}: page {page}");
        let scanned = st.scan_after(None, 100).unwrap();
        assert_eq!(scanned.into_iter().collect::<BTreeMap<_, _>>(), model, "{name}: scan");
    }
    // Several blocks at once: in the order asked, absent ones None.
    let asked = [p(1, 2, -3), p(5, 5, 5), p(-2048, -2048, -2048), p(1, 2, -3)];
    let many = st.get_many(&asked).unwrap();
    assert_eq!(many, asked.iter().map(|q| model.get(q).cloned()).collect::<Vec<_>>(), "{name}: get_many");
    assert!(st.get_many(&[]).unwrap().is_empty(), "{name}");
    // A block with its neighbours: the block itself when it exists, and
    // only stored blocks with their true blobs, each once.
    for (pos, limit) in [(p(1, 2, -3), 1), (p(1, -1, 3), 4), (p(1, 0, 0), 64), (p(2047, 2047, 2047), 64)] {
        let near = st.get_near(pos, limit).unwrap();
        assert!(near.len() <= limit.max(1) + 1, "{name}: {} near {pos} (limit {limit})", near.len());
        assert_eq!(near.iter().find(|(q, _)| *q == pos).map(|(_, b)| b), model.get(&pos), "{name}: near {pos}");
        for (q, b) in &near {
            assert_eq!(Some(b), model.get(q), "{name}: near {pos}: {q}");
        }
        let mut qs: Vec<_> = near.iter().map(|(q, _)| *q).collect();
        qs.sort();
        qs.dedup();
        assert_eq!(qs.len(), near.len(), "{name}: near {pos}: a block twice");
    }
    assert!(st.get_near(p(5, 5, 5), 64).unwrap().iter().all(|(q, _)| model.contains_key(q)), "{name}");
    let all = st.list_after(None, 100).unwrap();
    for (i, from) in all.iter().enumerate() {
        assert_eq!(st.list_after(Some(*from), 100).unwrap(), all[i + 1..].to_vec(), "{name}: resume after {from}");
    }
    // Changes: put over, delete, an empty blob is absent.
    st.apply(&[Change::Put(p(0, 0, 0), b"new".to_vec()), Change::Delete(p(1, -1, 3))], &note("second")).unwrap();
    assert_eq!(st.get(p(0, 0, 0)).unwrap().as_deref(), Some(&b"new"[..]), "{name}");
    assert_eq!(st.get(p(1, -1, 3)).unwrap(), None, "{name}");
    // Expectations: met, then unmet (the whole transaction refused).
    st.apply(
        &[Change::Expect(p(0, 0, 0), Some(b"new".to_vec())), Change::Put(p(9, 9, 9), b"x".to_vec())],
        &note("third"),
    )
    .unwrap();
    s.other.apply(&[Change::Put(p(0, 0, 0), b"theirs".to_vec())], &note("theirs")).unwrap();
    let e = st
        .apply(
            &[Change::Expect(p(0, 0, 0), Some(b"new".to_vec())), Change::Put(p(8, 8, 8), b"y".to_vec())],
            &note("stale"),
        )
        .unwrap_err();
    assert!(matches!(e, StoreError::Conflict(_)), "{name}: {e:?}");
    assert_eq!(st.get(p(8, 8, 8)).unwrap(), None, "{name}: part of a refused transaction was written");
    assert_eq!(st.get(p(0, 0, 0)).unwrap().as_deref(), Some(&b"theirs"[..]), "{name}");
    let e = st.apply(&[Change::Expect(p(7, 7, 7), Some(b"z".to_vec()))], &note("absent")).unwrap_err();
    assert!(matches!(e, StoreError::Conflict(_)), "{name}: {e:?}");
    // A change by another handle moves the data version (when the store
    // has one), so that cached blocks are read again.
    if let Some(v0) = st.data_version() {
        s.other.apply(&[Change::Put(p(3, 3, 3), b"v".to_vec())], &note("version")).unwrap();
        assert_ne!(st.data_version(), Some(v0), "{name}: data_version unchanged by another handle's commit");
    }
    // Read-only handles read and never write.
    if let Some(ro) = &s.read_only {
        assert!(ro.is_read_only() && !st.is_read_only(), "{name}");
        assert_eq!(ro.get(p(0, 0, 0)).unwrap().as_deref(), Some(&b"theirs"[..]), "{name}: read-only read");
        let e = ro.apply(&[Change::Delete(p(0, 0, 0)), Change::Put(p(4, 4, 4), b"r".to_vec())], &note("ro"));
        assert!(matches!(e, Err(StoreError::ReadOnly)), "{name}: {e:?}");
        assert_eq!(st.get(p(0, 0, 0)).unwrap().as_deref(), Some(&b"theirs"[..]), "{name}: read-only wrote");
        assert_eq!(st.get(p(4, 4, 4)).unwrap(), None, "{name}: read-only wrote");
    }
    // The journal holds what each change replaced.
    if let Some(j) = &s.journal {
        let j = Journal::open(j).unwrap().expect("the journal exists");
        let changes = j.changes(None, None).unwrap();
        let second = changes.iter().find(|c| c.what == "second").expect("journaled");
        let blocks = j.blocks(second.id).unwrap();
        let before: BTreeMap<BlockPos, Option<Vec<u8>>> = blocks.into_iter().map(|b| (b.pos, b.before)).collect();
        assert_eq!(before.get(&p(0, 0, 0)), Some(&Some(vec![1u8; 10])), "{name}");
        assert_eq!(before.get(&p(1, -1, 3)), Some(&Some(vec![4u8; 13])), "{name}");
        assert!(!changes.iter().any(|c| c.what == "stale"), "{name}: a refused change was journaled");
    }
}

fn sqlite_subject(schema: worldfs_store::sqlite::Schema) -> (tempfile::TempDir, Subject) {
    use worldfs_store::sqlite::SqliteStore;
    let d = tempfile::tempdir().unwrap();
    let map = d.path().join("map.sqlite");
    SqliteStore::create(&map, schema).unwrap();
    let j = d.path().join(worldfs_store::journal::FILE_NAME);
    let mut store = SqliteStore::open(&map, false).unwrap();
    store.enable_journal(&j).unwrap();
    let other = SqliteStore::open(&map, false).unwrap();
    let ro = SqliteStore::open(&map, true).unwrap();
    (d, Subject { store: Box::new(store), other: Box::new(other), read_only: Some(Box::new(ro)), journal: Some(j) })
}

#[test]
fn sqlite_legacy_schema() {
    let (_d, s) = sqlite_subject(worldfs_store::sqlite::Schema::Legacy);
    contract("sqlite legacy", s);
}

#[test]
fn sqlite_split_schema() {
    let (_d, s) = sqlite_subject(worldfs_store::sqlite::Schema::Split);
    contract("sqlite split", s);
}

#[test]
fn memory_store() {
    let m = std::sync::Arc::new(worldfs_store::memory::MemoryStore::new());
    contract("memory", Subject { store: Box::new(m.clone()), other: Box::new(m), read_only: None, journal: None });
}

/// The engine's DDL: int4 columns (the 5.6.1 server) or smallint (5.12+).
fn pg_blocks(pg: &common::pg::Pg, db: &str, column: &str) {
    pg.create_db(db);
    pg.sql(
        db,
        &format!(
            "CREATE TABLE blocks (posX {column} NOT NULL, posY {column} NOT NULL, posZ {column} NOT NULL, \
             data BYTEA, PRIMARY KEY (posX, posY, posZ))"
        ),
    );
}

#[test]
fn postgresql_int4_and_smallint() {
    use worldfs_store::postgres::PgStore;
    let Some(pg) = common::pg::start_or_skip("postgresql_int4_and_smallint") else { return };
    for (db, column) in [("mt_int", "INT"), ("mt_small", "SMALLINT")] {
        pg_blocks(&pg, db, column);
        let d = tempfile::tempdir().unwrap();
        let j = d.path().join(worldfs_store::journal::FILE_NAME);
        let mut store = PgStore::open(&pg.conninfo(db), false).unwrap();
        store.enable_journal(&j).unwrap();
        assert!(store.describe().contains(if column == "INT" { "int4" } else { "smallint" }));
        let other = PgStore::open(&pg.conninfo(db), false).unwrap();
        let ro = PgStore::open(&pg.conninfo(db), true).unwrap();
        assert!(store.data_version().is_some(), "postgresql {column}: no data version");
        contract(
            &format!("postgresql {column}"),
            Subject { store: Box::new(store), other: Box::new(other), read_only: Some(Box::new(ro)), journal: Some(j) },
        );
    }
}

/// PostgreSQL's data version moves with commits only: reads that prune
/// pages full of dead row versions, and VACUUM, write WAL but change no
/// row, and must not look like another process's change (issue 28: with
/// the WAL position as the version, the mount built its name index again
/// from a whole-world scan on almost every write).
#[test]
fn postgresql_data_version_moves_with_commits_not_with_reads_or_vacuum() {
    use worldfs_store::postgres::PgStore;
    let Some(pg) = common::pg::start_or_skip("postgresql_data_version_moves_with_commits_not_with_reads_or_vacuum")
    else {
        return;
    };
    pg_blocks(&pg, "mt", "INT");
    // No autovacuum: its ANALYZE is a commit (of statistics), at a time
    // of its own choosing.
    pg.sql("mt", "ALTER TABLE blocks SET (autovacuum_enabled = false)");
    let store = PgStore::open(&pg.conninfo("mt"), false).unwrap();
    // Many versions of a few rows on one page: the next reads prune it.
    for i in 0..200u32 {
        let blob = vec![(i % 250) as u8 + 1; 300];
        store.apply(&[Change::Put(p(0, 0, (i % 4) as i16), blob)], &Note::new("churn")).unwrap();
    }
    let v0 = store.data_version().expect("a data version");
    for _ in 0..20 {
        for z in 0..4 {
            store.get(p(0, 0, z)).unwrap().unwrap();
        }
        store.get_near(p(0, 0, 2), 64).unwrap();
        store.scan_after(None, 100).unwrap();
    }
    pg.sql("mt", "VACUUM blocks");
    assert_eq!(store.data_version(), Some(v0), "reads and VACUUM moved the data version");
    // The store's own commit: its start is the version before, its end the one after.
    store.apply(&[Change::Put(p(0, 0, 9), b"nine".to_vec())], &Note::new("one more")).unwrap();
    let v1 = store.data_version().unwrap();
    assert_ne!(v1, v0, "a commit left the data version alone");
    assert_eq!(store.last_commit_versions(), Some((v0, v1)));
}

#[test]
fn postgresql_lost_connection_writes_nothing_and_reconnects() {
    use worldfs_store::postgres::PgStore;
    let Some(pg) = common::pg::start_or_skip("postgresql_lost_connection_writes_nothing_and_reconnects") else {
        return;
    };
    pg_blocks(&pg, "mt", "INT");
    let d = tempfile::tempdir().unwrap();
    let j = d.path().join(worldfs_store::journal::FILE_NAME);
    let mut store = PgStore::open(&pg.conninfo("mt"), false).unwrap();
    store.enable_journal(&j).unwrap();
    store.apply(&[Change::Put(p(1, 2, 3), b"one".to_vec())], &Note::new("one")).unwrap();
    pg.stop();
    let e = store.apply(&[Change::Put(p(1, 2, 3), b"two".to_vec())], &Note::new("two")).unwrap_err();
    assert!(matches!(e, StoreError::Unreachable(_)), "{e:?}");
    pg.restart();
    assert_eq!(store.get(p(1, 2, 3)).unwrap().as_deref(), Some(&b"one"[..]), "reconnects; nothing half-written");
    let journal = Journal::open(&j).unwrap().unwrap();
    assert!(!journal.changes(None, None).unwrap().iter().any(|c| c.what == "two"), "a failed change was journaled");
}

#[test]
fn redis_hash() {
    if let Some(why) = common::redis::unavailable() {
        common::skip("redis_hash", "redis", &why);
        return;
    }
    use worldfs_store::redis::RedisStore;
    let r = common::redis::Redis::start(Some("s3cret"));
    let d = tempfile::tempdir().unwrap();
    let j = d.path().join(worldfs_store::journal::FILE_NAME);
    let mut store = RedisStore::open("127.0.0.1", r.port, "mt_blocks", Some("s3cret"), false).unwrap();
    store.enable_journal(&j).unwrap();
    let other = RedisStore::open("127.0.0.1", r.port, "mt_blocks", Some("s3cret"), false).unwrap();
    let ro = RedisStore::open("127.0.0.1", r.port, "mt_blocks", Some("s3cret"), true).unwrap();
    contract(
        "redis",
        Subject { store: Box::new(store), other: Box::new(other), read_only: Some(Box::new(ro)), journal: Some(j) },
    );
    let e = RedisStore::open("127.0.0.1", r.port, "mt_blocks", Some("wrong"), false).err().expect("refused");
    assert!(e.to_string().to_lowercase().contains("pass") || e.to_string().contains("auth"), "{e}");
}

#[test]
fn leveldb_directory() {
    use worldfs_store::leveldb::LevelDbStore;
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("map.db");
    common::leveldb::create_empty(&dir);
    let j = d.path().join(worldfs_store::journal::FILE_NAME);
    let mut store = LevelDbStore::open(&dir, false).unwrap();
    store.enable_journal(&j).unwrap();
    // LevelDB admits one process: the second handle is the same store.
    let store = std::sync::Arc::new(store);
    contract(
        "leveldb",
        Subject { store: Box::new(store.clone()), other: Box::new(store), read_only: None, journal: Some(j) },
    );
    // A read-only snapshot never writes.
    let ro = LevelDbStore::open(&dir, true).unwrap();
    assert!(matches!(ro.apply(&[Change::Delete(p(0, 0, 0))], &Note::new("x")), Err(StoreError::ReadOnly)));
}

/// LevelDB answers `get_near` with the block's column (x, y) around it,
/// read in one job up to a gap: the neighbours a walk in name order reads next, each
/// with its current blob (after a commit too), deleted ones left out, on a
/// writable store and on a read-only snapshot alike.
#[test]
fn leveldb_reads_a_column_of_neighbours_at_once() {
    use worldfs_store::leveldb::LevelDbStore;
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("map.db");
    common::leveldb::create_empty(&dir);
    let store = LevelDbStore::open(&dir, false).unwrap();
    let column: Vec<Change> = (-40..40).map(|z| Change::Put(p(3, -2, z), vec![(z + 50) as u8; 5])).collect();
    let others = [Change::Put(p(4, -2, 0), b"next column".to_vec()), Change::Put(p(3, -1, 0), b"above".to_vec())];
    store.apply(&[column, others.to_vec()].concat(), &Note::new("column")).unwrap();
    let near: BTreeMap<BlockPos, Vec<u8>> = store.get_near(p(3, -2, 0), 64).unwrap().into_iter().collect();
    let expected: BTreeMap<BlockPos, Vec<u8>> = (-31..=32).map(|z| (p(3, -2, z), vec![(z + 50) as u8; 5])).collect();
    assert_eq!(near, expected, "64 blocks of the column around it, and nothing of other columns");
    // Current after a commit; a deleted or empty block is absent.
    store
        .apply(
            &[Change::Put(p(3, -2, 1), b"new".to_vec()), Change::Delete(p(3, -2, 2)), Change::Put(p(3, -2, 3), vec![])],
            &Note::new("change"),
        )
        .unwrap();
    let near: BTreeMap<BlockPos, Vec<u8>> = store.get_near(p(3, -2, 0), 8).unwrap().into_iter().collect();
    assert_eq!(near.get(&p(3, -2, 1)).map(Vec::as_slice), Some(&b"new"[..]));
    assert!(!near.contains_key(&p(3, -2, 2)) && !near.contains_key(&p(3, -2, 3)), "{near:?}");
    assert_eq!(near.len(), 6, "{near:?}");
    // An absent block just past the column's end: the column's end only;
    // past a gap, and at the edge of the key range, nothing.
    let mut near: Vec<i16> = store.get_near(p(3, -2, 41), 16).unwrap().iter().map(|(q, _)| q.z).collect();
    near.sort();
    assert_eq!(near, (34..40).collect::<Vec<_>>());
    assert!(store.get_near(p(3, -2, 50), 64).unwrap().is_empty());
    assert!(store.get_near(p(3, -2, 2047), 64).unwrap().is_empty());
    drop(store);
    let ro = LevelDbStore::open(&dir, true).unwrap();
    let near: BTreeMap<BlockPos, Vec<u8>> = ro.get_near(p(3, -2, -39), 4).unwrap().into_iter().collect();
    assert_eq!(near.keys().map(|q| q.z).collect::<Vec<_>>(), vec![-40, -39, -38, -37]);
}

/// What the server guard sees on a database server: clients that are not
/// worldfs (a Luanti server keeps its connections open), not our own.
#[test]
fn database_servers_name_their_other_clients() {
    if let Some(why) = common::pg::unavailable() {
        common::skip("database_servers_name_their_other_clients", "pg", &why);
        return;
    }
    if let Some(why) = common::redis::unavailable() {
        common::skip("database_servers_name_their_other_clients", "redis", &why);
        return;
    }
    use worldfs_store::postgres::PgStore;
    use worldfs_store::redis::RedisStore;
    let pg = common::pg::Pg::start();
    pg_blocks(&pg, "mt", "INT");
    let store = PgStore::open(&pg.conninfo("mt"), false).unwrap();
    let _second_mount = PgStore::open(&pg.conninfo("mt"), true).unwrap();
    assert_eq!(store.other_users().unwrap(), Vec::<String>::new(), "worldfs's own sessions count as others");
    let server = postgres::Client::connect(&pg.conninfo("mt"), postgres::NoTls).unwrap();
    let others = store.other_users().unwrap();
    assert_eq!(others.len(), 1, "{others:?}");
    assert!(others[0].starts_with("PostgreSQL session "), "{others:?}");
    drop(server);
    let r = common::redis::Redis::start(None);
    let store = RedisStore::open("127.0.0.1", r.port, "mt_blocks", None, false).unwrap();
    assert_eq!(store.other_users().unwrap(), Vec::<String>::new());
    // A client as the engine's: connected, nameless (its PING answered, so
    // the server has registered it).
    let mut server = std::net::TcpStream::connect(("127.0.0.1", r.port)).unwrap();
    use std::io::{Read, Write};
    server.write_all(b"PING\r\n").unwrap();
    let mut pong = [0u8; 7];
    server.read_exact(&mut pong).unwrap();
    assert_eq!(&pong, b"+PONG\r\n");
    let others = store.other_users().unwrap();
    assert_eq!(others.len(), 1, "{others:?}");
    assert!(others[0].starts_with("Redis client "), "{others:?}");
}

/// A Redis hash field that is not a block position (the engine never
/// writes one) is left out of listings and counts, with a warning, never
/// shown as a wrong block.
#[test]
fn redis_fields_that_are_not_blocks_are_left_out() {
    if let Some(why) = common::redis::unavailable() {
        common::skip("redis_fields_that_are_not_blocks_are_left_out", "redis", &why);
        return;
    }
    use worldfs_store::redis::RedisStore;
    let r = common::redis::Redis::start(None);
    let store = RedisStore::open("127.0.0.1", r.port, "mt", None, false).unwrap();
    store.apply(&[Change::Put(p(1, 2, 3), b"x".to_vec())], &Note::new("one")).unwrap();
    let client = redis::Client::open(format!("redis://127.0.0.1:{}/", r.port)).unwrap();
    let mut c = client.get_connection().unwrap();
    for field in ["worldfs", "007", "99999999999999999"] {
        let _: () = redis::cmd("HSET").arg("mt").arg(field).arg("junk").query(&mut c).unwrap();
    }
    assert_eq!(store.list_after(None, 100).unwrap(), vec![p(1, 2, 3)]);
    assert_eq!(store.count().unwrap(), 1);
}
