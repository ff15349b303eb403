//! `worldfs undo` of a Bedrock world: the journal's records (database keys,
//! collection `worldfs_store::leveldb::bedrock::JOURNAL`, each named by its key in
//! hex; and level.dat, as a Java world's) stepped back by
//! `crate::worlds::undo`. The keys are written back as one write batch,
//! journaled in turn; refused while the game holds the database's lock.

use crate::worlds::minecraft::journal::{LEVEL, LEVEL_NAME};
use crate::worlds::minecraft::swap_file;
use crate::worlds::undo::{Plan, Selection, plan_records};
use std::path::{Path, PathBuf};
use worldfs_codec::bedrock::key::from_hex;
use worldfs_store::journal::{FILE_NAME, Journal};
use worldfs_store::leveldb::bedrock::{BedrockDb, JOURNAL, KeyChange};

pub(crate) struct Records {
    world: PathBuf,
    db: BedrockDb,
}

impl Records {
    /// The world's records; `write`: open the database for writing (takes
    /// its lock: refused while the game has the world open).
    pub(crate) fn open(world: &Path, write: bool) -> Result<Records, String> {
        Ok(Records { world: world.to_path_buf(), db: BedrockDb::open(&world.join("db"), !write)? })
    }

    fn journal_path(&self) -> PathBuf {
        self.world.join(FILE_NAME)
    }

    /// The journal (None: nothing was changed through worldfs yet).
    pub(crate) fn journal(world: &Path) -> Result<Option<Journal>, String> {
        let path = world.join(FILE_NAME);
        Journal::open(&path).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn key(name: &str) -> Result<Vec<u8>, String> {
        from_hex(name).ok_or_else(|| format!("the journal names key {name:?}, which is not hex"))
    }

    /// What a journaled record holds now.
    pub(crate) fn read(&self, collection: &str, name: &str) -> Result<Option<Vec<u8>>, String> {
        match collection {
            JOURNAL => self.db.get(&Self::key(name)?).map_err(|e| e.to_string()),
            LEVEL if name == LEVEL_NAME => {
                let path = self.world.join("level.dat");
                std::fs::read(&path).map(Some).map_err(|e| format!("{}: {e}", path.display()))
            }
            _ => Err(format!("the journal names {collection}/{name}, which is no part of a Bedrock world")),
        }
    }

    /// The writes that revert `sel`.
    pub(crate) fn plan(&self, journal: &Journal, sel: Selection) -> Result<Plan, String> {
        plan_records(journal, &|c, n| self.read(c, n), sel)
    }

    /// Apply a plan: the keys in one journaled write batch, then level.dat.
    pub(crate) fn execute(&self, plan: &Plan) -> Result<(), String> {
        let mut changes = Vec::new();
        for r in plan.records.iter().filter(|r| r.collection == JOURNAL) {
            changes.push(KeyChange { key: Self::key(&r.name)?, old: r.now.clone(), new: r.back.clone() });
        }
        if !changes.is_empty() {
            let n = changes.len();
            self.db.write(changes, &plan.note(), Some(&self.journal_path())).map_err(|e| format!("{n} key(s): {e}"))?;
        }
        for r in plan.records.iter().filter(|r| r.collection == LEVEL) {
            let (Some(now), Some(back)) = (&r.now, &r.back) else {
                return Err("undo neither makes nor deletes level.dat".into());
            };
            let path = self.world.join("level.dat");
            let entry = crate::worlds::minecraft::journal::begin(
                Some(&self.journal_path()),
                &plan.note(),
                LEVEL,
                &[(LEVEL_NAME, now, back)],
            )
            .map_err(|e| e.message)?;
            swap_file(&path, now, back).map_err(|e| e.message)?;
            entry.kept();
        }
        match plan.records.iter().find(|r| r.collection != JOURNAL && r.collection != LEVEL) {
            Some(r) => Err(format!("{}/{}: not a record of a Bedrock world; not restored", r.collection, r.name)),
            None => Ok(()),
        }
    }
}
