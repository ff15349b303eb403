//! The last doors of issue 26 item 13: what `umount; mount` at once and
//! `worldfs undo` of a player edit must keep on every backend.

use crate::common;

use common::mount::Mounted;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use worldfs_codec::luanti::Block;
use worldfs_codec::luanti::block::MappingEntry;
use worldfs_store::leveldb::LevelDbStore;
use worldfs_store::{BlockPos, Change, MapStore, Note};

/// A LevelDB world (`backend = leveldb`) of one block of stone.
fn leveldb_world(dir: &Path) {
    std::fs::write(dir.join("world.mt"), "gameid = minetest\nbackend = leveldb\n").unwrap();
    common::leveldb::create_empty(&dir.join("map.db"));
    let store = LevelDbStore::open(&dir.join("map.db"), false).unwrap();
    let mut b = Block::new_air(29);
    b.mapping.push(MappingEntry { id: 1, name: "default:stone".into() });
    b.param0.iter_mut().for_each(|id| *id = 1);
    store.apply(&[Change::Put(BlockPos::new(0, 0, 0), b.encode().unwrap())], &Note::default()).unwrap();
}

/// The processes that have `path` open, as "PID COMM".
fn lock_openers(path: &Path) -> Vec<String> {
    let target = std::fs::canonicalize(path).unwrap();
    let mut found = Vec::new();
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else { continue };
        if fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l == target)) {
            let comm = std::fs::read_to_string(p.path().join("comm")).unwrap_or_default();
            found.push(format!("{} {}", p.file_name().to_string_lossy(), comm.trim()));
        }
    }
    found
}

