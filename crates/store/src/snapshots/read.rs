//! A snapshot as stores: its map as a read-only [`MapStore`] and each
//! collection of its records as a read-only [`RecordStore`], served from
//! the snapshot store, so that the world's tree can be built over them
//! (`MNT/snapshots/NAME/`) and `worldfs diff` and `restore` read them as
//! they read a world.

use super::packs::PackCache;
use super::{SnapshotInfo, Snapshots, index};
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
    packs: PackCache,
}

impl SnapshotMap {
    /// The map of snapshot `info` in `store`, read-only.
    pub fn open(store: &Snapshots, info: &SnapshotInfo) -> Result<SnapshotMap> {
        Ok(SnapshotMap { info: info.clone(), conn: Mutex::new(open(&store.path())?), packs: PackCache::default() })
    }

    /// The snapshot it shows.
    pub fn info(&self) -> &SnapshotInfo {
        &self.info
    }

    /// Up to `limit` (position, blob id) after `after` in key order.
    fn ids_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<(BlockPos, i64)>> {
        let conn = self.conn.lock();
        let after = after.map(|p| p.legacy_key());
        let mut from = after.map_or(i64::MIN, index::part_of);
        let mut out = Vec::new();
        // Parts saying no block is left take no place in a page: read on
        // until the page is full or the index ends.
        while out.len() < limit {
            let parts = super::parts_at(&conn, self.info.id, from, 16).map_err(backend)?;
            let Some(&(last, _)) = parts.last() else { break };
            for (part, bytes) in &parts {
                let entries = index::decode(*part, bytes).map_err(StoreError::Backend)?;
                let fresh = entries.into_iter().filter(|(k, _)| after.is_none_or(|a| *k > a));
                out.extend(fresh.map(|(k, id)| (BlockPos::from_legacy_key(k), id)));
            }
            if parts.len() < 16 || last == i64::MAX {
                break;
            }
            from = last + 1;
        }
        out.truncate(limit);
        Ok(out)
    }
}

impl MapStore for SnapshotMap {
    fn describe(&self) -> String {
        format!("snapshot {} of {}", self.info.name, self.info.map)
    }

    fn get(&self, pos: BlockPos) -> Result<Option<Vec<u8>>> {
        let conn = self.conn.lock();
        match super::blob_id_at(&conn, self.info.id, pos).map_err(StoreError::Backend)? {
            None => Ok(None),
            Some(id) => self.packs.blob(&conn, id).map(Some).map_err(StoreError::Backend),
        }
    }

    fn contains(&self, pos: BlockPos) -> Result<bool> {
        let conn = self.conn.lock();
        Ok(super::blob_id_at(&conn, self.info.id, pos).map_err(StoreError::Backend)?.is_some())
    }

    fn list_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<BlockPos>> {
        Ok(self.ids_after(after, limit)?.into_iter().map(|(p, _)| p).collect())
    }

    fn scan_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        let ids = self.ids_after(after, limit)?;
        let conn = self.conn.lock();
        ids.into_iter().map(|(p, id)| Ok((p, self.packs.blob(&conn, id).map_err(StoreError::Backend)?))).collect()
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
    packs: PackCache,
}

impl SnapshotRecords {
    /// The records of `collection` in snapshot `info` of `store`, read-only.
    pub fn open(store: &Snapshots, info: &SnapshotInfo, collection: Collection) -> Result<SnapshotRecords> {
        let conn = Mutex::new(open(&store.path())?);
        Ok(SnapshotRecords { info: info.clone(), collection, conn, packs: PackCache::default() })
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
            Some(id) => self.packs.blob(&conn, id).map(Some).map_err(StoreError::Backend),
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
