//! The `files` backends (Luanti's `PlayerDatabaseFiles`,
//! `AuthDatabaseFiles` and `ModStorageDatabaseFiles` in
//! src/database/database-files.cpp of
//! <https://github.com/luanti-org/luanti>): `players/<name>` files, one
//! `auth.txt`, `mod_storage/<mod>` JSON files. Each change is a
//! whole-file rewrite (temporary file, fsync, rename, fsync of the
//! directory), as the engine's `safeWriteToFile` does. The journal entry is
//! committed just before the rename: after a crash between the two, the
//! journal names a change that did not happen, which `worldfs undo` sees
//! as a record changed since (a conflict), never as a silent loss.

use super::{Collection, RecordDates, RecordStore, write_unless_changed};
use crate::{Note, Result, StoreError};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use worldfs_codec::luanti::auth::AuthEntry;
use worldfs_codec::luanti::mod_storage::ModStorage;
use worldfs_codec::luanti::player::Player;

/// One collection in the `files` backend of a world.
pub struct FileRecords {
    collection: Collection,
    dir: PathBuf,
    read_only: bool,
    journal: Option<PathBuf>,
    /// One change at a time (auth.txt is read-modify-write).
    lock: Mutex<()>,
}

fn io(what: &Path, e: std::io::Error) -> StoreError {
    // A quota is a full disk to the user as well.
    if matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT)) {
        return StoreError::Full(format!("{}: {e}", what.display()));
    }
    StoreError::Backend(format!("{}: {e}", what.display()))
}

/// Write `bytes` to `path` atomically.
fn safe_write(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(StoreError::Backend(format!("{}: not a file in a directory", path.display())));
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let name = name.to_string_lossy();
    // A dot name: the engine's player listing skips none, but worldfs's
    // own temporary never outlives this call.
    let tmp = dir.join(format!(".{name}.worldfs-{}", std::process::id()));
    let r = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r.map_err(|e| io(path, e))
}

impl FileRecords {
    /// The collection's files in world directory `dir`, journaled to `journal`
    /// when given (nothing is read until asked).
    pub fn new(dir: &Path, collection: Collection, read_only: bool, journal: Option<&Path>) -> FileRecords {
        FileRecords {
            collection,
            dir: dir.to_path_buf(),
            read_only,
            journal: journal.map(Path::to_path_buf),
            lock: Mutex::new(()),
        }
    }

    fn auth_path(&self) -> PathBuf {
        self.dir.join("auth.txt")
    }

    fn sub_dir(&self) -> PathBuf {
        self.dir.join(self.collection.name())
    }

    /// Player files by the name they hold (the file name does not count).
    fn player_files(&self) -> Result<Vec<(String, PathBuf)>> {
        let dir = self.sub_dir();
        let Ok(rd) = std::fs::read_dir(&dir) else { return Ok(Vec::new()) };
        let mut out = Vec::new();
        for e in rd.flatten() {
            let file_name = e.file_name().to_string_lossy().into_owned();
            if file_name.starts_with('.') || file_name.ends_with(".~mt") || !e.path().is_file() {
                continue;
            }
            let bytes = std::fs::read(e.path()).map_err(|err| io(&e.path(), err))?;
            match Player::from_file(&bytes) {
                Ok((name, _)) => out.push((name, e.path())),
                Err(why) => log::warn!("{}: not a player file the engine can read: {why}", e.path().display()),
            }
        }
        out.sort();
        Ok(out)
    }

