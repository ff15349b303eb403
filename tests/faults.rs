//! Faults around the mount: a full disk, a read-only world directory, a map
//! database that disappears or is replaced, and unmounting while files are
//! open. Each is reported clearly, the mount stays usable, nothing is lost.
//! (A database locked by another process: tests/mount_write.rs.)

use crate::common;

use common::mount::Mounted;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use worldfs_codec::luanti::block::Block;
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, MapStore};

fn demo_world_in(dir: &Path) {
    worldfs::worlds::luanti::demo::write_demo(dir).unwrap();
}

fn all_blocks(world: &Path) -> BTreeMap<BlockPos, Vec<u8>> {
    let store = SqliteStore::open(&world.join("map.sqlite"), true).unwrap();
    store.scan_after(None, usize::MAX).unwrap().into_iter().collect()
}

/// The name of the node at world position (x, y, z), from the database.
fn node_name(world: &Path, x: i32, y: i32, z: i32) -> String {
    let pos = BlockPos::of_node(x, y, z).unwrap();
    let blob = SqliteStore::open(&world.join("map.sqlite"), true).unwrap().get(pos).unwrap().unwrap();
    let b = Block::decode(&blob).unwrap();
    let (ox, oy, oz) = pos.origin();
    let i = ((z - oz) * 256 + (y - oy) * 16 + (x - ox)) as usize;
    let id = b.param0[i];
    String::from_utf8(b.mapping.iter().find(|m| m.id == id).unwrap().name.clone()).unwrap()
}

/// Shell code that writes $2 into file $1 and fails when close() fails
/// (a shell's `>` ignores errors at close, where worldfs reports them).
const PUT: &str =
    "put() { python3 -c 'import sys; f = open(sys.argv[1], \"w\"); f.write(sys.argv[2]); f.close()' \"$1\" \"$2\"; }; ";

fn integrity_ok(path: &Path) {
    let c = rusqlite::Connection::open(path).unwrap();
    let r: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(r, "ok", "{}", path.display());
}

