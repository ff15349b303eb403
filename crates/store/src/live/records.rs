//! Players and accounts of a world whose running server runs the
//! worldfs_live mod. What the engine (5.6.1) does with them decides how a
//! change goes (docs/layout.md, "Live mounts"):
//!
//! * A player's data is read from the database when the player joins,
//!   and written back only for players in the game (every map save
//!   interval and when they leave). So a change of a player in the game
//!   goes through the mod's player API (`set_hp`, `set_pos`,
//!   `get_inventory():set_list`...), and a change of a player who is not
//!   is written to the database, the mod holding that player's joins
//!   meanwhile (a join between the check and the write would load the
//!   old data and save it again over the change).
//! * An account (sqlite3, PostgreSQL) is read from the database at every
//!   use (`core.auth` reads the row each time): written to the database,
//!   then the mod runs the privilege callbacks and tells a player in the
//!   game (`core.notify_authentication_modified`).

use super::request;
use super::spool::{ServerState, Spool, server_state};
use crate::journal::RecordDates;
use crate::records::{Collection, RecordStore};
use crate::{Note, Result, StoreError};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use worldfs_codec::luanti::auth::AuthEntry;
use worldfs_codec::luanti::player::Player;

/// A record as the server applied it, shown until the database's copy
/// changes (the server saved it) or the server run that has it ends.
struct Shown {
    bytes: Option<Vec<u8>>,
    db_then: Option<Vec<u8>>,
    run: String,
}

/// Players or accounts of a world whose running server runs the worldfs_live
/// mod (see the module doc).
pub struct LiveRecords {
    inner: Box<dyn RecordStore>,
    collection: Collection,
    /// Whether the engine reads this collection again (see above); when
    /// not, every change is refused.
    rereads: bool,
    world: PathBuf,
    spool: Spool,
    shown: Mutex<HashMap<String, Shown>>,
}

impl LiveRecords {
    /// `inner`, a collection of the world at `world`, changed alongside
    /// the server when the engine reads it again (`rereads`: players, and
    /// accounts in a database); else every change is refused with the
    /// reason (auth.txt, mod storage: the engine keeps them in memory).
    pub fn new(world: &Path, collection: Collection, inner: Box<dyn RecordStore>, rereads: bool) -> LiveRecords {
        LiveRecords {
            inner,
            collection,
            rereads,
            world: world.to_path_buf(),
            spool: Spool::new(world),
            shown: Mutex::new(HashMap::new()),
        }
    }

    fn current_run(&self) -> Option<String> {
        match server_state(&self.world) {
            ServerState::Running { run, .. } => Some(run),
            _ => None,
        }
    }

    /// A player (`text`: its request): through the player API when in the
    /// game, else written to the database while its joins are held.
    fn restore_player(
        &self,
        name: &str,
        text: &str,
        write: impl FnOnce() -> Result<()>,
        new: Option<&[u8]>,
    ) -> Result<()> {
        let db_then = self.inner.get(name)?;
        let run = self.current_run().unwrap_or_default();
        let said = self.spool.ask(text)?;
        if said == "ok" || said.starts_with("ok ") {
            let bytes = new.map(<[u8]>::to_vec);
            self.shown.lock().insert(name.to_string(), Shown { bytes, db_then, run });
            return Ok(());
        }
        let written = write();
        // The hold ends by itself after 10 s; this only ends it sooner.
        if let Err(e) = self.spool.ask(&request::player_release(name)) {
            log::warn!("player {name}: the server's hold on its joins was not ended ({e}); it ends in 10 s");
        }
        self.shown.lock().remove(name);
        written
    }

    /// An account: the database (the engine reads it at every use), then
    /// the server runs the privilege callbacks and tells the player
    /// (`text`: the request saying which privileges changed, if any).
    fn restore_account(&self, name: &str, text: Option<&str>, write: impl FnOnce() -> Result<()>) -> Result<()> {
        // Nothing is written unless the server would hear of it.
        if text.is_some() && self.current_run().is_none() {
            return Err(StoreError::Unreachable(format!("{}; nothing written", server_state(&self.world).why_not())));
        }
        write()?;
        if let Some(text) = text
            && let Err(e) = self.spool.ask(text)
        {
            log::warn!(
                "auth {name}: the privileges are written (the server reads them at every check), but the \
                 server could not be told ({e}): a player in the game sees them at the next join"
            );
        }
        Ok(())
    }
}

