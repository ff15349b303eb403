//! Snapshots of a world: an embedded SQLite database (`snapshots.sqlite`,
//! by default in `WORLD/worldfs-snapshots/`) holding every block as the
//! map stored it and every player, account and mod storage record, at the
//! moments `worldfs snapshot` was run.
//!
//! * `blobs`: every distinct stored byte string once, keyed by its SHA-256
//!   (a block's blob, a record's canonical bytes), from any snapshot.
//! * `snapshots`: one row per completed snapshot, ordered by `id`.
//! * `block_index (pos, snap, blob)` and `record_index (collection, name,
//!   snap, blob)`: per snapshot only what differs from the snapshot before
//!   it (`blob` NULL: gone since). What snapshot S holds at a key is the
//!   row of the greatest `snap` <= S; an unchanged world's next snapshot
//!   adds no index rows at all. Removing a snapshot moves its rows to the
//!   next one where that one has none (`prune.rs`), so every other
//!   snapshot keeps what it holds.
//!
//! A snapshot is written in one SQLite transaction, its `snapshots` row
//! included: killed before the commit, the store is as it was (SQLite
//! rolls the rest back when it next opens it); after it, the snapshot is
//! complete. The same holds for a prune.

mod prune;
mod read;
mod take;

pub use prune::{Policy, Pruned};
pub use read::{SnapshotMap, SnapshotRecords};
pub use take::Taken;

use super::BlockPos;
use rusqlite::{Connection, OptionalExtension, params};
use sha2::Digest;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The store's directory in a world when no `--store` is given.
pub const DIR_NAME: &str = "worldfs-snapshots";
/// The database file in the store's directory.
pub const FILE_NAME: &str = "snapshots.sqlite";