/// `fusermount3 -u MNT; worldfs mount WORLD MNT` at once on a LevelDB
/// world: the old daemon still holds map.db/LOCK while it writes what it
/// held; the new mount waits for it (it is an exiting worldfs daemon)
/// instead of refusing, and shows the old mount's write.
#[test]
fn leveldb_mount_right_after_umount_waits_for_the_old_daemons_lock() {
    let test = "leveldb_mount_right_after_umount_waits_for_the_old_daemons_lock";
    require_fuse!(test);
    let world = tempfile::tempdir().unwrap();
    leveldb_world(world.path());
    for round in 0..3 {
        // group_ms holds the write in the old daemon until it exits.
        let old = Mounted::new(world.path(), &["group_ms=60000"]);
        old.ok(&format!("echo default:mese > $MNT/node/{round},0,0"));
        let mnt = old.mnt.clone();
        assert!(Command::new("fusermount3").arg("-u").arg(&mnt).status().unwrap().success());
        old.mount_again_at_once(round);
        let shown = std::fs::read_to_string(mnt.join(format!("node/{round},0,0"))).unwrap();
        assert!(shown.starts_with("default:mese"), "round {round}: {shown}");
        assert!(Command::new("fusermount3").arg("-u").arg(&mnt).status().unwrap().success());
        drop(old);
        // The new daemon (not a child of the test) must exit before the
        // next round, which starts with a plain mount.
        let start = Instant::now();
        loop {
            let who = lock_openers(&world.path().join("map.db/LOCK"));
            if who.is_empty() && common::leveldb::lock_holder(&world.path().join("map.db")).is_none() {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "the second daemon kept the lock: {who:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Anyone else holding map.db/LOCK (a server's classic fcntl lock, here
/// taken by python3) still refuses a writable mount at once, naming it.
#[test]
fn leveldb_mount_is_refused_at_once_when_another_program_holds_the_lock() {
    let test = "leveldb_mount_is_refused_at_once_when_another_program_holds_the_lock";
    if common::mount::which("python3").is_none() {
        common::skip(test, "python3", "no python3");
        return;
    }
    let world = tempfile::tempdir().unwrap();
    leveldb_world(world.path());
    let lock = world.path().join("map.db/LOCK");
    let script = "import fcntl,sys,time\nf=open(sys.argv[1],'r+')\nfcntl.lockf(f,fcntl.LOCK_EX)\nprint('locked',flush=True)\ntime.sleep(60)\n";
    let mut holder = Command::new("python3")
        .args(["-c", script])
        .arg(&lock)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.take().unwrap()), &mut said).unwrap();
    assert_eq!(said.trim(), "locked");
    let mnt = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_worldfs"))
        .arg("mount")
        .arg(world.path())
        .arg(mnt.path())
        .env("XDG_CACHE_HOME", mnt.path().join("cache"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = start.elapsed();
    let _ = holder.kill();
    let _ = holder.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("locked by pid {}", holder.id())), "{err}");
    assert!(took < Duration::from_secs(3), "a server's lock is refused at once, not waited for: {took:?}");
}

const PLAYER: &str = "breath = 10\nyaw = 270\npitch = -12.5\nextended_attributes = {\"xp\":\"7\"}\n\
position = (105,85,-42.5)\nhp = 18\nname = NAME\nversion = 1\nPlayerArgsEnd\nList main 2\nWidth 0\n\
Item default:dirt 42\nEmpty\nEndInventoryList\nEndInventory\n";

/// alice and bob in the world's player store (as world.mt says), written
/// without the journal: the state before anything worldfs journals.
fn add_players(world: &Path) {
    let w = worldfs_store::world::World::open(world).unwrap();
    let settings = |k: &str| w.setting(k).map(str::to_string);
    let store = worldfs_store::world::backends::open_record_store(
        world,
        &settings,
        true,
        worldfs_store::records::Collection::Players,
        false,
        None,
    )
    .unwrap();
    for name in ["alice", "bob"] {
        let (_, p) = worldfs_codec::luanti::player::Player::from_file(PLAYER.replace("NAME", name).as_bytes()).unwrap();
        store.put(name, None, Some(&p.encode()), &Note::new("setup")).unwrap();
    }
}

/// Edit alice and delete bob through a mount, then `worldfs undo` both:
/// `dump()` (every column of both rows, as the table holds them) must be
/// what it was before, dates included; the edit itself must have moved
/// alice's modification_date (else the test shows nothing).
fn undo_restores_the_dates(world: &Path, dump: &dyn Fn() -> String) {
    let before = dump();
    assert!(before.contains("alice") && before.contains("bob"), "{before}");
    let m = Mounted::new(world, &["guard_ms=0"]);
    m.ok("echo 3 > $MNT/players/alice/hp && rmdir $MNT/players/bob");
    assert_eq!(m.refusals(), "", "{}", m.log_text());
    m.unmount();
    let edited = dump();
    assert!(!edited.contains("bob"), "{edited}");
    assert!(!edited.contains("2011-12-13"), "the edit keeps alice's old modification date: {edited}");
    let out =
        Command::new(env!("CARGO_BIN_EXE_worldfs")).arg("undo").arg(world).args(["--last", "2"]).output().unwrap();
    assert!(out.status.success(), "undo: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(dump(), before, "undo gives back the players with the dates they had");
}

/// sqlite3 (players.sqlite): dates of another form than the server's own
/// (fractions, a 'T'), set with the sqlite3 tool, come back unchanged.
#[test]
fn undo_of_a_player_edit_restores_its_dates_on_sqlite() {
    let test = "undo_of_a_player_edit_restores_its_dates_on_sqlite";
    require_fuse!(test);
    if common::mount::which("sqlite3").is_none() {
        common::skip(test, "sqlite3", "no sqlite3 tool");
        return;
    }
    let world = common::demo_world();
    add_players(world.path());
    let db = world.path().join("players.sqlite");
    let sql = |q: &str| {
        let out = Command::new("sqlite3").arg(&db).arg(q).output().unwrap();
        assert!(out.status.success(), "sqlite3 {q}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    sql("UPDATE player SET creation_date = '2001-02-03 04:05:06', modification_date = '2011-12-13T14:15:16.25' \
         WHERE name = 'alice'; UPDATE player SET creation_date = '1999-01-01 00:00:00', \
         modification_date = '2000-06-07 08:09:10' WHERE name = 'bob'");
    let dump = || {
        sql("SELECT name, quote(creation_date), quote(modification_date), hp, pitch, yaw, posX, posY, posZ, breath \
             FROM player ORDER BY name")
    };
    undo_restores_the_dates(world.path(), &dump);
}

/// PostgreSQL (player_backend = postgresql): the timestamps, with
/// microseconds, come back unchanged.
#[test]
fn undo_of_a_player_edit_restores_its_dates_on_postgresql() {
    let test = "undo_of_a_player_edit_restores_its_dates_on_postgresql";
    require_fuse!(test);
    let Some(pg) = common::pg::start_or_skip(test) else { return };
    pg.create_db("mt");
    let world = common::demo_world();
    let mt = std::fs::read_to_string(world.path().join("world.mt")).unwrap();
    let mt = mt.replace("player_backend = sqlite3", "player_backend = postgresql");
    let conn = pg.conninfo("mt");
    std::fs::write(world.path().join("world.mt"), format!("{mt}pgsql_player_connection = {conn}\n")).unwrap();
    add_players(world.path());
    pg.sql(
        "mt",
        "UPDATE player SET creation_date = '2001-02-03 04:05:06.123456', \
         modification_date = '2011-12-13 14:15:16.5' WHERE name = 'alice'; \
         UPDATE player SET creation_date = '1999-01-01 00:00:00', modification_date = '2000-06-07 08:09:10' \
         WHERE name = 'bob'",
    );
    let dump = || {
        pg.sql(
            "mt",
            "SELECT name, creation_date, modification_date, hp, pitch, yaw, posX, posY, posZ, breath \
             FROM player ORDER BY name",
        )
    };
    undo_restores_the_dates(world.path(), &dump);
}
