//! Which changes a running server applied are in the map database. The
//! server applies a change in the game at once but writes it to the
//! database only at its next map save; a server killed before that save
//! loses it. The mod numbers the requests it applies and says in its
//! heartbeat up to which number its saves have written
//! (contrib/worldfs_live/saves.lua); a run's last heartbeat is kept in
//! `runs/RUN.json` when the server starts again. A change is told and
//! journaled as kept only once it is in the database: what the saves
//! wrote, or, for a run that ended without a clean shutdown, what the
//! database shows it holds; a change its run lost is taken out of the
//! journal.

use super::journal::holds_live_change;
use super::spool::{DIR, Heartbeat, fresh, read_heartbeat};
use crate::store::{BlockPos, MapStore};
use std::path::Path;
use std::time::Duration;

/// What is known of a server run's map saves.
#[derive(Clone, Debug, PartialEq)]
pub enum RunFate {
    /// Running (or hung: it still holds the map): its saves have written
    /// the requests up to `saved`; its next save writes the others.
    Running { saved: u64 },
    /// Shut down cleanly: its last save wrote everything.
    Stopped,
    /// Gone without a clean shutdown (killed): its saves had written the
    /// requests up to `saved`; a later one only if the database holds it
    /// (a save may have ended after its last heartbeat).
    Killed { saved: u64 },
}

/// Whether an applied block is in the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// In the database (or applied by a mod that does not number its
    /// requests, as before).
    Kept,
    /// Its run was killed before saving it.
    Lost,
    /// Not saved yet by a run that still runs (or the database could not
    /// be read): known later.
    Pending,
}

/// How long the scan for processes holding the map may take: it reads
/// /proc, which can wait on a process that is closing a file on this very
/// mount (see `kinds::luanti::guard`); then the run counts as running.
const HOLDERS_WAIT: Duration = Duration::from_secs(2);

/// Whether some process holds the map file `map` (a hung server does, a
/// killed one no longer); None when that could not be told in time.
fn held(map: &Path) -> Option<bool> {
    let (tx, rx) = std::sync::mpsc::channel();
    let path = map.to_path_buf();
    std::thread::Builder::new()
        .name("worldfs-holders".into())
        .spawn(move || {
            let _ = tx.send(!crate::holders::openers(&path).is_empty());
        })
        .ok()?;
    rx.recv_timeout(HOLDERS_WAIT).ok()
}

fn saved_of(h: &Heartbeat) -> u64 {
    h.saved.map_or(0, |n| n as u64)
}

/// What is known of run `run` of the server of `world` now. `map`: the
/// map's file, whose holders tell a hung server from a killed one (None,
/// a map on a database server: a silent run counts as running until a
/// new one starts).
pub fn run_fate(world: &Path, run: &str, map: Option<&Path>) -> RunFate {
    let dir = world.join(DIR);
    if let Some((Ok(h), age)) = read_heartbeat(&dir.join("server.json"))
        && h.run == run
    {
        if h.stopped {
            return RunFate::Stopped;
        }
        let saved = saved_of(&h);
        if fresh(&h, age) || map.is_none_or(|m| held(m) != Some(false)) {
            return RunFate::Running { saved };
        }
        return RunFate::Killed { saved };
    }
    match read_heartbeat(&dir.join("runs").join(format!("{run}.json"))) {
        Some((Ok(h), _)) if h.stopped => RunFate::Stopped,
        Some((Ok(h), _)) => RunFate::Killed { saved: saved_of(&h) },
        // No record of the run (an older mod, or many starts since): the
        // database decides.
        _ => RunFate::Killed { saved: 0 },
    }
}

/// The fate of block `pos`, applied as request `seq` of a run whose fate
/// is `run`, which wrote `wrote` (None: deleted it): `db` holds the map.
pub fn fate(run: &RunFate, seq: Option<u64>, db: &dyn MapStore, pos: BlockPos, wrote: Option<&[u8]>) -> Fate {
    let Some(seq) = seq else { return Fate::Kept };
    match run {
        RunFate::Stopped => Fate::Kept,
        RunFate::Running { saved } | RunFate::Killed { saved } if seq <= *saved => Fate::Kept,
        RunFate::Running { .. } => Fate::Pending,
        RunFate::Killed { .. } => match db.get(pos) {
            Ok(now) => {
                let holds = match (now.as_deref(), wrote) {
                    (Some(now), Some(w)) => holds_live_change(now, w),
                    (None, None) => true,
                    _ => false,
                };
                if holds { Fate::Kept } else { Fate::Lost }
            }
            Err(e) => {
                log::warn!("block {pos}: whether the server saved it cannot be told now ({e})");
                Fate::Pending
            }
        },
    }
}
