//! The whole map as one instant, for `worldfs snapshot`, without ever
//! making a running server wait long: in rollback-journal mode a reader
//! holds a shared lock that the server's commit must wait for, and the
//! server gives up after 3 s, which kills it (spec §3.3). So:
//!
//! * WAL: one read transaction over the map in place (readers never block
//!   the server's commits there);
//! * rollback journal: a copy made with SQLite's online backup API a few
//!   megabytes at a time (each step holds the shared lock for milliseconds);
//!   SQLite starts the copy again whenever another process commits between
//!   two steps, so the finished copy is the map of one instant. The copy is
//!   then read at leisure and removed.

use super::{SqliteStore, backend, column_bytes};
use crate::{BlockPos, Consistency, Result, StoreError};
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Pages copied in one step of the backup (4 MiB at the engine's 4 KiB
/// pages: a few milliseconds of shared lock).
const PAGES_PER_STEP: i32 = 1024;

/// How many times the copy may be started again by the server's saves
/// before the read is given up.
const MAX_RESTARTS: u32 = 50;

/// A file removed when dropped (the copy, also on an error).
struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        for suffix in ["", "-journal"] {
            let mut p = self.0.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(PathBuf::from(p));
        }
    }
}

fn open_read_only(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let c = Connection::open_with_flags(path, flags)
        .map_err(|e| StoreError::Backend(format!("{}: {e}", path.display())))?;
    // Waiting for a lock holds none: a writer between its commit's steps
    // (PENDING) keeps new readers out for as long as its commit takes.
    c.busy_timeout(Duration::from_secs(5)).map_err(backend)?;
    Ok(c)
}

/// Whether the map is in WAL mode, as SQLite says (not from a file
/// opened and closed here: closing any descriptor of the map would drop
/// the locks this process's connections hold on it).
fn is_wal(conn: &Connection) -> Result<bool> {
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).map_err(backend)?;
    Ok(mode.eq_ignore_ascii_case("wal"))
}

/// Copy the SQLite database `src` to `dst` (a new file) as one instant,
/// holding `src`'s shared lock only a step at a time (see the module
/// comment). Returns how many times the copy was started again because
/// another process committed meanwhile.
pub fn copy_consistent(src: &Path, dst: &Path) -> Result<u32> {
    use rusqlite::backup::{Backup, StepResult};
    let _ = std::fs::remove_file(dst);
    let from = open_read_only(src)?;
    let mut to = Connection::open(dst).map_err(|e| StoreError::Backend(format!("{}: {e}", dst.display())))?;
    let backup = Backup::new(&from, &mut to).map_err(backend)?;
    let mut restarts = 0;
    let mut left = i32::MAX;
    let mut busy_since: Option<std::time::Instant> = None;
    loop {
        match backup.step(PAGES_PER_STEP).map_err(|e| super::hot_journal_explained(src, true, backend(e)))? {
            StepResult::Done => return Ok(restarts),
            StepResult::More => busy_since = None,
            // Another process holds the lock to commit (5 s waited already):
            // let it, up to a minute in all.
            _ => {
                let since = *busy_since.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() > Duration::from_secs(60) {
                    return Err(StoreError::Busy(format!(
                        "{}: another process held it locked for over a minute",
                        src.display()
                    )));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let now = backup.progress().remaining;
        if now > left {
            restarts += 1;
            if restarts > MAX_RESTARTS {
                return Err(StoreError::Busy(format!(
                    "{}: another process committed during each of {MAX_RESTARTS} attempts to copy it as one \
                     instant; try again, or switch the map to WAL (with the server stopped: \
                     sqlite3 {} 'PRAGMA journal_mode=WAL'), where it is read in place",
                    src.display(),
                    src.display()
                )));
            }
        }
        left = now;
    }
}

/// Every row of `conn`'s blocks table, in one read transaction.
fn scan(store: &SqliteStore, conn: &Connection, each: &mut dyn FnMut(BlockPos, &[u8]) -> Result<()>) -> Result<()> {
    let (sql, data_col) = match store.schema {
        super::Schema::Legacy => ("SELECT pos, data FROM blocks", 1),
        super::Schema::Split => ("SELECT x, y, z, data FROM blocks", 3),
    };
    conn.execute_batch("BEGIN").map_err(backend)?;
    let mut odd = 0u64;
    let r = (|| {
        let mut stmt = conn.prepare(sql).map_err(backend)?;
        let mut rows = stmt.query([]).map_err(backend)?;
        while let Some(row) = rows.next().map_err(backend)? {
            let Some(pos) = store.row_pos(row).map_err(backend)? else {
                odd += 1;
                continue;
            };
            match row.get_ref(data_col).map_err(backend)? {
                rusqlite::types::ValueRef::Blob(b) | rusqlite::types::ValueRef::Text(b) if !b.is_empty() => {
                    each(pos, b)?
                }
                rusqlite::types::ValueRef::Blob(_) | rusqlite::types::ValueRef::Text(_) => {}
                _ => {
                    if let Some(b) = column_bytes(row, data_col).map_err(backend)? {
                        each(pos, &b)?
                    }
                }
            }
        }
        Ok(())
    })();
    let _ = conn.execute_batch("COMMIT");
    if odd > 0 {
        log::warn!("{}: {odd} row(s) whose key is not a block position were left out", store.path.display());
    }
    r
}

/// `MapStore::read_consistent` of a SQLite map (see the module comment).
pub(super) fn read_consistent(
    store: &SqliteStore,
    scratch: &Path,
    each: &mut dyn FnMut(BlockPos, &[u8]) -> Result<()>,
) -> Result<Consistency> {
    let conn = open_read_only(&store.path)?;
    if is_wal(&conn).map_err(|e| super::hot_journal_explained(&store.path, true, e))? {
        scan(store, &conn, each)?;
        return Ok(Consistency {
            one_instant: true,
            how: "one read transaction on the map in place (WAL mode: the server's saves go on meanwhile)".into(),
        });
    }
    drop(conn);
    std::fs::create_dir_all(scratch).map_err(|e| StoreError::Backend(format!("{}: {e}", scratch.display())))?;
    let copy = Removed(scratch.join(format!("map-copy-{}.sqlite", std::process::id())));
    let restarts = copy_consistent(&store.path, &copy.0)?;
    let conn = open_read_only(&copy.0)?;
    scan(store, &conn, each)?;
    Ok(Consistency {
        one_instant: true,
        how: format!(
            "a copy of the map made with SQLite's backup API, a few milliseconds of lock at a time \
             (rollback journal; started again {restarts} time(s) by commits of another process)"
        ),
    })
}
