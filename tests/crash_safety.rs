//! Crash safety: the daemon is killed with SIGKILL in the middle of a bulk
//! edit of 10 000 blocks, at random moments, several times. After each
//! crash the map and the undo journal must be intact, every block whole,
//! every edit whose fsync returned present (also with grouped commits), and
//! in the end the journal must restore the original world byte for byte.

use crate::common;

use common::mount::{Mounted, bulk_rename_then_kill};
use rusqlite::Connection;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};
use worldfs_codec::luanti::block::{Block, MappingEntry};
use worldfs_store::journal::{Fingerprint, Journal};
use worldfs_store::sqlite::{Schema, SqliteStore};
use worldfs_store::{BlockPos, Change, MapStore, Note};

const OLD: &str = "default:stone";
const NEW: &str = "default:cobble";

/// A world of 25 x 4 x 100 = 10 000 blocks, each with stone and dirt in a
/// pattern that differs from block to block.
fn big_world(dir: &Path) -> Vec<BlockPos> {
    std::fs::write(dir.join("world.mt"), "gameid = minetest\nbackend = sqlite3\n").unwrap();
    let store = SqliteStore::create(&dir.join("map.sqlite"), Schema::Split).unwrap();
    let mut changes = Vec::new();
    let mut positions = Vec::new();
    for x in 0..25i16 {
        for y in 0..4i16 {
            for z in 0..100i16 {
                let pos = BlockPos::new(x, y, z);
                let mut b = Block::new_air(29);
                b.mapping.push(MappingEntry { id: 1, name: OLD.into() });
                b.mapping.push(MappingEntry { id: 2, name: b"default:dirt".to_vec() });
                let seed = (x as usize * 7 + y as usize * 13 + z as usize * 31) % 97;
                for (i, id) in b.param0.iter_mut().enumerate() {
                    *id = match (i + seed) % 11 {
                        0..=2 => 1,
                        3 => 2,
                        _ => 0,
                    };
                }
                changes.push(Change::Put(pos, b.encode().unwrap()));
                positions.push(pos);
            }
        }
    }
    store.apply(&changes, &Note::default()).unwrap();
    positions
}

fn all_blocks(world: &Path) -> BTreeMap<BlockPos, Vec<u8>> {
    let store = SqliteStore::open(&world.join("map.sqlite"), true).unwrap();
    store.scan_after(None, usize::MAX).unwrap().into_iter().collect()
}

fn integrity_ok(path: &Path) {
    let c = Connection::open(path).unwrap();
    let r: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(r, "ok", "{}", path.display());
}

/// Random numbers from a seed that is printed, so that a failure can be
/// replayed with WORLDFS_SEED=<seed>.
struct Random(u64);

