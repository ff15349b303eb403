//! Snapshots of a world: an embedded SQLite database (`snapshots.sqlite`,
//! by default in `WORLD/worldfs-snapshots/`) holding every block as the
//! map stored it and every player, account and mod storage record, at the
//! moments `worldfs snapshot` was run.
//!
//! * `packs`: every distinct stored byte string (a block's blob, a
//!   record's canonical bytes) once, from any snapshot, by id, with its
//!   SHA-256; consecutive ids share a row, compressed together
//!   (`packs.rs`).
//! * `snapshots`: one row per completed snapshot, ordered by `id`.
//! * `block_index (part, snap, entries)`: the blocks of a part of the key
//!   space with their blob ids, compact (`index.rs`); and `record_index
//!   (collection, name, snap, blob)`. Per snapshot only what differs from
//!   the snapshot before it (a part with no bytes, a record with a NULL
//!   blob: gone since). What snapshot S holds at a key is the row of the
//!   greatest `snap` <= S; an unchanged world's next snapshot adds no
//!   index rows at all. Removing a snapshot moves its rows to the next one
//!   where that one has none (`prune.rs`), so every other snapshot keeps
//!   what it holds.
//!
//! A snapshot is written in one SQLite transaction, its `snapshots` row
//! included: killed before the commit, the store is as it was (SQLite
//! rolls the rest back when it next opens it); after it, the snapshot is
//! complete. The same holds for a prune.

mod index;
mod packs;
mod prune;
mod read;
mod take;
mod varint;

pub use prune::{Policy, Pruned};
pub use read::{SnapshotMap, SnapshotRecords};
pub use take::{TakeOptions, Taken};

use super::BlockPos;
use rusqlite::{Connection, OptionalExtension, params};
use sha2::Digest;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The store's directory in a world when no `--store` is given.
pub const DIR_NAME: &str = "worldfs-snapshots";
/// The database file in the store's directory.
pub const FILE_NAME: &str = "snapshots.sqlite";

/// The layout of the database; a store of another number is refused.
/// 1: one index row and one blob row a block (before packs and parts).
const FORMAT: i64 = 2;

/// How long an operation waits for another one (a snapshot, a prune) to
/// end before it gives up.
const BUSY_WAIT: Duration = Duration::from_secs(10);

/// A blob's key: the SHA-256 of its bytes.
pub type Hash = [u8; 32];

/// The key of a blob of `bytes`.
pub fn hash_of(bytes: &[u8]) -> Hash {
    sha2::Sha256::digest(bytes).into()
}

/// A snapshot as listed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SnapshotInfo {
    /// Its row in the store.
    #[serde(skip)]
    pub id: i64,
    /// Its name (`--name`, or the time it was taken).
    pub name: String,
    /// When its read of the world began (seconds since 1970, UTC).
    pub taken: i64,
    /// The world directory and its map, as described when taken.
    pub world: String,
    /// The map's backend and place, as described when taken.
    pub map: String,
    /// How many blocks it holds.
    pub blocks: u64,
    /// How many records (players, accounts, mod storage) it holds.
    pub records: u64,
    /// Whether the map was read as one instant, and how.
    pub one_instant: bool,
    /// How the map was read, in words.
    pub consistency: String,
    /// What it added to the store: new blobs, their bytes, index rows.
    pub new_blobs: u64,
    /// The bytes of its new blobs.
    pub new_bytes: u64,
    /// The rows its index added.
    pub index_rows: u64,
}

/// A block whose blob differs between two snapshots: its blob ids in the
/// older and the newer one (None: absent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Changed {
    /// The block.
    pub pos: BlockPos,
    /// Its blob in the older snapshot.
    pub before: Option<i64>,
    /// Its blob in the newer snapshot.
    pub after: Option<i64>,
}

/// What a record's index key is: its collection's name and its own.
pub type RecordKey = (String, String);

