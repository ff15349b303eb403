//! The last doors of issue 26 item 13: what `umount; mount` at once and
//! `worldfs undo` of a player edit must keep on every backend.

mod common;

use common::mount::Mounted;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use worldfs::codec::Block;
use worldfs::codec::block::MappingEntry;
use worldfs::store::leveldb::LevelDbStore;
use worldfs::store::{BlockPos, Change, MapStore, Note};

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
        let out = Command::new(env!("CARGO_BIN_EXE_worldfs"))
            .arg("mount")
            .arg(world.path())
            .arg(&mnt)
            .env("XDG_CACHE_HOME", old.dir.path().join("cache"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "round {round}: the new mount was refused: {err}");
        let start = Instant::now();
        while !mnt.join("README").exists() {
            assert!(start.elapsed() < Duration::from_secs(10), "round {round}: the new mount did not appear");
            std::thread::sleep(Duration::from_millis(20));
        }
        let shown = std::fs::read_to_string(mnt.join(format!("node/{round},0,0"))).unwrap();
        assert!(shown.starts_with("default:mese"), "round {round}: {shown}");
        assert!(Command::new("fusermount3").arg("-u").arg(&mnt).status().unwrap().success());
        drop(old);
        // The new daemon (not a child of the test) must let go before the next round.
        let start = Instant::now();
        while common::leveldb::lock_holder(&world.path().join("map.db")).is_some() {
            assert!(start.elapsed() < Duration::from_secs(20), "the second daemon kept the lock");
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
