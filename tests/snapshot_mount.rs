//! `MNT/snapshots/NAME/` (issue 40): every snapshot of the world as the
//! world's own tree, read-only, used with real tools: `ls`, `cat`,
//! `diff -r` against the world now, `grep -r`, `cp -r`, `find/`; a change
//! is refused with EROFS and the reason; a snapshot taken while mounted
//! appears.

use crate::common;

use common::mount::Mounted;
use worldfs_store::records::Collection;
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, Change, MapStore, Note};

fn snapshot(world: &std::path::Path, name: &str) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_worldfs"))
        .args(["snapshot", world.to_str().unwrap(), "--name", name])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The demo world with a player whose hp is `hp`.
fn set_hp(world: &std::path::Path, hp: u16) {
    let w = worldfs_store::world::World::open(world).unwrap();
    let store = w.open_records(Collection::Players, false, false).unwrap();
    let old = store.get("alice").unwrap();
    let player = worldfs_codec::luanti::player::Player {
        hp,
        breath: 11,
        pos: [1.0, 2.0, 3.0],
        pitch: 0.0,
        yaw: 0.0,
        meta: Default::default(),
        inventory: b"List main 1\nWidth 0\nEmpty\nEndInventoryList\nEndInventory\n".to_vec(),
    };
    store.put("alice", old.as_deref(), Some(&player.encode()), &Note::new("test")).unwrap();
}