/// A snapshot store: one SQLite file in its folder.
pub struct Snapshots {
    dir: PathBuf,
    conn: Connection,
    packs: packs::PackCache,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS packs (
    first INTEGER PRIMARY KEY,
    count INTEGER NOT NULL,
    hashes BLOB NOT NULL,
    sizes BLOB NOT NULL,
    data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    taken INTEGER NOT NULL,
    world TEXT NOT NULL,
    map TEXT NOT NULL,
    blocks INTEGER NOT NULL,
    records INTEGER NOT NULL,
    one_instant INTEGER NOT NULL,
    consistency TEXT NOT NULL,
    new_blobs INTEGER NOT NULL,
    new_bytes INTEGER NOT NULL,
    index_rows INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS block_index (
    part INTEGER NOT NULL,
    snap INTEGER NOT NULL,
    entries BLOB NOT NULL,
    PRIMARY KEY (part, snap));
CREATE TABLE IF NOT EXISTS record_index (
    collection TEXT NOT NULL,
    name TEXT NOT NULL,
    snap INTEGER NOT NULL,
    blob INTEGER,
    PRIMARY KEY (collection, name, snap)) WITHOUT ROWID;
";

pub(crate) fn sql_error(path: &Path) -> impl Fn(rusqlite::Error) -> String + '_ {
    move |e| {
        if let rusqlite::Error::SqliteFailure(f, _) = &e
            && matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        {
            return format!(
                "{}: another worldfs snapshot or prune is using the store ({e}); try again when it is done",
                path.display()
            );
        }
        format!("{}: {e}", path.display())
    }
}

/// Whether `name` can name a snapshot (a directory of `MNT/snapshots/`).
pub fn check_name(name: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("snapshot name {name:?}: {why}"));
    if name.is_empty() || name.len() > 100 {
        return bad("must be 1 to 100 bytes long");
    }
    if name.starts_with('.') || name.contains('/') || name.chars().any(char::is_control) {
        return bad("must not start with '.' nor hold '/' or control characters (it is a directory name)");
    }
    Ok(())
}

/// The format of the store `conn` holds (None: an empty database, a store
/// not yet made), or why it is no store this worldfs reads.
fn format_of(conn: &Connection, file: &Path) -> Result<Option<i64>, String> {
    let tables: i64 =
        conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0)).map_err(sql_error(file))?;
    if tables == 0 {
        return Ok(None);
    }
    let format: Option<i64> = conn
        .query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| r.get(0))
        .optional()
        .map_err(|e| format!("{}: not a worldfs snapshot store ({e})", file.display()))?;
    match format {
        Some(FORMAT) => Ok(Some(FORMAT)),
        Some(n) if n < FORMAT => Err(format!(
            "{}: a snapshot store of format {n}, written by an earlier worldfs, which this one (format {FORMAT}) \
             does not read; move it away (or remove it) and take a new snapshot",
            file.display()
        )),
        Some(n) => Err(format!(
            "{}: a snapshot store of format {n}, written by a newer worldfs; this one reads format {FORMAT}",
            file.display()
        )),
        None => Err(format!("{}: not a worldfs snapshot store (its meta table names no format)", file.display())),
    }
}

impl Snapshots {
    /// The store's database file in `dir`.
    pub fn file(dir: &Path) -> PathBuf {
        dir.join(FILE_NAME)
    }

