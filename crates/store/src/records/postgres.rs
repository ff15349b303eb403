//! Players, accounts and mod storage in PostgreSQL (Luanti's
//! `PlayerDatabasePostgreSQL`, `AuthDatabasePostgreSQL` and
//! `ModStorageDatabasePostgreSQL` in src/database/database-postgresql.cpp of
//! <https://github.com/luanti-org/luanti>): the engine's tables, created the
//! engine's way when missing, every change one transaction. The connection
//! strings are world.mt's `pgsql_player_connection`, `pgsql_auth_connection`,
//! `pgsql_mod_storage_connection`. Journal entries go to the world's journal
//! file just before the commit, as for the PostgreSQL map.

use super::{Collection, RecordStore, conflict};
use crate::journal::{self, RecordDates};
use crate::{Note, Result, StoreError};
use parking_lot::Mutex;
use postgres::{Client, NoTls, Transaction};
use rusqlite::types::Value;
use std::path::PathBuf;
use worldfs_codec::jsonish::HighBytes;
use worldfs_codec::luanti::auth::AuthEntry;
use worldfs_codec::luanti::inventory::Inventory;
use worldfs_codec::luanti::mod_storage::ModStorage;
use worldfs_codec::luanti::player::{ListRows, Player, inventory_text};

const PLAYERS_DDL: &str = "
CREATE TABLE IF NOT EXISTS player (name VARCHAR(60) NOT NULL, pitch NUMERIC(15, 7) NOT NULL,
  yaw NUMERIC(15, 7) NOT NULL, posX NUMERIC(15, 7) NOT NULL, posY NUMERIC(15, 7) NOT NULL,
  posZ NUMERIC(15, 7) NOT NULL, hp INT NOT NULL, breath INT NOT NULL,
  creation_date TIMESTAMP WITHOUT TIME ZONE NOT NULL DEFAULT NOW(),
  modification_date TIMESTAMP WITHOUT TIME ZONE NOT NULL DEFAULT NOW(), PRIMARY KEY (name));
