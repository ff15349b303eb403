//! A map store in memory, with failure injection: for tests of the core
//! and the commit path that need a store which fails on demand (busy, full,
//! unreachable, conflicting) and exactly when told, without a database.
//! It keeps the same promises as the real stores: ordered, resumable
//! listings; all-or-nothing transactions with `Change::Expect` checked
//! first; an undo journal recorded in the same transaction.

use super::{BlockPos, Change, MapStore, Note, Result, StoreError};
use parking_lot::Mutex;
use std::collections::BTreeMap;

/// One journaled transaction: what it was, and each block's bytes before.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryJournalEntry {
    /// [`Note::what`] of the transaction.
    pub what: String,
    /// Each changed block's bytes before (None: it did not exist), in change order.
    pub before: Vec<(BlockPos, Option<Vec<u8>>)>,
}

/// Decides whether the next transaction fails (given its changes).
pub type FailRule = Box<dyn FnMut(&[Change]) -> Option<StoreError> + Send>;

/// A map held in memory (see the module doc).
#[derive(Default)]
pub struct MemoryStore {
    blocks: Mutex<BTreeMap<BlockPos, Vec<u8>>>,
    journal: Mutex<Vec<MemoryJournalEntry>>,
    fail: Mutex<Option<FailRule>>,
    version: std::sync::atomic::AtomicU64,
    read_only: bool,
    /// When each block was last written (`MapStore::written_after`), and
    /// the last number given.
    written: Mutex<(std::collections::HashMap<BlockPos, i64>, i64)>,
}

impl MemoryStore {
    /// An empty store that never fails.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// A store holding `blocks`.
    pub fn with_blocks(blocks: impl IntoIterator<Item = (BlockPos, Vec<u8>)>) -> MemoryStore {
        let s = MemoryStore::new();
        s.blocks.lock().extend(blocks);
        s
    }

    /// From now on every transaction asks `rule` whether it fails (and
    /// with what); nothing of a failed transaction is applied.
    pub fn fail_when(&self, rule: impl FnMut(&[Change]) -> Option<StoreError> + Send + 'static) {
        *self.fail.lock() = Some(Box::new(rule));
    }

    /// The next `n` transactions fail with `error`, then they succeed.
    pub fn fail_next(&self, n: usize, error: StoreError) {
        let mut left = n;
        self.fail_when(move |_| {
            (left > 0).then(|| {
                left -= 1;
                error.clone()
            })
        });
    }

    /// Transactions succeed again.
    pub fn heal(&self) {
        *self.fail.lock() = None;
    }

    /// Every block, in key order.
    pub fn snapshot(&self) -> BTreeMap<BlockPos, Vec<u8>> {
        self.blocks.lock().clone()
    }

    /// Every journaled transaction, oldest first.
    pub fn journal(&self) -> Vec<MemoryJournalEntry> {
        self.journal.lock().clone()
    }