    /// Open the store in `dir`; `create`: make it when missing.
    pub fn open(dir: &Path, create: bool) -> Result<Snapshots, String> {
        let file = Snapshots::file(dir);
        if !file.is_file() {
            if !create {
                return Err(format!("{}: no snapshot store here (take one with `worldfs snapshot`)", dir.display()));
            }
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let conn = Connection::open(&file).map_err(sql_error(&file))?;
        conn.busy_timeout(BUSY_WAIT).map_err(sql_error(&file))?;
        // The format is checked before anything is written: a store of
        // another format is left exactly as it is.
        let fresh = format_of(&conn, &file)?.is_none();
        // WAL: a mount reading snapshots and a new snapshot being written do
        // not wait for each other; commits stay atomic.
        let setup = "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = OFF;";
        conn.execute_batch(setup).map_err(sql_error(&file))?;
        if fresh {
            let make =
                format!("BEGIN IMMEDIATE; {SCHEMA} INSERT OR IGNORE INTO meta VALUES ('format', {FORMAT}); COMMIT;");
            conn.execute_batch(&make).map_err(sql_error(&file))?;
            format_of(&conn, &file)?;
        }
        Ok(Snapshots { dir: dir.to_path_buf(), conn, packs: Default::default() })
    }

    /// Open the store in `dir` only to read it (a mount's `snapshots/`):
    /// nothing in the directory is created or changed.
    pub fn open_read_only(dir: &Path) -> Result<Snapshots, String> {
        use rusqlite::OpenFlags;
        let file = Snapshots::file(dir);
        if !file.is_file() {
            return Err(format!("{}: no snapshot store here (take one with `worldfs snapshot`)", dir.display()));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&file, flags).map_err(sql_error(&file))?;
        conn.busy_timeout(BUSY_WAIT).map_err(sql_error(&file))?;
        if format_of(&conn, &file)?.is_none() {
            return Err(format!("{}: an empty database, not a snapshot store", file.display()));
        }
        Ok(Snapshots { dir: dir.to_path_buf(), conn, packs: Default::default() })
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The store's database file.
    pub fn path(&self) -> PathBuf {
        Snapshots::file(&self.dir)
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> String + use<> {
        let path = self.path();
        move |e| sql_error(&path)(e)
    }

    /// Every completed snapshot, oldest first.
    pub fn list(&self) -> Result<Vec<SnapshotInfo>, String> {
        list(&self.conn).map_err(self.err())
    }

    /// The snapshot named `name`.
    pub fn find(&self, name: &str) -> Result<SnapshotInfo, String> {
        let all = self.list()?;
        if let Some(s) = all.iter().find(|s| s.name == name) {
            return Ok(s.clone());
        }
        let names: Vec<&str> = all.iter().rev().take(10).map(|s| s.name.as_str()).collect();
        Err(format!(
            "no snapshot named {name:?} in {} ({})",
            self.dir.display(),
            if names.is_empty() { "it holds none".to_string() } else { format!("newest: {}", names.join(", ")) }
        ))
    }

    /// The blob snapshot `snap` holds at block `pos` (None: absent).
    pub fn block(&self, snap: i64, pos: BlockPos) -> Result<Option<Vec<u8>>, String> {
        match blob_id_at(&self.conn, snap, pos)? {
            None => Ok(None),
            Some(id) => self.blob(id).map(Some),
        }
    }

    /// The blob ids snapshot `snap` holds at every block, by key order.
    pub fn block_ids(&self, snap: i64) -> Result<Vec<(BlockPos, i64)>, String> {
        let mut out = Vec::new();
        for (part, bytes) in parts_at(&self.conn, snap, i64::MIN, i64::MAX).map_err(self.err())? {
            out.extend(index::decode(part, &bytes)?.into_iter().map(|(k, id)| (BlockPos::from_legacy_key(k), id)));
        }
        Ok(out)
    }

    /// Every block snapshot `snap` holds: position, blob id, blob hash.
    pub fn block_hashes(&self, snap: i64) -> Result<Vec<(BlockPos, i64, Hash)>, String> {
        let by_id: HashMap<i64, Hash> =
            packs::known_hashes(&self.conn).map_err(self.err())?.into_iter().map(|(h, id)| (id, h)).collect();
        self.block_ids(snap)?
            .into_iter()
            .map(|(pos, id)| {
                let hash = by_id.get(&id).ok_or_else(|| format!("block {pos}: its blob {id} is not in the store"))?;
                Ok((pos, id, *hash))
            })
            .collect()
    }

    /// The blocks whose blob differs between snapshots `a` and `b` (a < b):
    /// (position, blob id in a, blob id in b), None where absent. Only the
    /// parts of the index written after `a` up to `b` are read.
    pub fn changed_blocks(&self, a: i64, b: i64) -> Result<Vec<Changed>, String> {
        let (a, b) = (a.min(b), a.max(b));
        let mut stmt = self
            .conn
            .prepare("SELECT DISTINCT part FROM block_index WHERE snap > ?1 AND snap <= ?2 ORDER BY part")
            .map_err(self.err())?;
        let parts: Vec<i64> =
            stmt.query_map([a, b], |r| r.get(0)).map_err(self.err())?.collect::<Result<_, _>>().map_err(self.err())?;
        let mut out = Vec::new();
        for part in parts {
            let then: HashMap<i64, i64> = part_entries(&self.conn, part, a)?.into_iter().collect();
            let mut now: HashMap<i64, i64> = part_entries(&self.conn, part, b)?.into_iter().collect();
            for (&key, &id) in &then {
                let after = now.remove(&key);
                if after != Some(id) {
                    out.push(Changed { pos: BlockPos::from_legacy_key(key), before: Some(id), after });
                }
            }
            out.extend(now.into_iter().map(|(key, id)| Changed {
                pos: BlockPos::from_legacy_key(key),
                before: None,
                after: Some(id),
            }));
        }
        out.sort_by_key(|c| c.pos.legacy_key());
        Ok(out)
    }

    /// A blob by id.
    pub fn blob(&self, id: i64) -> Result<Vec<u8>, String> {
        self.packs.blob(&self.conn, id).map_err(|e| format!("{}: {e}", self.path().display()))
    }

    /// The records snapshot `snap` holds: (collection, name) -> blob id.
    pub fn record_ids(&self, snap: i64) -> Result<Vec<(RecordKey, i64)>, String> {
        record_ids(&self.conn, snap).map_err(self.err())
    }

    /// Check every blob's bytes against its hash, and that every index row
    /// names a blob the store holds. Returns the problems found (empty:
    /// all is well) and how many blobs were checked.
    pub fn verify(&self, mut progress: impl FnMut(u64)) -> Result<(Vec<String>, u64), String> {
        let mut problems = Vec::new();
        let mut held = std::collections::HashSet::new();
        let mut stmt = self.conn.prepare("SELECT first, count, hashes, sizes, data FROM packs").map_err(self.err())?;
        let mut rows = stmt.query([]).map_err(self.err())?;
        let mut n = 0;
        while let Some(r) = rows.next().map_err(self.err())? {
            let get = |i| r.get::<_, Vec<u8>>(i);
            let (first, count): (i64, i64) = (r.get(0).map_err(self.err())?, r.get(1).map_err(self.err())?);
            let (hashes, sizes, data) =
                (get(2).map_err(self.err())?, get(3).map_err(self.err())?, get(4).map_err(self.err())?);
            let pack = match packs::unpack(first, count, hashes, &sizes, &data) {
                Ok(p) => p,
                Err(e) => {
                    problems.push(e);
                    continue;
                }
            };
            for i in (0..pack.count()).filter(|&i| !pack.removed(i)) {
                let id = pack.first + i as i64;
                if hash_of(pack.bytes(i)).as_slice() != pack.hash(i) {
                    problems.push(format!(
                        "blob {id} ({} bytes) does not match its SHA-256 {}",
                        pack.bytes(i).len(),
                        hex(pack.hash(i))
                    ));
                }
                held.insert(id);
                n += 1;
                if n % 65536 == 0 {
                    progress(n);
                }
            }
        }
        problems.extend(self.unheld_blobs(&held)?);
        let check: String = self.conn.query_row("PRAGMA quick_check", [], |r| r.get(0)).map_err(self.err())?;
        if check != "ok" {
            problems.push(format!("SQLite's quick_check of the store: {check}"));
        }
        Ok((problems, n))
    }

    /// Index rows naming a blob not in `held` (at most 10 of each kind), and
    /// index parts that do not decode.
    fn unheld_blobs(&self, held: &std::collections::HashSet<i64>) -> Result<Vec<String>, String> {
        let mut problems = Vec::new();
        let mut stmt = self.conn.prepare("SELECT part, snap, entries FROM block_index").map_err(self.err())?;
        let mut rows = stmt.query([]).map_err(self.err())?;
        let mut missing = 0;
        while let Some(r) = rows.next().map_err(self.err())? {
            let (part, snap): (i64, i64) = (r.get(0).map_err(self.err())?, r.get(1).map_err(self.err())?);
            let bytes = r.get_ref(2).map_err(self.err())?.as_blob().map_err(|e| e.to_string())?;
            match index::decode(part, bytes) {
                Err(e) => problems.push(format!("snapshot #{snap}: {e}")),
                Ok(entries) => {
                    for (key, id) in entries.into_iter().filter(|(_, id)| !held.contains(id)) {
                        missing += 1;
                        if missing <= 10 {
                            let pos = BlockPos::from_legacy_key(key);
                            problems.push(format!("block {pos} of snapshot #{snap} names blob {id}, which is missing"));
                        }
                    }
                }
            }
        }
        let mut stmt = self
            .conn
            .prepare("SELECT collection, name, snap, blob FROM record_index WHERE blob IS NOT NULL")
            .map_err(self.err())?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?, r.get(3)?)))
            .map_err(self.err())?;
        for row in rows {
            let (c, name, snap, id): (String, String, i64, i64) = row.map_err(self.err())?;
            if !held.contains(&id) {
                problems.push(format!("{c} {name:?} of snapshot #{snap} names blob {id}, which is missing"));
            }
        }
        Ok(problems)
    }

