//! Grouped commits (`-o group_ms=N`): a validated block waits up to N ms in
//! memory, so that a bulk edit (`sed -i` over thousands of files) writes
//! many blocks per transaction instead of paying a transaction, with its
//! fsyncs, per file.
//!
//! What changes for the user: `close()` still validates and still refuses
//! bad content, and every file shows the new state at once (reads look here
//! before the store); but the change reaches the database when the group is
//! written: after N ms, when many blocks are pending, at `fsync()` (which
//! returns only after everything before it is written), before `mkdir` or
//! `rmdir` of a block, and at unmount. A storage failure then cannot be
//! returned by the `close()` that made the change: it is logged, shown in
//! `write-errors`, returned by the next `fsync()`, and the group is retried.
//! If it still fails at unmount, the changes are kept in a file and written
//! by the next writable mount (`unwritten.rs`): a change whose `close()`
//! succeeded is never dropped.
//! Each group is one transaction (and one journal entry): after a crash a
//! group is wholly there or wholly absent.

use parking_lot::{Condvar, Mutex};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use worldfs_store::{BlockPos, Change, MapStore, Note, StoreError};

/// Write a group at once when it holds this many blocks.
const MAX_PENDING_BLOCKS: usize = 2000;

struct Pending {
    blob: Vec<u8>,
    what: Vec<String>,
    /// Bumped on every change, so a flush removes only what it wrote.
    generation: u64,
}

#[derive(Default)]
struct Inner {
    pending: BTreeMap<BlockPos, Pending>,
    generation: u64,
    oldest: Option<Instant>,
    /// The last flush failure, until a flush succeeds.
    failing: Option<String>,
}

pub(super) struct CommitQueue {
    delay: Duration,
    inner: Mutex<Inner>,
    wake: Condvar,
    /// One flush at a time: their transactions must apply in order.
    flushing: Mutex<()>,
}

impl CommitQueue {
    pub(crate) fn new(delay: Duration) -> CommitQueue {
        CommitQueue { delay, inner: Mutex::new(Inner::default()), wake: Condvar::new(), flushing: Mutex::new(()) }
    }

    pub(crate) fn enabled(&self) -> bool {
        !self.delay.is_zero()
    }

    /// The newest bytes of a block not yet in the store.
    pub(crate) fn get(&self, pos: BlockPos) -> Option<Vec<u8>> {
        let inner = self.inner.lock();
        if inner.pending.is_empty() {
            return None;
        }
        inner.pending.get(&pos).map(|p| p.blob.clone())
    }

    pub(crate) fn len(&self) -> usize {
        self.inner.lock().pending.len()
    }

    /// Queue a block's new bytes.
    pub(crate) fn push(&self, pos: BlockPos, blob: Vec<u8>, what: &str) {
        let mut inner = self.inner.lock();
        inner.generation += 1;
        let generation = inner.generation;
        inner.oldest.get_or_insert_with(Instant::now);
        let e = inner.pending.entry(pos).or_insert_with(|| Pending { blob: Vec::new(), what: Vec::new(), generation });
        e.blob = blob;
        e.generation = generation;
        if !e.what.iter().any(|w| w == what) {
            e.what.push(what.to_string());
        }
        let full = inner.pending.len() >= MAX_PENDING_BLOCKS;
        drop(inner);
        if full {
            self.wake.notify_all();
        }
    }

    /// Write everything pending now, in one transaction. `check` runs first
    /// (the server guard) and can refuse.
    pub(crate) fn flush(&self, store: &dyn MapStore, check: impl Fn() -> Result<(), String>) -> Result<usize, String> {
        let _one = self.flushing.lock();
        let batch: Vec<(BlockPos, Vec<u8>, u64, Vec<String>)> = {
            let inner = self.inner.lock();
            inner.pending.iter().map(|(p, e)| (*p, e.blob.clone(), e.generation, e.what.clone())).collect()
        };
        if batch.is_empty() {
            return Ok(0);
        }
        let result = check().and_then(|_| {
            let changes: Vec<Change> = batch.iter().map(|(p, b, _, _)| Change::Put(*p, b.clone())).collect();
            store.apply(&changes, &Note::new(describe(&batch))).map_err(|e: StoreError| e.to_string())
        });
        let mut inner = self.inner.lock();
        match &result {
            Ok(()) => {
                for (p, _, generation, _) in &batch {
                    if inner.pending.get(p).is_some_and(|e| e.generation == *generation) {
                        inner.pending.remove(p);
                    }
                }
                inner.failing = None;
                inner.oldest = if inner.pending.is_empty() { None } else { Some(Instant::now()) };
            }
            Err(e) => inner.failing = Some(e.clone()),
        }
        result.map(|_| batch.len())
    }

