//! `worldfs undo` of a Java world: the journal's records (chunks, players'
//! files, level.dat; `journal.rs`) stepped back by `crate::worlds::undo`, and
//! written back as the mount writes them (a region file rewritten and
//! renamed over the old one). The revert is journaled in turn, one entry
//! per collection, and refused while a game holds `session.lock` unless
//! forced.

use super::journal::{self, CHUNKS, LEVEL, LEVEL_NAME, PLAYERS};
use super::regions::{Regions, check_session_lock, parse_name};
use super::{player_file, swap_file};
use crate::worlds::undo::{Plan, RecordRestore, Selection, plan_records};
use std::path::{Path, PathBuf};
use worldfs_store::journal::{FILE_NAME, Journal};

/// A Java world's journaled files.
pub struct Records {
    world: PathBuf,
    regions: Regions,
}

impl Records {
    pub fn new(world: &Path) -> Records {
        let journal = Some(world.join(FILE_NAME));
        Records { world: world.to_path_buf(), regions: Regions::new(world, "region", journal) }
    }

    /// The journal (None: nothing was changed through worldfs yet).
    pub fn journal(&self) -> Result<Option<Journal>, String> {
        let path = self.world.join(FILE_NAME);
        Journal::open(&path).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn file_of(&self, collection: &str, name: &str) -> Result<PathBuf, String> {
        match collection {
            PLAYERS => player_file(&self.world.join("playerdata"), name),
            LEVEL if name == LEVEL_NAME => Some(self.world.join("level.dat")),
            _ => None,
        }
        .ok_or_else(|| format!("the journal names {collection}/{name}, which is no file of a Minecraft world"))
    }

    /// What a journaled record holds now (a chunk's NBT, a file's bytes).
    pub fn read(&self, collection: &str, name: &str) -> Result<Option<Vec<u8>>, String> {
        if collection == CHUNKS {
            let (x, z) = parse_name(name).ok_or_else(|| format!("the journal names chunk {name:?}"))?;
            return self.regions.read_chunk(x, z);
        }
        let path = self.file_of(collection, name)?;
        match std::fs::read(&path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// The writes that revert `sel`.
    pub fn plan(&self, journal: &Journal, sel: Selection) -> Result<Plan, String> {
        plan_records(journal, &|c, n| self.read(c, n), sel)
    }

    /// Apply a plan: each collection's records in one journal entry.
    pub fn execute(&self, plan: &Plan, force: bool) -> Result<(), String> {
        if !force {
            check_session_lock(&self.world).map_err(|e| e.message)?;
        }
        let _one = self.regions.lock.lock();
        for collection in [CHUNKS, PLAYERS, LEVEL] {
            let group: Vec<&RecordRestore> = plan.records.iter().filter(|r| r.collection == collection).collect();
            if !group.is_empty() {
                self.restore_group(collection, &group, plan)?;
            }
        }
        match plan.records.iter().find(|r| ![CHUNKS, PLAYERS, LEVEL].contains(&r.collection.as_str())) {
            Some(r) => Err(format!("{}/{}: not a record of a Minecraft world; not restored", r.collection, r.name)),
            None => Ok(()),
        }
    }

    fn restore_group(&self, collection: &str, group: &[&RecordRestore], plan: &Plan) -> Result<(), String> {
        let mut steps = Vec::new();
        for r in group {
            let (Some(now), Some(back)) = (&r.now, &r.back) else {
                return Err(format!("{collection}/{}: undo neither makes nor deletes chunks or files", r.name));
            };
            steps.push((r.name.as_str(), now.as_slice(), back.as_slice()));
        }
        let entry =
            journal::begin(self.regions.journal.as_deref(), &plan.note(), collection, &steps).map_err(|e| e.message)?;
        for (done, (name, now, back)) in steps.iter().enumerate() {
            let written = match collection {
                CHUNKS => {
                    let (x, z) = parse_name(name).ok_or_else(|| format!("the journal names chunk {name:?}"))?;
                    self.regions.replace_chunk(x, z, now, back)
                }
                _ => swap_file(&self.file_of(collection, name)?, now, back),
            };
            if let Err(e) = written {
                if done > 0 {
                    entry.kept(); // the ones written are in the journal
                }
                return Err(format!(
                    "{collection}/{name}: {}; {done} of {} restored before it",
                    e.message,
                    steps.len()
                ));
            }
        }
        entry.kept();
        Ok(())
    }
}
