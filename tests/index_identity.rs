//! The name index kept between mounts must describe the map as it is, not
//! a map that merely has the same path and change counter (another map
//! copied over it, a WAL-mode map with no counter), and a world-wide rename
//! must reach every block holding the name whatever the kept index says.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::io::{Seek, Write};
use std::path::Path;
use std::time::Duration;
use worldfs::fs::{Options, ROOT, WorldFs};
use worldfs_codec::luanti::Block;
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, MapStore};

/// Every name of the map with its blocks, by a scan.
fn scan(world: &Path) -> BTreeMap<Vec<u8>, BTreeSet<BlockPos>> {
    let store = SqliteStore::open(&world.join("map.sqlite"), true).unwrap();
    let mut names = BTreeMap::<Vec<u8>, BTreeSet<BlockPos>>::new();
    for (pos, blob) in store.scan_after(None, 10_000_000).unwrap() {
        for (name, _) in worldfs::worlds::luanti::index::counts_of(&Block::decode(&blob).unwrap()) {
            names.entry(name).or_default().insert(pos);
        }
    }
    names
}

fn core(world: &Path, cache: &Path) -> WorldFs {
    let opts =
        Options { read_only: false, ttl: Duration::ZERO, index_dir: Some(cache.to_path_buf()), ..Options::default() };
    worldfs::open::open_world(world, opts).unwrap()
}

/// The names `MNT/names` shows.
fn shown_names(fs: &WorldFs) -> BTreeSet<Vec<u8>> {
    let ino = fs.lookup(ROOT, OsStr::new("names")).unwrap().ino;
    let text = String::from_utf8(fs.read_unopened(ino, 0, 1 << 30).unwrap()).unwrap();
    text.lines().map(|l| l.rsplitn(3, ' ').nth(2).unwrap().as_bytes().to_vec()).collect()
}

/// `mv find/FROM find/TO` through the core.
fn rename_everywhere(fs: &WorldFs, from: &str, to: &str) {
    let find = fs.lookup(ROOT, OsStr::new("find")).unwrap().ino;
    fs.rename(find, OsStr::new(from), find, OsStr::new(to), 0).unwrap();
}

/// The most common name other than air.
fn a_common_name(world: &Path) -> String {
    let names = scan(world);
    let (name, _) = names.iter().filter(|(n, _)| n.as_slice() != b"air").max_by_key(|(_, b)| b.len()).unwrap();
    String::from_utf8(name.clone()).unwrap()
}

/// Put the map `other` in place of the world's map as `cp` would (same
/// file, same inode), with the world's change counter and modification
/// time, so that only its content tells it apart.
fn copy_over_keeping_counter_and_time(world: &Path, other: &Path) {
    let map = world.join("map.sqlite");
    let old = std::fs::read(&map).unwrap();
    let mtime = std::fs::metadata(&map).unwrap().modified().unwrap();
    let mut new = std::fs::read(other).unwrap();
    // The file change counter (offset 24) and "version valid for" (92).
    new[24..28].copy_from_slice(&old[24..28]);
    new[92..96].copy_from_slice(&old[92..96]);
    let mut f = std::fs::OpenOptions::new().write(true).open(&map).unwrap();
    f.set_len(0).unwrap();
    f.rewind().unwrap();
    f.write_all(&new).unwrap();
    f.set_modified(mtime).unwrap();
}

/// A copy of the world's map with `edit` applied to it by SQLite.
fn edited_copy(world: &Path, scratch: &Path, edit: impl FnOnce(&rusqlite::Connection)) -> std::path::PathBuf {
    let copy = scratch.join("other.sqlite");
    std::fs::copy(world.join("map.sqlite"), &copy).unwrap();
    edit(&rusqlite::Connection::open(&copy).unwrap());
    copy
}

/// Every block holding `from` with it renamed to `to` (another world).
fn rename_all_by_sqlite(c: &rusqlite::Connection, from: &str, to: &str) {
    let rows: Vec<(i64, Vec<u8>)> = {
        let mut s = c.prepare("SELECT pos, data FROM blocks").unwrap();
        s.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
    };
    for (pos, blob) in rows {
        let mut b = Block::decode(&blob).unwrap();
        b.mapping.iter_mut().filter(|m| m.name == from.as_bytes()).for_each(|m| m.name = to.as_bytes().to_vec());
        c.execute("UPDATE blocks SET data = ?1 WHERE pos = ?2", rusqlite::params![b.encode().unwrap(), pos]).unwrap();
    }
}

