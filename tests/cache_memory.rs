//! The block cache's memory budget counts what it really holds: blocks of
//! real worlds are loaded, decoded and every file rendered, and the bytes
//! the cache says it holds are compared with what the allocator handed out
//! for it (counted as glibc malloc chunks: the request plus its header,
//! rounded up to 16 bytes, at least 32).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;
use worldfs::kinds::luanti::cache::BlockCache;
use worldfs::store::MapStore;
use worldfs::store::sqlite::SqliteStore;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

fn chunk(size: usize) -> isize {
    ((size + 8 + 15) & !15).max(32) as isize
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(chunk(l.size()), Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(chunk(l.size()), Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(chunk(new) - chunk(l.size()), Ordering::Relaxed);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn measure(world: &std::path::Path, limit: usize) -> (usize, isize) {
    let store = SqliteStore::open(&world.join("map.sqlite"), true).unwrap();
    let positions = store.list_after(None, limit).unwrap();
    let cache = BlockCache::new(usize::MAX / 4, Duration::from_secs(3600));
    // Warm up whatever the store allocates once (statements, buffers).
    let _ = store.get(positions[0]).unwrap();
    let before = LIVE.load(Ordering::Relaxed);
    for p in &positions {
        let l = cache.get(*p, &store).unwrap().unwrap();
        for f in l.files() {
            let _ = l.file(*f);
        }
        // counted again now that its files exist
        cache.get(*p, &store).unwrap();
    }
    let real = LIVE.load(Ordering::Relaxed) - before;
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
