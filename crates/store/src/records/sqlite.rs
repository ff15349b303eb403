//! `players.sqlite`, `auth.sqlite`, `mod_storage.sqlite` (Luanti's
//! `PlayerDatabaseSQLite3`, `AuthDatabaseSQLite3` and
//! `ModStorageDatabaseSQLite3` in src/database/database-sqlite3.cpp of
//! <https://github.com/luanti-org/luanti>): rows <-> canonical records,
//! one transaction per change with the undo journal attached to it.

use super::{Collection, RecordStore, conflict};
use crate::journal::{self, RecordDates};
use crate::sqlite_pool::backend;
use crate::{Note, Result, StoreError};
use parking_lot::Mutex;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, params};
use std::path::{Path, PathBuf};
use std::time::Duration;
use worldfs_codec::jsonish::HighBytes;
use worldfs_codec::luanti::auth::AuthEntry;
use worldfs_codec::luanti::inventory::Inventory;
use worldfs_codec::luanti::mod_storage::ModStorage;
use worldfs_codec::luanti::player::{ListRows, Player, inventory_text};

/// The tables as the 5.6.1 engine creates them (types of before 5.12; the
/// engine reads both).
const PLAYERS_DDL: &str = "
CREATE TABLE IF NOT EXISTS `player` (`name` VARCHAR(50) NOT NULL,`pitch` NUMERIC(11, 4) NOT NULL,
  `yaw` NUMERIC(11, 4) NOT NULL,`posX` NUMERIC(11, 4) NOT NULL,`posY` NUMERIC(11, 4) NOT NULL,
  `posZ` NUMERIC(11, 4) NOT NULL,`hp` INT NOT NULL,`breath` INT NOT NULL,
  `creation_date` DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  `modification_date` DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,PRIMARY KEY (`name`));
CREATE TABLE IF NOT EXISTS `player_metadata` (`player` VARCHAR(50) NOT NULL, `metadata` VARCHAR(256) NOT NULL,
  `value` TEXT, PRIMARY KEY(`player`, `metadata`),
  FOREIGN KEY (`player`) REFERENCES player (`name`) ON DELETE CASCADE );
CREATE TABLE IF NOT EXISTS `player_inventories` (`player` VARCHAR(50) NOT NULL, `inv_id` INT NOT NULL,
  `inv_width` INT NOT NULL, `inv_name` TEXT NOT NULL DEFAULT '', `inv_size` INT NOT NULL,
  PRIMARY KEY(player, inv_id), FOREIGN KEY (`player`) REFERENCES player (`name`) ON DELETE CASCADE );
CREATE TABLE IF NOT EXISTS `player_inventory_items` (`player` VARCHAR(50) NOT NULL, `inv_id` INT NOT NULL,
  `slot_id` INT NOT NULL, `item` TEXT NOT NULL DEFAULT '', PRIMARY KEY(player, inv_id, slot_id),
  FOREIGN KEY (`player`) REFERENCES player (`name`) ON DELETE CASCADE );";

const AUTH_DDL: &str = "
CREATE TABLE IF NOT EXISTS `auth` (`id` INTEGER PRIMARY KEY AUTOINCREMENT,`name` VARCHAR(32) UNIQUE,
  `password` VARCHAR(512),`last_login` INTEGER);
CREATE TABLE IF NOT EXISTS `user_privileges` (`id` INTEGER,`privilege` VARCHAR(32),
  PRIMARY KEY (id, privilege) CONSTRAINT fk_id FOREIGN KEY (id) REFERENCES auth (id) ON DELETE CASCADE);";

const MOD_STORAGE_DDL: &str = "
CREATE TABLE IF NOT EXISTS `entries` (`modname` TEXT NOT NULL, `key` BLOB NOT NULL, `value` BLOB NOT NULL,
  PRIMARY KEY (`modname`, `key`));";

/// One collection in the `sqlite3` backend of a world.
pub struct SqliteRecords {
    collection: Collection,
    path: PathBuf,
    read_only: bool,
    journal: Option<PathBuf>,
    /// Opened at first use (the file may not exist until the first write).
    conn: Mutex<Option<Connection>>,
}