CREATE TABLE IF NOT EXISTS player_inventories (player VARCHAR(60) NOT NULL, inv_id INT NOT NULL,
  inv_width INT NOT NULL, inv_name TEXT NOT NULL DEFAULT '', inv_size INT NOT NULL, PRIMARY KEY(player, inv_id),
  CONSTRAINT player_inventories_fkey FOREIGN KEY (player) REFERENCES player (name) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS player_inventory_items (player VARCHAR(60) NOT NULL, inv_id INT NOT NULL,
  slot_id INT NOT NULL, item TEXT NOT NULL DEFAULT '', PRIMARY KEY(player, inv_id, slot_id),
  CONSTRAINT player_inventory_items_fkey FOREIGN KEY (player) REFERENCES player (name) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS player_metadata (player VARCHAR(60) NOT NULL, attr VARCHAR(256) NOT NULL, value TEXT,
  PRIMARY KEY(player, attr),
  CONSTRAINT player_metadata_fkey FOREIGN KEY (player) REFERENCES player (name) ON DELETE CASCADE);";

const AUTH_DDL: &str = "
CREATE TABLE IF NOT EXISTS auth (id SERIAL, name TEXT UNIQUE, password TEXT, last_login INT NOT NULL DEFAULT 0,
  PRIMARY KEY (id));
CREATE TABLE IF NOT EXISTS user_privileges (id INT, privilege TEXT, PRIMARY KEY (id, privilege),
  CONSTRAINT fk_id FOREIGN KEY (id) REFERENCES auth (id) ON DELETE CASCADE);";

const MOD_STORAGE_DDL: &str = "
CREATE TABLE IF NOT EXISTS mod_storage (modname TEXT NOT NULL, key BYTEA NOT NULL, value BYTEA NOT NULL,
  PRIMARY KEY (modname, key));";

/// One collection in the `postgresql` backend.
pub struct PgRecords {
    collection: Collection,
    conninfo: String,
    read_only: bool,
    journal: Option<PathBuf>,
    client: Mutex<Option<Client>>,
}

fn classify(e: postgres::Error) -> StoreError {
    if e.is_closed() || e.as_db_error().is_none() {
        return StoreError::Unreachable(e.to_string());
    }
    StoreError::Backend(e.to_string())
}

impl PgRecords {
    /// The collection's tables in the database `conninfo` names (libpq keyword
    /// form), journaled to `journal` when given (connected at first use).
    pub fn new(
        conninfo: &str,
        collection: Collection,
        read_only: bool,
        journal: Option<&std::path::Path>,
    ) -> PgRecords {
        PgRecords {
            collection,
            conninfo: conninfo.to_string(),
            read_only,
            journal: journal.map(|p| p.to_path_buf()),
            client: Mutex::new(None),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Client) -> Result<T>) -> Result<T> {
        let mut guard = self.client.lock();
        if guard.as_ref().is_none_or(|c| c.is_closed()) {
            let mut c = Client::connect(&self.conninfo, NoTls).map_err(classify)?;
            if !self.read_only {
                let ddl = match self.collection {
                    Collection::Players => PLAYERS_DDL,
                    Collection::Auth => AUTH_DDL,
                    Collection::ModStorage => MOD_STORAGE_DDL,
                };
                c.batch_execute(ddl).map_err(classify)?;
            }
            *guard = Some(c);
        }
        let Some(client) = guard.as_mut() else {
            return Err(StoreError::Unreachable("the connection was lost before its first request".into()));
        };
        let r = f(client);
        if matches!(r, Err(StoreError::Unreachable(_))) {
            *guard = None;
        }
        r
    }

    fn table(&self) -> &'static str {
        match self.collection {
            Collection::Players => "player",
            Collection::Auth => "auth",
            Collection::ModStorage => "mod_storage",
        }
    }
}

fn exists(c: &mut impl postgres::GenericClient, table: &str) -> Result<bool> {
    let r = c.query_one("SELECT to_regclass($1) IS NOT NULL", &[&table]).map_err(classify)?;
    Ok(r.get(0))
}

fn read(c: &mut impl postgres::GenericClient, collection: Collection, name: &str) -> Result<Option<Vec<u8>>> {
    let table = match collection {
        Collection::Players => "player",
        Collection::Auth => "auth",
        Collection::ModStorage => "mod_storage",
    };
    if !exists(c, table)? {
        return Ok(None);
    }
    match collection {
        Collection::Players => {
            let Some(r) = c
                .query_opt(
                    "SELECT pitch::float8, yaw::float8, posX::float8, posY::float8, posZ::float8, hp, breath \
                     FROM player WHERE name = $1",
                    &[&name],
                )
                .map_err(classify)?
            else {
                return Ok(None);
            };
            let f = |i: usize| r.get::<_, f64>(i) as f32;
            let clamp = |v: i32| v.clamp(0, u16::MAX as i32) as u16;
            let mut meta = std::collections::BTreeMap::new();
            for m in c.query("SELECT attr, value FROM player_metadata WHERE player = $1", &[&name]).map_err(classify)? {
                let v: Option<String> = m.get(1);
                meta.insert(m.get::<_, String>(0).into_bytes(), v.unwrap_or_default().into_bytes());
            }
            let lists = c
                .query(
                    "SELECT inv_id, inv_name, inv_width, inv_size FROM player_inventories WHERE player = $1 ORDER BY inv_id",
                    &[&name],
                )
                .map_err(classify)?;
            let mut rows = Vec::new();
            for l in lists {
                let (id, lname, width, size): (i32, String, i32, i32) = (l.get(0), l.get(1), l.get(2), l.get(3));
                let items = c
                    .query(
                        "SELECT slot_id, item FROM player_inventory_items WHERE player = $1 AND inv_id = $2",
                        &[&name, &id],
                    )
                    .map_err(classify)?
                    .iter()
                    .map(|it| (it.get::<_, i32>(0) as i64, it.get::<_, String>(1)))
                    .collect();
                rows.push(ListRows { name: lname, width: width.max(0) as u32, size: size.max(0) as usize, items });
            }
            let inv = inventory_text(rows);
            let p = Player {
                hp: clamp(r.get(5)),
                breath: clamp(r.get(6)),
                pos: [f(2), f(3), f(4)],
                pitch: f(0),
                yaw: f(1),
                meta: meta.into_iter().collect(),
                inventory: inv,
            };
            Ok(Some(p.encode()))
        }
        Collection::Auth => {
            let Some(r) =
                c.query_opt("SELECT id, password, last_login FROM auth WHERE name = $1", &[&name]).map_err(classify)?
            else {
                return Ok(None);
            };
            let id: i32 = r.get(0);
            let privileges: Vec<String> = c
                .query("SELECT privilege FROM user_privileges WHERE id = $1", &[&id])
                .map_err(classify)?
                .iter()
                .map(|p| p.get(0))
                .collect();
            let pw: Option<String> = r.get(1);
            let e = AuthEntry { password: pw.unwrap_or_default(), privileges, last_login: r.get::<_, i32>(2) as i64 };
            Ok(Some(e.encode()))
        }
        Collection::ModStorage => {
            let rows = c.query("SELECT key, value FROM mod_storage WHERE modname = $1", &[&name]).map_err(classify)?;
            let entries: std::collections::BTreeMap<Vec<u8>, Vec<u8>> =
                rows.iter().map(|r| (r.get::<_, Vec<u8>>(0), r.get::<_, Vec<u8>>(1))).collect();
            Ok((!entries.is_empty()).then(|| ModStorage { entries }.encode()))
        }
    }
}

/// A player's dates as the text of their timestamps (exact: microseconds),
/// for the journal; None for other collections and absent players.
fn read_dates(tx: &mut Transaction<'_>, collection: Collection, name: &str) -> Result<Option<RecordDates>> {
    if collection != Collection::Players || !exists(tx, "player")? {
        return Ok(None);
    }
    let row = tx
        .query_opt("SELECT creation_date::text, modification_date::text FROM player WHERE name = $1", &[&name])
        .map_err(classify)?;
    Ok(row.map(|r| RecordDates { created: Value::Text(r.get(0)), modified: Value::Text(r.get(1)) }))
}

/// Give a restored player the dates the journal kept (as `read_dates`
/// wrote them) instead of the time of the undo.
fn write_dates(tx: &mut Transaction<'_>, collection: Collection, name: &str, d: &RecordDates) -> Result<()> {
    let text = |v: &Value| match v {
        Value::Text(t) => Ok(t.clone()),
        other => Err(StoreError::Backend(format!("{name}: the journal's date {other:?} is not a timestamp's text"))),
    };
    if collection != Collection::Players {
        return Ok(());
    }
    tx.execute(
        "UPDATE player SET creation_date = $1::text::timestamp, modification_date = $2::text::timestamp \
         WHERE name = $3",
        &[&text(&d.created)?, &text(&d.modified)?, &name],
    )
    .map_err(classify)?;
    Ok(())
}

fn write(tx: &mut Transaction<'_>, collection: Collection, name: &str, new: Option<&[u8]>) -> Result<()> {
    match collection {
        Collection::Players => match new {
            Some(b) => write_player(tx, name, b),
            None => exec(tx, "DELETE FROM player WHERE name = $1", &[&name]), // cascades
        },
        Collection::Auth => write_auth(tx, name, new),
        Collection::ModStorage => {
            exec(tx, "DELETE FROM mod_storage WHERE modname = $1", &[&name])?;
            if let Some(b) = new {
                for (k, v) in ModStorage::decode(b).map_err(|e| bad_record(name, e))?.entries {
                    exec(tx, "INSERT INTO mod_storage (modname, key, value) VALUES ($1, $2, $3)", &[&name, &k, &v])?;
                }
            }
            Ok(())
        }
    }
}

/// A statement whose rows do not matter.
fn exec(tx: &mut Transaction<'_>, sql: &str, args: &[&(dyn postgres::types::ToSql + Sync)]) -> Result<()> {
    tx.execute(sql, args).map(|_| ()).map_err(classify)
}

/// A record that cannot be written, named.
fn bad_record(name: &str, e: String) -> StoreError {
    StoreError::Backend(format!("{name}: {e}"))
}

/// Player `name` becomes the player record `b`: its row, inventories and
/// metadata replaced.
fn write_player(tx: &mut Transaction<'_>, name: &str, b: &[u8]) -> Result<()> {
    let bad = |e: String| bad_record(name, e);
    let p = Player::decode(b).map_err(bad)?;
    let inv = Inventory::parse_strict(&p.inventory).map_err(|e| bad(format!("inventory: {e}")))?;
    // Sent as text through ftos-like shortest decimals, as the engine does.
    let t = |v: f32| format!("{v}");
    exec(
        tx,
        "INSERT INTO player (name, pitch, yaw, posX, posY, posZ, hp, breath) \
         VALUES ($1, $2::text::numeric, $3::text::numeric, $4::text::numeric, $5::text::numeric, \
         $6::text::numeric, $7, $8) ON CONFLICT (name) DO UPDATE SET pitch = EXCLUDED.pitch, \
         yaw = EXCLUDED.yaw, posX = EXCLUDED.posX, posY = EXCLUDED.posY, posZ = EXCLUDED.posZ, \
         hp = EXCLUDED.hp, breath = EXCLUDED.breath, modification_date = NOW()",
        &[&name, &t(p.pitch), &t(p.yaw), &t(p.pos[0]), &t(p.pos[1]), &t(p.pos[2]), &(p.hp as i32), &(p.breath as i32)],
    )?;
    for t in ["player_inventory_items", "player_inventories", "player_metadata"] {
        exec(tx, &format!("DELETE FROM {t} WHERE player = $1"), &[&name])?;
    }
    for (id, list) in inv.lists.iter().enumerate() {
        let id = id as i32;
        exec(
            tx,
            "INSERT INTO player_inventories (player, inv_id, inv_width, inv_name, inv_size) VALUES ($1, $2, $3, $4, $5)",
            &[
                &name,
                &id,
                &(list.width as i32),
                &String::from_utf8_lossy(&list.name).into_owned(),
                &(list.slots.len() as i32),
            ],
        )?;
        for (slot, item) in list.slots.iter().enumerate() {
            let text = item.as_ref().map(|i| i.serialize(HighBytes::Raw)).unwrap_or_default();
            exec(
                tx,
                "INSERT INTO player_inventory_items (player, inv_id, slot_id, item) VALUES ($1, $2, $3, $4)",
                &[&name, &id, &(slot as i32), &String::from_utf8_lossy(&text).into_owned()],
            )?;
        }
    }
    for (k, v) in &p.meta {
        let s = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| bad("metadata must be UTF-8 text".into()));
        exec(tx, "INSERT INTO player_metadata (player, attr, value) VALUES ($1, $2, $3)", &[&name, &s(k)?, &s(v)?])?;
    }
    Ok(())
}

