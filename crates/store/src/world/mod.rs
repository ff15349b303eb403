//! A world directory: `world.mt` settings, the map backend it names, and the
//! world's own text files. [`backends`] is the one registry from world.mt's
//! backend names to the stores that open them.

pub mod backends;

use crate::MapStore;
use crate::records::{Collection, RecordStore};
use backends::WorldPlace;
use std::path::{Path, PathBuf};

/// A Luanti world directory and its `world.mt`.
pub struct World {
    /// The world directory.
    pub dir: PathBuf,
    /// `world.mt` as (key, value) pairs in file order.
    pub settings: Vec<(String, String)>,
}

/// Parse Settings-style `key = value` lines (comments and blank lines
/// skipped, both sides trimmed). Multi-line values and groups do not occur
/// in world.mt.
pub fn parse_settings(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            if l.is_empty() || l.starts_with('#') {
                return None;
            }
            let (k, v) = l.split_once('=')?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

impl World {
    /// Reads `world.mt` of the world at `dir` (a world without one has no
    /// settings); an error when `dir` is not a directory or the file cannot be read.
    pub fn open(dir: &Path) -> Result<World, String> {
        if !dir.is_dir() {
            return Err(format!("{}: not a directory", dir.display()));
        }
        let mt = dir.join("world.mt");
        let settings = match std::fs::read(&mt) {
            Ok(bytes) => parse_settings(&String::from_utf8_lossy(&bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(format!("{}: {e}", mt.display())),
        };
        Ok(World { dir: dir.to_path_buf(), settings })
    }

    /// The last value of a world.mt key (later lines override earlier ones).
    pub fn setting(&self, key: &str) -> Option<&str> {
        self.settings.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The map backend named by world.mt (`sqlite3` when absent).
    pub fn backend(&self) -> &str {
        self.setting("backend").unwrap_or("sqlite3")
    }

    /// A value from env_meta.txt (game_time, last_clear_objects_time...),
    /// read now: the server rewrites that file while it runs.
    pub fn env_meta(&self, key: &str) -> Option<String> {
        let text = std::fs::read_to_string(self.dir.join("env_meta.txt")).ok()?;
        parse_settings(&text).into_iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Where a `sqlite3` world's map file is (`map.sqlite`).
    pub fn map_path(&self) -> PathBuf {
        self.dir.join(backends::SQLITE_MAP_FILE)
    }

    /// Where the undo journal of this world lives.
    pub fn journal_path(&self) -> PathBuf {
        self.dir.join(crate::journal::FILE_NAME)
    }

    /// Open the map database (store::backends says which store world.mt's
    /// `backend` names); a writable one keeps the undo journal unless
    /// `journal` is false.
    pub fn open_store(&self, read_only: bool, journal: bool) -> Result<Box<dyn MapStore>, String> {
        let setting = |k: &str| self.setting(k).map(String::from);
        let place = self.place(&setting);
        let journal_path = journal.then(|| self.journal_path());
        backends::open_map(&place, read_only, journal_path.as_deref())
    }

    /// The map of this world while its server runs the worldfs_live mod:
    /// read from the database, changed through the server
    /// (`live::LiveStore`), journaled at `journal`. With `direct`, big
    /// changes write the blocks the server does not hold to the database
    /// themselves (`live::direct`), unless the map is in LevelDB (the
    /// server holds it alone) or cannot be opened for writing here (then
    /// every change goes through the server).
    pub fn open_live_store(&self, journal: Option<PathBuf>, direct: bool) -> Result<crate::live::LiveStore, String> {
        let db = self.open_store(true, false)?;
        let store = crate::live::LiveStore::new(&self.dir, db).with_journal(journal);
        if !direct || self.backend() == "leveldb" {
            return Ok(store);
        }
        match self.open_store(false, false) {
            Ok(writable) => Ok(store.with_direct(writable, crate::live::direct::DIRECT_FROM)),
            Err(e) => {
                log::warn!("the map cannot be opened for writing here ({e}): every change goes through the server");
                Ok(store)
            }
        }
    }

    /// Open the map to take a snapshot of it, read-only. A LevelDB map is
    /// locked while it is read (one instant); one a running server holds
    /// is refused with the reason, unless `partial_ok` (then read as its
    /// files are: a save in progress may be in part).
    pub fn open_store_for_snapshot(&self, partial_ok: bool) -> Result<Box<dyn MapStore>, String> {
        #[cfg(feature = "leveldb")]
        if self.backend() == "leveldb" {
            let dir = self.dir.join("map.db");
            return Ok(Box::new(crate::leveldb::LevelDbStore::open_for_snapshot(&dir, partial_ok)?));
        }
        let _ = partial_ok;
        self.open_store(true, false)
    }

    /// Open the store of one collection of records, as world.mt says.
    pub fn open_records(
        &self,
        collection: Collection,
        read_only: bool,
        journal: bool,
    ) -> Result<Box<dyn RecordStore>, String> {
        let setting = |k: &str| self.setting(k).map(String::from);
        let journal_path = (journal && !read_only).then(|| self.journal_path());
        backends::open_records(&self.place(&setting), collection, read_only, journal_path.as_deref())
    }

    fn place<'a>(&'a self, setting: &'a dyn Fn(&str) -> Option<String>) -> WorldPlace<'a> {
        WorldPlace { dir: &self.dir, setting, has_world_mt: self.dir.join("world.mt").is_file() }
    }

    /// Whether a file in the world directory is one of the world's own text
    /// files shown at the top of the mount (databases are not).
    pub fn is_text_file_name(name: &str) -> bool {
        const DB_SUFFIXES: [&str; 4] = [".sqlite", ".sqlite-journal", ".sqlite-wal", ".sqlite-shm"];
        !name.starts_with('.') && !DB_SUFFIXES.iter().any(|s| name.ends_with(s))
    }

    /// The world's text files (regular files, sorted by name).
    pub fn text_files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| Self::is_text_file_name(n))
            .collect();
        names.sort();
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(feature = "leveldb")]
    fn backend_defaults_and_errors() {
        let d = tempfile::tempdir().unwrap();
        let w = World::open(d.path()).unwrap();
        assert_eq!(w.backend(), "sqlite3");
        assert!(w.open_store(true, false).err().unwrap().contains("no map.sqlite"));
        std::fs::write(d.path().join("world.mt"), "gameid = minetest\nbackend = leveldb\n").unwrap();
        let w = World::open(d.path()).unwrap();
        let e = w.open_store(true, false).err().unwrap();
        assert!(e.contains("map.db") && e.contains("backend = leveldb"), "{e}");
        std::fs::write(d.path().join("world.mt"), "backend = dummy\n").unwrap();
        let e = World::open(d.path()).unwrap().open_store(true, false).err().unwrap();
        assert!(e.contains("backend = dummy") && e.contains("supports sqlite3"), "{e}");
        std::fs::write(d.path().join("world.mt"), "backend = foo\n").unwrap();
        assert!(
            World::open(d.path()).unwrap().open_store(true, false).err().unwrap().contains("unknown map backend 'foo'")
        );
    }

    #[test]
    fn text_files_exclude_databases() {
        let d = tempfile::tempdir().unwrap();
        for f in ["world.mt", "env_meta.txt", "map.sqlite", "map.sqlite-journal", "players.sqlite", ".hidden"] {
            std::fs::write(d.path().join(f), "x").unwrap();
        }
        std::fs::create_dir(d.path().join("worldmods")).unwrap();
        assert_eq!(World::open(d.path()).unwrap().text_files(), vec!["env_meta.txt", "world.mt"]);
    }
}
