//! `worldfs snapshot`: the world read as one instant (as far as its
//! backends allow: `MapStore::read_consistent`, `RecordStore::read_all`),
//! its blobs interned (new ones into packs), and the parts of the index
//! that differ from the newest snapshot added, all in one transaction of
//! the store.

use super::packs::PackWriter;
use super::{SnapshotInfo, Snapshots, check_name, index};
use crate::records::Collection;
use crate::world::World;
use crate::{BlockPos, Consistency, StoreError};
use rusqlite::{Connection, params};
use std::collections::HashMap;

/// How a snapshot may read the world.
#[derive(Clone, Copy, Debug, Default)]
pub struct TakeOptions {
    /// A LevelDB map a running server holds: read its files as they are
    /// (not one instant: a save in progress may be in part) instead of
    /// refusing it.
    pub partial_ok: bool,
}

/// What a snapshot stored, and how each part of the world was read.
#[derive(Debug, serde::Serialize)]
pub struct Taken {
    /// The snapshot as listed.
    #[serde(flatten)]
    pub info: SnapshotInfo,
    /// How each record collection was read, or why it was left out.
    pub record_reads: Vec<RecordRead>,
    /// The store's size on disk afterwards.
    pub store_bytes: u64,
}

/// How one collection of records was read.
#[derive(Debug, serde::Serialize)]
pub struct RecordRead {
    pub collection: &'static str,
    pub how: String,
}

/// A default name: the time `at` (UTC, as the caller formats it) in a
/// form that needs no quoting, numbered if taken already.
fn default_name(conn: &Connection, at: &str) -> rusqlite::Result<String> {
    let base = at.trim_end_matches('Z').replace(':', "-").replace('T', "_");
    let mut name = base.clone();
    let mut n = 1;
    while conn.query_row("SELECT count(*) FROM snapshots WHERE name = ?1", [&name], |r| r.get::<_, i64>(0))? > 0 {
        n += 1;
        name = format!("{base}.{n}");
    }
    Ok(name)
}

/// Remove copies a killed snapshot left in the store's directory.
fn remove_stale_copies(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid = ["map-copy-", "records-copy-"]
            .iter()
            .find_map(|p| name.strip_prefix(p))
            .and_then(|rest| rest.split(['.', '-']).next())
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid
            && pid != std::process::id()
            && !std::path::Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = std::fs::remove_file(e.path()).or_else(|_| std::fs::remove_dir_all(e.path()));
        }
    }
}

/// The parts of the new snapshot's index: those where `current` (sorted
/// by key) differs from the newest snapshot `head` (no bytes: a part no
/// block is in any more).
fn block_rows(conn: &Connection, head: i64, current: &[(i64, i64)]) -> Result<Vec<(i64, Vec<u8>)>, String> {
    let mut before: HashMap<i64, Vec<u8>> = HashMap::new();
    if head > 0 {
        let parts = super::parts_at(conn, head, i64::MIN, i64::MAX).map_err(|e| e.to_string())?;
        before.extend(parts.into_iter().filter(|(_, b)| !b.is_empty()));
    }
    let mut out = Vec::new();
    for (part, entries) in index::by_part(current) {
        let bytes = index::encode(entries);
        match before.remove(&part) {
            Some(old) if old == bytes || index::decode(part, &old).is_ok_and(|e| e == entries) => {}
            _ => out.push((part, bytes)),
        }
    }
    out.extend(before.into_keys().map(|part| (part, Vec::new())));
    Ok(out)
}

fn store_error(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(format!("snapshot store: {e}"))
}

/// The map as read into the store's blobs.
struct MapRead {
    /// (block key, blob id), sorted.
    current: Vec<(i64, i64)>,
    consistency: Consistency,
    /// The map store, described.
    map: String,
}

/// The map read into the store's blobs.
fn read_map(
    tx: &Connection,
    world: &World,
    scratch: &std::path::Path,
    partial_ok: bool,
    interner: &mut PackWriter,
) -> Result<MapRead, String> {
    let map = world.open_store_for_snapshot(partial_ok)?;
    let mut current: Vec<(i64, i64)> = Vec::new();
    let consistency = map
        .read_consistent(scratch, &mut |pos: BlockPos, blob: &[u8]| {
            current.push((pos.legacy_key(), interner.intern(tx, blob).map_err(store_error)?));
            Ok(())
        })
        .map_err(|e| format!("{}: reading the map: {e}", world.dir.display()))?;
    current.sort_unstable();
    current.dedup_by_key(|(k, _)| *k);
    Ok(MapRead { current, consistency, map: map.describe() })
}

/// The records as read into the store's blobs.
struct RecordsRead {
    /// The new snapshot's index rows: collection, name, blob id (None: gone).
    rows: Vec<(String, String, Option<i64>)>,
    count: u64,
    reads: Vec<RecordRead>,
}

