//! Blocks loaded ahead of a walk (src/worlds/luanti/ahead.rs): a walk over
//! `blocks/*/names` in the order of the names finds the next blocks loaded
//! by a thread of their own, and a block loaded ahead that another writer
//! (a running server) changes meanwhile shows the change within the TTL.

use crate::common;

use common::core_fs::{Source, open_core};
use std::ffi::OsStr;
use std::time::Duration;
use worldfs::fs::{ROOT, WorldFs, stats};
use worldfs_codec::luanti::{Block, MappingEntry};
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, Change, MapStore, Note};

/// Blocks `(x, 9, z)` for x, z in 0..n: stone with one node of `name`.
fn stone_with(name: &str) -> Vec<u8> {
    let mut b = Block::new_air(29);
    b.mapping.push(MappingEntry { id: 1, name: b"default:stone".to_vec() });
    b.mapping.push(MappingEntry { id: 2, name: name.as_bytes().to_vec() });
    b.param0.iter_mut().for_each(|n| *n = 1);
    b.param0[0] = 2;
    b.encode().unwrap()
}

fn names_of(fs: &WorldFs, blocks: u64, block: &str) -> String {
    let dir = fs.lookup(blocks, OsStr::new(block)).unwrap().ino;
    let names = fs.lookup(dir, OsStr::new("names")).unwrap().ino;
    String::from_utf8(fs.read_unopened(names, 0, 1 << 20).unwrap()).unwrap()
}

fn ahead_count() -> u64 {
    stats::stats().phase(stats::Phase::Ahead).0
}

#[test]
fn a_walk_in_name_order_is_loaded_ahead_and_changes_still_show() {
    let world = common::demo_world();
    let store = SqliteStore::open(&world.path().join("map.sqlite"), false).unwrap();
    let added: Vec<Change> = (0..12i16)
        .flat_map(|x| (0..12i16).map(move |z| (x, z)))
        .map(|(x, z)| Change::Put(BlockPos::new(x, 9, z), stone_with(&format!("test:ore_{x}_{z}"))))
        .collect();
    store.apply(&added, &Note::default()).unwrap();
    let ttl = Duration::from_millis(200);
    let opts = worldfs::fs::Options { read_only: true, ttl, ..worldfs::fs::Options::default() };
    let fs = open_core(Source::Directory(world.path()), opts);
    let blocks = fs.lookup(ROOT, OsStr::new("blocks")).unwrap().ino;
    let mut listed = Vec::new();
    fs.readdir(blocks, 0, false, &mut |e, _| {
        listed.push(e.name.to_string_lossy().into_owned());
        false
    })
    .unwrap();
    let mut walk: Vec<String> = listed.into_iter().filter(|n| n.contains(",9,")).collect();
    walk.sort(); // as `ls` in the C locale
    assert_eq!(walk.len(), 144);

    // A walk in order, at a program's pace (the thread lists the blocks at
    // the first look-up, and follows from the next ones it sees in order):
    // it loads what comes next.
    let before = ahead_count();
    for b in &walk[..20] {
        assert!(names_of(&fs, blocks, b).contains("test:ore_"), "{b}");
        std::thread::sleep(Duration::from_millis(5));
    }
    common::wait_until("blocks loaded ahead of the walk", || ahead_count() >= before + 20);

    // A block loaded ahead (a few places on) is changed by another writer.
    let next = &walk[22];
    let pos: BlockPos = worldfs_store::parse_triple::<i16>(next).map(|(x, y, z)| BlockPos::new(x, y, z)).unwrap();
    store.apply(&[Change::Put(pos, stone_with("default:goldblock"))], &Note::default()).unwrap();
    std::thread::sleep(ttl + Duration::from_millis(100));
    for b in &walk[20..=22] {
        names_of(&fs, blocks, b);
    }
    let shown = names_of(&fs, blocks, next);
    assert!(shown.contains("default:goldblock") && !shown.contains("test:ore_"), "{next}: {shown}");
}
