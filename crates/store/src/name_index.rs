//! The file that keeps a world's index of node names between mounts (a
//! SQLite file in the user's cache directory): for every name, how many
//! blocks and nodes hold it and the positions of those blocks (an opaque,
//! compressed list the index encodes), plus the blocks changed through a
//! mount since the index was built (overrides), and a stamp saying which
//! version of the map it describes. The logic is in the daemon's `src/worlds/luanti/index.rs`;
//! this file only stores.

use super::{Result, StoreError};
use parking_lot::Mutex;
use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};

fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(format!("name index: {e}"))
}

/// Which map an index describes, and which version of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// The map's identity (backend, file or database) at build time.
    pub map: String,
    /// The map's data version the index is current with, if it has one.
    pub version: Option<u64>,
    /// When it was built (milliseconds since 1970).
    pub built_ms: i64,
}

/// One name of the index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameRow {
    /// The node name.
    pub name: Vec<u8>,
    /// How many blocks hold it.
    pub blocks: u64,
    /// How many nodes are it, in all blocks.
    pub nodes: u64,
    /// The positions of its blocks, encoded by the index.
    pub postings: Vec<u8>,
}

/// A block changed since the build: what it held then, and now (both
/// encoded by the index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    /// The block ([`BlockPos::packed`](crate::BlockPos::packed)).
    pub packed: u64,
    /// Its node counts per name when the index was built.
    pub base: Vec<u8>,
    /// Its node counts per name now.
    pub now: Vec<u8>,
}

/// An open index file (one per world).
pub struct IndexFile {
    path: PathBuf,
    conn: Mutex<Connection>,
}

/// Version 2: `names` has row ids, so a build writes each name's block list
/// into its row piece by piece (SQLite's blob I/O needs a row id); the
/// pieces wait in a temporary table (a file of SQLite's own, deleted with
/// the connection, so the index file does not keep their pages) until the
/// build ends. Version 3: each block in a list carries the name's node
/// count there (the lists are opaque here; the version tells old files
/// apart, which are dropped and built again).
const SCHEMA_VERSION: i64 = 3;

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS stamp (one INTEGER PRIMARY KEY CHECK (one = 1), map TEXT NOT NULL,
        version INTEGER, built_ms INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS names (name BLOB PRIMARY KEY, blocks INTEGER NOT NULL, nodes INTEGER NOT NULL,
        postings BLOB NOT NULL);
    CREATE TABLE IF NOT EXISTS overrides (packed INTEGER PRIMARY KEY, base BLOB NOT NULL, now BLOB NOT NULL);
    CREATE TEMP TABLE IF NOT EXISTS pieces (name BLOB NOT NULL, seq INTEGER NOT NULL, bytes BLOB NOT NULL,
        PRIMARY KEY (name, seq)) WITHOUT ROWID;";

/// Tables of an older version are dropped: the file is a cache, and the
/// next use builds the index again.
fn migrate(conn: &Connection) -> Result<()> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(backend)?;
    if version != SCHEMA_VERSION {
        conn.execute_batch(
            "DROP TABLE IF EXISTS names; DROP TABLE IF EXISTS overrides; DROP TABLE IF EXISTS stamp;
             DROP TABLE IF EXISTS pieces;",
        )
        .map_err(backend)?;
        conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION};")).map_err(backend)?;
    }
    conn.execute_batch(SCHEMA).map_err(backend)
}

