//! Inode numbers for things that have no fixed place in the numbering:
//! the world's text files and metadata field files. Each gets
//! a number when it is first looked up. The kernel's lookup count is kept
//! (`remember`/`forget`), and entries the kernel does not hold are dropped
//! when the table grows, so its size follows what the kernel caches, not
//! what a walk over the world has visited.

use std::collections::HashMap;
use std::time::{Duration, Instant};
use worldfs_store::BlockPos;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum TableKey {
    /// A file in the world directory.
    WorldFile(String),
    /// `blocks/P/meta/X,Y,Z/fields/<key>`.
    Field { pos: BlockPos, p16: u16, key: Vec<u8> },
}

struct Entry {
    key: TableKey,
    /// How many times the kernel was given this inode and not yet told us
    /// to forget it.
    lookups: u64,
    used: Instant,
}

#[derive(Default)]
pub(crate) struct InodeTable {
    next: u64,
    by_id: HashMap<u64, Entry>,
    by_key: HashMap<TableKey, u64>,
}

/// Above this many entries, unreferenced ones are dropped.
const SWEEP_ABOVE: usize = 10_000;
/// An entry just handed out may be about to be given to the kernel: keep it.
const SWEEP_GRACE: Duration = Duration::from_secs(30);

impl InodeTable {
    /// The id of `key`, assigning one if it has none yet.
    pub(crate) fn id(&mut self, key: TableKey) -> u64 {
        if let Some(&id) = self.by_key.get(&key) {
            if let Some(e) = self.by_id.get_mut(&id) {
                e.used = Instant::now();
            }
            return id;
        }
        if self.by_id.len() > SWEEP_ABOVE {
            self.sweep();
        }
        self.next += 1;
        let id = self.next;
        self.by_id.insert(id, Entry { key: key.clone(), lookups: 0, used: Instant::now() });
        self.by_key.insert(key, id);
        id
    }

    pub(crate) fn get(&self, id: u64) -> Option<&TableKey> {
        self.by_id.get(&id).map(|e| &e.key)
    }

    /// The id of `key` if it has one (without assigning).
    pub(crate) fn find(&self, key: &TableKey) -> Option<u64> {
        self.by_key.get(key).copied()
    }

    /// The kernel was handed this id once more.
    pub(crate) fn remember(&mut self, id: u64) {
        if let Some(e) = self.by_id.get_mut(&id) {
            e.lookups += 1;
            e.used = Instant::now();
        }
    }

    /// The kernel dropped `n` references. Returns the key when the entry
    /// is now unreferenced (the caller decides whether to `remove` it).
    pub(crate) fn forget(&mut self, id: u64, n: u64) -> Option<TableKey> {
        let e = self.by_id.get_mut(&id)?;
        e.lookups = e.lookups.saturating_sub(n);
        (e.lookups == 0).then(|| e.key.clone())
    }

    pub(crate) fn remove(&mut self, id: u64) {
        if let Some(e) = self.by_id.remove(&id) {
            self.by_key.remove(&e.key);
        }
    }

    /// Drop entries that the kernel does not hold.
    fn sweep(&mut self) {
        let now = Instant::now();
        let stale: Vec<u64> = self
            .by_id
            .iter()
            .filter(|(_, e)| e.lookups == 0 && now.duration_since(e.used) > SWEEP_GRACE)
            .map(|(&id, _)| id)
            .collect();
        for id in stale {
            self.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_sweeps() {
        let mut t = InodeTable::default();
        let a = t.id(TableKey::WorldFile("a".into()));
        assert_eq!(t.id(TableKey::WorldFile("a".into())), a);
        t.remember(a);
        t.remember(a);
        assert_eq!(t.forget(a, 1), None);
        assert_eq!(t.forget(a, 1), Some(TableKey::WorldFile("a".into())));
        // Unreferenced, old entries go when the table is large.
        for i in 0..SWEEP_ABOVE + 1 {
            let id = t.id(TableKey::WorldFile(i.to_string()));
            t.by_id.get_mut(&id).unwrap().used -= SWEEP_GRACE * 2;
        }
        t.remember(a);
        t.id(TableKey::WorldFile("new".into()));
        assert!(t.by_id.len() < 10, "{}", t.by_id.len());
        assert!(t.get(a).is_some(), "entries the kernel holds are never swept");
    }
}
