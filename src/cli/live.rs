//! `worldfs live install WORLD`: put the worldfs_live mod (the copy in
//! contrib/worldfs_live/, built into the binary; the Debian package ships
//! the same files in /usr/share/worldfs/worldfs_live) into
//! WORLD/worldmods/, where the server loads it without it being enabled in
//! world.mt.

use crate::worlds::undo::Selection;
use std::path::{Path, PathBuf};
use worldfs_store::journal::Journal;
use worldfs_store::live::LiveStore;
use worldfs_store::live::journal::AsJournaled;
use worldfs_store::live::records::LiveRecords;
use worldfs_store::records::{Collection, RecordStore};
use worldfs_store::world::World;
use worldfs_store::{Change, MapStore};

/// The mod's files, as `worldfs live install` writes them (its licence
/// goes with every copy).
const FILES: [(&str, &str); 6] = [
    ("mod.conf", include_str!("../../contrib/worldfs_live/mod.conf")),
    ("LICENSE", include_str!("../../contrib/worldfs_live/LICENSE")),
    ("init.lua", include_str!("../../contrib/worldfs_live/init.lua")),
    ("pace.lua", include_str!("../../contrib/worldfs_live/pace.lua")),
    ("saves.lua", include_str!("../../contrib/worldfs_live/saves.lua")),
    ("settingtypes.txt", include_str!("../../contrib/worldfs_live/settingtypes.txt")),
];

/// Install (or update) the mod in `world`; the lines to print.
pub(crate) fn install(world: &Path) -> Result<Vec<String>, String> {
    if !world.join("world.mt").is_file() {
        return Err(format!("{}: not a Luanti world (no world.mt)", world.display()));
    }
    let dir: PathBuf = world.join("worldmods").join("worldfs_live");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut changed = false;
    for (name, text) in FILES {
        let path = dir.join(name);
        if std::fs::read(&path).ok().as_deref() == Some(text.as_bytes()) {
            continue;
        }
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))?;
        changed = true;
    }
    let what = if changed { "installed" } else { "already installed (unchanged)" };
    Ok(vec![
        format!("worldfs_live {what} in {}", dir.display()),
        "the server loads it at its next start (worldmods need no enabling); once it runs, a writable \
         `worldfs mount` of this world sends its changes through the server"
            .to_string(),
    ])
}

/// Settle the undo journal's changes a running server applied but had
/// not saved when they were journaled (`worldfs_store::live::settle`):
/// those a killed server lost are taken out, so that the journal lists
/// what the map holds.
pub(crate) fn settle_journal(w: &World) {
    let path = w.journal_path();
    if !path.is_file() {
        return;
    }
    let map_file = (w.backend() == "sqlite3").then(|| w.map_path());
    let settled = w.open_store(true, false).map_err(|e| e.to_string()).and_then(|db| {
        worldfs_store::live::settle::settle_journal(&path, &w.dir, db.as_ref(), map_file.as_deref(), false)
            .map_err(|e| e.to_string())
    });
    match settled {
        Ok(0) => {}
        Ok(n) => log::info!("{n} block(s) a server applied but lost before saving them were taken out of the journal"),
        Err(e) => log::warn!("the undo journal's live changes could not be checked against the map: {e}"),
    }
}

/// Whether the server of `world` runs the worldfs_live mod now.
pub(crate) fn server_runs_mod(world: &Path) -> bool {
    matches!(worldfs_store::live::server_state(world), worldfs_store::live::ServerState::Running { .. })
}

/// `worldfs undo` while the server runs the worldfs_live mod: the blocks
/// go back through the server (`LiveStore::revert`: the mod checks that
/// the game still holds what each undone change left, node by node, and
/// refuses the undo as a conflict otherwise), the players and accounts as
/// a live mount changes them (`worldfs_store::live::records`).
pub(crate) fn undo(w: &World, journal: &Journal, sel: Selection, dry_run: bool) -> Result<(), String> {
    worldfs_store::live::check_spool(&w.dir)?;
    let store = LiveStore::new(&w.dir, w.open_store(true, false)?).with_journal(Some(w.journal_path()));
    let planned = AsJournaled::new(&store, journal.path(), true).map_err(|e| e.to_string())?;
    let records: Vec<(&'static str, Box<dyn RecordStore>)> =
        crate::worlds::luanti::records::open_stores(w, dry_run, true)
            .into_iter()
            .map(|(name, s)| match Collection::from_name(name) {
                Some(c) => {
                    let rereads = crate::worlds::luanti::records::changes_alongside_server(w, c);
                    (name, Box::new(LiveRecords::new(&w.dir, c, s, rereads)) as Box<dyn RecordStore>)
                }
                None => (name, s),
            })
            .collect();
    let read = |c: &str, name: &str| match records.iter().find(|(n, _)| *n == c) {
        Some((_, s)) => s.get(name).map_err(|e| format!("{c}/{name}: {e}")),
        None => Err(format!("{c}: its backend cannot be opened here")),
    };
    let p = crate::worlds::undo::plan_all(journal, &planned, Some(&read), sel)?;
    println!(
        "{}: {} block(s) and {} record(s) to restore through the running server",
        p.note().what,
        p.changes.len(),
        p.records.len()
    );
    let hint = "stop the server and use --force to revert them anyway";
    if !super::conflicts::go_ahead(&p.conflicts, "block(s) or record(s)", hint, dry_run, false)? {
        return Ok(());
    }
    let mut changes = Vec::new();
    for c in &p.changes {
        changes.push(Change::Expect(c.pos(), planned.get(c.pos()).map_err(|e| e.to_string())?));
        changes.push(c.clone());
    }
    if !changes.is_empty() {
        store.revert(&changes, &p.note()).map_err(|e| format!("nothing more reverted: {e}"))?;
    }
    for r in &p.records {
        let (_, rs) = records
            .iter()
            .find(|(n, _)| *n == r.collection)
            .ok_or_else(|| format!("{}: cannot be written here", r.collection))?;
        rs.restore(&r.name, r.now.as_deref(), r.back.as_deref(), r.dates.as_ref(), &p.note())
            .map_err(|e| format!("{}/{}: {e}", r.collection, r.name))?;
    }
    println!("done, through the running server; `worldfs undo {}` lists it", w.dir.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installs_into_worldmods_and_refuses_a_non_world() {
        let d = tempfile::tempdir().unwrap();
        assert!(install(d.path()).unwrap_err().contains("no world.mt"));
        std::fs::write(d.path().join("world.mt"), "gameid = minetest\n").unwrap();
        let said = install(d.path()).unwrap();
        assert!(said[0].contains("installed in"), "{said:?}");
        let init = std::fs::read_to_string(d.path().join("worldmods/worldfs_live/init.lua")).unwrap();
        assert!(init.contains("worldfs-live 1"));
        // init.lua loads its pace from the mod's directory.
        let pace = std::fs::read_to_string(d.path().join("worldmods/worldfs_live/pace.lua")).unwrap();
        assert!(init.contains("\"/pace.lua\"") && pace.contains("function pace.after_save"));
        assert!(d.path().join("worldmods/worldfs_live/settingtypes.txt").is_file());
        let licence = std::fs::read_to_string(d.path().join("worldmods/worldfs_live/LICENSE")).unwrap();
        assert!(licence.contains("MIT License") && licence.contains("Apache License"), "{licence}");
        assert!(install(d.path()).unwrap()[0].contains("unchanged"));
    }
}