/// Auth entry `name` becomes `new` (None: removed with its privileges).
fn write_auth(tx: &mut Transaction<'_>, name: &str, new: Option<&[u8]>) -> Result<()> {
    let bad = |e: String| bad_record(name, e);
    let id: Option<i32> =
        tx.query_opt("SELECT id FROM auth WHERE name = $1", &[&name]).map_err(classify)?.map(|r| r.get(0));
    let Some(b) = new else {
        if let Some(id) = id {
            exec(tx, "DELETE FROM user_privileges WHERE id = $1", &[&id])?;
            exec(tx, "DELETE FROM auth WHERE id = $1", &[&id])?;
        }
        return Ok(());
    };
    let e = AuthEntry::decode(b).map_err(bad)?;
    let last = i32::try_from(e.last_login).map_err(|_| bad("last_login does not fit PostgreSQL's int4".into()))?;
    let id = match id {
        Some(id) => {
            exec(tx, "UPDATE auth SET password = $1, last_login = $2 WHERE id = $3", &[&e.password, &last, &id])?;
            exec(tx, "DELETE FROM user_privileges WHERE id = $1", &[&id])?;
            id
        }
        None => tx
            .query_one(
                "INSERT INTO auth (name, password, last_login) VALUES ($1, $2, $3) RETURNING id",
                &[&name, &e.password, &last],
            )
            .map_err(classify)?
            .get(0),
    };
    for p in &e.privileges {
        exec(tx, "INSERT INTO user_privileges (id, privilege) VALUES ($1, $2) ON CONFLICT DO NOTHING", &[&id, p])?;
    }
    Ok(())
}