/// The layout of the database; a store of another number is refused.
const FORMAT: i64 = 1;

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
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blobs (
    id INTEGER PRIMARY KEY,
    hash BLOB NOT NULL UNIQUE,
    size INTEGER NOT NULL,
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
    pos INTEGER NOT NULL,
    snap INTEGER NOT NULL,
    blob INTEGER,
    PRIMARY KEY (pos, snap)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS block_index_by_snap ON block_index (snap);
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
        // WAL: a mount reading snapshots and a new snapshot being written do
        // not wait for each other; commits stay atomic.
        let setup = "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = OFF;";
        conn.execute_batch(setup).map_err(sql_error(&file))?;
        conn.execute_batch(SCHEMA).map_err(sql_error(&file))?;
        let format: Option<i64> = conn
            .query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| r.get(0))
            .optional()
            .map_err(sql_error(&file))?;
        match format {
            None => {
                conn.execute("INSERT OR IGNORE INTO meta VALUES ('format', ?1)", [FORMAT]).map_err(sql_error(&file))?;
            }
            Some(FORMAT) => {}
            Some(n) => {
                return Err(format!(
                    "{}: a snapshot store of format {n}, which this worldfs ({FORMAT}) does not know",
                    file.display()
                ));
            }
        }
        Ok(Snapshots { dir: dir.to_path_buf(), conn })
    }

    /// Open the store in `dir` only to read it (a mount's `snapshots/`):
    /// nothing in the directory is created or changed.
    pub fn open_read_only(dir: &Path) -> Result<Snapshots, String> {
        use rusqlite::OpenFlags;
        let file = Snapshots::file(dir);
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&file, flags).map_err(sql_error(&file))?;
        conn.busy_timeout(BUSY_WAIT).map_err(sql_error(&file))?;
        let format: Option<i64> = conn
            .query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| r.get(0))
            .optional()
            .map_err(sql_error(&file))?;
        if format != Some(FORMAT) {
            return Err(format!("{}: not a snapshot store of format {FORMAT}", file.display()));
        }
        Ok(Snapshots { dir: dir.to_path_buf(), conn })
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
        block(&self.conn, snap, pos).map_err(self.err())
    }

    /// The blob ids snapshot `snap` holds at every block, by key order.
    pub fn block_ids(&self, snap: i64) -> Result<Vec<(BlockPos, i64)>, String> {
        let mut stmt = self
            .conn
            .prepare("SELECT pos, blob, max(snap) FROM block_index WHERE snap <= ?1 GROUP BY pos ORDER BY pos")
            .map_err(self.err())?;
        let rows =
            stmt.query_map([snap], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Option<i64>>(1)?))).map_err(self.err())?;
        let mut out = Vec::new();
        for row in rows {
            if let (key, Some(blob)) = row.map_err(self.err())? {
                out.push((BlockPos::from_legacy_key(key), blob));
            }
        }
        Ok(out)
    }

    /// Every block snapshot `snap` holds: position, blob id, blob hash.
    pub fn block_hashes(&self, snap: i64) -> Result<Vec<(BlockPos, i64, Hash)>, String> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT i.pos, b.id, b.hash FROM (SELECT pos, blob, max(snap) FROM block_index WHERE snap <= ?1 \
                 GROUP BY pos) i JOIN blobs b ON b.id = i.blob",
            )
            .map_err(self.err())?;
        let rows = stmt
            .query_map([snap], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, Vec<u8>>(2)?)))
            .map_err(self.err())?;
        let mut out = Vec::new();
        for row in rows {
            let (key, id, hash) = row.map_err(self.err())?;
            let hash: Hash = hash.try_into().map_err(|_| format!("blob {id}: its hash is not 32 bytes"))?;
            out.push((BlockPos::from_legacy_key(key), id, hash));
        }
        Ok(out)
    }

    /// The blocks whose blob differs between snapshots `a` and `b` (a < b):
    /// (position, blob id in a, blob id in b), None where absent.
    pub fn changed_blocks(&self, a: i64, b: i64) -> Result<Vec<Changed>, String> {
        let (a, b) = (a.min(b), a.max(b));
        let mut stmt = self
            .conn
            .prepare("SELECT DISTINCT pos FROM block_index WHERE snap > ?1 AND snap <= ?2 ORDER BY pos")
            .map_err(self.err())?;
        let keys: Vec<i64> =
            stmt.query_map([a, b], |r| r.get(0)).map_err(self.err())?.collect::<Result<_, _>>().map_err(self.err())?;
        let mut at = self.conn.prepare_cached(BLOB_ID_AT).map_err(self.err())?;
        let mut out = Vec::new();
        for key in keys {
            let ida: Option<i64> =
                at.query_row(params![key, a], |r| r.get(0)).optional().map_err(self.err())?.flatten();
            let idb: Option<i64> =
                at.query_row(params![key, b], |r| r.get(0)).optional().map_err(self.err())?.flatten();
            if ida != idb {
                out.push(Changed { pos: BlockPos::from_legacy_key(key), before: ida, after: idb });
            }
        }
        Ok(out)
    }

    /// A blob by id.
    pub fn blob(&self, id: i64) -> Result<Vec<u8>, String> {
        self.conn
            .prepare_cached("SELECT data FROM blobs WHERE id = ?1")
            .and_then(|mut s| s.query_row([id], |r| r.get(0)))
            .map_err(self.err())
    }

    /// The id of the blob with these bytes, if the store has it.
    pub fn blob_id(&self, bytes: &[u8]) -> Result<Option<i64>, String> {
        self.conn
            .prepare_cached("SELECT id FROM blobs WHERE hash = ?1")
            .and_then(|mut s| s.query_row([hash_of(bytes).as_slice()], |r| r.get(0)).optional())
            .map_err(self.err())
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
        let mut stmt = self.conn.prepare("SELECT id, hash, size, data FROM blobs").map_err(self.err())?;
        let mut rows = stmt.query([]).map_err(self.err())?;
        let mut n = 0;
        while let Some(r) = rows.next().map_err(self.err())? {
            let (id, hash, size): (i64, Vec<u8>, i64) =
                (r.get(0).map_err(self.err())?, r.get(1).map_err(self.err())?, r.get(2).map_err(self.err())?);
            let data = r.get_ref(3).map_err(self.err())?.as_blob().map_err(|e| format!("blob {id}: {e}"))?;
            if hash_of(data).as_slice() != hash.as_slice() || data.len() as i64 != size {
                problems.push(format!(
                    "blob {id} ({} bytes, {size} recorded) does not match its SHA-256 {}",
                    data.len(),
                    hex(&hash)
                ));
            }
            n += 1;
            if n % 65536 == 0 {
                progress(n);
            }
        }
        for (table, key) in [("block_index", "pos"), ("record_index", "name")] {
            let sql = format!(
                "SELECT {key}, snap, blob FROM {table} WHERE blob IS NOT NULL \
                 AND NOT EXISTS (SELECT 1 FROM blobs WHERE id = {table}.blob) LIMIT 10"
            );
            let mut stmt = self.conn.prepare(&sql).map_err(self.err())?;
            let missing = stmt
                .query_map([], |r| {
                    Ok(format!(
                        "{table}: {:?} of snapshot #{} names blob {} which is missing",
                        r.get_ref(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?
                    ))
                })
                .map_err(self.err())?;
            for m in missing {
                problems.push(m.map_err(self.err())?);
            }
        }
        let check: String = self.conn.query_row("PRAGMA quick_check", [], |r| r.get(0)).map_err(self.err())?;
        if check != "ok" {
            problems.push(format!("SQLite's quick_check of the store: {check}"));
        }
        Ok((problems, n))
    }

    /// Bytes of the store's files (database and its WAL).
    pub fn disk_bytes(&self) -> u64 {
        let file = self.path();
        let wal = PathBuf::from(format!("{}-wal", file.display()));
        [file, wal].iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum()
    }
}

/// The blob id of the row of greatest snap <= ?2 for block key ?1 (no row:
/// absent; a row with a NULL blob: gone).
const BLOB_ID_AT: &str = "SELECT blob FROM block_index WHERE pos = ?1 AND snap <= ?2 ORDER BY snap DESC LIMIT 1";

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

fn block(conn: &Connection, snap: i64, pos: BlockPos) -> rusqlite::Result<Option<Vec<u8>>> {
    let id: Option<i64> =
        conn.prepare_cached(BLOB_ID_AT)?.query_row(params![pos.legacy_key(), snap], |r| r.get(0)).optional()?.flatten();
    match id {
        None => Ok(None),
        Some(id) => {
            conn.prepare_cached("SELECT data FROM blobs WHERE id = ?1")?.query_row([id], |r| r.get(0)).map(Some)
        }
    }
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