    /// Bytes of the store's database as committed (its pages; the file's
    /// size once SQLite has moved its WAL into it, which it does when the
    /// last connection closes: counting the WAL too would count a fresh
    /// snapshot twice).
    pub fn disk_bytes(&self) -> u64 {
        let size = |pragma: &str| self.conn.query_row(pragma, [], |r| r.get::<_, i64>(0)).unwrap_or(0);
        (size("PRAGMA page_count") * size("PRAGMA page_size")) as u64
    }
}

/// Up to `limit` parts from `from` on (in part order) as snapshot `snap`
/// holds them: (part, bytes), parts with no blocks included.
pub(crate) fn parts_at(conn: &Connection, snap: i64, from: i64, limit: i64) -> rusqlite::Result<Vec<(i64, Vec<u8>)>> {
    conn.prepare_cached(
        "SELECT part, entries, max(snap) FROM block_index WHERE snap <= ?1 AND part >= ?2 \
         GROUP BY part ORDER BY part LIMIT ?3",
    )?
    .query_map(params![snap, from, limit], |r| Ok((r.get(0)?, r.get(1)?)))?
    .collect()
}

/// The blocks snapshot `snap` holds in part `part`: (key, blob id).
pub(crate) fn part_entries(conn: &Connection, part: i64, snap: i64) -> Result<Vec<(i64, i64)>, String> {
    let bytes: Option<Vec<u8>> = conn
        .prepare_cached("SELECT entries FROM block_index WHERE part = ?1 AND snap <= ?2 ORDER BY snap DESC LIMIT 1")
        .and_then(|mut s| s.query_row([part, snap], |r| r.get(0)).optional())
        .map_err(|e| format!("snapshot store: {e}"))?;
    bytes.map_or(Ok(Vec::new()), |b| index::decode(part, &b))
}