impl IndexFile {
    /// Open (or create) the index file at `path`.
    pub fn open(path: &Path) -> Result<IndexFile> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| StoreError::Backend(format!("name index: {}: {e}", dir.display())))?;
        }
        let conn = Connection::open(path).map_err(backend)?;
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(backend)?;
        // A cache: losing the last transactions at a crash only means a rebuild.
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;").map_err(backend)?;
        migrate(&conn)?;
        Ok(IndexFile { path: path.to_path_buf(), conn: Mutex::new(conn) })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Which map and version the index describes; None before the first build.
    pub fn stamp(&self) -> Result<Option<Stamp>> {
        let c = self.conn.lock();
        c.query_row("SELECT map, version, built_ms FROM stamp WHERE one = 1", [], |r| {
            Ok(Stamp { map: r.get(0)?, version: r.get::<_, Option<i64>>(1)?.map(|v| v as u64), built_ms: r.get(2)? })
        })
        .optional()
        .map_err(backend)
    }

    /// Replace the whole index (one transaction; overrides are dropped).
    pub fn replace(&self, stamp: &Stamp, names: &[NameRow]) -> Result<()> {
        self.begin_build()?.finish(stamp, names)
    }

    /// Start building the whole index again: block lists are appended in
    /// pieces as a scan finds them (so the build never holds them all),
    /// and `finish` replaces the index with them in one transaction.
    pub fn begin_build(&self) -> Result<IndexBuild<'_>> {
        // Pieces of a build that failed midway.
        self.conn.lock().execute_batch("DELETE FROM temp.pieces;").map_err(backend)?;
        Ok(IndexBuild { file: self, seq: 0, lengths: std::collections::HashMap::new() })
    }

    /// Forget everything (the next use builds afresh).
    pub fn clear(&self) -> Result<()> {
        self.conn.lock().execute_batch("DELETE FROM stamp;").map_err(backend)
    }

    /// Replace the rows of names `gone` and `rows` (one transaction).
    pub fn update_names(&self, gone: &[Vec<u8>], rows: &[NameRow]) -> Result<()> {
        let mut c = self.conn.lock();
        let tx = c.transaction().map_err(backend)?;
        for name in gone {
            tx.execute("DELETE FROM names WHERE name = ?1", params![name]).map_err(backend)?;
        }
        for n in rows {
            tx.execute(
                "INSERT OR REPLACE INTO names (name, blocks, nodes, postings) VALUES (?1, ?2, ?3, ?4)",
                params![n.name, n.blocks as i64, n.nodes as i64, n.postings],
            )
            .map_err(backend)?;
        }
        tx.commit().map_err(backend)
    }

    /// Every name with its counts (postings left out).
    pub fn names(&self) -> Result<Vec<NameRow>> {
        let c = self.conn.lock();
        let mut st = c.prepare("SELECT name, blocks, nodes FROM names ORDER BY name").map_err(backend)?;
        st.query_map([], |r| {
            Ok(NameRow {
                name: r.get(0)?,
                blocks: r.get::<_, i64>(1)? as u64,
                nodes: r.get::<_, i64>(2)? as u64,
                postings: Vec::new(),
            })
        })
        .and_then(|rows| rows.collect())
        .map_err(backend)
    }

    /// The encoded block list of one name.
    pub fn postings(&self, name: &[u8]) -> Result<Option<Vec<u8>>> {
        let c = self.conn.lock();
        c.query_row("SELECT postings FROM names WHERE name = ?1", params![name], |r| r.get(0))
            .optional()
            .map_err(backend)
    }

    /// Every name's block list, one name at a time, to `each`.
    pub fn each_postings(&self, each: &mut dyn FnMut(&[u8], &[u8])) -> Result<()> {
        let c = self.conn.lock();
        let mut st = c.prepare("SELECT name, postings FROM names").map_err(backend)?;
        let mut rows = st.query([]).map_err(backend)?;
        while let Some(r) = rows.next().map_err(backend)? {
            let name = r.get_ref(0).map_err(backend)?.as_blob().map_err(|e| backend(e.into()))?;
            let postings = r.get_ref(1).map_err(backend)?.as_blob().map_err(|e| backend(e.into()))?;
            each(name, postings);
        }
        Ok(())
    }

    /// Forget the overrides of these blocks (packed positions): the
    /// block lists describe them again.
    pub fn drop_overrides(&self, packed: &[u64]) -> Result<()> {
        let mut c = self.conn.lock();
        let tx = c.transaction().map_err(backend)?;
        {
            let mut del = tx.prepare("DELETE FROM overrides WHERE packed = ?1").map_err(backend)?;
            for p in packed {
                del.execute(params![*p as i64]).map_err(backend)?;
            }
        }
        tx.commit().map_err(backend)
    }

    /// Every block changed since the build.
    pub fn overrides(&self) -> Result<Vec<Override>> {
        let c = self.conn.lock();
        let mut st = c.prepare("SELECT packed, base, now FROM overrides").map_err(backend)?;
        st.query_map([], |r| Ok(Override { packed: r.get::<_, i64>(0)? as u64, base: r.get(1)?, now: r.get(2)? }))
            .and_then(|rows| rows.collect())
            .map_err(backend)
    }

    /// Say which map (identity and fingerprint) and version the index now
    /// describes, after a commit through the mount.
    pub fn restamp(&self, map: &str, version: Option<u64>) -> Result<()> {
        self.conn
            .lock()
            .execute("UPDATE stamp SET map = ?1, version = ?2", params![map, version.map(|v| v as i64)])
            .map(drop)
            .map_err(backend)
    }

    /// Record blocks changed through a mount, and the map version the
    /// index is now current with (one transaction).
    pub fn put_overrides(&self, rows: &[Override], version: Option<u64>) -> Result<()> {
        let mut c = self.conn.lock();
        let tx = c.transaction().map_err(backend)?;
        {
            let mut ins = tx
                .prepare("INSERT OR REPLACE INTO overrides (packed, base, now) VALUES (?1, ?2, ?3)")
                .map_err(backend)?;
            for o in rows {
                ins.execute(params![o.packed as i64, o.base, o.now]).map_err(backend)?;
            }
        }
        tx.execute("UPDATE stamp SET version = ?1", params![version.map(|v| v as i64)]).map_err(backend)?;
        tx.commit().map_err(backend)
    }
}