#[test]
fn snapshots_are_the_world_as_it_was_for_every_tool() {
    require_fuse!("snapshots_are_the_world_as_it_was_for_every_tool");
    let world = common::demo_world();
    let w = world.path();
    set_hp(w, 20);
    snapshot(w, "tue");
    // Since Tuesday: the chest became lava, alice lost hp.
    let store = SqliteStore::open(&w.join("map.sqlite"), false).unwrap();
    let pos = BlockPos::new(0, 0, 0);
    let mut b = worldfs_codec::luanti::Block::decode(&store.get(pos).unwrap().unwrap()).unwrap();
    let i = worldfs_codec::luanti::block::node_index(3, 1, 3);
    let lava = b.mapping.iter().map(|m| m.id).max().unwrap() + 1;
    b.mapping.push(worldfs_codec::luanti::block::MappingEntry { id: lava, name: b"default:lava_source".to_vec() });
    b.param0[i] = lava;
    b.metadata.entries.retain(|e| e.pos != i as u16);
    store.apply(&[Change::Put(pos, b.encode().unwrap())], &Note::new("grief")).unwrap();
    drop(store);
    set_hp(w, 3);

    let m = Mounted::new(w, &[]);
    assert_eq!(m.ok("ls $MNT/snapshots"), "tue\n");
    let top = m.ok("ls $MNT/snapshots/tue");
    for d in ["auth", "blocks", "find", "map", "mod_storage", "names", "node", "players"] {
        assert!(top.lines().any(|l| l == d), "{d} missing: {top}");
    }
    assert_eq!(m.ok("cat $MNT/snapshots/tue/node/3,1,3"), "default:chest 0 0\n");
    assert_eq!(m.ok("cat $MNT/node/3,1,3"), "default:lava_source 0 0\n");
    assert_eq!(m.ok("cat $MNT/snapshots/tue/players/alice/hp"), "20\n");
    assert_eq!(m.ok("cat $MNT/players/alice/hp"), "3\n");
    // diff -r: the changed block differs (names, the chest's metadata) ...
    let (code, out, _) = m.sh("diff -r $MNT/snapshots/tue/blocks/0,0,0 $MNT/blocks/0,0,0");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("default:chest") && out.contains("default:lava_source"), "{out}");
    assert!(out.contains("Only in") && out.contains("3,1,3"), "the chest's metadata is gone now: {out}");
    // ... an unchanged one does not.
    m.ok("diff -r $MNT/snapshots/tue/blocks/1,0,0 $MNT/blocks/1,0,0");
    // grep -r and cp -r of a snapshot's block, find/ of a name.
    let found = m.ok("grep -rl default:chest $MNT/snapshots/tue/blocks/0,0,0");
    assert!(found.contains("snapshots/tue/blocks/0,0,0/names"), "{found}");
    assert!(m.ok("grep -r 'Item default:apple 12' $MNT/snapshots/tue/blocks/0,0,0/meta || true").contains("apple"));
    m.ok("cp -r $MNT/snapshots/tue/blocks/0,0,0 $WORLD/../copied-block");
    let copied = std::fs::read_to_string(w.parent().unwrap().join("copied-block/names")).unwrap();
    assert!(copied.contains("default:chest"), "{copied}");
    std::fs::remove_dir_all(w.parent().unwrap().join("copied-block")).unwrap();
    assert_eq!(m.ok("ls $MNT/snapshots/tue/find/default:chest"), "0,0,0\n");
    assert!(m.ok("ls $MNT/find").contains("default:lava_source"));
    assert!(!m.ok("ls $MNT/snapshots/tue/find").contains("default:lava_source"));
    assert!(m.ok("ls $MNT/snapshots/tue/map").lines().count() > 0);
    // Read-only, with the reason.
    let (code, _, err) = m.sh("echo 'default:dirt 0 0' > $MNT/snapshots/tue/node/3,1,3");
    assert_ne!(code, 0);
    assert!(err.contains("Read-only file system"), "{err}");
    let (code, _, _) = m.sh("rm -r $MNT/snapshots/tue/blocks/0,0,0");
    assert_ne!(code, 0);
    assert_eq!(m.ok("cat $MNT/snapshots/tue/node/3,1,3"), "default:chest 0 0\n");
    // A snapshot taken meanwhile shows up (the store is looked at every second).
    snapshot(w, "wed");
    let start = std::time::Instant::now();
    while m.ok("ls $MNT/snapshots") != "tue\nwed\n" {
        assert!(start.elapsed() < std::time::Duration::from_secs(10), "{}", m.ok("ls $MNT/snapshots"));
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(m.ok("cat $MNT/snapshots/wed/node/3,1,3"), "default:lava_source 0 0\n");
    m.ok("diff -r $MNT/snapshots/wed/blocks/0,0,0 $MNT/blocks/0,0,0");
    m.ok("diff -r $MNT/snapshots/wed/players $MNT/players");
    // And one pruned goes.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_worldfs"))
        .args(["snapshot", "prune", w.to_str().unwrap(), "--keep-last", "1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let start = std::time::Instant::now();
    while m.ok("ls $MNT/snapshots") != "wed\n" {
        assert!(start.elapsed() < std::time::Duration::from_secs(10), "{}", m.ok("ls $MNT/snapshots"));
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(m.ok("cat $MNT/snapshots/wed/node/3,1,3"), "default:lava_source 0 0\n");
}

#[test]
fn a_world_without_snapshots_shows_no_snapshots_directory() {
    require_fuse!("a_world_without_snapshots_shows_no_snapshots_directory");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &["ro"]);
    assert!(!m.ok("ls $MNT").contains("snapshots"));
}

#[test]
fn a_store_elsewhere_is_shown_with_the_snapshot_store_option_and_a_dir_without_one_is_refused() {
    require_fuse!("a_store_elsewhere_is_shown_with_the_snapshot_store_option_and_a_dir_without_one_is_refused");
    let world = common::demo_world();
    let w = world.path();
    let other = tempfile::tempdir().unwrap();
    let store = other.path().join("store");
    let take = |name: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_worldfs"))
            .args(["snapshot", w.to_str().unwrap(), "--name", name, "--store", store.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    take("elsewhere");
    let m = Mounted::new(w, &["ro"]);
    assert!(!m.ok("ls $MNT").contains("snapshots"), "the world has no store of its own");
    drop(m);

    let m = Mounted::new(w, &["ro", &format!("snapshot_store={}", store.display())]);
    assert_eq!(m.ok("ls $MNT/snapshots"), "elsewhere\n");
    assert_eq!(m.ok("cat $MNT/snapshots/elsewhere/node/3,1,3"), m.ok("cat $MNT/node/3,1,3"));
    m.ok("diff -r $MNT/snapshots/elsewhere/blocks/0,0,0 $MNT/blocks/0,0,0");
    // A snapshot taken into that store while mounted appears.
    take("later");
    let start = std::time::Instant::now();
    while m.ok("ls $MNT/snapshots") != "elsewhere\nlater\n" {
        assert!(start.elapsed() < std::time::Duration::from_secs(15), "{}", m.ok("ls $MNT/snapshots"));
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    drop(m);

    // A directory holding no store: the mount is refused, saying so.
    let mnt = tempfile::tempdir().unwrap();
    let empty = other.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = std::process::Command::new("timeout")
        .arg("20")
        .arg(env!("CARGO_BIN_EXE_worldfs"))
        .args(["mount", w.to_str().unwrap(), mnt.path().to_str().unwrap(), "-f", "-o"])
        .arg(format!("ro,snapshot_store={}", empty.display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "exit status {:?}: {err}", out.status);
    assert!(
        err.contains(&format!("-o snapshot_store={}", empty.display()))
            && err.contains("no snapshot store here")
            && err.contains("worldfs snapshot WORLD --store"),
        "{err}"
    );
}
