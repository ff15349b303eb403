//! The integration test binary's allocator: the system's, counting what
//! each thread holds and the most it held at once, so that a test can
//! measure the memory a call needs on its own thread while other tests run
//! on theirs ([`measured`]), and what a thread holds counted as glibc's
//! malloc chunks ([`chunks_held`]). Allocations of C code (zstd, zlib, SQLite) are
//! not counted; their windows are bounded by the libraries.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::{Duration, Instant};

struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    static CHUNKS: Cell<isize> = const { Cell::new(0) };
}

/// The bytes glibc's malloc uses for a request of `size`: the request
/// plus its header, rounded up to 16 bytes, at least 32.
fn chunk(size: usize) -> isize {
    ((size + 8 + 15) & !15).max(32) as isize
}

fn track(old: usize, new: usize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + new as isize - old as isize;
        live.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
    let chunks = |s: usize| if s == 0 { 0 } else { chunk(s) };
    let _ = CHUNKS.try_with(|c| c.set(c.get() + chunks(new) - chunks(old)));
}

// SAFETY: every call is passed on to the system allocator unchanged; the
// counting only adds to thread-locals (and does nothing once the thread's
// locals are gone).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: the caller keeps GlobalAlloc's contract, which System's is.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            track(0, l.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: the caller keeps GlobalAlloc's contract, which System's is.
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            track(0, l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: the caller keeps GlobalAlloc's contract, which System's is.
        unsafe { System.dealloc(p, l) };
        track(l.size(), 0);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // SAFETY: the caller keeps GlobalAlloc's contract, which System's is.
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            track(l.size(), new);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Run `f`; return its result, the most memory this thread held at once
/// beyond what it held before, and the time it took.
pub fn measured<T>(f: impl FnOnce() -> T) -> (T, usize, Duration) {
    let base = LIVE.with(|l| l.get());
    PEAK.with(|p| p.set(base));
    let t = Instant::now();
    let r = f();
    let took = t.elapsed();
    let peak = PEAK.with(|p| p.get());
    (r, (peak - base).max(0) as usize, took)
}

/// What this thread holds now, counted as malloc chunks (see `chunk`).
pub fn chunks_held() -> isize {
    CHUNKS.with(|c| c.get())
}