/// A build of the whole index under way (`IndexFile::begin_build`).
pub struct IndexBuild<'a> {
    file: &'a IndexFile,
    /// The order of the pieces: a name's pieces are joined in it.
    seq: i64,
    /// The bytes appended so far for each name.
    lengths: std::collections::HashMap<Vec<u8>, u64>,
}

impl IndexBuild<'_> {
    /// Append pieces of names' block lists (one transaction).
    pub fn append(&mut self, pieces: &[(&[u8], &[u8])]) -> Result<()> {
        let mut c = self.file.conn.lock();
        let tx = c.transaction().map_err(backend)?;
        {
            let mut ins =
                tx.prepare("INSERT INTO temp.pieces (name, seq, bytes) VALUES (?1, ?2, ?3)").map_err(backend)?;
            for (name, bytes) in pieces.iter().filter(|p| !p.1.is_empty()) {
                self.seq += 1;
                ins.execute(params![name, self.seq, bytes]).map_err(backend)?;
                *self.lengths.entry(name.to_vec()).or_default() += bytes.len() as u64;
            }
        }
        tx.commit().map_err(backend)
    }

    /// Replace the index with `names`, in one transaction: each name's
    /// block list is its pieces joined in order, then its `postings` (the
    /// last piece, still in memory: written once, not into the pieces and
    /// back). Memory: one piece at a time besides `names`.
    pub fn finish(self, stamp: &Stamp, names: &[NameRow]) -> Result<()> {
        let mut c = self.file.conn.lock();
        let tx = c.transaction().map_err(backend)?;
        tx.execute_batch("DELETE FROM names; DELETE FROM overrides; DELETE FROM stamp;").map_err(backend)?;
        tx.execute(
            "INSERT INTO stamp (one, map, version, built_ms) VALUES (1, ?1, ?2, ?3)",
            params![stamp.map, stamp.version.map(|v| v as i64), stamp.built_ms],
        )
        .map_err(backend)?;
        {
            let mut ins = tx
                .prepare("INSERT INTO names (name, blocks, nodes, postings) VALUES (?1, ?2, ?3, zeroblob(?4))")
                .map_err(backend)?;
            let mut pieces =
                tx.prepare("SELECT bytes FROM temp.pieces WHERE name = ?1 ORDER BY seq").map_err(backend)?;
            for n in names {
                let length = self.lengths.get(&n.name).copied().unwrap_or(0) + n.postings.len() as u64;
                ins.execute(params![n.name, n.blocks as i64, n.nodes as i64, length as i64]).map_err(backend)?;
                let mut blob = tx
                    .blob_open(rusqlite::MAIN_DB, "names", "postings", tx.last_insert_rowid(), false)
                    .map_err(backend)?;
                let mut at = 0usize;
                let mut rows = pieces.query(params![n.name]).map_err(backend)?;
                while let Some(row) = rows.next().map_err(backend)? {
                    let bytes = row.get_ref(0).map_err(backend)?.as_blob().map_err(|e| backend(e.into()))?;
                    blob.write_at(bytes, at).map_err(backend)?;
                    at += bytes.len();
                }
                if !n.postings.is_empty() {
                    blob.write_at(&n.postings, at).map_err(backend)?;
                }
            }
        }
        tx.execute_batch("DELETE FROM temp.pieces;").map_err(backend)?;
        tx.commit().map_err(backend)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_and_keeps_overrides_until_the_next_build() {
        let d = tempfile::tempdir().unwrap();
        let f = IndexFile::open(&d.path().join("sub/index.sqlite")).unwrap();
        assert_eq!(f.stamp().unwrap(), None);
        let stamp = Stamp { map: "m".into(), version: Some(7), built_ms: 1 };
        let row = |n: &str| NameRow { name: n.into(), blocks: 2, nodes: 9, postings: vec![1, 2] };
        f.replace(&stamp, &[row("b"), row("a")]).unwrap();
        assert_eq!(f.stamp().unwrap(), Some(stamp.clone()));
        assert_eq!(
            f.names().unwrap().iter().map(|r| r.name.clone()).collect::<Vec<_>>(),
            [b"a".to_vec(), b"b".to_vec()]
        );
        assert_eq!(f.postings(b"a").unwrap(), Some(vec![1, 2]));
        assert_eq!(f.postings(b"zz").unwrap(), None);
        f.put_overrides(&[Override { packed: 5, base: vec![1], now: vec![2] }], Some(8)).unwrap();
        assert_eq!(f.stamp().unwrap().unwrap().version, Some(8));
        assert_eq!(f.overrides().unwrap().len(), 1);
        f.replace(&stamp, &[]).unwrap();
        assert!(f.overrides().unwrap().is_empty());
    }

    #[test]
    fn a_file_of_the_first_format_is_emptied_for_a_new_build() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("index.sqlite");
        let old = Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE stamp (one INTEGER PRIMARY KEY CHECK (one = 1), map TEXT NOT NULL, version INTEGER,
                 built_ms INTEGER NOT NULL);
             CREATE TABLE names (name BLOB PRIMARY KEY, blocks INTEGER NOT NULL, nodes INTEGER NOT NULL,
                 postings BLOB NOT NULL) WITHOUT ROWID;
             INSERT INTO stamp VALUES (1, 'm', 7, 1);
             INSERT INTO names VALUES (x'61', 1, 1, x'00');",
        )
        .unwrap();
        drop(old);
        let f = IndexFile::open(&path).unwrap();
        assert_eq!(f.stamp().unwrap(), None, "built again");
        let row = NameRow { name: b"a".to_vec(), blocks: 2, nodes: 9, postings: vec![5, 6, 7] };
        f.replace(&Stamp { map: "m".into(), version: Some(8), built_ms: 2 }, std::slice::from_ref(&row)).unwrap();
        assert_eq!(f.postings(b"a").unwrap(), Some(vec![5, 6, 7]));
        assert_eq!(IndexFile::open(&path).unwrap().postings(b"a").unwrap(), Some(vec![5, 6, 7]), "kept on reopening");
    }
}