    fn auth_lines(&self) -> Result<Vec<String>> {
        match std::fs::read(self.auth_path()) {
            Ok(b) => Ok(String::from_utf8_lossy(&b).lines().map(String::from).collect()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(io(&self.auth_path(), e)),
        }
    }

    fn read(&self, name: &str) -> Result<Option<Vec<u8>>> {
        match self.collection {
            Collection::Players => {
                let Some((_, path)) = self.player_files()?.into_iter().find(|(n, _)| n == name) else {
                    return Ok(None);
                };
                let bytes = std::fs::read(&path).map_err(|e| io(&path, e))?;
                let (_, p) =
                    Player::from_file(&bytes).map_err(|e| StoreError::Backend(format!("{}: {e}", path.display())))?;
                Ok(Some(p.encode()))
            }
            Collection::Auth => Ok(self
                .auth_lines()?
                .iter()
                .filter_map(|l| AuthEntry::from_line(l))
                .find(|(n, _)| n == name)
                .map(|(_, e)| e.encode())),
            Collection::ModStorage => {
                let path = self.sub_dir().join(name);
                match std::fs::read(&path) {
                    Ok(b) => {
                        let m = ModStorage::from_json(&b)
                            .map_err(|e| StoreError::Backend(format!("{}: {e}", path.display())))?;
                        Ok(Some(m.encode()))
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(io(&path, e)),
                }
            }
        }
    }

    fn write(&self, name: &str, new: Option<&[u8]>) -> Result<()> {
        let bad = |e: String| StoreError::Backend(format!("{name}: {e}"));
        match self.collection {
            Collection::Players => {
                let existing = self.player_files()?.into_iter().find(|(n, _)| n == name).map(|(_, p)| p);
                match new {
                    None => match existing {
                        Some(p) => std::fs::remove_file(&p).map_err(|e| io(&p, e)),
                        None => Ok(()),
                    },
                    Some(b) => {
                        let file = Player::decode(b).and_then(|p| p.to_file(name)).map_err(bad)?;
                        safe_write(&existing.unwrap_or_else(|| self.sub_dir().join(name)), &file)
                    }
                }
            }
            Collection::Auth => {
                let mut lines = self.auth_lines()?;
                let at = lines.iter().position(|l| AuthEntry::from_line(l).is_some_and(|(n, _)| n == name));
                let line = new.map(AuthEntry::decode).transpose().map_err(bad)?.map(|e| e.to_line(name));
                match (at, line) {
                    (Some(i), Some(l)) => lines[i] = l,
                    (Some(i), None) => {
                        lines.remove(i);
                    }
                    (None, Some(l)) => lines.push(l),
                    (None, None) => return Ok(()),
                }
                let mut text = lines.join("\n");
                if !text.is_empty() {
                    text.push('\n');
                }
                safe_write(&self.auth_path(), text.as_bytes())
            }
            Collection::ModStorage => {
                let path = self.sub_dir().join(name);
                match new {
                    None => match std::fs::remove_file(&path) {
                        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(&path, e)),
                        _ => Ok(()),
                    },
                    Some(b) => safe_write(&path, &ModStorage::decode(b).and_then(|m| m.to_json()).map_err(bad)?),
                }
            }
        }
    }
}

impl RecordStore for FileRecords {
    fn describe(&self) -> String {
        let place = match self.collection {
            Collection::Auth => self.auth_path(),
            _ => self.sub_dir(),
        };
        format!("{} in {} (files backend)", self.collection.name(), place.display())
    }

    fn names(&self) -> Result<Vec<String>> {
        Ok(match self.collection {
            Collection::Players => {
                let mut v: Vec<String> = self.player_files()?.into_iter().map(|(n, _)| n).collect();
                v.dedup();
                v
            }
            Collection::Auth => {
                let mut v: Vec<String> =
                    self.auth_lines()?.iter().filter_map(|l| AuthEntry::from_line(l)).map(|(n, _)| n).collect();
                v.sort();
                v.dedup();
                v
            }
            Collection::ModStorage => {
                let Ok(rd) = std::fs::read_dir(self.sub_dir()) else { return Ok(Vec::new()) };
                let mut v: Vec<String> = rd
                    .flatten()
                    .filter(|e| e.path().is_file())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| worldfs_codec::luanti::mod_storage::check_mod_name(n).is_ok())
                    .collect();
                v.sort();
                v
            }
        })
    }

    fn get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        self.read(name)
    }

    fn restore(
        &self,
        name: &str,
        expect: Option<&[u8]>,
        new: Option<&[u8]>,
        _dates: Option<&RecordDates>,
        note: &Note,
    ) -> Result<()> {
        if self.read_only {
            return Err(StoreError::ReadOnly);
        }
        let _one = self.lock.lock();
        let now = self.read(name)?;
        let journal = self.journal.as_deref();
        write_unless_changed(self.collection, journal, note, name, (now, expect, new), || self.write(name, new))
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }
}