fn wait_for_file(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < Duration::from_secs(30), "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A writer that opens node/X,Y,Z, writes, signals `ready`, and closes
/// after `hold` seconds.
fn hold_open_writer(m: &Mounted, node: &str, content: &str, hold: f64) -> (std::process::Child, std::path::PathBuf) {
    let ready = m.dir.path().join(format!("ready-{node}"));
    let script = format!(
        "import time\nf = open({path:?}, 'w')\nf.write({content:?})\nf.flush()\nopen({ready:?}, 'w').close()\n\
         time.sleep({hold})\nf.close()\n",
        path = m.path(&format!("node/{node}")).to_str().unwrap(),
        ready = ready.to_str().unwrap(),
    );
    let child = Command::new("python3").arg("-c").arg(script).stderr(Stdio::null()).spawn().unwrap();
    (child, ready)
}

#[test]
fn unmount_signal_with_open_files_commits_them() {
    require_fuse!("unmount_signal_with_open_files_commits_them");
    let world = tempfile::tempdir().unwrap();
    demo_world_in(world.path());

    // SIGTERM while a file is open for writing: the mount is detached, the
    // daemon keeps serving that file, commits it at close, then exits.
    let mut m = Mounted::new(world.path(), &[]);
    let (mut writer, ready) = hold_open_writer(&m, "0,0,0", "default:mese\n", 1.5);
    wait_for_file(&ready);
    m.signal(libc::SIGTERM);
    assert!(writer.wait().unwrap().success(), "the writer's close failed");
    assert!(m.wait_exit(Duration::from_secs(30)), "the daemon did not exit after the last file closed");
    assert!(m.log_text().contains("files are still open"), "{}", m.log_text());
    assert_eq!(node_name(world.path(), 0, 0, 0), "default:mese");

    // A second signal stops at once; what open files hold is committed.
    let mut m = Mounted::new(world.path(), &[]);
    let (mut writer, ready) = hold_open_writer(&m, "1,0,0", "default:goldblock\n", 60.0);
    wait_for_file(&ready);
    m.signal(libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(300));
    m.signal(libc::SIGTERM);
    assert!(m.wait_exit(Duration::from_secs(30)), "a second SIGTERM did not stop the daemon");
    let _ = writer.kill();
    let _ = writer.wait();
    let log = m.log_text();
    assert!(log.contains("node/1,0,0: committed at unmount"), "{log}");
    assert_eq!(node_name(world.path(), 1, 0, 0), "default:goldblock");
    let _ = Command::new("umount").arg("-l").arg(&m.mnt).stderr(Stdio::null()).status();
    integrity_ok(&world.path().join("map.sqlite"));
}

#[test]
fn map_database_removed_or_replaced_while_mounted() {
    require_fuse!("map_database_removed_or_replaced_while_mounted");
    let world = tempfile::tempdir().unwrap();
    demo_world_in(world.path());
    let map = world.path().join("map.sqlite");
    let moved = world.path().join("map.sqlite.moved");
    let m = Mounted::new(world.path(), &[]);
    m.ok("echo default:dirt > $MNT/node/0,0,0");

    std::fs::rename(&map, &moved).unwrap();
    let (code, _, err) = m.sh(&format!("{PUT} put $MNT/node/0,0,0 default:stone"));
    assert_ne!(code, 0, "a write succeeded while the map database was gone");
    assert!(err.contains("Input/output error"), "{err}");
    let errors = m.ok("cat $MNT/write-errors");
    assert!(errors.contains("is gone since the mount"), "{errors}");
    m.ok("cat $MNT/README >/dev/null && ls $MNT/blocks >/dev/null"); // still up

    // Put back: writes work again, and nothing was lost.
    std::fs::rename(&moved, &map).unwrap();
    m.ok("echo default:stone > $MNT/node/0,0,0");

    // Replaced by a copy (a restored backup): refused, the copy untouched.
    let copy = world.path().join("copy.sqlite");
    std::fs::copy(&map, &copy).unwrap();
    std::fs::rename(&copy, &map).unwrap();
    let before = all_blocks(world.path());
    let (code, _, _) = m.sh(&format!("{PUT} put $MNT/node/0,0,0 default:wood"));
    assert_ne!(code, 0);
    assert!(m.ok("cat $MNT/write-errors").contains("was replaced by another file"));
    drop(m);
    assert_eq!(all_blocks(world.path()), before);
    assert_eq!(node_name(world.path(), 0, 0, 0), "default:stone");
}

/// Run a command as root, panicking on failure.
fn run(cmd: &str, args: &[&str]) {
    let st = Command::new(cmd).args(args).status().unwrap();
    assert!(st.success(), "{cmd} {args:?} failed");
}

struct Unmount(std::path::PathBuf);
impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn full_disk_is_reported_and_loses_nothing() {
    require_fuse!("full_disk_is_reported_and_loses_nothing");
    if !common::is_root() {
        common::skip("full_disk_is_reported_and_loses_nothing", "root", "needs root to mount a small tmpfs");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    run("mount", &["-t", "tmpfs", "-o", "size=2m", "tmpfs", small.to_str().unwrap()]);
    let _guard = Unmount(small.clone());
    let world = small.join("world");
    std::fs::create_dir(&world).unwrap();
    demo_world_in(&world);
    let m = Mounted::new(&world, &[]);
    m.ok("echo default:dirt > $MNT/node/0,0,0"); // the journal exists now
    // Fill the disk.
    let filler = small.join("filler");
    let _ = Command::new("dd")
        .args(["if=/dev/zero", "bs=4k", &format!("of={}", filler.display())])
        .stderr(Stdio::null())
        .status();
    let before = all_blocks(&world);
    // New blocks need space: refused with ENOSPC and a clear reason.
    // (The list of acknowledged mkdirs goes to another disk.)
    let made = dir.path().join("made");
    let (code, _, err) = m.sh(&format!(
        "for i in $(seq 50 80); do mkdir $MNT/blocks/$i,0,0 || exit 1; echo $i >> {}; done",
        made.display()
    ));
    assert_ne!(code, 0, "the disk never filled up");
    assert!(err.contains("No space left on device"), "{err}");
    let errors = m.ok("cat $MNT/write-errors");
    assert!(errors.contains("no space left"), "{errors}");
    // Still up, and reads work.
    m.ok("cat $MNT/blocks/0,0,0/names >/dev/null");
    std::fs::remove_file(&filler).unwrap();
    integrity_ok(&world.join("map.sqlite"));
    let after = all_blocks(&world);
    for (pos, blob) in &before {
        assert_eq!(after.get(pos), Some(blob), "block {pos} changed");
    }
    // Every block whose mkdir succeeded before the disk filled is kept,
    // and no other block was added.
    let acknowledged: Vec<i16> =
        std::fs::read_to_string(&made).unwrap_or_default().lines().map(|l| l.parse().unwrap()).collect();
    for x in &acknowledged {
        let pos = worldfs_store::BlockPos::new(*x, 0, 0);
        let blob = after.get(&pos).unwrap_or_else(|| panic!("block {pos}: its mkdir succeeded, it is not in the map"));
        worldfs_codec::luanti::Block::decode(blob).unwrap_or_else(|e| panic!("block {pos}: {e}"));
    }
    assert_eq!(after.len(), before.len() + acknowledged.len(), "blocks added beyond the acknowledged mkdirs");
    // With space again, writes work.
    m.ok("mkdir $MNT/blocks/90,0,0 && echo default:stone > $MNT/node/0,0,0");
    drop(m);
    assert_eq!(node_name(&world, 0, 0, 0), "default:stone");
}

#[test]
fn read_only_world_directory() {
    require_fuse!("read_only_world_directory");
    if !common::is_root() {
        common::skip("read_only_world_directory", "root", "needs root for a read-only bind mount");
        return;
    }
    let src = tempfile::tempdir().unwrap();
    demo_world_in(src.path());
    let ro = tempfile::tempdir().unwrap();
    run("mount", &["--bind", src.path().to_str().unwrap(), ro.path().to_str().unwrap()]);
    let _guard = Unmount(ro.path().to_path_buf());
    run("mount", &["-o", "remount,bind,ro", ro.path().to_str().unwrap()]);

    let mnt = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_worldfs")).arg("mount").arg(ro.path()).arg(mnt.path()).output().unwrap();
    assert!(!out.status.success(), "a writable mount of a read-only world succeeded");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not writable") && err.contains("-o ro"), "{err}");
    // Read-only mounts work.
    let m = Mounted::new(ro.path(), &["ro"]);
    m.ok("grep -q default:chest $MNT/blocks/*/names");
}
