//! `worldfs undo` of a Java world: the journal's records (chunks, players'
//! files, level.dat; `journal.rs`) stepped back by `crate::worlds::undo`, and
//! written back as the mount writes them (a region file rewritten and
//! renamed over the old one). The revert is journaled in turn, one entry
//! per collection, and refused while a game holds `session.lock` unless
//! forced.

use super::journal::{self, CHUNKS, LEVEL, LEVEL_NAME, PLAYERS};
use super::layout::Layout;
use super::regions::{Regions, check_session_lock, parse_name};
use super::{player_file, swap_file};
use crate::worlds::undo::{Plan, RecordRestore, Selection, plan_records};
use std::path::{Path, PathBuf};
use worldfs_store::journal::{FILE_NAME, Journal};

/// A Java world's journaled files.
pub struct Records {
    world: PathBuf,
    regions: Regions,
    layout: Layout,
}

impl Records {
    pub fn new(world: &Path) -> Records {
        let journal = Some(world.join(FILE_NAME));
        let layout = super::layout::of(world);
        let regions = Regions::new(world, layout.overworld.folder("region"), journal);
        Records { world: world.to_path_buf(), regions, layout }
    }

    /// The region files of a collection of chunks: the overworld's
    /// (`CHUNKS`) or another dimension's (None: not chunks).
    fn regions_of(&self, collection: &str) -> Result<Option<Regions>, String> {
        let Some(id) = journal::dimension_of(collection) else { return Ok(None) };
        let dim = self.layout.dimension(id).ok_or_else(|| {
            format!("the journal names chunks of dimension {id}, which {} does not have", self.world.display())
        })?;
        let regions = Regions::new(&self.world, dim.folder("region"), self.regions.journal.clone());
        Ok(Some(regions.with_collection(collection.to_string())))
    }

    /// The journal (None: nothing was changed through worldfs yet).
    pub fn journal(&self) -> Result<Option<Journal>, String> {
        let path = self.world.join(FILE_NAME);
        Journal::open(&path).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn file_of(&self, collection: &str, name: &str) -> Result<PathBuf, String> {
        match collection {
            PLAYERS => player_file(&self.world.join(&self.layout.players), name),
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
        if let Some(regions) = self.regions_of(collection)? {
            let (x, z) = parse_name(name).ok_or_else(|| format!("the journal names chunk {name:?}"))?;
            return regions.read_chunk(x, z);
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
        let mut collections: Vec<String> = [CHUNKS, PLAYERS, LEVEL].map(String::from).into();
        let others = plan.records.iter().map(|r| &r.collection).filter(|c| journal::dimension_of(c).is_some());
        for c in others {
            if !collections.contains(c) {
                collections.push(c.clone());
            }
        }
        for collection in &collections {
            let group: Vec<&RecordRestore> = plan.records.iter().filter(|r| &r.collection == collection).collect();
            if !group.is_empty() {
                self.restore_group(collection, &group, plan)?;
            }
        }
        match plan.records.iter().find(|r| !collections.contains(&r.collection)) {
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
        let dimension = self.regions_of(collection)?;
        for (done, (name, now, back)) in steps.iter().enumerate() {
            let written = match (collection, &dimension) {
                (CHUNKS, _) => {
                    let (x, z) = parse_name(name).ok_or_else(|| format!("the journal names chunk {name:?}"))?;
                    self.regions.replace_chunk(x, z, now, back)
                }
                (_, Some(regions)) => {
                    let (x, z) = parse_name(name).ok_or_else(|| format!("the journal names chunk {name:?}"))?;
                    regions.replace_chunk(x, z, now, back)
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
