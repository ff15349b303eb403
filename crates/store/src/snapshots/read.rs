//! A snapshot as stores: its map as a read-only [`MapStore`] and each
//! collection of its records as a read-only [`RecordStore`], served from
//! the snapshot store, so that the world's tree can be built over them
//! (`MNT/snapshots/NAME/`) and `worldfs diff` and `restore` read them as
//! they read a world.

use super::{BLOB_ID_AT, SnapshotInfo, Snapshots};
use crate::journal::RecordDates;
use crate::records::{Collection, RecordStore};
use crate::{BlockPos, Change, MapStore, Note, Result, StoreError};
use parking_lot::Mutex;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use std::path::Path;

fn open(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let c = Connection::open_with_flags(path, flags)
        .map_err(|e| StoreError::Backend(format!("{}: {e}", path.display())))?;
    c.busy_timeout(std::time::Duration::from_secs(10)).map_err(backend)?;
    Ok(c)
}

fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(format!("snapshot store: {e}"))
}

/// The map of one snapshot, read-only.
pub struct SnapshotMap {
    info: SnapshotInfo,
    conn: Mutex<Connection>,
}

impl SnapshotMap {
    /// The map of snapshot `info` in `store`, read-only.
    pub fn open(store: &Snapshots, info: &SnapshotInfo) -> Result<SnapshotMap> {
        Ok(SnapshotMap { info: info.clone(), conn: Mutex::new(open(&store.path())?) })
    }

    /// The snapshot it shows.
    pub fn info(&self) -> &SnapshotInfo {
        &self.info
    }

    /// Up to `limit` (position, blob id) after `after` in key order.
    fn ids_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<(BlockPos, i64)>> {
        let conn = self.conn.lock();
        let mut stmt = conn
            .prepare_cached(
                "SELECT pos, blob, max(snap) FROM block_index WHERE snap <= ?1 AND pos > ?2 \
                 GROUP BY pos ORDER BY pos LIMIT ?3",
            )
            .map_err(backend)?;
        let mut from = after.map_or(i64::MIN, |p| p.legacy_key());
        let mut out = Vec::new();
        // Rows saying a block is gone take no place in a page: read on
        // until the page is full or the index ends.
        while out.len() < limit {
            let want = (limit - out.len()) as i64;
            let rows: Vec<(i64, Option<i64>)> = stmt
                .query_map(params![self.info.id, from, want], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(backend)?
                .collect::<rusqlite::Result<_>>()
                .map_err(backend)?;
            let ended = (rows.len() as i64) < want;
            for (key, blob) in rows {
                from = key;
                if let Some(b) = blob {
                    out.push((BlockPos::from_legacy_key(key), b));
                }
            }
            if ended {
                break;
            }
        }
        Ok(out)
    }
}

impl MapStore for SnapshotMap {
    fn describe(&self) -> String {
        format!("snapshot {} of {}", self.info.name, self.info.map)
    }

    fn get(&self, pos: BlockPos) -> Result<Option<Vec<u8>>> {
        super::block(&self.conn.lock(), self.info.id, pos).map_err(backend)
    }

    fn contains(&self, pos: BlockPos) -> Result<bool> {
        let conn = self.conn.lock();
        let id: Option<i64> = conn
            .prepare_cached(BLOB_ID_AT)
            .and_then(|mut s| s.query_row(params![pos.legacy_key(), self.info.id], |r| r.get(0)).optional())
            .map_err(backend)?
            .flatten();
        Ok(id.is_some())
    }

    fn list_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<BlockPos>> {
        Ok(self.ids_after(after, limit)?.into_iter().map(|(p, _)| p).collect())
    }

    fn scan_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        let ids = self.ids_after(after, limit)?;
        let conn = self.conn.lock();
        let mut stmt = conn.prepare_cached("SELECT data FROM blobs WHERE id = ?1").map_err(backend)?;
        ids.into_iter().map(|(p, id)| Ok((p, stmt.query_row([id], |r| r.get(0)).map_err(backend)?))).collect()
    }

    fn apply(&self, _changes: &[Change], _note: &Note) -> Result<()> {
        Err(StoreError::ReadOnly)
    }

    fn count(&self) -> Result<u64> {
        Ok(self.info.blocks)
    }

    fn is_read_only(&self) -> bool {
        true
    }

    /// A snapshot never changes; another taken under the same name later
    /// has another id.
    fn data_version(&self) -> Option<u64> {
        Some(self.info.id as u64)
    }
}

/// One collection of a snapshot's records, read-only.
pub struct SnapshotRecords {
    info: SnapshotInfo,
    collection: Collection,
    conn: Mutex<Connection>,
}

impl SnapshotRecords {
    /// The records of `collection` in snapshot `info` of `store`, read-only.
    pub fn open(store: &Snapshots, info: &SnapshotInfo, collection: Collection) -> Result<SnapshotRecords> {
        Ok(SnapshotRecords { info: info.clone(), collection, conn: Mutex::new(open(&store.path())?) })
    }
}

impl RecordStore for SnapshotRecords {
    fn describe(&self) -> String {
        format!("{} of snapshot {}", self.collection.name(), self.info.name)
    }

    fn names(&self) -> Result<Vec<String>> {
        let conn = self.conn.lock();
        let mut stmt = conn
            .prepare_cached(
                "SELECT name, blob, max(snap) FROM record_index WHERE collection = ?1 AND snap <= ?2 \
                 GROUP BY name ORDER BY name",
            )
            .map_err(backend)?;
        let rows = stmt
            .query_map(params![self.collection.name(), self.info.id], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Option<i64>>(1)?))
            })
            .map_err(backend)?;
        let mut out = Vec::new();
        for row in rows {
            if let (name, Some(_)) = row.map_err(backend)? {
                out.push(name);
            }
        }
        Ok(out)
    }

    fn get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let conn = self.conn.lock();
        let id: Option<i64> = conn
            .prepare_cached(
                "SELECT blob FROM record_index WHERE collection = ?1 AND name = ?2 AND snap <= ?3 \
                 ORDER BY snap DESC LIMIT 1",
            )
            .and_then(|mut s| s.query_row(params![self.collection.name(), name, self.info.id], |r| r.get(0)).optional())
            .map_err(backend)?
            .flatten();
        match id {
            None => Ok(None),
            Some(id) => conn
                .prepare_cached("SELECT data FROM blobs WHERE id = ?1")
                .and_then(|mut s| s.query_row([id], |r| r.get(0)))
                .map(Some)
                .map_err(backend),
        }
    }

    fn restore(
        &self,
        _name: &str,
        _expect: Option<&[u8]>,
        _new: Option<&[u8]>,
        _dates: Option<&RecordDates>,
        _note: &Note,
    ) -> Result<()> {
        Err(StoreError::ReadOnly)
    }

    fn is_read_only(&self) -> bool {
        true
    }
}
