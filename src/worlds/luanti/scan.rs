//! Visiting every block of a map on all cores: pages are read from the
//! store in key order while the previous page is split across threads.
//! Used by `worldfs check` and the world-wide name set.

use worldfs_store::{BlockPos, MapStore};

/// Blocks read from the store per query.
const PAGE: usize = 1000;

/// How many threads decode: one per CPU of the process, even when called
/// from a serving thread pinned to one (each such thread calls
/// `crate::sys::affinity::unpin` first).
pub(crate) fn threads() -> usize {
    crate::sys::affinity::process_cpu_count().clamp(1, 8)
}

/// Call `work` on slices of every block of `store` (on several threads at
/// once), and `merge` with each result in key order (an error from it ends
/// the scan); `progress` gets the number of blocks done after each page.
pub(crate) fn scan<R: Send>(
    store: &dyn MapStore,
    work: impl Fn(&[(BlockPos, Vec<u8>)]) -> R + Sync,
    mut merge: impl FnMut(R) -> Result<(), String>,
    progress: &mut dyn FnMut(u64),
) -> Result<(), String> {
    let threads = threads();
    let mut done = 0u64;
    let mut page = store.scan_after(None, PAGE).map_err(|e| e.to_string())?;
    let work = &work;
    // The results of the page before, merged while this page is worked on.
    let mut pending: Option<(Vec<R>, u64)> = None;
    while let Some(&(last, _)) = page.last() {
        // Small slices taken in turn: neighbouring blocks cost alike (a run
        // of air, a run of caves), so halves would leave one thread idle.
        let slices: Vec<&[(BlockPos, Vec<u8>)]> = page.chunks(page.len().div_ceil(threads * 8)).collect();
        let taken = std::sync::atomic::AtomicUsize::new(0);
        let (next, parts, merged) = std::thread::scope(|s| {
            let next = s.spawn(move || {
                crate::sys::affinity::unpin();
                store.scan_after(Some(last), PAGE)
            });
            let (slices, taken) = (&slices, &taken);
            let workers: Vec<_> = (0..threads.min(slices.len()))
                .map(|i| {
                    s.spawn(move || {
                        crate::sys::affinity::start_on(i);
                        let mut out = Vec::new();
                        loop {
                            let i = taken.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(slice) = slices.get(i) else { return out };
                            out.push((i, work(slice)));
                        }
                    })
                })
                .collect();
            let merged = match pending.take() {
                Some((before, at)) => before.into_iter().try_for_each(&mut merge).map(|()| progress(at)),
                None => Ok(()),
            };
            let mut parts: Vec<(usize, R)> =
                workers.into_iter().flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect();
            parts.sort_unstable_by_key(|p| p.0);
            let parts: Vec<R> = parts.into_iter().map(|p| p.1).collect();
            (next.join().unwrap_or_else(|e| std::panic::resume_unwind(e)), parts, merged)
        });
        merged?;
        done += page.len() as u64;
        pending = Some((parts, done));
        page = next.map_err(|e| e.to_string())?;
    }
    if let Some((before, at)) = pending {
        before.into_iter().try_for_each(&mut merge)?;
        progress(at);
    }
    Ok(())
}

/// What a function of a blob alone gave for the small blobs already seen,
/// by their bytes: a block whose blob is byte for byte one seen before
/// gets the same answer without being decompressed again. Worlds repeat
/// small blobs (the 50 000 blocks of augsburg-50k are 1 332 distinct
/// blobs: air and stone saved at one time). Bounded: at most `MAX_BYTES`
/// of blobs and answers kept, each blob at most `MAX_BLOB`; when full, it
/// starts empty again. Used by `worldfs check` and the name index's build.
pub(crate) struct ByBlob<V> {
    /// Hashed with foldhash: every block's blob is hashed here, and
    /// SipHash showed in the profile of the index build.
    seen: parking_lot::Mutex<(Seen<V>, usize)>,
}

type Seen<V> = std::collections::HashMap<Vec<u8>, V, foldhash::fast::RandomState>;

impl<V> Default for ByBlob<V> {
    fn default() -> Self {
        ByBlob { seen: parking_lot::Mutex::new((Seen::default(), 0)) }
    }
}

impl<V: Clone> ByBlob<V> {
    pub(crate) const MAX_BLOB: usize = 1024;
    pub(crate) const MAX_BYTES: usize = 4 << 20;
    /// An entry's table place (at worst 16/7 of its bytes) and the blob's
    /// allocation header.
    const ENTRY_COST: usize = 128;

    /// `f(blob)`, or what it gave for the same bytes before. `size` is
    /// what an answer holds besides the blob (its heap bytes).
    pub(crate) fn of(&self, blob: &[u8], f: impl FnOnce(&[u8]) -> V, size: impl Fn(&V) -> usize) -> V {
        if blob.len() > Self::MAX_BLOB {
            return f(blob);
        }
        if let Some(v) = self.seen.lock().0.get(blob) {
            return v.clone();
        }
        let v = f(blob);
        let cost = blob.len() + Self::ENTRY_COST + size(&v);
        let mut seen = self.seen.lock();
        if seen.1 + cost > Self::MAX_BYTES {
            // Start again: the blobs repeated here are likely those of
            // this part of the world, not the first part's.
            *seen = Default::default();
        }
        if !seen.0.contains_key(blob) {
            seen.1 += cost;
            seen.0.insert(blob.to_vec(), v.clone());
        }
        v
    }

    /// Bytes counted for what is kept (for tests).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.seen.lock().1
    }
}
