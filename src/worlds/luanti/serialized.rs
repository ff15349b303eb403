//! The map store as the filesystem uses it: this process's own reads wait
//! for its own writes in memory, never inside the database.
//!
//! In SQLite's rollback-journal mode a commit locks readers out while it
//! writes and syncs, and a reader that finds the lock taken polls with
//! growing sleeps until its busy timeout. Under a steady stream of commits
//! (a `sed -i` over many blocks, several writers) a reader can miss every
//! gap and fail with "database is locked" (EIO) although nobody else uses
//! the map. Here reads share a lock that each write takes alone, so a read
//! simply waits for the commit in progress; the busy timeout is left for
//! other processes.

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use worldfs_store::{BlockPos, Change, MapStore, Note, Result};

pub(crate) struct Serialized {
    inner: Box<dyn MapStore>,
    lock: RwLock<()>,
}

impl Serialized {
    pub(crate) fn new(inner: Box<dyn MapStore>) -> Serialized {
        Serialized { inner, lock: RwLock::new(()) }
    }

    fn read(&self) -> RwLockReadGuard<'_, ()> {
        self.lock.read()
    }

    fn write(&self) -> RwLockWriteGuard<'_, ()> {
        self.lock.write()
    }
}

impl MapStore for Serialized {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn get(&self, pos: BlockPos) -> Result<Option<Vec<u8>>> {
        let _r = self.read();
        self.inner.get(pos)
    }

    fn contains(&self, pos: BlockPos) -> Result<bool> {
        let _r = self.read();
        self.inner.contains(pos)
    }

    fn list_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<BlockPos>> {
        let _r = self.read();
        self.inner.list_after(after, limit)
    }

    fn scan_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        let _r = self.read();
        self.inner.scan_after(after, limit)
    }

    fn get_many(&self, positions: &[BlockPos]) -> Result<Vec<Option<Vec<u8>>>> {
        let _r = self.read();
        self.inner.get_many(positions)
    }

    fn get_near(&self, pos: BlockPos, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        let _r = self.read();
        self.inner.get_near(pos, limit)
    }

    fn apply(&self, changes: &[Change], note: &Note) -> Result<()> {
        // A running server writes the map, not this process: nothing here
        // for reads to wait for, and other blocks' changes go to the
        // server meanwhile (it applies them in the same step).
        if self.inner.applies_through_server() {
            return self.inner.apply(changes, note);
        }
        let _w = self.write();
        self.inner.apply(changes, note)
    }

    fn count(&self) -> Result<u64> {
        let _r = self.read();
        self.inner.count()
    }

    fn is_read_only(&self) -> bool {
        self.inner.is_read_only()
    }

    fn data_version(&self) -> Option<u64> {
        self.inner.data_version()
    }

    fn listing_version(&self) -> Option<u64> {
        self.inner.listing_version()
    }

    fn last_commit_versions(&self) -> Option<(u64, u64)> {
        self.inner.last_commit_versions()
    }

    fn write_mark(&self) -> Result<Option<worldfs_store::WriteMark>> {
        let _r = self.read();
        self.inner.write_mark()
    }

    fn written_after(
        &self,
        mark: &worldfs_store::WriteMark,
        after: i64,
        limit: usize,
    ) -> Result<Option<worldfs_store::Written>> {
        let _r = self.read();
        self.inner.written_after(mark, after, limit)
    }

    fn applies_through_server(&self) -> bool {
        self.inner.applies_through_server()
    }

    fn other_users(&self) -> Result<Vec<String>> {
        self.inner.other_users()
    }
}