    /// A change made by "another process": not journaled, no failure rule.
    pub fn put_behind_the_back(&self, pos: BlockPos, blob: Vec<u8>) {
        self.blocks.lock().insert(pos, blob);
        self.mark_written(pos);
        self.version.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// A change by another process that rewrites the block in place,
    /// unseen by `written_after` (as SQLite's plain UPDATE by another tool).
    pub fn update_in_place_behind_the_back(&self, pos: BlockPos, blob: Vec<u8>) {
        self.blocks.lock().insert(pos, blob);
        self.version.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// A block deleted by another process.
    pub fn delete_behind_the_back(&self, pos: BlockPos) {
        self.blocks.lock().remove(&pos);
        self.written.lock().0.remove(&pos);
        self.version.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    fn mark_written(&self, pos: BlockPos) {
        let mut w = self.written.lock();
        w.1 += 1;
        let n = w.1;
        w.0.insert(pos, n);
    }

    fn after(&self, after: Option<BlockPos>, limit: usize) -> Vec<(BlockPos, Vec<u8>)> {
        let blocks = self.blocks.lock();
        let range = match after {
            Some(p) => blocks.range((std::ops::Bound::Excluded(p), std::ops::Bound::Unbounded)),
            None => blocks.range(..),
        };
        range.take(limit).map(|(p, b)| (*p, b.clone())).collect()
    }
}

impl MapStore for MemoryStore {
    fn describe(&self) -> String {
        "memory".into()
    }

    fn get(&self, pos: BlockPos) -> Result<Option<Vec<u8>>> {
        Ok(self.blocks.lock().get(&pos).filter(|b| !b.is_empty()).cloned())
    }

    fn list_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<BlockPos>> {
        Ok(self.after(after, limit).into_iter().map(|(p, _)| p).collect())
    }

    fn scan_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        Ok(self.after(after, limit))
    }

    fn apply(&self, changes: &[Change], note: &Note) -> Result<()> {
        if self.read_only {
            return Err(StoreError::ReadOnly);
        }
        if let Some(rule) = self.fail.lock().as_mut()
            && let Some(e) = rule(changes)
        {
            return Err(e);
        }
        let mut blocks = self.blocks.lock();
        if let Some(e) = super::unmet_expectation(changes, |p| Ok(blocks.get(&p).cloned()))? {
            return Err(e);
        }
        let mut before = Vec::new();
        for c in changes {
            match c {
                Change::Put(p, b) => {
                    before.push((*p, blocks.insert(*p, b.clone())));
                    self.mark_written(*p);
                }
                Change::Delete(p) => {
                    before.push((*p, blocks.remove(p)));
                    self.written.lock().0.remove(p);
                }
                Change::Expect(..) => {}
            }
        }
        self.journal.lock().push(MemoryJournalEntry { what: note.what.clone(), before });
        self.version.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    fn count(&self) -> Result<u64> {
        Ok(self.blocks.lock().len() as u64)
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn data_version(&self) -> Option<u64> {
        Some(self.version.load(std::sync::atomic::Ordering::SeqCst))
    }

    fn write_mark(&self) -> Result<Option<super::WriteMark>> {
        Ok(Some(super::WriteMark { row: self.written.lock().1, block: None, check: 0 }))
    }

    /// A model that never gives a number twice: the mark's row is always kept.
    fn written_after(&self, mark: &super::WriteMark, after: i64, limit: usize) -> Result<Option<super::Written>> {
        let blocks = self.blocks.lock();
        let w = self.written.lock();
        let mut since: Vec<(i64, BlockPos)> = w.0.iter().filter(|(_, n)| **n > after).map(|(p, n)| (*n, *p)).collect();
        since.sort_unstable();
        let last = since.len() < limit;
        since.truncate(limit);
        Ok(Some(super::Written {
            blocks: since.iter().map(|(n, p)| (*n, *p, blocks.get(p).cloned().unwrap_or_default())).collect(),
            end: last.then(|| super::WrittenEnd {
                count: blocks.len() as u64,
                mark: super::WriteMark { row: w.1, block: None, check: 0 },
                mark_row_kept: Some(mark.row <= w.1),
            }),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_apply_nothing_and_expectations_hold() {
        let (a, b) = (BlockPos::new(1, 0, 0), BlockPos::new(2, 0, 0));
        let s = MemoryStore::with_blocks([(a, vec![1])]);
        s.fail_next(1, StoreError::Full("test".into()));
        assert!(matches!(s.apply(&[Change::Put(b, vec![2])], &Note::new("x")), Err(StoreError::Full(_))));
        assert_eq!(s.get(b).unwrap(), None);
        s.apply(&[Change::Put(b, vec![2])], &Note::new("x")).unwrap();
        assert!(matches!(
            s.apply(&[Change::Expect(a, Some(vec![9])), Change::Delete(b)], &Note::default()),
            Err(StoreError::Conflict(_))
        ));
        assert_eq!(s.get(b).unwrap(), Some(vec![2]));
        assert_eq!(s.list_after(Some(a), 10).unwrap(), vec![b]);
        assert_eq!(s.journal(), vec![MemoryJournalEntry { what: "x".into(), before: vec![(b, None)] }]);
    }
}