/// A record's bytes before and after a change, decoded by `decode` (None:
/// absent); an undecodable one is an error naming it (`what`).
fn decoded<T, E: std::fmt::Display>(
    what: &str,
    expect: Option<&[u8]>,
    new: Option<&[u8]>,
    decode: impl Fn(&[u8]) -> std::result::Result<T, E>,
) -> Result<(Option<T>, Option<T>)> {
    let one =
        |b: Option<&[u8]>| b.map(|b| decode(b).map_err(|e| StoreError::Backend(format!("{what}: {e}")))).transpose();
    Ok((one(expect)?, one(new)?))
}

/// The request that changes player `name` from `expect` to `new` (only
/// what differs).
fn player_request(name: &str, expect: Option<&[u8]>, new: Option<&[u8]>) -> Result<String> {
    let (old, next) = decoded(&format!("player {name}"), expect, new, Player::decode)?;
    request::player_change(name, old.as_ref(), next.as_ref()).map_err(StoreError::Refused)
}

/// The request that tells the server which privileges of account `name`
/// a change from `expect` to `new` granted and revoked (None: none).
fn account_request(name: &str, expect: Option<&[u8]>, new: Option<&[u8]>) -> Result<Option<String>> {
    let (old, next) = decoded(&format!("auth {name}"), expect, new, AuthEntry::decode)?;
    let privileges = |a: Option<AuthEntry>| a.map(|a| a.privileges).unwrap_or_default();
    let (before, after) = (privileges(old), privileges(next));
    let granted: Vec<&str> = after.iter().filter(|p| !before.contains(p)).map(String::as_str).collect();
    let revoked: Vec<&str> = before.iter().filter(|p| !after.contains(p)).map(String::as_str).collect();
    Ok((!granted.is_empty() || !revoked.is_empty()).then(|| request::privileges_changed(name, &granted, &revoked)))
}

impl RecordStore for LiveRecords {
    fn describe(&self) -> String {
        if self.rereads {
            format!("{}, changed alongside the running server (worldfs_live)", self.inner.describe())
        } else {
            format!("{}, unchanged while the server runs", self.inner.describe())
        }
    }

    fn names(&self) -> Result<Vec<String>> {
        self.inner.names()
    }

    fn get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let db = self.inner.get(name)?;
        let mut shown = self.shown.lock();
        if let Some(s) = shown.get(name) {
            if s.db_then == db && self.current_run().as_deref() == Some(s.run.as_str()) {
                return Ok(s.bytes.clone());
            }
            shown.remove(name);
        }
        Ok(db)
    }

    fn restore(
        &self,
        name: &str,
        expect: Option<&[u8]>,
        new: Option<&[u8]>,
        dates: Option<&RecordDates>,
        note: &Note,
    ) -> Result<()> {
        let write = || self.inner.restore(name, expect, new, dates, note);
        match self.collection {
            Collection::Players => self.restore_player(name, &player_request(name, expect, new)?, write, new),
            Collection::Auth if self.rereads => {
                self.restore_account(name, account_request(name, expect, new)?.as_deref(), write)
            }
            Collection::Auth => Err(StoreError::Refused(
                "the running server read auth.txt when it started and rewrites it whole at every login and \
                 privilege change, so it would overwrite the change; stop the server to change it (accounts in \
                 auth.sqlite change live)"
                    .into(),
            )),
            Collection::ModStorage => Err(StoreError::Refused(
                "the running server read mod storage when the mods loaded and writes it as they change it, so \
                 it would overwrite the change; stop the server to change it"
                    .into(),
            )),
        }
    }

    fn is_read_only(&self) -> bool {
        false
    }
}