impl RecordStore for PgRecords {
    fn describe(&self) -> String {
        let safe: Vec<&str> = self.conninfo.split_whitespace().filter(|kv| !kv.starts_with("password=")).collect();
        format!("{} in postgresql ({})", self.collection.name(), safe.join(" "))
    }

    fn names(&self) -> Result<Vec<String>> {
        let table = self.table();
        let col = if self.collection == Collection::ModStorage { "DISTINCT modname" } else { "name" };
        self.with(|c| {
            if !exists(c, table)? {
                return Ok(Vec::new());
            }
            let rows = c.query(&format!("SELECT {col} FROM {table} ORDER BY 1"), &[]).map_err(classify)?;
            Ok(rows.iter().map(|r| r.get::<_, String>(0)).collect())
        })
    }

    fn get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        self.with(|c| read(c, self.collection, name))
    }

    /// In one REPEATABLE READ transaction: every record as of one instant.
    fn read_all(&self, _scratch: &std::path::Path) -> Result<super::AllRecords> {
        let (table, collection) = (self.table(), self.collection);
        let col = if collection == Collection::ModStorage { "DISTINCT modname" } else { "name" };
        let all = self.with(|c| {
            let mut tx = c
                .build_transaction()
                .isolation_level(postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .map_err(classify)?;
            let mut out = Vec::new();
            if exists(&mut tx, table)? {
                let rows = tx.query(&format!("SELECT {col} FROM {table} ORDER BY 1"), &[]).map_err(classify)?;
                for name in rows.iter().map(|r| r.get::<_, String>(0)) {
                    if let Some(bytes) = read(&mut tx, collection, &name)? {
                        out.push((name, bytes));
                    }
                }
            }
            tx.commit().map_err(classify)?;
            Ok(out)
        })?;
        let how = "one REPEATABLE READ transaction (one instant)".to_string();
        Ok((all, crate::Consistency { one_instant: true, how }))
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
        let collection = self.collection;
        self.with(|c| {
            let mut tx = c.transaction().map_err(classify)?;
            // one writer per record at a time
            tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&format!("{}/{name}", collection.name())])
                .map_err(classify)?;
            let now = read(&mut tx, collection, name)?;
            if now.as_deref() != expect {
                return Err(conflict(collection.name(), name));
            }
            let now_dates = read_dates(&mut tx, collection, name)?;
            write(&mut tx, collection, name, new)?;
            if let (Some(d), Some(_)) = (dates, new) {
                write_dates(&mut tx, collection, name, d)?;
            }
            let step = (name, now, new, now_dates);
            let pending = match &self.journal {
                Some(j) => Some(journal::Pending::records(j, note, collection.name(), &[step])?),
                None => None,
            };
            let r = tx.commit().map_err(classify);
            if r.is_ok()
                && let Some(p) = pending
            {
                p.kept();
            }
            r
        })
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }
}