/// The engine's sqlite file of a collection.
pub fn file_name(c: Collection) -> &'static str {
    match c {
        Collection::Players => "players.sqlite",
        Collection::Auth => "auth.sqlite",
        Collection::ModStorage => "mod_storage.sqlite",
    }
}

impl SqliteRecords {
    /// The collection's file in world directory `dir`, journaled to `journal`
    /// when given (opened at first use; created by the first write).
    pub fn new(dir: &Path, collection: Collection, read_only: bool, journal: Option<&Path>) -> SqliteRecords {
        SqliteRecords {
            collection,
            path: dir.join(file_name(collection)),
            read_only,
            journal: journal.map(Path::to_path_buf),
            conn: Mutex::new(None),
        }
    }

    fn ddl(&self) -> &'static str {
        match self.collection {
            Collection::Players => PLAYERS_DDL,
            Collection::Auth => AUTH_DDL,
            Collection::ModStorage => MOD_STORAGE_DDL,
        }
    }

    /// Run `f` on the connection; None when the file does not exist and
    /// `create` is false (nothing stored yet).
    fn with<T>(&self, create: bool, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<Option<T>> {
        let mut guard = self.conn.lock();
        if guard.is_none() {
            if !self.path.exists() && !create {
                return Ok(None);
            }
            let flags = if self.read_only {
                OpenFlags::SQLITE_OPEN_READ_ONLY
            } else {
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE
            };
            let conn = Connection::open_with_flags(&self.path, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX)
                .map_err(|e| StoreError::Backend(format!("{}: {e}", self.path.display())))?;
            // The server keeps its mod storage transaction open for up to 5.3 s.
            conn.busy_timeout(Duration::from_secs(6)).map_err(backend)?;
            conn.execute_batch("PRAGMA foreign_keys = ON").map_err(backend)?;
            if !self.read_only {
                conn.execute_batch(self.ddl()).map_err(backend)?;
                if let Some(j) = &self.journal {
                    let j = j.to_str().ok_or_else(|| StoreError::Backend("journal path is not UTF-8".into()))?;
                    conn.execute("ATTACH DATABASE ?1 AS journal", [j]).map_err(backend)?;
                    journal::create(&conn, "journal").map_err(backend)?;
                }
            }
            *guard = Some(conn);
        }
        let Some(conn) = guard.as_mut() else { return Err(StoreError::Backend("the database was closed".into())) };
        f(conn).map(Some).map_err(|e| crate::sqlite::hot_journal_explained(&self.path, self.read_only, e))
    }

    fn has_table(conn: &Connection, t: &str) -> Result<bool> {
        conn.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [t], |r| {
            r.get::<_, i64>(0)
        })
        .map(|n| n > 0)
        .map_err(backend)
    }

    fn main_table(&self) -> &'static str {
        match self.collection {
            Collection::Players => "player",
            Collection::Auth => "auth",
            Collection::ModStorage => "entries",
        }
    }

    fn read(&self, conn: &Connection, name: &str) -> Result<Option<Vec<u8>>> {
        if !Self::has_table(conn, self.main_table())? {
            return Ok(None);
        }
        match self.collection {
            Collection::Players => read_player(conn, name),
            Collection::Auth => read_auth(conn, name).map(|o| o.map(|(_, e)| e.encode())),
            Collection::ModStorage => read_mod(conn, name),
        }
    }

    /// A player's dates as the table holds them (values of any type), for
    /// the journal; None for other collections and absent players.
    fn read_dates(&self, conn: &Connection, name: &str) -> Result<Option<RecordDates>> {
        if self.collection != Collection::Players {
            return Ok(None);
        }
        conn.query_row("SELECT creation_date, modification_date FROM player WHERE name = ?1", [name], |r| {
            Ok(RecordDates { created: r.get(0)?, modified: r.get(1)? })
        })
        .optional()
        .map_err(backend)
    }

    fn write(&self, tx: &Transaction<'_>, name: &str, new: Option<&[u8]>) -> Result<()> {
        let bad = |e: String| StoreError::Backend(format!("{name}: {e}"));
        match self.collection {
            Collection::Players => write_player(tx, name, new.map(Player::decode).transpose().map_err(bad)?.as_ref()),
            Collection::Auth => write_auth(tx, name, new.map(AuthEntry::decode).transpose().map_err(bad)?.as_ref()),
            Collection::ModStorage => {
                write_mod(tx, name, new.map(ModStorage::decode).transpose().map_err(bad)?.as_ref())
            }
        }
    }
}