/// The records of every collection that opens, into the store.
fn read_records(
    tx: &Connection,
    world: &World,
    scratch: &std::path::Path,
    head: i64,
    interner: &mut PackWriter,
) -> Result<RecordsRead, String> {
    let mut before: HashMap<(String, String), i64> =
        super::record_ids(tx, head).map_err(|e| e.to_string())?.into_iter().collect();
    let (mut rows, mut count, mut reads) = (Vec::new(), 0, Vec::new());
    for c in Collection::ALL {
        let store = match world.open_records(c, true, false) {
            Ok(s) => s,
            Err(e) => {
                reads.push(RecordRead { collection: c.name(), how: format!("not recorded: {e}") });
                continue;
            }
        };
        let (all, how) =
            store.read_all(scratch).map_err(|e| format!("{}: reading {}: {e}", world.dir.display(), c.name()))?;
        reads.push(RecordRead { collection: c.name(), how: how.how });
        for (name, bytes) in all {
            let id = interner.intern(tx, &bytes).map_err(|e| e.to_string())?;
            count += 1;
            if before.remove(&(c.name().to_string(), name.clone())) != Some(id) {
                rows.push((c.name().to_string(), name, Some(id)));
            }
        }
        // Records of a collection read now that are gone since.
        let gone: Vec<_> = before.keys().filter(|(coll, _)| coll == c.name()).cloned().collect();
        for key in gone {
            before.remove(&key);
            rows.push((key.0, key.1, None));
        }
    }
    Ok(RecordsRead { rows, count, reads })
}

impl Snapshots {
    /// Take a snapshot of `world` named `name` (default: the time `at`,
    /// UTC, as the caller formats it), taken at `taken` (seconds since
    /// 1970): the store keeps no calendar of its own.
    pub fn take(
        &mut self,
        world: &World,
        name: Option<&str>,
        taken: i64,
        at: &str,
        opts: TakeOptions,
    ) -> Result<Taken, String> {
        if let Some(n) = name {
            check_name(n)?;
            if self.list()?.iter().any(|s| s.name == n) {
                return Err(format!("{}: a snapshot named {n:?} exists already", self.dir.display()));
            }
        }
        remove_stale_copies(&self.dir);
        let scratch = self.dir.clone();
        let err = self.err();
        let tx = self.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(&err)?;
        let head: i64 = tx.query_row("SELECT coalesce(max(id), 0) FROM snapshots", [], |r| r.get(0)).map_err(&err)?;
        let id = head + 1;
        let name = match name {
            Some(n) => n.to_string(),
            None => default_name(&tx, at).map_err(&err)?,
        };
        let mut interner = PackWriter::new(&tx).map_err(&err)?;
        let MapRead { current, consistency, map } = read_map(&tx, world, &scratch, opts.partial_ok, &mut interner)?;
        let rows = block_rows(&tx, head, &current)?;
        let RecordsRead { rows: record_rows, count: records, reads: record_reads } =
            read_records(&tx, world, &scratch, head, &mut interner)?;
        interner.flush(&tx).map_err(&err)?;
        {
            let mut ins =
                tx.prepare("INSERT INTO block_index (part, snap, entries) VALUES (?1, ?2, ?3)").map_err(&err)?;
            for (part, bytes) in &rows {
                ins.execute(params![part, id, bytes]).map_err(&err)?;
            }
            let mut ins = tx
                .prepare("INSERT INTO record_index (collection, name, snap, blob) VALUES (?1, ?2, ?3, ?4)")
                .map_err(&err)?;
            for (c, n, blob) in &record_rows {
                ins.execute(params![c, n, id, blob]).map_err(&err)?;
            }
        }
        let info = SnapshotInfo {
            id,
            name,
            taken,
            world: world.dir.display().to_string(),
            map,
            blocks: current.len() as u64,
            records,
            one_instant: consistency.one_instant,
            consistency: consistency.how,
            new_blobs: interner.new_blobs,
            new_bytes: interner.new_bytes,
            index_rows: (rows.len() + record_rows.len()) as u64,
        };
        tx.execute(
            "INSERT INTO snapshots (id, name, taken, world, map, blocks, records, one_instant, consistency, \
             new_blobs, new_bytes, index_rows) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                info.id,
                info.name,
                info.taken,
                info.world,
                info.map,
                info.blocks as i64,
                info.records as i64,
                info.one_instant,
                info.consistency,
                info.new_blobs as i64,
                info.new_bytes as i64,
                info.index_rows as i64
            ],
        )
        .map_err(&err)?;
        tx.commit().map_err(&err)?;
        Ok(Taken { info, record_reads, store_bytes: self.disk_bytes() })
    }
}
