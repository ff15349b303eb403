//! The block cache's memory budget counts what it really holds: blocks of
//! real worlds are loaded, decoded and every file rendered, and the bytes
//! the cache says it holds are compared with what the allocator handed out
//! for it on the measuring thread (counted as glibc malloc chunks by the
//! test binary's allocator, `common::alloc`; the cache does its work on the
//! calling thread).

use crate::common;

use std::time::Duration;
use worldfs::worlds::luanti::cache::BlockCache;
use worldfs_store::MapStore;
use worldfs_store::sqlite::SqliteStore;

fn measure(world: &std::path::Path, limit: usize) -> (usize, isize) {
    let store = SqliteStore::open(&world.join("map.sqlite"), true).unwrap();
    let positions = store.list_after(None, limit).unwrap();
    let cache = BlockCache::new(usize::MAX / 4, Duration::from_secs(3600));
    // Warm up whatever the store allocates once (statements, buffers).
    let _ = store.get(positions[0]).unwrap();
    let before = common::alloc::chunks_held();
    for p in &positions {
        let l = cache.get(*p, &store).unwrap().unwrap();
        for f in l.files() {
            let _ = l.file(*f);
        }
        // counted again now that its files exist
        cache.get(*p, &store).unwrap();
    }
    let real = common::alloc::chunks_held() - before;
    (cache.bytes(), real)
}

#[test]
fn the_cache_counts_the_memory_it_holds() {
    let mut worlds = vec![];
    let demo = common::demo_world();
    worlds.push(demo.path().to_path_buf());
    let copies: Vec<tempfile::TempDir> = common::real_sqlite_worlds("the_cache_counts_the_memory_it_holds")
        .iter()
        .map(|w| common::copy_world(w))
        .collect();
    worlds.extend(copies.iter().map(|c| c.path().to_path_buf()));
    for w in &worlds {
        let (counted, real) = measure(w, 150);
        let ratio = real as f64 / counted as f64;
        eprintln!("{}: counted {counted} B, allocated {real} B (x{ratio:.2})", w.display());
        assert!((0.8..=1.25).contains(&ratio), "{}: the cache counts {counted} B but holds {real} B", w.display());
    }
}