/// The blob id snapshot `snap` holds at `pos` (None: absent).
pub(crate) fn blob_id_at(conn: &Connection, snap: i64, pos: BlockPos) -> Result<Option<i64>, String> {
    let key = pos.legacy_key();
    let entries = part_entries(conn, index::part_of(key), snap)?;
    Ok(entries.binary_search_by_key(&key, |e| e.0).ok().map(|i| entries[i].1))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn list(conn: &Connection) -> rusqlite::Result<Vec<SnapshotInfo>> {
    let mut stmt = conn.prepare(
        "SELECT id, name, taken, world, map, blocks, records, one_instant, consistency, new_blobs, new_bytes, \
         index_rows FROM snapshots ORDER BY id",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(SnapshotInfo {
            id: r.get(0)?,
            name: r.get(1)?,
            taken: r.get(2)?,
            world: r.get(3)?,
            map: r.get(4)?,
            blocks: r.get::<_, i64>(5)? as u64,
            records: r.get::<_, i64>(6)? as u64,
            one_instant: r.get(7)?,
            consistency: r.get(8)?,
            new_blobs: r.get::<_, i64>(9)? as u64,
            new_bytes: r.get::<_, i64>(10)? as u64,
            index_rows: r.get::<_, i64>(11)? as u64,
        })
    })?;
    rows.collect()
}

fn record_ids(conn: &Connection, snap: i64) -> rusqlite::Result<Vec<(RecordKey, i64)>> {
    let mut stmt = conn.prepare(
        "SELECT collection, name, blob, max(snap) FROM record_index WHERE snap <= ?1 \
         GROUP BY collection, name ORDER BY collection, name",
    )?;
    let rows = stmt.query_map([snap], |r| Ok(((r.get(0)?, r.get(1)?), r.get::<_, Option<i64>>(2)?)))?;
    let mut out = Vec::new();
    for row in rows {
        if let (key, Some(blob)) = row? {
            out.push((key, blob));
        }
    }
    Ok(out)
}
