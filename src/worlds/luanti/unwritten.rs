//! Grouped changes (`-o group_ms`) that could not be written at unmount:
//! their `close()` returned 0, so a program was told they were made, and
//! they must not vanish. They are kept in a file of their own (the world
//! directory first, else the user's cache directory, else the temporary
//! directory: the world's disk may be the full one), written into the map
//! at the next writable mount, and listed by `worldfs check`.
//!
//! Each kept block holds the bytes the map had when it was kept (`base`):
//! the next mount writes it only if the map still holds those, so a block
//! the server changed meanwhile is not overwritten; the mount is refused
//! then, with the blocks named, and the file stays.

use rusqlite::{Connection, OpenFlags, params};
use std::path::{Path, PathBuf};
use worldfs_store::{BlockPos, Change, MapStore, Note, StoreError};

/// The file's name in the world directory.
pub const FILE_NAME: &str = "worldfs-unwritten.sqlite";

/// One block change not yet in the map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    pub pos: BlockPos,
    /// The new bytes.
    pub blob: Vec<u8>,
    /// What the map held when the change was kept (empty: no block;
    /// None: it could not be read, so the next mount writes it as is).
    pub base: Option<Vec<u8>>,
    /// Which files were written (for the journal).
    pub what: String,
}

/// Where the changes of the world in `dir` may be kept, in order of
/// preference.
pub(crate) fn places(dir: &Path) -> Vec<PathBuf> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mut crc = flate2::Crc::new();
    crc.update(dir.as_os_str().as_encoded_bytes());
    let name = format!("unwritten-{:08x}.sqlite", crc.sum());
    vec![dir.join(FILE_NAME), super::index::default_dir().join(&name), std::env::temp_dir().join("worldfs").join(name)]
}

/// Keep `changes` of the world in `dir`; returns where, or why nowhere.
pub fn keep(dir: &Path, changes: &[Kept]) -> Result<PathBuf, String> {
    let mut why = Vec::new();
    for place in places(dir) {
        match write_file(&place, dir, changes) {
            Ok(()) => return Ok(place),
            Err(e) => {
                why.push(format!("{}: {e}", place.display()));
                // A partial file must not be replayed.
                let _ = std::fs::remove_file(&place);
            }
        }
    }
    Err(why.join("; "))
}

fn write_file(path: &Path, world: &Path, changes: &[Kept]) -> rusqlite::Result<()> {
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let mut c = Connection::open(path)?;
    let tx = c.transaction()?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS world (path TEXT NOT NULL);
         CREATE TABLE IF NOT EXISTS kept (id INTEGER PRIMARY KEY, x INTEGER NOT NULL, y INTEGER NOT NULL,
             z INTEGER NOT NULL, blob BLOB NOT NULL, base BLOB, what TEXT NOT NULL, kept_ms INTEGER NOT NULL);",
    )?;
    tx.execute("DELETE FROM world", [])?;
    tx.execute("INSERT INTO world (path) VALUES (?1)", [world.display().to_string()])?;
    let now = crate::sys::time::now_secs() * 1000;
    for k in changes {
        tx.execute(
            "INSERT INTO kept (x, y, z, blob, base, what, kept_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![k.pos.x, k.pos.y, k.pos.z, k.blob, k.base, k.what, now],
        )?;
    }
    tx.commit()
}

/// The kept changes of the world in `dir`: (file, changes in the order
/// they were kept), for each file that holds some.
pub fn find(dir: &Path) -> Result<Vec<(PathBuf, Vec<Kept>)>, String> {
    let mut found = Vec::new();
    for place in places(dir).into_iter().filter(|p| p.is_file()) {
        let kept = read_file(&place).map_err(|e| format!("{}: {e}", place.display()))?;
        if !kept.is_empty() {
            found.push((place, kept));
        }
    }
    Ok(found)
}

fn read_file(path: &Path) -> rusqlite::Result<Vec<Kept>> {
    let c = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut s = c.prepare("SELECT x, y, z, blob, base, what FROM kept ORDER BY id")?;
    s.query_map([], |r| {
        Ok(Kept {
            pos: BlockPos::new(r.get(0)?, r.get(1)?, r.get(2)?),
            blob: r.get(3)?,
            base: r.get(4)?,
            what: r.get(5)?,
        })
    })?
    .collect()
}

/// Write the kept changes of the world in `dir` into `store` (one
/// transaction per file, journaled), and remove each file written.
/// Returns what was done, for the log.
pub fn replay(dir: &Path, store: &dyn MapStore) -> Result<Vec<String>, String> {
    let mut done = Vec::new();
    for (file, kept) in find(dir)? {
        let mut changes = Vec::with_capacity(kept.len() * 2);
        for k in &kept {
            if let Some(base) = &k.base {
                changes.push(Change::Expect(k.pos, Some(base.clone()).filter(|b| !b.is_empty())));
            }
            changes.push(Change::Put(k.pos, k.blob.clone()));
        }
        let note = Note::new(format!("kept at an unmount that could not write them: {}", describe(&kept)));
        match store.apply(&changes, &note) {
            Ok(()) => {}
            Err(StoreError::Conflict(why)) => {
                return Err(format!(
                    "{}: {} block change(s) that could not be written at the last unmount are kept there, \
                     but {why}. Remove the file to drop them (or undo the other change), then mount again",
                    file.display(),
                    kept.len()
                ));
            }
            Err(e) => {
                return Err(format!(
                    "{}: {} block change(s) kept from the last unmount could not be written: {e}",
                    file.display(),
                    kept.len()
                ));
            }
        }
        std::fs::remove_file(&file).map_err(|e| format!("{}: written, but cannot remove it: {e}", file.display()))?;
        done.push(format!("wrote {} block change(s) kept at the last unmount (from {})", kept.len(), file.display()));
    }
    Ok(done)
}

fn describe(kept: &[Kept]) -> String {
    let whats: Vec<&str> = kept.iter().map(|k| k.what.as_str()).collect();
    match whats.len() {
        0..=3 => whats.join(", "),
        n => format!("{n} blocks: {}, {}, … {}", whats[0], whats[1], whats[n - 1]),
    }
}