impl Random {
    fn from_env_or_clock() -> Random {
        let seed = std::env::var("WORLDFS_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos() as u64);
        eprintln!("crash_safety: random seed {seed} (replay with WORLDFS_SEED={seed})");
        Random(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n.max(1)
    }
}

fn names_of(b: &Block) -> Vec<&[u8]> {
    let mut n: Vec<&[u8]> = b.mapping.iter().map(|m| m.name.as_slice()).collect();
    n.sort();
    n
}

/// Everything that must hold after a crash.
fn check_after_crash(world: &Path, original: &BTreeMap<BlockPos, Vec<u8>>, fsynced: &[String]) -> usize {
    integrity_ok(&world.join("map.sqlite"));
    integrity_ok(&world.join("worldfs-journal.sqlite"));
    let now = all_blocks(world);
    assert_eq!(now.len(), original.len(), "blocks appeared or vanished");
    let mut renamed = 0;
    for (pos, blob) in &now {
        let b = Block::decode(blob).unwrap_or_else(|e| panic!("block {pos} does not decode after the crash: {e}"));
        let orig = Block::decode(&original[pos]).unwrap();
        assert_eq!(b.param0, orig.param0, "block {pos}: nodes changed");
        if blob != &original[pos] {
            assert_eq!(names_of(&b), vec![&b"air"[..], NEW.as_bytes(), b"default:dirt"], "block {pos} half-renamed");
            renamed += 1;
        }
    }
    for p in fsynced {
        let pos = worldfs_store::parse_triple(p).map(|(x, y, z)| BlockPos::new(x, y, z)).unwrap();
        let b = Block::decode(&now[&pos]).unwrap();
        assert!(
            b.mapping.iter().any(|m| m.name == NEW.as_bytes()),
            "block {p}: its fsync returned, but the edit is lost"
        );
    }
    // The journal holds exactly what was committed: the newest record of
    // each block matches the block as stored.
    let journal = Journal::open(&world.join("worldfs-journal.sqlite")).unwrap().unwrap();
    let mut newest: BTreeMap<BlockPos, Option<Fingerprint>> = BTreeMap::new();
    for c in journal.changes(None, None).unwrap().into_iter().rev() {
        for r in journal.blocks(c.id).unwrap() {
            newest.insert(r.pos, r.after);
        }
    }
    for (pos, blob) in &now {
        match newest.get(pos) {
            Some(after) => assert_eq!(*after, Some(Fingerprint::of(blob)), "block {pos}: journal and map disagree"),
            None => assert_eq!(blob, &original[pos], "block {pos} changed without a journal record"),
        }
    }
    renamed
}

#[test]
fn sigkill_during_bulk_edit_loses_nothing() {
    require_fuse!("sigkill_during_bulk_edit_loses_nothing");
    if common::mount::which("python3").is_none() {
        common::skip("sigkill_during_bulk_edit_loses_nothing", "python3", "no python3");
        return;
    }
    let world = tempfile::tempdir().unwrap();
    let positions = big_world(world.path());
    let original = all_blocks(world.path());
    assert!(original.len() >= 10_000);
    let scratch = tempfile::tempdir().unwrap();
    let list = scratch.path().join("blocks.txt");
    let text: Vec<String> = positions.iter().map(|p| p.to_string()).collect();
    std::fs::write(&list, text.join("\n")).unwrap();
    let mut random = Random::from_env_or_clock();
    let mut renamed = 0;
    // Rounds 0-2: a commit per close and an fsync per block. Round 3:
    // grouped commits, an fsync every 25 blocks.
    for round in 0..4 {
        let grouped = round == 3;
        let m = Mounted::new(world.path(), if grouped { &["group_ms=50"] } else { &[] });
        let log = scratch.path().join(format!("fsynced-{round}.txt"));
        // Let it commit a few blocks, then crash at a random moment.
        let then = Duration::from_millis(100 + random.below(1500));
        let fsynced = bulk_rename_then_kill(m, &list, &log, (OLD, NEW), if grouped { 25 } else { 1 }, 3, then);
        let now = check_after_crash(world.path(), &original, &fsynced);
        assert!(now >= renamed + fsynced.len().min(1), "round {round}: no progress");
        renamed = now;
    }
    assert!(renamed < original.len(), "the edit finished before any crash; the test proves nothing");

    // The journal puts back the original world, byte for byte.
    let out = Command::new(env!("CARGO_BIN_EXE_worldfs"))
        .arg("undo")
        .arg(world.path())
        .args(["--since", "@0"])
        .output()
        .unwrap();
    assert!(out.status.success(), "undo failed: {}", String::from_utf8_lossy(&out.stderr));
    assert!(all_blocks(world.path()) == original, "undo did not restore the original bytes");
    integrity_ok(&world.path().join("map.sqlite"));
}

/// `mv find/OLD find/NEW` (a world-wide rename: one journaled transaction
/// per part; a 1 MiB cache makes parts of 512 KiB of blobs, several here)
/// killed at moments spread over it (a fifth, two fifths ... of the time a
/// whole rename takes, with a random jitter): every block decodes, each
/// block holds either its original bytes or exactly what a journaled part
/// wrote, and undoing the journal gives the original world back byte for
/// byte; and at least one kill landed between the rename's parts.
#[test]
fn sigkill_during_a_world_wide_rename_leaves_the_journal_consistent() {
    require_fuse!("sigkill_during_a_world_wide_rename_leaves_the_journal_consistent");
    let mut rnd = Random::from_env_or_clock();
    // How long a whole rename takes here: the kills land anywhere in it.
    let (whole, whole_parts) = {
        let world = tempfile::tempdir().unwrap();
        big_world(world.path());
        let m = Mounted::new(world.path(), &["cache_mb=1"]);
        assert!(m.ok("ls $MNT/find").contains(OLD));
        let t = Instant::now();
        m.ok(&format!("mv $MNT/find/{OLD} $MNT/find/{NEW}"));
        let whole = t.elapsed().as_millis() as u64;
        drop(m);
        let journal = Journal::open(&world.path().join("worldfs-journal.sqlite")).unwrap().unwrap();
        let parts = journal.changes(None, None).unwrap().len();
        assert!(parts >= 3, "{parts} part(s): the kills should land between parts too");
        (whole, parts)
    };
    let mut interrupted = 0;
    for round in 0..4u64 {
        let world = tempfile::tempdir().unwrap();
        big_world(world.path());
        let original = all_blocks(world.path());
        let m = Mounted::new(world.path(), &["cache_mb=1"]);
        // The index is built before the rename starts (ls), so that the kill
        // lands in the rename itself.
        assert!(m.ok("ls $MNT/find").contains(OLD));
        let mut mv = Command::new("mv")
            .arg(m.path(&format!("find/{OLD}")))
            .arg(m.path(&format!("find/{NEW}")))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let delay = whole * (round + 1) / 5 + rnd.below(whole / 10 + 1);
        std::thread::sleep(Duration::from_millis(delay));
        m.kill9();
        let _ = mv.wait();
        integrity_ok(&world.path().join("map.sqlite"));
        let now = all_blocks(world.path());
        assert_eq!(now.len(), original.len(), "round {round}: blocks appeared or vanished");
        for (pos, blob) in &now {
            Block::decode(blob).unwrap_or_else(|e| panic!("round {round}: block {pos} does not decode: {e}"));
        }
        let mut parts = 0;
        let journaled: BTreeMap<BlockPos, Fingerprint> =
            match Journal::open(&world.path().join("worldfs-journal.sqlite")).unwrap() {
                None => BTreeMap::new(),
                Some(j) => {
                    integrity_ok(j.path());
                    let mut m = BTreeMap::new();
                    for c in j.changes(None, None).unwrap() {
                        parts += 1;
                        assert!(c.what.starts_with("mv find/"), "{}", c.what);
                        for b in j.blocks(c.id).unwrap() {
                            assert_eq!(
                                b.before.as_ref(),
                                original.get(&b.pos),
                                "round {round}: journal's before of {}",
                                b.pos
                            );
                            m.insert(b.pos, b.after.expect("a rename deletes nothing"));
                        }
                    }
                    m
                }
            };
        for (pos, blob) in &now {
            match journaled.get(pos) {
                Some(after) => assert_eq!(Fingerprint::of(blob), *after, "round {round}: block {pos}"),
                None => assert_eq!(blob, &original[pos], "round {round}: block {pos} changed outside the journal"),
            }
        }
        eprintln!(
            "round {round}: killed after {delay} ms, {parts} of {whole_parts} part(s), {} block(s)",
            journaled.len()
        );
        if parts > 0 && parts < whole_parts {
            interrupted += 1;
        }
        if !journaled.is_empty() {
            let out = Command::new(env!("CARGO_BIN_EXE_worldfs"))
                .arg("undo")
                .arg(world.path())
                .args(["--last", "100"])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            assert!(
                all_blocks(world.path()) == original,
                "round {round}: undo did not restore the world byte for byte"
            );
        }
    }
    assert!(interrupted > 0, "no kill landed between the rename's parts: the test proved nothing");
}

/// The same crash on a world in a database server: the blocks of the
/// 10 000-block world are copied into it by our store, the daemon is
/// killed during the bulk edit, and then every block is whole, every
/// fsynced edit present, and `worldfs undo` gives the original back.
fn sigkill_on_a_server_world(name: &str, world: &Path, open: &dyn Fn(bool) -> Box<dyn MapStore>, settings: &str) {
    let positions = big_world(world);
    let original = all_blocks(world);
    let fill = open(false);
    fill.apply(&original.iter().map(|(p, b)| Change::Put(*p, b.clone())).collect::<Vec<_>>(), &Note::new("fill"))
        .unwrap();
    drop(fill);
    std::fs::remove_file(world.join("map.sqlite")).unwrap();
    std::fs::write(world.join("world.mt"), format!("gameid = minetest\n{settings}")).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let list = scratch.path().join("blocks.txt");
    std::fs::write(&list, positions.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")).unwrap();
    let log = scratch.path().join("fsynced.txt");
    let m = Mounted::new(world, &[]);
    let then = Duration::from_millis(100 + Random::from_env_or_clock().below(1000));
    let fsynced = bulk_rename_then_kill(m, &list, &log, (OLD, NEW), 1, 3, then);
    let store = open(true);
    let now: BTreeMap<BlockPos, Vec<u8>> = store.scan_after(None, usize::MAX).unwrap().into_iter().collect();
    assert_eq!(now.len(), original.len(), "{name}: blocks appeared or vanished");
    let mut renamed = 0;
    for (pos, blob) in &now {
        let b = Block::decode(blob).unwrap_or_else(|e| panic!("{name}: block {pos} does not decode: {e}"));
        assert_eq!(b.param0, Block::decode(&original[pos]).unwrap().param0, "{name}: block {pos}: nodes changed");
        if blob != &original[pos] {
            assert_eq!(names_of(&b), vec![&b"air"[..], NEW.as_bytes(), b"default:dirt"], "{name}: {pos} half-renamed");
            renamed += 1;
        }
    }
    assert!(renamed >= fsynced.len() && renamed < original.len(), "{name}: {renamed} renamed");
    for p in &fsynced {
        let pos = worldfs_store::parse_triple(p).map(|(x, y, z)| BlockPos::new(x, y, z)).unwrap();
        let b = Block::decode(&now[&pos]).unwrap();
        assert!(b.mapping.iter().any(|m| m.name == NEW.as_bytes()), "{name}: block {p}: fsynced, but lost");
    }
    let out =
        Command::new(env!("CARGO_BIN_EXE_worldfs")).arg("undo").arg(world).args(["--since", "@0"]).output().unwrap();
    assert!(out.status.success(), "{name}: undo failed: {}", String::from_utf8_lossy(&out.stderr));
    let back: BTreeMap<BlockPos, Vec<u8>> = store.scan_after(None, usize::MAX).unwrap().into_iter().collect();
    assert!(back == original, "{name}: undo did not restore the original bytes");
}

#[test]
fn sigkill_during_bulk_edit_of_postgresql_and_redis_worlds_loses_nothing() {
    require_fuse!("sigkill_during_bulk_edit_of_postgresql_and_redis_worlds_loses_nothing");
    if common::mount::which("python3").is_none() {
        common::skip("sigkill_during_bulk_edit_of_postgresql_and_redis_worlds_loses_nothing", "python3", "no python3");
        return;
    }
    if let Some(why) = common::pg::unavailable() {
        common::skip("sigkill_during_bulk_edit_of_postgresql_and_redis_worlds_loses_nothing", "pg", &why);
        return;
    }
    if let Some(why) = common::redis::unavailable() {
        common::skip("sigkill_during_bulk_edit_of_postgresql_and_redis_worlds_loses_nothing", "redis", &why);
        return;
    }
    use worldfs_store::postgres::PgStore;
    use worldfs_store::redis::RedisStore;
    let pg = common::pg::Pg::start();
    pg.create_db("mt");
    pg.sql(
        "mt",
        "CREATE TABLE blocks (posX INT NOT NULL, posY INT NOT NULL, posZ INT NOT NULL, data BYTEA, \
         PRIMARY KEY (posX, posY, posZ))",
    );
    let conninfo = pg.conninfo("mt");
    let world = tempfile::tempdir().unwrap();
    sigkill_on_a_server_world(
        "postgresql",
        world.path(),
        &|ro| Box::new(PgStore::open(&conninfo, ro).unwrap()),
        &format!("backend = postgresql\npgsql_connection = {conninfo}\n"),
    );
    let r = common::redis::Redis::start(None);
    let world = tempfile::tempdir().unwrap();
    sigkill_on_a_server_world(
        "redis",
        world.path(),
        &|ro| Box::new(RedisStore::open("127.0.0.1", r.port, "mt", None, ro).unwrap()),
        &format!("backend = redis\nredis_address = 127.0.0.1\nredis_port = {}\nredis_hash = mt\n", r.port),
    );
}
