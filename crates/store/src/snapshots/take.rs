//! `worldfs snapshot`: the world read as one instant (as far as its
//! backends allow: `MapStore::read_consistent`, `RecordStore::read_all`),
//! its blobs interned, and the difference from the newest snapshot added
//! as index rows, all in one transaction of the store.

use super::{Hash, SnapshotInfo, Snapshots, check_name, hash_of};
use crate::records::Collection;
use crate::world::World;
use crate::{BlockPos, Consistency, StoreError};
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::HashMap;

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

/// Above this many hashes the interning cache starts again (memory bound
/// on worlds of all-different blobs).
const CACHE_MAX: usize = 1 << 20;

/// Blobs by hash: each stored once in the store.
#[derive(Default)]
struct Interner {
    cache: HashMap<Hash, i64>,
    new_blobs: u64,
    new_bytes: u64,
}

impl Interner {
    fn intern(&mut self, conn: &Connection, bytes: &[u8]) -> rusqlite::Result<i64> {
        let h = hash_of(bytes);
        if let Some(id) = self.cache.get(&h) {
            return Ok(*id);
        }
        let found: Option<i64> = conn
            .prepare_cached("SELECT id FROM blobs WHERE hash = ?1")?
            .query_row([&h[..]], |r| r.get(0))
            .optional()?;
        let id =
            match found {
                Some(id) => id,
                None => {
                    conn.prepare_cached("INSERT INTO blobs (hash, size, data) VALUES (?1, ?2, ?3)")?
                        .execute(params![&h[..], bytes.len() as i64, bytes])?;
                    self.new_blobs += 1;
                    self.new_bytes += bytes.len() as u64;
                    conn.last_insert_rowid()
                }
            };
        if self.cache.len() >= CACHE_MAX {
            self.cache.clear();
        }
        self.cache.insert(h, id);
        Ok(id)
    }
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

/// Rows of the new snapshot: the difference between the newest snapshot's
/// blocks (read in key order) and `current` (sorted by key).
fn block_rows(conn: &Connection, head: i64, current: &[(i64, i64)]) -> rusqlite::Result<Vec<(i64, Option<i64>)>> {
    let mut stmt =
        conn.prepare("SELECT pos, blob, max(snap) FROM block_index WHERE snap <= ?1 GROUP BY pos ORDER BY pos")?;
    let mut rows = stmt.query([head])?;
    let mut out = Vec::new();
    let mut cur = current.iter().peekable();
    while let Some(r) = rows.next()? {
        let (key, blob): (i64, Option<i64>) = (r.get(0)?, r.get(1)?);
        while let Some(&&(k, id)) = cur.peek() {
            if k >= key {
                break;
            }
            out.push((k, Some(id)));
            cur.next();
        }
        match cur.peek() {
            Some(&&(k, id)) if k == key => {
                if blob != Some(id) {
                    out.push((k, Some(id)));
                }
                cur.next();
            }
            _ if blob.is_some() => out.push((key, None)),
            _ => {}
        }
    }
    out.extend(cur.map(|&(k, id)| (k, Some(id))));
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
    interner: &mut Interner,
) -> Result<MapRead, String> {
    let map = world.open_store(true, false)?;
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
    interner: &mut Interner,
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
    pub fn take(&mut self, world: &World, name: Option<&str>, taken: i64, at: &str) -> Result<Taken, String> {
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
        let mut interner = Interner::default();
        let MapRead { current, consistency, map } = read_map(&tx, world, &scratch, &mut interner)?;
        let rows = block_rows(&tx, head, &current).map_err(&err)?;
        let RecordsRead { rows: record_rows, count: records, reads: record_reads } =
            read_records(&tx, world, &scratch, head, &mut interner)?;
        {
            let mut ins = tx.prepare("INSERT INTO block_index (pos, snap, blob) VALUES (?1, ?2, ?3)").map_err(&err)?;
            for (key, blob) in &rows {
                ins.execute(params![key, id, blob]).map_err(&err)?;
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
