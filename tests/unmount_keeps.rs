//! Grouped commits (`-o group_ms`): a change whose `close()` returned 0 and
//! that cannot be written at unmount (a full disk) is kept, said loudly,
//! listed by `worldfs check`, and written by the next writable mount.

use crate::common;

use common::mount::Mounted;
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use worldfs::fs::{Options, ROOT, WorldFs};
use worldfs::worlds::luanti::unwritten;
use worldfs_codec::luanti::Block;
use worldfs_store::memory::MemoryStore;
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, MapStore, StoreError};

fn node_name(store: &dyn MapStore, pos: BlockPos) -> Vec<u8> {
    let b = Block::decode(&store.get(pos).unwrap().unwrap()).unwrap();
    b.name_of(b.param0[0]).unwrap().to_vec()
}

/// `echo NAME > node/0,0,0` through the core; returns what close said.
fn write_node(fs: &WorldFs, name: &str) -> worldfs::fs::Result<()> {
    let node = fs.lookup(ROOT, OsStr::new("node")).unwrap().ino;
    let ino = fs.lookup(node, OsStr::new("0,0,0")).unwrap().ino;
    let fh = fs.open(ino, libc::O_WRONLY | libc::O_TRUNC, 0).unwrap().fh;
    fs.write(fh, 0, format!("{name}\n").as_bytes()).unwrap();
    fs.flush(fh, 0)?;
    fs.release(fh)
}

#[test]
fn a_group_that_cannot_be_written_at_unmount_is_kept_and_written_next_time() {
    let world = common::demo_world();
    let sqlite = SqliteStore::open(&world.path().join("map.sqlite"), true).unwrap();
    let store = Arc::new(MemoryStore::with_blocks(sqlite.scan_after(None, 100_000).unwrap()));
    let w = worldfs_store::world::World::open(world.path()).unwrap();
    let opts = Options { read_only: false, group_commit: Duration::from_secs(60), ..Options::default() };
    let fs = worldfs::open::world_with_store(w, Box::new(store.clone()), opts);
    let origin = BlockPos::new(0, 0, 0);
    let before = store.get(origin).unwrap();
    write_node(&fs, "default:mese").expect("close accepts the change");
    // The disk is full from now on.
    store.fail_when(|_| Some(StoreError::Full("disk full".into())));
    let lines = fs.shutdown();
    assert_eq!(store.get(origin).unwrap(), before);
    let kept_in = world.path().join(unwritten::FILE_NAME);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("NOT WRITTEN: 1 block change(s)") && l.contains(&kept_in.display().to_string())),
        "{lines:?}"
    );
    let found = unwritten::find(world.path()).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].1.iter().map(|k| k.pos).collect::<Vec<_>>(), [origin]);
    // Still full: nothing written, the file stays.
    assert!(unwritten::replay(world.path(), store.as_ref()).is_err());
    assert!(kept_in.is_file());
    // Space again: the next mount writes it, journaled, and the file goes.
    store.heal();
    let done = unwritten::replay(world.path(), store.as_ref()).unwrap();
    assert_eq!(done.len(), 1, "{done:?}");
    assert_eq!(node_name(store.as_ref(), origin), b"default:mese");
    assert!(!kept_in.exists());
    assert!(store.journal().last().unwrap().what.contains("node/0,0,0"));
}

#[test]
fn a_kept_change_is_not_written_over_a_block_changed_since() {
    let world = common::demo_world();
    let store = MemoryStore::with_blocks([(BlockPos::new(0, 0, 0), Block::new_air(29).encode().unwrap())]);
    let origin = BlockPos::new(0, 0, 0);
    let base = store.get(origin).unwrap().unwrap();
    let mut b = Block::new_air(29);
    b.mapping[0].name = b"default:mese".to_vec();
    let kept = unwritten::Kept { pos: origin, blob: b.encode().unwrap(), base: Some(base), what: "x".into() };
    unwritten::keep(world.path(), &[kept]).unwrap();
    // The server changed the block meanwhile.
    let mut s = Block::new_air(29);
    s.mapping[0].name = b"default:stone".to_vec();
    store.put_behind_the_back(origin, s.encode().unwrap());
    let err = unwritten::replay(world.path(), &store).unwrap_err();
    assert!(err.contains("worldfs-unwritten.sqlite: 1 block change(s)") && err.contains("Remove the file"), "{err}");
    assert_eq!(node_name(&store, origin), b"default:stone");
    assert!(world.path().join(unwritten::FILE_NAME).is_file());
}

fn run(cmd: &str, args: &[&str]) {
    assert!(Command::new(cmd).args(args).status().unwrap().success(), "{cmd} {args:?}");
}

fn db_node_name(world: &Path) -> Vec<u8> {
    node_name(&SqliteStore::open(&world.join("map.sqlite"), true).unwrap(), BlockPos::new(0, 0, 0))
}

/// The real thing: a world on a 2 MiB tmpfs that fills up before the
/// unmount writes the group.
#[test]
fn a_full_disk_at_unmount_keeps_the_change_and_says_so() {
    require_fuse!("a_full_disk_at_unmount_keeps_the_change_and_says_so");
    if !common::is_root() {
        common::skip("a_full_disk_at_unmount_keeps_the_change_and_says_so", "root", "needs root for a tmpfs");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    run("mount", &["-t", "tmpfs", "-o", "size=2m", "tmpfs", small.to_str().unwrap()]);
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
    let _guard = Unmount(small.clone());
    let world = small.join("world");
    std::fs::create_dir(&world).unwrap();
    worldfs::worlds::luanti::demo::write_demo(&world).unwrap();
    let mut m = Mounted::new(&world, &["group_ms=60000"]);
    let filler = small.join("filler");
    m.ok("echo default:mese > $MNT/node/0,0,0");
    let _ = Command::new("dd")
        .args(["if=/dev/zero", "bs=4k", &format!("of={}", filler.display())])
        .stderr(Stdio::null())
        .status();
    run("umount", &[m.mnt.to_str().unwrap()]);
    assert!(m.wait_exit(Duration::from_secs(20)));
    let log = m.log_text();
    assert!(log.contains("NOT WRITTEN: 1 block change(s) could not be written to the map at unmount"), "{log}");
    assert_ne!(db_node_name(&world), b"default:mese");
    // worldfs check lists it (the file is in the mount's cache directory:
    // the world's disk is full) and exits 1.
    let cache = m.dir.path().join("cache");
    let check = Command::new(env!("CARGO_BIN_EXE_worldfs"))
        .arg("check")
        .arg(&world)
        .env("XDG_CACHE_HOME", &cache)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&check.stdout);
    assert!(!check.status.success());
    assert!(out.contains("not written: 1 block change(s)") && out.contains("(blocks 0,0,0)"), "{out}");
    // Space again: the next writable mount writes it.
    std::fs::remove_file(&filler).unwrap();
    let mnt2 = m.dir.path().join("mnt2");
    std::fs::create_dir(&mnt2).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_worldfs"))
        .arg("mount")
        .arg(&world)
        .arg(&mnt2)
        .env("XDG_CACHE_HOME", &cache)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    run("umount", &[mnt2.to_str().unwrap()]);
    // The daemon writes what it kept once its mount is gone.
    common::wait_until("the change is in the map after the unmount", || db_node_name(&world) == b"default:mese");
    let check = Command::new(env!("CARGO_BIN_EXE_worldfs"))
        .arg("check")
        .arg(&world)
        .env("XDG_CACHE_HOME", &cache)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stdout));
}