impl RecordStore for SqliteRecords {
    fn describe(&self) -> String {
        format!("{} in {}", self.collection.name(), self.path.display())
    }

    fn names(&self) -> Result<Vec<String>> {
        let table = self.main_table();
        let col = if self.collection == Collection::ModStorage { "DISTINCT modname" } else { "name" };
        let names = self.with(false, |conn| {
            if !Self::has_table(conn, table)? {
                return Ok(Vec::new());
            }
            let mut stmt = conn.prepare(&format!("SELECT {col} FROM {table} ORDER BY 1")).map_err(backend)?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0)).map_err(backend)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(backend)
        })?;
        Ok(names.unwrap_or_default())
    }

    fn get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.with(false, |conn| self.read(conn, name))?.flatten())
    }

    fn restore(
        &self,
        name: &str,
        expect: Option<&[u8]>,
        new: Option<&[u8]>,
        dates: Option<&RecordDates>,
        note: &Note,
    ) -> Result<()> {
        if self.read_only {
            return Err(StoreError::ReadOnly);
        }
        self.with(true, |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(backend)?;
            let now = self.read(&tx, name)?;
            if now.as_deref() != expect {
                return Err(conflict(self.collection.name(), name));
            }
            let now_dates = self.read_dates(&tx, name)?;
            self.write(&tx, name, new)?;
            if let (Some(d), Some(_), Collection::Players) = (dates, new, self.collection) {
                tx.execute(
                    "UPDATE player SET creation_date = ?1, modification_date = ?2 WHERE name = ?3",
                    params![d.created, d.modified, name],
                )
                .map_err(backend)?;
            }
            if self.journal.is_some() {
                journal::record_records(&tx, note, self.collection.name(), &[(name, now, new, now_dates)])
                    .map_err(backend)?;
            }
            tx.commit().map_err(backend)
        })?;
        Ok(())
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn watched(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }

    /// From a copy made as one instant (`sqlite::copy_consistent`): a read
    /// transaction held while every record is read would make a running
    /// server's commit wait, in rollback-journal mode, as long as it lasts.
    fn read_all(&self, scratch: &Path) -> Result<super::AllRecords> {
        let how = "a copy made with SQLite's backup API (one instant)".to_string();
        if !self.path.is_file() {
            return Ok((Vec::new(), crate::Consistency { one_instant: true, how }));
        }
        let dir = scratch.join(format!("records-copy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| StoreError::Backend(format!("{}: {e}", dir.display())))?;
        let read = (|| {
            crate::sqlite::copy_consistent(&self.path, &dir.join(file_name(self.collection)))?;
            let copy = SqliteRecords::new(&dir, self.collection, true, None);
            let mut out = Vec::new();
            for name in copy.names()? {
                if let Some(bytes) = copy.get(&name)? {
                    out.push((name, bytes));
                }
            }
            Ok(out)
        })();
        let _ = std::fs::remove_dir_all(&dir);
        Ok((read?, crate::Consistency { one_instant: true, how }))
    }
}

/// A column's bytes whether it holds TEXT or BLOB (NULL: empty).
fn bytes_of(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Vec<u8>> {
    use rusqlite::types::ValueRef;
    Ok(match r.get_ref(i)? {
        ValueRef::Text(b) | ValueRef::Blob(b) => b.to_vec(),
        ValueRef::Null => Vec::new(),
        ValueRef::Integer(v) => v.to_string().into_bytes(),
        ValueRef::Real(v) => v.to_string().into_bytes(),
    })
}

fn read_player(conn: &Connection, name: &str) -> Result<Option<Vec<u8>>> {
    let row = conn
        .query_row("SELECT pitch, yaw, posX, posY, posZ, hp, breath FROM player WHERE name = ?1", [name], |r| {
            Ok((
                [r.get::<_, f64>(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?],
                r.get::<_, i64>(5)?,
                r.get::<_, i64>(6)?,
            ))
        })
        .optional()
        .map_err(backend)?;
    let Some((f, hp, breath)) = row else { return Ok(None) };
    let mut meta = std::collections::BTreeMap::new();
    let mut stmt =
        conn.prepare_cached("SELECT metadata, value FROM player_metadata WHERE player = ?1").map_err(backend)?;
    let rows = stmt.query_map([name], |r| Ok((bytes_of(r, 0)?, bytes_of(r, 1)?))).map_err(backend)?;
    for row in rows {
        let (k, v) = row.map_err(backend)?;
        meta.insert(k, v);
    }
    // Lists in inv_id order, then their non-empty slots.
    let mut lists: Vec<(i64, String, u32, usize)> = Vec::new();
    let mut stmt = conn
        .prepare_cached(
            "SELECT inv_id, inv_name, inv_width, inv_size FROM player_inventories WHERE player = ?1 ORDER BY inv_id",
        )
        .map_err(backend)?;
    let rows = stmt
        .query_map([name], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u32, r.get::<_, i64>(3)? as usize)))
        .map_err(backend)?;
    for row in rows {
        lists.push(row.map_err(backend)?);
    }
    let mut items = conn
        .prepare_cached("SELECT slot_id, item FROM player_inventory_items WHERE player = ?1 AND inv_id = ?2")
        .map_err(backend)?;
    let mut rows = Vec::new();
    for (id, list_name, width, size) in lists {
        let filled = items
            .query_map(params![name, id], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .map_err(backend)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(backend)?;
        rows.push(ListRows { name: list_name, width, size, items: filled });
    }
    let inv = inventory_text(rows);
    let clamp = |v: i64| v.clamp(0, u16::MAX as i64) as u16;
    let p = Player {
        hp: clamp(hp),
        breath: clamp(breath),
        pos: [f[2] as f32, f[3] as f32, f[4] as f32],
        pitch: f[0] as f32,
        yaw: f[1] as f32,
        meta: meta.into_iter().collect(),
        inventory: inv,
    };
    Ok(Some(p.encode()))
}

fn write_player(tx: &Transaction<'_>, name: &str, p: Option<&Player>) -> Result<()> {
    let Some(p) = p else {
        for t in ["player_inventory_items", "player_inventories", "player_metadata"] {
            tx.execute(&format!("DELETE FROM {t} WHERE player = ?1"), [name]).map_err(backend)?;
        }
        tx.execute("DELETE FROM player WHERE name = ?1", [name]).map_err(backend)?;
        return Ok(());
    };
    let inv = Inventory::parse_strict(&p.inventory)
        .map_err(|e| StoreError::Backend(format!("player {name}: inventory: {e}")))?;
    let f = |v: f32| v as f64;
    let exists: bool =
        tx.query_row("SELECT count(*) FROM player WHERE name = ?1", [name], |r| r.get::<_, i64>(0)).map_err(backend)?
            > 0;
    if exists {
        tx.execute(
            "UPDATE player SET pitch = ?1, yaw = ?2, posX = ?3, posY = ?4, posZ = ?5, hp = ?6, breath = ?7, \
             modification_date = CURRENT_TIMESTAMP WHERE name = ?8",
            params![f(p.pitch), f(p.yaw), f(p.pos[0]), f(p.pos[1]), f(p.pos[2]), p.hp, p.breath, name],
        )
        .map_err(backend)?;
    } else {
        tx.execute(
            "INSERT INTO player (name, pitch, yaw, posX, posY, posZ, hp, breath) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![name, f(p.pitch), f(p.yaw), f(p.pos[0]), f(p.pos[1]), f(p.pos[2]), p.hp, p.breath],
        )
        .map_err(backend)?;
    }
    for t in ["player_inventory_items", "player_inventories", "player_metadata"] {
        tx.execute(&format!("DELETE FROM {t} WHERE player = ?1"), [name]).map_err(backend)?;
    }
    for (id, list) in inv.lists.iter().enumerate() {
        tx.execute(
            "INSERT INTO player_inventories (player, inv_id, inv_width, inv_name, inv_size) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![name, id as i64, list.width, String::from_utf8_lossy(&list.name), list.slots.len() as i64],
        )
        .map_err(backend)?;
        let mut ins = tx
            .prepare_cached(
                "INSERT INTO player_inventory_items (player, inv_id, slot_id, item) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(backend)?;
        for (slot, item) in list.slots.iter().enumerate() {
            let text = item.as_ref().map(|i| i.serialize(HighBytes::Raw)).unwrap_or_default();
            ins.execute(params![name, id as i64, slot as i64, String::from_utf8_lossy(&text)]).map_err(backend)?;
        }
    }
    let mut ins = tx
        .prepare_cached("INSERT INTO player_metadata (player, metadata, value) VALUES (?1, ?2, ?3)")
        .map_err(backend)?;
    for (k, v) in &p.meta {
        let text = |b: &[u8]| {
            String::from_utf8(b.to_vec()).map_err(|_| {
                StoreError::Backend(format!("player {name}: metadata must be UTF-8 text in players.sqlite"))
            })
        };
        ins.execute(params![name, text(k)?, text(v)?]).map_err(backend)?;
    }
    Ok(())
}

fn read_auth(conn: &Connection, name: &str) -> Result<Option<(i64, AuthEntry)>> {
    let row = conn
        .query_row("SELECT id, password, last_login FROM auth WHERE name = ?1", [name], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, Option<String>>(1)?, r.get::<_, Option<i64>>(2)?))
        })
        .optional()
        .map_err(backend)?;
    let Some((id, password, last_login)) = row else { return Ok(None) };
    let mut stmt =
        conn.prepare_cached("SELECT privilege FROM user_privileges WHERE id = ?1 ORDER BY rowid").map_err(backend)?;
    let privileges = stmt
        .query_map([id], |r| r.get::<_, String>(0))
        .map_err(backend)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(backend)?;
    Ok(Some((
        id,
        AuthEntry { password: password.unwrap_or_default(), privileges, last_login: last_login.unwrap_or(0) },
    )))
}