#[test]
fn a_map_copied_over_with_an_equal_change_counter_is_indexed_afresh() {
    let world = worldfs_demo();
    let (cache, scratch) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let name = a_common_name(world.path());
    let fs = core(world.path(), cache.path());
    assert!(shown_names(&fs).contains(name.as_bytes()));
    drop(fs);
    // Another world: the same blocks, but `name` is now `other:thing`.
    let other = edited_copy(world.path(), scratch.path(), |c| rename_all_by_sqlite(c, &name, "other:thing"));
    copy_over_keeping_counter_and_time(world.path(), &other);
    let fs = core(world.path(), cache.path());
    let shown = shown_names(&fs);
    assert_eq!(shown, scan(world.path()).into_keys().collect(), "names shows the map that was there before");
    // And a rename of a name of the new map reaches all its blocks.
    rename_everywhere(&fs, "other:thing", "other:renamed");
    drop(fs);
    let names = scan(world.path());
    assert!(!names.contains_key(b"other:thing".as_slice()), "{:?}", names.keys());
    assert!(names.contains_key(b"other:renamed".as_slice()));
}

#[test]
fn a_wal_map_changed_while_unmounted_is_indexed_afresh() {
    let world = worldfs_demo();
    let cache = tempfile::tempdir().unwrap();
    let map = world.path().join("map.sqlite");
    let mode: String =
        rusqlite::Connection::open(&map).unwrap().query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    let name = a_common_name(world.path());
    let fs = core(world.path(), cache.path());
    assert!(shown_names(&fs).contains(name.as_bytes()));
    drop(fs);
    // Unmounted, another program deletes every block holding `name`.
    let gone: Vec<BlockPos> = scan(world.path())[name.as_bytes()].iter().copied().collect();
    let c = rusqlite::Connection::open(&map).unwrap();
    for p in &gone {
        c.execute("DELETE FROM blocks WHERE pos = ?1", [p.legacy_key()]).unwrap();
    }
    drop(c);
    let fs = core(world.path(), cache.path());
    assert!(!shown_names(&fs).contains(name.as_bytes()), "the index still lists the deleted blocks' name");
    assert_eq!(shown_names(&fs), scan(world.path()).into_keys().collect());
}

/// The kept index misses a block that holds the name (changed outside
/// with the counter, size and time as they were, past the blocks the
/// fingerprint samples): the rename reaches it anyway.
#[test]
fn a_world_wide_rename_reaches_blocks_the_kept_index_misses() {
    let world = worldfs_demo();
    let (cache, scratch) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let name = a_common_name(world.path());
    let fs = core(world.path(), cache.path());
    assert!(shown_names(&fs).contains(name.as_bytes()), "the index is made and kept");
    drop(fs);
    // The last block by key gets `name` by a swap with a name it holds.
    let store = SqliteStore::open(&world.path().join("map.sqlite"), true).unwrap();
    let all = store.scan_after(None, 10_000_000).unwrap();
    drop(store);
    let without = |b: &Vec<u8>| !Block::decode(b).unwrap().mapping.iter().any(|m| m.name == name.as_bytes());
    let (last, blob) = all.iter().skip(8).rev().find(|(_, b)| without(b)).expect("a block without the name");
    let mut b = Block::decode(blob).unwrap();
    let used = worldfs::worlds::luanti::index::counts_of(&b)[0].0.clone();
    b.mapping.iter_mut().filter(|m| m.name == used).for_each(|m| m.name = name.as_bytes().to_vec());
    let new = b.encode().unwrap();
    let other = edited_copy(world.path(), scratch.path(), |c| {
        c.execute("UPDATE blocks SET data = ?1 WHERE pos = ?2", rusqlite::params![new, last.legacy_key()]).unwrap();
    });
    let size = std::fs::metadata(world.path().join("map.sqlite")).unwrap().len();
    assert_eq!(std::fs::metadata(&other).unwrap().len(), size, "same size, so that only the content differs");
    copy_over_keeping_counter_and_time(world.path(), &other);
    let fs = core(world.path(), cache.path());
    rename_everywhere(&fs, &name, "other:renamed");
    drop(fs);
    let names = scan(world.path());
    assert!(!names.contains_key(name.as_bytes()), "{name} left in {:?}", names.get(name.as_bytes()));
    assert!(names["other:renamed".as_bytes()].contains(last));
}

fn worldfs_demo() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    worldfs::worlds::luanti::demo::write_demo(d.path()).unwrap();
    d
}
