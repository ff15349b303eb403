//! The undo journal through a real mount: bulk edits with real tools, then
//! `worldfs undo` restores the world byte for byte.

use crate::common;

use common::mount::Mounted;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, MapStore};

fn all_blocks(world: &Path) -> BTreeMap<BlockPos, Vec<u8>> {
    let store = SqliteStore::open(&world.join("map.sqlite"), true).unwrap();
    store.scan_after(None, usize::MAX).unwrap().into_iter().collect()
}

fn worldfs(args: &[&str], world: &Path) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_worldfs")).arg(args[0]).arg(world).args(&args[1..]).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A world to edit: a copy of the largest real sqlite world (one of the
/// repository's, or ../shared's when that is there).
fn world_copy() -> tempfile::TempDir {
    let worlds = common::real_sqlite_worlds("undo tests");
    let w = worlds.iter().max_by_key(|w| std::fs::metadata(w.join("map.sqlite")).map_or(0, |m| m.len())).unwrap();
    common::copy_world(w)
}

#[test]
fn undo_restores_bulk_edits_byte_for_byte() {
    require_fuse!("undo_restores_bulk_edits_byte_for_byte");
    let world = world_copy();
    let original = all_blocks(world.path());
    let m = Mounted::new(world.path(), &[]);
    // A bulk rename with sed -i, a new block, a deleted one, a metadata node
    // edited, created and removed, single nodes set.
    let edited = m.ok("n=0; for f in $(grep -l '^[0-9]* air$' $MNT/blocks/*/names | head -150); do \
           sed -i 's/ air$/ default:glass/' $f && n=$((n+1)); done; echo $n");
    assert!(edited.trim().parse::<usize>().unwrap() > 0, "nothing to edit");
    m.ok("mkdir $MNT/blocks/200,200,200 && echo default:stone > $MNT/node/3200,3200,3200");
    let victim = original.keys().next().unwrap().to_string();
    m.ok(&format!("rmdir $MNT/blocks/{victim}"));
    let first_meta = m.ok("ls -d $MNT/blocks/*/meta/* | head -1");
    let first_meta = first_meta.trim();
    if !first_meta.is_empty() {
        m.ok(&format!("echo hello > {first_meta}/fields/worldfs_test && rm {first_meta}/fields/worldfs_test"));
        m.ok(&format!("echo changed > {first_meta}/fields/infotext || true"));
    }
    drop(m);
    assert_ne!(all_blocks(world.path()), original);

    // The listing names the changes.
    let (ok, list, err) = worldfs(&["undo"], world.path());
    assert!(ok, "{err}");
    assert!(list.contains("mkdir blocks/200,200,200") && list.contains(&format!("rmdir blocks/{victim}")), "{list}");

    // --last 1 undoes the newest change only.
    let (ok, _, err) = worldfs(&["undo", "--last", "1"], world.path());
    assert!(ok, "{err}");

    // Everything since the start: the original bytes, every block.
    let (ok, out, err) = worldfs(&["undo", "--since", "1d"], world.path());
    assert!(ok, "{out}{err}");
    assert!(all_blocks(world.path()) == original, "undo --since did not restore the original bytes");

    // The undo is itself journaled and can be reverted.
    let (_, list, _) = worldfs(&["undo"], world.path());
    let newest: i64 = list.lines().nth(1).unwrap().split_whitespace().next().unwrap()[1..].parse().unwrap();
    let (ok, _, err) = worldfs(&["undo", "--id", &newest.to_string()], world.path());
    assert!(ok, "{err}");
    assert!(all_blocks(world.path()).contains_key(&BlockPos::new(200, 200, 200)));
}

#[test]
fn undo_refuses_blocks_changed_outside_and_while_mounted() {
    require_fuse!("undo_refuses_blocks_changed_outside_and_while_mounted");
    let world = tempfile::tempdir().unwrap();
    worldfs::worlds::luanti::demo::write_demo(world.path()).unwrap();
    let m = Mounted::new(world.path(), &[]);
    m.ok("echo default:mese > $MNT/node/0,0,0");
    // While mounted, the map is open: refused.
    let (ok, _, err) = worldfs(&["undo", "--last", "1"], world.path());
    assert!(!ok && err.contains("is open in"), "{err}");
    drop(m);
    // Someone else (no journal) changes the block: a conflict, refused.
    let m = Mounted::new(world.path(), &["nojournal"]);
    m.ok("echo default:wood > $MNT/node/0,0,0");
    drop(m);
    let before = all_blocks(world.path());
    let (ok, _, err) = worldfs(&["undo", "--last", "1"], world.path());
    assert!(!ok && err.contains("changed outside the journal") && err.contains("--force"), "{err}");
    assert_eq!(all_blocks(world.path()), before);
    let (ok, _, err) = worldfs(&["undo", "--last", "1", "--force"], world.path());
    assert!(ok, "{err}");
    assert_ne!(all_blocks(world.path()), before);
}

#[test]
fn nojournal_mounts_keep_no_journal_and_prune_bounds_it() {
    require_fuse!("nojournal_mounts_keep_no_journal_and_prune_bounds_it");
    let world = tempfile::tempdir().unwrap();
    worldfs::worlds::luanti::demo::write_demo(world.path()).unwrap();
    let journal = world.path().join("worldfs-journal.sqlite");
    let m = Mounted::new(world.path(), &["nojournal"]);
    m.ok("echo default:mese > $MNT/node/0,0,0");
    drop(m);
    assert!(!journal.exists());
    let (ok, _, err) = worldfs(&["undo"], world.path());
    assert!(!ok && err.contains("no undo journal"), "{err}");

    let m = Mounted::new(world.path(), &[]);
    m.ok("for i in $(seq 0 14); do echo default:mese > $MNT/node/$i,5,0; echo default:goldblock > $MNT/node/$i,5,0; done");
    drop(m);
    let (_, list, _) = worldfs(&["undo", "--all"], world.path());
    assert_eq!(list.lines().count(), 31, "{list}");
    let out = Command::new(env!("CARGO_BIN_EXE_worldfs"))
        .args(["journal", "prune"])
        .arg(world.path())
        .args(["--max-mb", "0"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("dropped 30 change(s)"), "{text}");
    let (_, list, _) = worldfs(&["undo"], world.path());
    assert!(list.contains("the journal is empty"), "{list}");
}
