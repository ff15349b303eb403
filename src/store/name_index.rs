//! The file that keeps a world's index of node names between mounts (a
//! SQLite file in the user's cache directory): for every name, how many
//! blocks and nodes hold it and the positions of those blocks (an opaque,
//! compressed list the index encodes), plus the blocks changed through a
//! mount since the index was built (overrides), and a stamp saying which
//! version of the map it describes. The logic is in `kinds/luanti/index.rs`;
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
    pub name: Vec<u8>,
    pub blocks: u64,
    pub nodes: u64,
    /// The positions of its blocks, encoded by the index.
    pub postings: Vec<u8>,
}

/// A block changed since the build: what it held then, and now (both
/// encoded by the index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    pub packed: u64,
    pub base: Vec<u8>,
    pub now: Vec<u8>,
}

pub struct IndexFile {
    path: PathBuf,
    conn: Mutex<Connection>,
}

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS stamp (one INTEGER PRIMARY KEY CHECK (one = 1), map TEXT NOT NULL,
        version INTEGER, built_ms INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS names (name BLOB PRIMARY KEY, blocks INTEGER NOT NULL, nodes INTEGER NOT NULL,
        postings BLOB NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS overrides (packed INTEGER PRIMARY KEY, base BLOB NOT NULL, now BLOB NOT NULL);";

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
        conn.execute_batch(SCHEMA).map_err(backend)?;
        Ok(IndexFile { path: path.to_path_buf(), conn: Mutex::new(conn) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

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
        let mut c = self.conn.lock();
        let tx = c.transaction().map_err(backend)?;
        tx.execute_batch("DELETE FROM names; DELETE FROM overrides; DELETE FROM stamp;").map_err(backend)?;
        tx.execute(
            "INSERT INTO stamp (one, map, version, built_ms) VALUES (1, ?1, ?2, ?3)",
            params![stamp.map, stamp.version.map(|v| v as i64), stamp.built_ms],
        )
        .map_err(backend)?;
        {
            let mut ins = tx
                .prepare("INSERT INTO names (name, blocks, nodes, postings) VALUES (?1, ?2, ?3, ?4)")
                .map_err(backend)?;
            for n in names {
                ins.execute(params![n.name, n.blocks as i64, n.nodes as i64, n.postings]).map_err(backend)?;
            }
        }
        tx.commit().map_err(backend)
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
}
