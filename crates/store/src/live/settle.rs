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
use crate::{BlockPos, MapStore};
use std::path::Path;
use std::time::Duration;

/// What is known of a server run's map saves.
#[derive(Clone, Debug, PartialEq)]
pub enum RunFate {
    /// Running (or hung: it still holds the map): its saves have written
    /// the requests up to `saved`; its next save writes the others.
    Running {
        /// The last request its saves wrote.
        saved: u64,
    },
    /// Shut down cleanly: its last save wrote everything.
    Stopped,
    /// Gone without a clean shutdown (killed): its saves had written the
    /// requests up to `saved`; a later one only if the database holds it
    /// (a save may have ended after its last heartbeat).
    Killed {
        /// The last request its saves wrote.
        saved: u64,
    },
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
/// mount (see `crate::guard`); then the run counts as running.
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
/// new one starts). A fresh heartbeat is taken at its word when
/// `trust_fresh`; else the map's holders are asked too (a server that
/// applied requests holds its map; one killed a moment ago left a
/// heartbeat that is fresh for 3 s more).
pub fn run_fate(world: &Path, run: &str, map: Option<&Path>, trust_fresh: bool) -> RunFate {
    let dir = world.join(DIR);
    if let Some((Ok(h), age)) = read_heartbeat(&dir.join("server.json"))
        && h.run == run
    {
        if h.stopped {
            return RunFate::Stopped;
        }
        let saved = saved_of(&h);
        if (trust_fresh && fresh(&h, age)) || map.is_none_or(|m| held(m) != Some(false)) {
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

/// Settle the journal's live blocks not known to be saved: those now in
/// the database stay, those a killed run lost are taken out
/// (`journal::resolve`), the others wait. `world`: the world's directory
/// (the mod's heartbeat), `db` its map, `map` the map's file
/// (`run_fate`, with `trust_fresh`). Gives how many blocks were taken out.
pub fn settle_journal(
    path: &Path,
    world: &Path,
    db: &dyn MapStore,
    map: Option<&Path>,
    trust_fresh: bool,
) -> crate::Result<usize> {
    let rows = super::journal::pending(path)?;
    if rows.is_empty() {
        return Ok(0);
    }
    let mut runs = std::collections::HashMap::new();
    let mut settled = Vec::new();
    for (change, pos, run, seq, after) in rows {
        let r = runs.entry(run.clone()).or_insert_with(|| run_fate(world, &run, map, trust_fresh));
        match fate(r, Some(seq), db, pos, after.as_deref()) {
            Fate::Pending => {}
            f => settled.push((change, pos, f == Fate::Lost)),
        }
    }
    super::journal::resolve(path, &settled)
}

#[cfg(test)]
mod tests {
    use super::super::journal::{pending, record_applied};
    use super::*;
    use crate::{Change, Note};

    /// Blocks a server applied but had not saved: kept once its saves say
    /// so; when it was killed, kept if the map holds them and taken out of
    /// the journal if not (an entry left empty goes, and what it reverted
    /// is no longer marked reverted).
    #[test]
    fn unsaved_blocks_are_kept_when_saved_and_taken_out_when_lost() {
        use crate::memory::MemoryStore;
        let d = tempfile::tempdir().unwrap();
        let (world, path) = (d.path(), d.path().join("j.sqlite"));
        std::fs::create_dir_all(world.join("worldfs-live/runs")).unwrap();
        let beat = |file: &str, json: &str| std::fs::write(world.join("worldfs-live").join(file), json).unwrap();
        let (a, b, c) = (BlockPos::new(0, 0, 0), BlockPos::new(1, 0, 0), BlockPos::new(2, 0, 0));
        let air = worldfs_codec::luanti::Block::new_air(29).encode().unwrap();
        let (wa, wb, wc) = (air.clone(), air.clone(), air);
        let db = MemoryStore::new();
        db.apply(&[Change::Put(a, wa.clone())], &Note::default()).unwrap();
        let undone = {
            record_applied(&path, &Note::new("first"), &[(c, None, Some(wc.as_slice()))], &[(c, "r1".into(), 1)])
                .unwrap();
            crate::journal::Journal::open(&path).unwrap().unwrap().changes(None, Some(1)).unwrap()[0].id
        };
        let mut note = Note::new("second");
        note.reverts.push(undone);
        record_applied(
            &path,
            &note,
            &[(a, None, Some(wa.as_slice())), (b, None, Some(wb.as_slice()))],
            &[(a, "r1".into(), 2), (b, "r1".into(), 3)],
        )
        .unwrap();
        let running = |saved: u32| {
            format!(r#"{{"protocol":1.0,"run":"r1","save_interval":1.0,"version":"5.6.1","saved":{saved}}}"#)
        };
        // Running, its saves up to request 1: c is saved, a and b wait.
        beat("server.json", &running(1));
        assert_eq!(settle_journal(&path, world, &db, None, true).unwrap(), 0);
        let pending = |path: &Path| pending(path).unwrap().len();
        assert_eq!(pending(&path), 2);
        // A new run started; r1's last heartbeat (saves up to 1) kept in
        // runs/: it was killed. The map holds a (saved after the last
        // heartbeat), not b: b is taken out.
        std::fs::write(world.join("worldfs-live/runs/r1.json"), running(1)).unwrap();
        beat("server.json", &running(0).replace("r1", "r2"));
        assert_eq!(settle_journal(&path, world, &db, None, true).unwrap(), 1);
        assert_eq!(pending(&path), 0);
        let j = crate::journal::Journal::open(&path).unwrap().unwrap();
        let second = &j.changes(None, Some(1)).unwrap()[0];
        assert_eq!(second.blocks, 1);
        assert_eq!(j.blocks(second.id).unwrap().iter().map(|r| r.pos).collect::<Vec<_>>(), [a]);
        // An entry that loses every block goes, and its undo mark with it.
        let mut third = Note::new("third");
        third.reverts.push(second.id);
        record_applied(&path, &third, &[(b, None, None)], &[(b, "r2".into(), 5)]).unwrap();
        assert!(j.change(second.id).unwrap().unwrap().reverted_by.is_some());
        std::fs::write(world.join("worldfs-live/runs/r2.json"), running(4).replace("r1", "r2")).unwrap();
        beat("server.json", &running(0).replace("r1", "r3"));
        db.apply(&[Change::Put(b, vec![1])], &Note::default()).unwrap();
        assert_eq!(settle_journal(&path, world, &db, None, true).unwrap(), 1, "b is there, not deleted: lost");
        assert_eq!(j.changes(None, None).unwrap().len(), 2, "the third entry is gone");
        assert_eq!(j.change(second.id).unwrap().unwrap().reverted_by, None);
    }
}
