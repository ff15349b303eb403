//! A crash in the middle of a transaction leaves a hot `map.sqlite-journal`
//! that SQLite must roll back (writing the map) before anything can be
//! read. Read-only opens (`worldfs check`, `mount -o ro`) say so and what
//! to do; `worldfs check --repair` rolls it back.

use crate::common;

use common::mount::Mounted;
use std::path::Path;
use std::process::Command;

/// A world as a crash leaves it: a transaction that had already written
/// some of its pages into the map, and the journal that undoes them.
fn crashed_world() -> tempfile::TempDir {
    let world = common::demo_world();
    let crashed = tempfile::tempdir().unwrap();
    let c = rusqlite::Connection::open(world.path().join("map.sqlite")).unwrap();
    // A tiny page cache makes SQLite spill the changed pages into the map
    // before the commit, as a large transaction does.
    c.execute_batch("PRAGMA cache_size = 1; BEGIN; UPDATE blocks SET data = data || zeroblob(3000);").unwrap();
    for f in std::fs::read_dir(world.path()).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), crashed.path().join(f.file_name())).unwrap();
    }
    c.execute_batch("ROLLBACK").unwrap();
    assert!(std::fs::metadata(crashed.path().join("map.sqlite-journal")).unwrap().len() > 0);
    crashed
}

fn worldfs(args: &[&str], world: &Path) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_worldfs")).args(args).arg(world).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every block's bytes, read through a writable connection on a copy (so
/// the copy's hot journal is rolled back first, as SQLite does).
fn blocks_after_rollback(world: &Path) -> Vec<(i64, Vec<u8>)> {
    let copy = tempfile::tempdir().unwrap();
    for f in ["map.sqlite", "map.sqlite-journal"] {
        if world.join(f).exists() {
            std::fs::copy(world.join(f), copy.path().join(f)).unwrap();
        }
    }
    let c = rusqlite::Connection::open(copy.path().join("map.sqlite")).unwrap();
    let mut s = c.prepare("SELECT pos, data FROM blocks ORDER BY pos").unwrap();
    s.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

#[test]
fn a_hot_journal_is_explained_and_check_repair_rolls_it_back() {
    let w = crashed_world();
    let map_before = std::fs::read(w.path().join("map.sqlite")).unwrap();
    let expected = blocks_after_rollback(w.path());
    // check: refused, with what it is and what to do; nothing written.
    let (ok, _, err) = worldfs(&["check"], w.path());
    assert!(!ok);
    assert!(err.contains("map.sqlite-journal holds a transaction that a crash interrupted (a hot journal)"), "{err}");
    assert!(err.contains("worldfs check --repair"), "{err}");
    assert_eq!(std::fs::read(w.path().join("map.sqlite")).unwrap(), map_before);
    // mount -o ro: the same, before anything is mounted.
    let mnt = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_worldfs"))
        .args(["mount", "-o", "ro"])
        .arg(w.path())
        .arg(mnt.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("(a hot journal)") && err.contains("--repair"), "{err}");
    assert_eq!(std::fs::read(w.path().join("map.sqlite")).unwrap(), map_before);
    // check --repair rolls it back: the blocks as before the transaction.
    let (ok, out, err) = worldfs(&["check", "--repair"], w.path());
    assert!(ok, "{err}");
    assert!(err.contains("rolled back the interrupted transaction"), "{err}");
    assert!(out.contains("corrupt: 0"), "{out}");
    assert!(!w.path().join("map.sqlite-journal").exists());
    assert_eq!(blocks_after_rollback(w.path()), expected);
    let (ok, _, err) = worldfs(&["check", "--repair"], w.path());
    assert!(ok && err.contains("no interrupted transaction"), "{err}");
}

#[test]
fn read_only_mount_works_after_check_repair() {
    require_fuse!("read_only_mount_works_after_check_repair");
    let w = crashed_world();
    let (ok, _, err) = worldfs(&["check", "--repair"], w.path());
    assert!(ok, "{err}");
    let m = Mounted::new(w.path(), &["ro"]);
    assert!(m.ok("cat $MNT/blocks/0,0,0/info").contains("version = 29"));
}

/// The same for the world's other SQLite files (players.sqlite here): a
/// read-only read says what it is, and `check --repair` rolls it back.
#[test]
fn a_hot_journal_of_players_sqlite_is_explained_and_rolled_back() {
    use worldfs_store::records::{Collection, RecordStore, sqlite::SqliteRecords};
    let w = common::demo_world();
    let players = w.path().join("players.sqlite");
    let c = rusqlite::Connection::open(&players).unwrap();
    c.execute_batch("CREATE TABLE player (name VARCHAR(60) NOT NULL PRIMARY KEY, data BLOB);").unwrap();
    c.execute_batch("INSERT INTO player VALUES ('alice', zeroblob(9000)), ('bob', zeroblob(9000));").unwrap();
    c.execute_batch("PRAGMA cache_size = 1; BEGIN; UPDATE player SET data = data || zeroblob(9000);").unwrap();
    let crashed = tempfile::tempdir().unwrap();
    for f in std::fs::read_dir(w.path()).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), crashed.path().join(f.file_name())).unwrap();
    }
    c.execute_batch("ROLLBACK").unwrap();
    let journal = crashed.path().join("players.sqlite-journal");
    assert!(std::fs::metadata(&journal).unwrap().len() > 0);
    let ro = SqliteRecords::new(crashed.path(), Collection::Players, true, None);
    let err = ro.names().unwrap_err().to_string();
    assert!(err.contains("players.sqlite-journal holds a transaction that a crash interrupted"), "{err}");
    assert!(err.contains("before players.sqlite can be read") && err.contains("--repair"), "{err}");
    drop(ro);
    let (ok, _, err) = worldfs(&["check", "--repair"], crashed.path());
    assert!(ok, "{err}");
    assert!(
        err.contains("rolled back the interrupted transaction in") && err.contains("players.sqlite-journal"),
        "{err}"
    );
    assert!(!journal.exists());
    let n: i64 = rusqlite::Connection::open(crashed.path().join("players.sqlite"))
        .unwrap()
        .query_row("SELECT sum(length(data)) FROM player", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 18000, "the interrupted update is rolled back");
}