fn write_auth(tx: &Transaction<'_>, name: &str, e: Option<&AuthEntry>) -> Result<()> {
    let id = read_auth(tx, name)?.map(|(id, _)| id);
    let Some(e) = e else {
        if let Some(id) = id {
            tx.execute("DELETE FROM user_privileges WHERE id = ?1", [id]).map_err(backend)?;
            tx.execute("DELETE FROM auth WHERE id = ?1", [id]).map_err(backend)?;
        }
        return Ok(());
    };
    let id = match id {
        Some(id) => {
            tx.execute(
                "UPDATE auth SET password = ?1, last_login = ?2 WHERE id = ?3",
                params![e.password, e.last_login, id],
            )
            .map_err(backend)?;
            tx.execute("DELETE FROM user_privileges WHERE id = ?1", [id]).map_err(backend)?;
            id
        }
        None => {
            tx.execute(
                "INSERT INTO auth (name, password, last_login) VALUES (?1, ?2, ?3)",
                params![name, e.password, e.last_login],
            )
            .map_err(backend)?;
            tx.last_insert_rowid()
        }
    };
    let mut ins =
        tx.prepare_cached("INSERT OR IGNORE INTO user_privileges (id, privilege) VALUES (?1, ?2)").map_err(backend)?;
    for p in &e.privileges {
        ins.execute(params![id, p]).map_err(backend)?;
    }
    Ok(())
}

fn read_mod(conn: &Connection, name: &str) -> Result<Option<Vec<u8>>> {
    let mut stmt = conn.prepare_cached("SELECT key, value FROM entries WHERE modname = ?1").map_err(backend)?;
    let rows = stmt.query_map([name], |r| Ok((bytes_of(r, 0)?, bytes_of(r, 1)?))).map_err(backend)?;
    let entries = rows.collect::<rusqlite::Result<std::collections::BTreeMap<_, _>>>().map_err(backend)?;
    Ok((!entries.is_empty()).then(|| ModStorage { entries }.encode()))
}

fn write_mod(tx: &Transaction<'_>, name: &str, m: Option<&ModStorage>) -> Result<()> {
    // Keys and values bound as BLOB, as the engine does: a TEXT key would
    // be a second row the server never finds.
    tx.execute("DELETE FROM entries WHERE modname = ?1", [name]).map_err(backend)?;
    if let Some(m) = m {
        let mut ins =
            tx.prepare_cached("INSERT INTO entries (modname, key, value) VALUES (?1, ?2, ?3)").map_err(backend)?;
        for (k, v) in &m.entries {
            ins.execute(params![name, k.as_slice(), v.as_slice()]).map_err(backend)?;
        }
    }
    Ok(())
}
