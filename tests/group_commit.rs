//! Grouped commits (`-o group_ms=N`): closes validate at once, blocks are
//! written together later, fsync and unmount wait for the write, and a
//! storage failure is reported and retried rather than lost.

use crate::common;

use common::mount::Mounted;
use std::path::Path;
use worldfs_codec::luanti::block::Block;
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, MapStore};

/// Shell code: fsync a file through the mount (`sync` does not reach FUSE).
const FSYNC: &str =
    "fsync() { python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' \"$1\"; }; ";

fn names_in_db(world: &Path, pos: BlockPos) -> Vec<String> {
    let blob = SqliteStore::open(&world.join("map.sqlite"), true).unwrap().get(pos).unwrap().unwrap();
    Block::decode(&blob).unwrap().mapping.iter().map(|m| String::from_utf8_lossy(&m.name).into_owned()).collect()
}

fn journal_changes(world: &Path) -> Vec<(String, i64)> {
    let c = rusqlite::Connection::open(world.join("worldfs-journal.sqlite")).unwrap();
    let mut s = c.prepare("SELECT what, blocks FROM changes ORDER BY id").unwrap();
    s.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

#[test]
fn grouped_commits_wait_for_fsync_unmount_or_mkdir() {
    require_fuse!("grouped_commits_wait_for_fsync_unmount_or_mkdir");
    let world = tempfile::tempdir().unwrap();
    worldfs::worlds::luanti::demo::write_demo(world.path()).unwrap();
    let w = world.path();
    // A window of a minute: nothing is written by the timer in this test.
    let m = Mounted::new(w, &["group_ms=60000"]);
    let blocks: Vec<String> = m.ok("grep -l ' air$' $MNT/blocks/*/names").lines().map(String::from).collect();
    assert!(blocks.len() >= 3, "{blocks:?}");
    m.ok("sed -i 's/ air$/ default:glass/' $(grep -l ' air$' $MNT/blocks/*/names)");
    // The mount shows the change at once; the database does not have it yet.
    assert!(!m.ok("grep -l ' default:glass$' $MNT/blocks/*/names").is_empty());
    let first = BlockPos::new(-1, -1, -1);
    let first_dir = m.path(&format!("blocks/{first}/names"));
    let in_mount = std::fs::read_to_string(&first_dir).unwrap();
    let before = names_in_db(w, first);
    assert!(!journal_changes(w).iter().any(|(what, _)| what.contains("names")));
    // Bad content is still refused at close.
    let (code, _, _) =
        m.sh("python3 -c \"f = open('$MNT/blocks/0,0,0/names', 'w'); f.write('zero air\\n'); f.close()\"");
    assert_ne!(code, 0);
    // fsync of any file writes the whole group, in one journal entry.
    m.ok(&format!("{FSYNC} fsync $MNT/README"));
    let changes = journal_changes(w);
    let (what, n) = changes.last().unwrap();
    assert_eq!(*n as usize, blocks.len(), "{what}");
    assert!(what.contains("writes: blocks/"), "{what}");
    if in_mount.contains("default:glass") {
        assert_ne!(names_in_db(w, first), before);
    }

    // mkdir of a block writes what is pending first.
    m.ok("echo default:mese > $MNT/node/0,0,0 && mkdir $MNT/blocks/30,0,0");
    assert_eq!(journal_changes(w).len(), changes.len() + 2);

    // Unmount writes the rest.
    m.ok("echo default:goldblock > $MNT/node/0,0,0");
    drop(m);
    let changes = journal_changes(w);
    assert_eq!(changes.last().unwrap().0, "node/0,0,0");
}

#[test]
fn grouped_commit_failures_are_reported_and_retried() {
    require_fuse!("grouped_commit_failures_are_reported_and_retried");
    let world = tempfile::tempdir().unwrap();
    worldfs::worlds::luanti::demo::write_demo(world.path()).unwrap();
    let w = world.path();
    let m = Mounted::new(w, &["group_ms=60000"]);
    m.ok("echo default:mese > $MNT/node/0,0,0");
    // Another process holds the database locked: the write cannot happen.
    let lock = rusqlite::Connection::open(w.join("map.sqlite")).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let (code, _, err) = m.sh(&format!("{FSYNC} fsync $MNT/README"));
    assert_ne!(code, 0, "fsync succeeded while the group could not be written");
    assert!(err.contains("Input/output error"), "{err}");
    let errors = m.ok("cat $MNT/write-errors");
    // The refusal is SQLite's lock, or (when the guard looked at /proc
    // since the connection was opened, as on a loaded machine) the guard's.
    let why = errors.contains("locked") || errors.contains("the map database is open in");
    assert!(errors.contains("not written yet (retrying)") && why, "{errors}");
    // Still shown, and written once the lock is gone (and the guard, which
    // looks again every 500 ms, has seen the connection closed).
    assert!(m.ok("cat $MNT/node/0,0,0").starts_with("default:mese"));
    lock.execute_batch("ROLLBACK").unwrap();
    drop(lock);
    let start = std::time::Instant::now();
    while m.sh(&format!("{FSYNC} fsync $MNT/README")).0 != 0 {
        assert!(start.elapsed() < std::time::Duration::from_secs(10), "the group was not written after the lock");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    drop(m);
    let pos = BlockPos::new(0, 0, 0);
    assert!(names_in_db(w, pos).contains(&"default:mese".to_string()));
}
