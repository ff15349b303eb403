//! Visiting every block of a map on all cores: pages are read from the
//! store in key order while the previous page is split across threads.
//! Used by `worldfs check` and the world-wide name set.

use crate::store::{BlockPos, MapStore};

/// Blocks read from the store per query.
const PAGE: usize = 1000;

/// How many threads decode.
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8)
}

/// Call `work` on slices of every block of `store` (on several threads at
/// once), and `merge` with each result in key order; `progress` gets the
/// number of blocks done after each page.
pub fn scan<R: Send>(
    store: &dyn MapStore,
    work: impl Fn(&[(BlockPos, Vec<u8>)]) -> R + Sync,
    mut merge: impl FnMut(R),
    progress: &mut dyn FnMut(u64),
) -> Result<(), String> {
    let threads = threads();
    let mut done = 0u64;
    let mut page = store.scan_after(None, PAGE).map_err(|e| e.to_string())?;
    let work = &work;
    while let Some(&(last, _)) = page.last() {
        let (next, parts) = std::thread::scope(|s| {
            let next = s.spawn(move || store.scan_after(Some(last), PAGE));
            let parts: Vec<_> =
                page.chunks(page.len().div_ceil(threads)).map(|chunk| s.spawn(move || work(chunk))).collect();
            let parts: Vec<R> = parts.into_iter().map(|h| h.join().expect("scan thread")).collect();
            (next.join().expect("store reader thread"), parts)
        });
        done += page.len() as u64;
        parts.into_iter().for_each(&mut merge);
        progress(done);
        page = next.map_err(|e| e.to_string())?;
    }
    Ok(())
}
