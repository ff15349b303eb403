//! `snapshots/NAME/changed/`: what changed in the world since the
//! snapshot, for the shell:
//!
//! * `areas`: the report of `worldfs diff WORLD NAME` (one area a line,
//!   then its node-count changes and changed inventories);
//! * `areas.json`: the same as `worldfs diff --json`;
//! * `blocks`: every block whose nodes or metadata changed, one `X,Y,Z` a
//!   line, for loops such as
//!   `for b in $(cat changed/blocks); do diff -r blocks/$b ../../blocks/$b; done`.
//!
//! Files, not directories: the kernel keeps a directory's listing until
//! told, while these files are read afresh (their size is known only by
//! making them, as `names`). The world is compared when one of them is
//! read, reading the whole map as a snapshot does (seconds on millions of
//! blocks), and the answer is kept for the mount's TTL.

use super::diff::{self, Diff};
use crate::fs::{Access, Attr, DirEntry, FsError, Kind, NewName, Options, ROOT, Result, Tree, list_numbered};
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime};
use worldfs_store::BlockPos;
use worldfs_store::snapshots::Snapshots;

/// The inode tag of `changed/` inside a snapshot's tree.
pub(crate) const TAG: u64 = 12;

const DIR: u64 = 1;
const AREAS: u64 = 2;
const AREAS_JSON: u64 = 3;
const BLOCKS: u64 = 4;

fn ino(v: u64) -> u64 {
    (TAG << 60) | v
}

/// The compared world, and when.
#[derive(Clone)]
struct Compared {
    at: Instant,
    text: Arc<Vec<u8>>,
    json: Arc<Vec<u8>>,
    blocks: Arc<Vec<u8>>,
}

pub(crate) struct ChangedTree {
    store: PathBuf,
    snapshot: String,
    world: PathBuf,
    opts: Options,
    made: SystemTime,
    last: Mutex<Option<Compared>>,
}

impl ChangedTree {
    pub(crate) fn new(store: PathBuf, snapshot: &str, world: PathBuf, opts: &Options) -> ChangedTree {
        let opts = Options { read_only: true, ..opts.clone() };
        ChangedTree { store, snapshot: snapshot.into(), world, opts, made: SystemTime::now(), last: Mutex::new(None) }
    }

    pub(crate) fn root(&self) -> u64 {
        ino(DIR)
    }

    fn compare(&self) -> std::result::Result<Diff, String> {
        let store = Snapshots::open_read_only(&self.store)?;
        let info = store.find(&self.snapshot)?;
        let world = worldfs_store::world::World::open(&self.world)?;
        let map = world.open_store(true, false)?;
        let scratch = std::env::temp_dir();
        let changes = diff::since(&store, &info, map.as_ref(), &scratch)?;
        Ok(diff::analyze(&changes, None, &self.snapshot, "now"))
    }

    /// The comparison with the world now, made again after the TTL.
    fn compared(&self) -> Result<Compared> {
        let mut last = self.last.lock();
        if let Some(c) = &*last
            && c.at.elapsed() < self.opts.ttl
        {
            return Ok(c.clone());
        }
        let d = self.compare().map_err(FsError::io)?;
        let json = serde_json::to_vec_pretty(&d).map_err(|e| FsError::io(e.to_string()))?;
        let mut blocks: Vec<BlockPos> =
            d.areas.iter().flat_map(|a| a.blocks.iter().filter_map(|b| b.parse().ok())).collect();
        blocks.sort();
        let lines: String = blocks.iter().map(|p| format!("{p}\n")).collect();
        let c = Compared {
            at: Instant::now(),
            text: Arc::new(d.text().into_bytes()),
            json: Arc::new(json),
            blocks: Arc::new(lines.into_bytes()),
        };
        *last = Some(c.clone());
        Ok(c)
    }

    fn attr(&self, ino: u64, kind: Kind, size: u64) -> Attr {
        Attr::new(ino, kind, size, Access::Generated, self.made, &self.opts)
    }

    fn refused() -> FsError {
        FsError::read_only("changed/ shows what changed since the snapshot; nothing here can be written")
    }
}

impl Tree for ChangedTree {
    fn describe(&self) -> String {
        format!("changes since snapshot {}", self.snapshot)
    }

    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Attr> {
        let file = match (parent & ((1 << 60) - 1), name) {
            (DIR, b"areas") => AREAS,
            (DIR, b"areas.json") => AREAS_JSON,
            (DIR, b"blocks") => BLOCKS,
            _ => return Err(FsError::not_found()),
        };
        Ok(self.attr(ino(file), Kind::File, 0))
    }

    fn getattr(&self, i: u64) -> Result<Attr> {
        match i & ((1 << 60) - 1) {
            DIR => Ok(self.attr(i, Kind::Dir, 0)),
            AREAS | AREAS_JSON | BLOCKS => Ok(self.attr(i, Kind::File, 0)),
            _ => Err(FsError::not_found()),
        }
    }

    fn parent(&self, i: u64) -> Result<u64> {
        Ok(if i & ((1 << 60) - 1) == DIR { ROOT } else { ino(DIR) })
    }

    fn list(
        &self,
        dir: u64,
        offset: u64,
        plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<()> {
        if dir & ((1 << 60) - 1) != DIR {
            return Err(FsError::not_dir());
        }
        list_numbered(
            [(AREAS, "areas"), (AREAS_JSON, "areas.json"), (BLOCKS, "blocks")],
            offset,
            |(f, name), cookie| {
                let attr = if plus { Some(self.getattr(ino(f))?) } else { None };
                Ok(add(&DirEntry { ino: ino(f), offset: cookie, kind: Kind::File, name: name.into() }, attr.as_ref()))
            },
        )
    }

    fn read(&self, i: u64) -> Result<Arc<Vec<u8>>> {
        let c = self.compared()?;
        match i & ((1 << 60) - 1) {
            AREAS => Ok(c.text),
            AREAS_JSON => Ok(c.json),
            BLOCKS => Ok(c.blocks),
            _ => Err(FsError::is_dir()),
        }
    }

    fn sized_by_reading(&self, i: u64) -> bool {
        matches!(i & ((1 << 60) - 1), AREAS | AREAS_JSON | BLOCKS)
    }

    fn has_files_sized_by_reading(&self) -> bool {
        true
    }

    fn check_writable(&self, _ino: u64) -> Result<()> {
        Err(Self::refused())
    }

    fn write(&self, _ino: u64, _content: &[u8], _base: Option<&[u8]>) -> Result<()> {
        Err(Self::refused())
    }

    fn new_name(&self, _dir: u64, _name: &[u8]) -> Result<NewName> {
        Err(Self::refused())
    }

    fn path(&self, i: u64) -> String {
        match i & ((1 << 60) - 1) {
            DIR => "changed".into(),
            AREAS => "changed/areas".into(),
            AREAS_JSON => "changed/areas.json".into(),
            BLOCKS => "changed/blocks".into(),
            _ => String::new(),
        }
    }
}