    /// For the writer thread: wait until a group is due (or `max_wait`
    /// passes). Returns whether something is pending.
    pub(crate) fn wait_due(&self, max_wait: Duration) -> bool {
        let mut inner = self.inner.lock();
        let due = |i: &Inner| {
            i.pending.len() >= MAX_PENDING_BLOCKS
                || i.oldest.is_some_and(|t| {
                    // After a failure, retry once a second, not every delay.
                    let wait = if i.failing.is_some() { self.delay.max(Duration::from_secs(1)) } else { self.delay };
                    t.elapsed() >= wait
                })
        };
        if due(&inner) {
            return true;
        }
        self.wake.wait_for(&mut inner, max_wait);
        due(&inner)
    }

    /// Every change not yet written: (block, new bytes, what was written).
    pub(crate) fn pending(&self) -> Vec<(BlockPos, Vec<u8>, String)> {
        let inner = self.inner.lock();
        inner.pending.iter().map(|(p, e)| (*p, e.blob.clone(), e.what.join(", "))).collect()
    }

    /// The last failure, if the pending changes could not be written.
    pub(crate) fn failing(&self) -> Option<String> {
        self.inner.lock().failing.clone()
    }
}

/// The journal's description of a group.
fn describe(batch: &[(BlockPos, Vec<u8>, u64, Vec<String>)]) -> String {
    let whats: Vec<&str> = batch.iter().flat_map(|(_, _, _, w)| w.iter().map(String::as_str)).collect();
    match whats.len() {
        1 => whats[0].to_string(),
        n if n <= 3 => whats.join(", "),
        n => format!("{n} writes: {}, {}, … {}", whats[0], whats[1], whats[n - 1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldfs_store::sqlite::{Schema, SqliteStore};

    #[test]
    fn groups_are_one_transaction_and_keep_newer_writes() {
        let d = tempfile::tempdir().unwrap();
        let st = SqliteStore::create(&d.path().join("map.sqlite"), Schema::Split).unwrap();
        let q = CommitQueue::new(Duration::from_millis(50));
        let p = BlockPos::new(1, 2, 3);
        q.push(p, vec![1], "a");
        q.push(p, vec![2], "b");
        q.push(BlockPos::new(0, 0, 0), vec![9], "c");
        assert_eq!(q.get(p), Some(vec![2]));
        assert_eq!(st.get(p).unwrap(), None, "nothing written before the flush");
        assert_eq!(q.flush(&st, || Ok(())), Ok(2));
        assert_eq!(st.get(p).unwrap(), Some(vec![2]));
        assert_eq!(q.len(), 0);
        // A refused flush keeps everything pending and says why.
        q.push(p, vec![3], "d");
        assert!(q.flush(&st, || Err("a server runs".into())).is_err());
        assert_eq!(q.failing().as_deref(), Some("a server runs"));
        assert_eq!(q.get(p), Some(vec![3]));
        assert_eq!(st.get(p).unwrap(), Some(vec![2]));
        assert_eq!(q.flush(&st, || Ok(())), Ok(1));
        assert_eq!(q.failing(), None);
    }

    #[test]
    fn due_after_the_delay() {
        let q = CommitQueue::new(Duration::from_millis(30));
        assert!(!q.wait_due(Duration::from_millis(1)));
        q.push(BlockPos::new(0, 0, 0), vec![1], "a");
        let start = Instant::now();
        while !q.wait_due(Duration::from_millis(5)) {
            assert!(start.elapsed() < Duration::from_secs(5));
        }
        assert!(start.elapsed() >= Duration::from_millis(25));
    }
}
