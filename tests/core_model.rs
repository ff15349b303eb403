//! A reference model of the core: random sequences of create, write,
//! flush, release, rename, unlink, forget and store failures, run against
//! the real core (a Luanti world on an in-memory map store) and against a
//! `BTreeMap` of what every directory should hold. After every step the
//! listings and every file's content must agree with the model.
//!
//! Two directories are exercised: the world's root (the world file
//! `world.mt`, which cannot be deleted, and scratch files) and a chest's
//! `fields/` (keys: new names become keys when written, dot names are
//! scratch files).
//!
//! The second model (below) does the same for block files, checking the
//! map itself: every close() or rename() that returned 0 is in it, every
//! refused one left it as it was.

use crate::common;

use common::core_fs::ModelPending;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::sync::Arc;
use worldfs::fs::{ErrorKind, Options, ROOT, WorldFs};
use worldfs_store::memory::MemoryStore;
use worldfs_store::{BlockPos, MapStore, StoreError};

const CHEST_FIELDS: &str = "blocks/0,0,0/meta/3,1,3/fields";
const DIRS: [&str; 2] = ["", CHEST_FIELDS];
/// Names used in each directory (index into this per directory).
const ROOT_NAMES: [&str; 4] = ["world.mt", "a", "b", ".x"];
const FIELD_NAMES: [&str; 4] = ["infotext", "k", "m", ".s"];

fn name_of(dir: usize, i: usize) -> &'static str {
    if dir == 0 { ROOT_NAMES[i] } else { FIELD_NAMES[i] }
}

#[derive(Clone, Debug)]
enum Op {
    Create { dir: usize, name: usize, trunc: bool },
    Write { h: usize, offset: usize, data: Vec<u8> },
    Flush { h: usize },
    Release { h: usize },
    Rename { dir: usize, from: usize, to: usize },
    Unlink { dir: usize, name: usize },
    Forget { slot: usize },
    FailNextCommit,
}

fn op() -> impl Strategy<Value = Op> {
    let data = proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'z'), Just(b'\n')], 0..6);
    prop_oneof![
        3 => (0..2usize, 0..4usize, any::<bool>()).prop_map(|(dir, name, trunc)| Op::Create { dir, name, trunc }),
        4 => (0..4usize, 0..8usize, data).prop_map(|(h, offset, data)| Op::Write { h, offset, data }),
        3 => (0..4usize).prop_map(|h| Op::Flush { h }),
        2 => (0..4usize).prop_map(|h| Op::Release { h }),
        2 => (0..2usize, 0..4usize, 0..4usize).prop_map(|(dir, from, to)| Op::Rename { dir, from, to }),
        1 => (0..2usize, 0..4usize).prop_map(|(dir, name)| Op::Unlink { dir, name }),
        1 => (0..16usize).prop_map(|slot| Op::Forget { slot }),
        1 => Just(Op::FailNextCommit),
    ]
}

#[derive(Clone, Debug, PartialEq)]
enum What {
    /// world.mt: a file of the world that cannot be deleted.
    WorldFile,
    Key,
    /// A scratch file; `pending`: becomes a key when written and flushed.
    Scratch {
        pending: bool,
    },
}

#[derive(Clone, Debug)]
struct File {
    what: What,
    content: Vec<u8>,
}

/// An open handle in the model.
#[derive(Clone, Debug)]
struct Handle {
    fh: u64,
    dir: usize,
    /// The name it was opened under (it follows a scratch file's renames).
    name: String,
    /// The id of the scratch file it writes to directly, if any.
    scratch: Option<u64>,
    buf: Vec<u8>,
    dirty: bool,
    truncated: bool,
    flushes: u32,
    /// What the file showed when the handle's buffer was made from it
    /// (None for O_TRUNC): a commit is refused if it shows anything else.
    base: Option<Vec<u8>>,
}

struct Model {
    dirs: [BTreeMap<String, File>; 2],
    /// Scratch files by id: (dir, name) while they have one, and their
    /// content (which orphans keep while open).
    scratch_ids: BTreeMap<u64, (usize, Option<String>)>,
    next_scratch: u64,
    handles: Vec<Handle>,
    fail_next: bool,
}

fn write_into(buf: &mut Vec<u8>, offset: usize, data: &[u8]) {
    if buf.len() < offset + data.len() {
        buf.resize(offset + data.len(), 0);
    }
    buf[offset..offset + data.len()].copy_from_slice(data);
}

/// What a key shows for written content.
fn as_field(content: &[u8]) -> Vec<u8> {
    let mut v = content.strip_suffix(b"\n").unwrap_or(content).to_vec();
    v.push(b'\n');
    v
}

impl Model {
    fn shown(what: &What, content: &[u8]) -> Vec<u8> {
        match what {
            What::Key => as_field(content),
            _ => content.to_vec(),
        }
    }

    /// A handle's commit; returns whether it succeeded.
    fn commit(&mut self, h: usize) -> bool {
        let hd = self.handles[h].clone();
        if let Some(id) = hd.scratch {
            // A pending scratch file becomes a key.
            let Some((dir, Some(name))) = self.scratch_ids.get(&id).cloned() else { return true };
            let Some(f) = self.dirs[dir].get(&name).cloned() else { return true };
            if f.what != (What::Scratch { pending: true }) {
                return true;
            }
            if std::mem::take(&mut self.fail_next) {
                return false;
            }
            self.scratch_ids.remove(&id);
            self.dirs[dir].insert(name, File { what: What::Key, content: as_field(&f.content) });
            return true;
        }
        // A handle of a key refers to that key: if it was deleted or renamed
        // meanwhile (even if a scratch file took the name), nothing is
        // written.
        let Some(f) = self.dirs[hd.dir].get(&hd.name).cloned().filter(|f| !matches!(f.what, What::Scratch { .. }))
        else {
            return false;
        };
        let new = Model::shown(&f.what, &hd.buf);
        if new == f.content {
            // Nothing to write; what the file shows is the handle's base
            // from now on.
            self.handles[h].base = Some(new);
            return true;
        }
        if hd.base.as_ref().is_some_and(|b| *b != f.content) {
            return false; // changed since the handle read it
        }
        match f.what {
            // World files do not go through the store.
            What::WorldFile => {}
            What::Key if std::mem::take(&mut self.fail_next) => return false,
            What::Key | What::Scratch { .. } => {}
        }
        self.dirs[hd.dir].get_mut(&hd.name).unwrap().content = new.clone();
        self.handles[h].base = Some(new);
        true
    }
}

struct Real {
    fs: WorldFs,
    store: Arc<MemoryStore>,
    _world: tempfile::TempDir,
    /// Inodes the kernel was handed (for forget).
    handed: Vec<u64>,
}

/// A fresh copy of the demo world, and a memory store holding its blocks.
fn demo_copy() -> (tempfile::TempDir, Arc<MemoryStore>) {
    let (world, store) = common::core_fs::demo_copy();
    (world, Arc::new(store))
}

fn real() -> Real {
    let (world, store) = demo_copy();
    let w = worldfs_store::world::World::open(world.path()).unwrap();
    let opts = Options { read_only: false, ..Options::default() };
    let fs = worldfs::open::world_with_store(w, Box::new(store.clone()), opts);
    Real { fs, store, _world: world, handed: Vec::new() }
}

impl Real {
    fn dir_ino(&mut self, dir: usize) -> u64 {
        let mut ino = ROOT;
        for part in DIRS[dir].split('/').filter(|p| !p.is_empty()) {
            ino = self.fs.lookup(ino, OsStr::new(part)).unwrap().ino;
            self.handed.push(ino);
        }
        ino
    }

    fn listing(&mut self, dir: usize) -> Vec<String> {
        let ino = self.dir_ino(dir);
        let mut v = Vec::new();
        self.fs
            .readdir(ino, 0, false, &mut |e, _| {
                v.push(e.name.to_string_lossy().into_owned());
                false
            })
            .unwrap();
        v.retain(|n| n != "." && n != ".." && n != "README" && n != "write-errors");
        v.sort();
        v
    }

    /// The listing, limited in the root to the names the test uses (the
    /// root also holds blocks/, node/ and other world files).
    fn visible(&mut self, dir: usize) -> Vec<String> {
        let mut v = self.listing(dir);
        if dir == 0 {
            v.retain(|n| ROOT_NAMES.contains(&n.as_str()));
        }
        v
    }

    fn content(&mut self, dir: usize, name: &str) -> Vec<u8> {
        let d = self.dir_ino(dir);
        let a = self.fs.lookup(d, OsStr::new(name)).unwrap();
        self.handed.push(a.ino);
        let o = self.fs.open(a.ino, libc::O_RDONLY, 1).unwrap();
        let data = self.fs.read(o.fh, 0, 1 << 20).unwrap();
        self.fs.release(o.fh).unwrap();
        assert_eq!(a.size as usize, data.len(), "{name}: size and content disagree");
        data
    }
}

const PID: u32 = 4242;

fn run(ops: Vec<Op>) {
    let mut r = real();
    let mut m = Model {
        dirs: [BTreeMap::new(), BTreeMap::new()],
        scratch_ids: BTreeMap::new(),
        next_scratch: 0,
        handles: Vec::new(),
        fail_next: false,
    };
    for dir in 0..2 {
        for name in r.visible(dir) {
            let content = r.content(dir, &name);
            let what = if dir == 0 { What::WorldFile } else { What::Key };
            m.dirs[dir].insert(name, File { what, content });
        }
    }
    assert!(m.dirs[0].contains_key("world.mt") && m.dirs[1].contains_key("infotext"));
    for (step, op) in ops.into_iter().enumerate() {
        let at = format!("step {step}: {op:?}");
        match op {
            Op::Create { dir, name, trunc } => {
                let name = name_of(dir, name);
                let d = r.dir_ino(dir);
                let flags = libc::O_WRONLY | libc::O_CREAT | if trunc { libc::O_TRUNC } else { 0 };
                let got = r.fs.create(d, OsStr::new(name), 0o100644, flags, PID);
                let existing = m.dirs[dir].get(name).cloned();
                let (a, o) = got.unwrap_or_else(|e| panic!("{at}: {e:?}"));
                r.handed.push(a.ino);
                let mut h = Handle {
                    fh: o.fh,
                    dir,
                    name: name.to_string(),
                    scratch: None,
                    buf: Vec::new(),
                    dirty: false,
                    truncated: false,
                    flushes: 0,
                    base: None,
                };
                match existing {
                    Some(f) if matches!(f.what, What::Scratch { .. }) => {
                        let id =
                            *m.scratch_ids.iter().find(|(_, v)| v.0 == dir && v.1.as_deref() == Some(name)).unwrap().0;
                        h.scratch = Some(id);
                        if trunc {
                            m.dirs[dir].get_mut(name).unwrap().content.clear();
                        }
                    }
                    Some(f) => {
                        h.buf = if trunc { Vec::new() } else { f.content.clone() };
                        h.base = (!trunc).then(|| f.content.clone());
                        h.truncated = trunc;
                    }
                    None => {
                        let pending = dir == 1 && !name.starts_with('.');
                        m.next_scratch += 1;
                        m.scratch_ids.insert(m.next_scratch, (dir, Some(name.to_string())));
                        m.dirs[dir]
                            .insert(name.to_string(), File { what: What::Scratch { pending }, content: Vec::new() });
                        h.scratch = Some(m.next_scratch);
                    }
                }
                m.handles.push(h);
            }
            Op::Write { h, offset, data } => {
                let Some(hd) = m.handles.get_mut(h) else { continue };
                let offset = offset.min(hd.buf.len().max(content_len(&m, h)));
                r.fs.write(m.handles[h].fh, offset as u64, &data).unwrap_or_else(|e| panic!("{at}: {e:?}"));
                let hd = &mut m.handles[h];
                match hd.scratch {
                    Some(id) => {
                        if let Some((dir, Some(name))) = m.scratch_ids.get(&id).cloned() {
                            write_into(&mut m.dirs[dir].get_mut(&name).unwrap().content, offset, &data);
                        }
                        hd.dirty = true;
                    }
                    None => {
                        write_into(&mut hd.buf, offset, &data);
                        hd.dirty = true;
                        hd.truncated = false;
                    }
                }
            }
            Op::Flush { h } | Op::Release { h } => {
                if h >= m.handles.len() {
                    continue;
                }
                let release = matches!(op, Op::Release { .. });
                let hd = &mut m.handles[h];
                hd.flushes += 1;
                let commits = hd.dirty || (hd.truncated && (release || hd.flushes > 1));
                if commits {
                    hd.dirty = false;
                    hd.truncated = false;
                }
                let fh = hd.fh;
                let got = if release { r.fs.release(fh) } else { r.fs.flush(fh, PID) };
                let ok = !commits || m.commit(h);
                assert_eq!(got.is_ok(), ok, "{at}: {got:?}");
                if release {
                    m.handles.remove(h);
                }
            }
            Op::Rename { dir, from, to } => {
                let (from, to) = (name_of(dir, from), name_of(dir, to));
                let d = r.dir_ino(dir);
                let got = r.fs.rename(d, OsStr::new(from), d, OsStr::new(to), 0);
                let want = model_rename(&mut m, dir, from, to);
                assert_eq!(got.is_ok(), want, "{at}: {got:?}");
            }
            Op::Unlink { dir, name } => {
                let name = name_of(dir, name);
                let d = r.dir_ino(dir);
                let got = r.fs.unlink(d, OsStr::new(name));
                let want = match m.dirs[dir].get(name).map(|f| f.what.clone()) {
                    None | Some(What::WorldFile) => false,
                    Some(What::Scratch { .. }) => {
                        m.dirs[dir].remove(name);
                        forget_name(&mut m, dir, name);
                        true
                    }
                    Some(What::Key) if std::mem::take(&mut m.fail_next) => false,
                    Some(What::Key) => {
                        m.dirs[dir].remove(name);
                        true
                    }
                };
                assert_eq!(got.is_ok(), want, "{at}: {got:?}");
            }
            Op::Forget { slot } => {
                if let Some(&ino) = r.handed.get(slot) {
                    r.handed.remove(slot);
                    r.fs.forget(ino, 1);
                }
            }
            Op::FailNextCommit => {
                m.fail_next = true;
                r.store.fail_next(1, StoreError::Backend("injected failure".into()));
            }
        }
        if !m.fail_next {
            r.store.heal();
        }
        for (dir, path) in DIRS.iter().enumerate() {
            let want: Vec<String> = m.dirs[dir].keys().cloned().collect();
            assert_eq!(r.visible(dir), want, "{at}: listing of {path:?}");
            for (name, f) in m.dirs[dir].clone() {
                let content = r.content(dir, &name);
                assert_eq!(content, Model::shown(&f.what, &f.content), "{at}: content of {path}/{name}");
            }
        }
    }
}

/// The content length a handle's writes are relative to.
fn content_len(m: &Model, h: usize) -> usize {
    match m.handles[h].scratch.and_then(|id| m.scratch_ids.get(&id).cloned()) {
        Some((dir, Some(name))) => m.dirs[dir].get(&name).map_or(0, |f| f.content.len()),
        _ => 0,
    }
}

/// A scratch file's name is gone (its open handles keep an orphan).
fn forget_name(m: &mut Model, dir: usize, name: &str) {
    for v in m.scratch_ids.values_mut() {
        if v.0 == dir && v.1.as_deref() == Some(name) {
            v.1 = None;
        }
    }
}

fn rename_scratch_id(m: &mut Model, dir: usize, from: &str, to: &str) {
    for v in m.scratch_ids.values_mut() {
        if v.0 == dir && v.1.as_deref() == Some(from) {
            v.1 = Some(to.to_string());
        }
    }
}

/// The model's rename; returns whether it succeeds.
fn model_rename(m: &mut Model, dir: usize, from: &str, to: &str) -> bool {
    let Some(src) = m.dirs[dir].get(from).cloned() else { return false };
    if from == to {
        return true;
    }
    let dst = m.dirs[dir].get(to).cloned();
    let pending_name = dir == 1 && !to.starts_with('.');
    match (&src.what, dst.as_ref().map(|d| &d.what)) {
        (What::Scratch { .. }, Some(What::WorldFile | What::Key)) => {
            let d = dst.as_ref().unwrap();
            let unchanged = Model::shown(&d.what, &src.content) == d.content;
            if d.what == What::Key && !unchanged && std::mem::take(&mut m.fail_next) {
                return false;
            }
            let what = dst.unwrap().what;
            m.dirs[dir].insert(to.to_string(), File { content: Model::shown(&what, &src.content), what });
            m.dirs[dir].remove(from);
            forget_name(m, dir, from);
            true
        }
        (What::Scratch { .. }, _) => {
            if pending_name && std::mem::take(&mut m.fail_next) {
                // The key could not be made; nothing changed.
                return false;
            }
            if dst.is_some() {
                forget_name(m, dir, to);
            }
            if pending_name {
                m.dirs[dir].insert(to.to_string(), File { what: What::Key, content: as_field(&src.content) });
                m.dirs[dir].remove(from);
                forget_name(m, dir, from);
            } else {
                m.dirs[dir].remove(from);
                m.dirs[dir]
                    .insert(to.to_string(), File { what: What::Scratch { pending: false }, content: src.content });
                rename_scratch_id(m, dir, from, to);
            }
            true
        }
        (What::WorldFile, _) => false,
        (What::Key, Some(What::WorldFile)) => false,
        (What::Key, Some(What::Key)) | (What::Key, None)
            if pending_name || dst.is_some() && dst.as_ref().unwrap().what == What::Key =>
        {
            if std::mem::take(&mut m.fail_next) {
                return false;
            }
            m.dirs[dir].remove(from);
            m.dirs[dir].insert(to.to_string(), File { what: What::Key, content: src.content });
            true
        }
        (What::Key, _) => {
            // Onto a scratch name: the key goes, its content becomes a
            // scratch file.
            if std::mem::take(&mut m.fail_next) {
                return false;
            }
            if dst.is_some() {
                forget_name(m, dir, to);
            }
            m.dirs[dir].remove(from);
            m.next_scratch += 1;
            m.scratch_ids.insert(m.next_scratch, (dir, Some(to.to_string())));
            m.dirs[dir].insert(to.to_string(), File { what: What::Scratch { pending: false }, content: src.content });
            true
        }
    }
}

/// Failing cases are kept next to this file (and run first from then on).
fn config(cases: u32) -> ProptestConfig {
    let persistence = proptest::test_runner::FileFailurePersistence::SourceParallel("proptest-regressions");
    ProptestConfig { cases, failure_persistence: Some(Box::new(persistence)), ..ProptestConfig::default() }
}

// Case counts: the name model at 1000 cases, the block model at 256
// (about 60 and 20 s of wall time on 2 busy cores, mostly waiting for the
// scan of /proc for other openers of the map that each new core makes).
proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn the_core_behaves_like_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        run(ops);
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn accepted_block_writes_are_in_the_map_and_refused_ones_change_nothing(
        ops in proptest::collection::vec(block_op(), 1..40)
    ) {
        run_blocks(ops);
    }
}

// ---------------------------------------------------------------------
// Block files: every close() and rename() that returned 0 is in the map,
// every refused one changed nothing.
//
// Random sequences of writes to `param1`/`param2` of three blocks (valid
// content: 4096 bytes; anything else is refused), O_TRUNC, two handles on
// one file, scratch files renamed over block files (`sed -i`), mkdir and
// rmdir of blocks, edits by another process, store failures and remounts
// (a new core over the same store), against a model of what each file
// holds. After every step the map's own bytes are decoded and compared with
// the model, and a refused step must leave every stored byte as it was; at
// each remount and at the end a fresh core must show the model too.

const BLOCK_NAMES: [&str; 3] = ["0,0,0", "1,-1,1", "0,1,0"];
const PARAM_FILES: [&str; 2] = ["param1", "param2"];
const NODES: usize = 4096;

fn block_pos(blk: usize) -> BlockPos {
    let v: Vec<i16> = BLOCK_NAMES[blk].split(',').map(|c| c.parse().unwrap()).collect();
    BlockPos::new(v[0], v[1], v[2])
}

/// Content written in one go: valid (4096 bytes of one value) or one byte
/// short or long (refused).
#[derive(Clone, Copy, Debug)]
enum Whole {
    Valid(u8),
    Short(u8),
    Long(u8),
}

impl Whole {
    fn bytes(self) -> Vec<u8> {
        match self {
            Whole::Valid(v) => vec![v; NODES],
            Whole::Short(v) => vec![v; NODES - 1],
            Whole::Long(v) => vec![v; NODES + 1],
        }
    }
}

#[derive(Clone, Debug)]
enum BlockOp {
    Open {
        blk: usize,
        file: usize,
        trunc: bool,
    },
    /// A few bytes at one of a few offsets (4096 and past make the content
    /// too long).
    Patch {
        h: usize,
        offset: usize,
        data: Vec<u8>,
    },
    WriteWhole {
        h: usize,
        content: Whole,
    },
    Flush {
        h: usize,
    },
    Fsync {
        h: usize,
    },
    Release {
        h: usize,
    },
    /// `sed -i`'s first half: a scratch file in the block's directory,
    /// written and closed.
    PrepareScratch {
        blk: usize,
        file: usize,
        content: Whole,
    },
    /// Its second half: renamed over the block file.
    RenameScratch {
        s: usize,
    },
    Mkdir {
        blk: usize,
    },
    Rmdir {
        blk: usize,
    },
    /// Another process (a server) changes a block file in the map.
    OutsideEdit {
        blk: usize,
        file: usize,
        value: u8,
    },
    FailNextCommit,
    Remount,
}

fn whole() -> impl Strategy<Value = Whole> {
    let v = prop_oneof![Just(0u8), Just(7u8), Just(15u8)];
    prop_oneof![
        4 => v.clone().prop_map(Whole::Valid),
        1 => v.clone().prop_map(Whole::Short),
        1 => v.prop_map(Whole::Long),
    ]
}

fn block_op() -> impl Strategy<Value = BlockOp> {
    let blk = 0..3usize;
    let file = 0..2usize;
    let h = 0..4usize;
    // Mostly within the file: a patch at 4096 makes it too long.
    let offset = prop_oneof![3 => Just(0usize), 3 => Just(100), 3 => Just(4094), 1 => Just(4096)];
    let data = proptest::collection::vec(prop_oneof![Just(1u8), Just(2u8)], 1..3);
    prop_oneof![
        4 => (blk.clone(), file.clone(), proptest::bool::weighted(0.3))
            .prop_map(|(blk, file, trunc)| BlockOp::Open { blk, file, trunc }),
        3 => (h.clone(), offset, data).prop_map(|(h, offset, data)| BlockOp::Patch { h, offset, data }),
        3 => (h.clone(), whole()).prop_map(|(h, content)| BlockOp::WriteWhole { h, content }),
        2 => h.clone().prop_map(|h| BlockOp::Flush { h }),
        1 => h.clone().prop_map(|h| BlockOp::Fsync { h }),
        3 => h.prop_map(|h| BlockOp::Release { h }),
        2 => (blk.clone(), file.clone(), whole()).prop_map(|(blk, file, content)| BlockOp::PrepareScratch { blk, file, content }),
        2 => (0..3usize).prop_map(|s| BlockOp::RenameScratch { s }),
        1 => blk.clone().prop_map(|blk| BlockOp::Mkdir { blk }),
        1 => blk.clone().prop_map(|blk| BlockOp::Rmdir { blk }),
        1 => (blk, file, prop_oneof![Just(3u8), Just(7u8)]).prop_map(|(blk, file, value)| BlockOp::OutsideEdit { blk, file, value }),
        1 => Just(BlockOp::FailNextCommit),
        1 => Just(BlockOp::Remount),
    ]
}

/// A write handle in the model: the buffer, what it was made from (None
/// after O_TRUNC) and the commit rule of `worldfs::fs::handles::Pending`.
#[derive(Clone, Debug)]
struct BlockHandle {
    fh: u64,
    blk: usize,
    file: usize,
    buf: Vec<u8>,
    base: Option<Vec<u8>>,
    pending: ModelPending,
}

/// A scratch file written and closed, waiting to be renamed over `file`.
#[derive(Clone, Debug)]
struct Prepared {
    blk: usize,
    file: usize,
    name: String,
    content: Vec<u8>,
    /// The block's change count when it was written (a rename after a
    /// change may be refused as stale).
    generation: u64,
    /// Its rename was refused as stale already: the kernel retries such a
    /// rename once, and the core records the refusal once, not again.
    refused_as_stale: bool,
}

#[derive(Default)]
struct BlockModel {
    /// param1 and param2 of each block, None while it is not stored.
    blocks: [Option<[Vec<u8>; 2]>; 3],
    /// Accepted changes per block.
    generations: [u64; 3],
    handles: Vec<BlockHandle>,
    prepared: Vec<Prepared>,
    fail_next: bool,
    next_scratch: u32,
}

impl BlockModel {
    /// Replace a file's content through the store (a failure injected with
    /// FailNextCommit refuses it).
    fn store_write(&mut self, blk: usize, file: usize, new: Vec<u8>) -> Result<(), ErrorKind> {
        if new.len() != NODES {
            return Err(ErrorKind::Invalid);
        }
        if std::mem::take(&mut self.fail_next) {
            return Err(ErrorKind::Io);
        }
        self.blocks[blk].as_mut().unwrap()[file] = new;
        self.generations[blk] += 1;
        Ok(())
    }

    /// What committing handle `h` does (the core's `edit_block`).
    fn commit(&mut self, h: usize) -> Result<(), ErrorKind> {
        let hd = self.handles[h].clone();
        let Some(files) = &self.blocks[hd.blk] else { return Err(ErrorKind::NotFound) };
        let now = files[hd.file].clone();
        if hd.buf == now {
            self.handles[h].base = Some(now);
            return Ok(());
        }
        if hd.base.as_ref().is_some_and(|b| *b != now) {
            return Err(ErrorKind::Stale);
        }
        self.store_write(hd.blk, hd.file, hd.buf.clone())?;
        self.handles[h].base = Some(hd.buf);
        Ok(())
    }

    /// Whether `when` (flush, or fsync/release) commits handle `h`.
    fn commits_now(&mut self, h: usize, flush: bool) -> bool {
        self.handles[h].pending.commits_now(flush)
    }

    /// The rename of a prepared scratch file over its block file, given
    /// whether the core refused it as stale: a refusal that is correct once
    /// the block changed since the scratch file was written (another
    /// writer's change would be undone), and then changes nothing.
    fn rename_scratch(&mut self, p: &Prepared, refused_as_stale: bool) -> Result<(), ErrorKind> {
        let Some(files) = &self.blocks[p.blk] else { return Err(ErrorKind::NotFound) };
        if refused_as_stale && self.generations[p.blk] != p.generation {
            return Err(ErrorKind::Stale);
        }
        if files[p.file] == p.content {
            return Ok(());
        }
        self.store_write(p.blk, p.file, p.content.clone())
    }
}

/// What a step did, for the checks that follow it.
#[derive(Debug)]
enum Outcome {
    /// Nothing that may change the map (an open, a write into a buffer).
    Nothing,
    /// Accepted: only this block may have changed.
    Accepted(usize),
    /// Refused: nothing may have changed; `reported`: a line must have been
    /// added to write-errors.
    Refused { reported: bool },
    /// Another process changed the map.
    Outside,
}

fn kind_of<T>(r: &Result<T, worldfs::fs::FsError>) -> Result<(), ErrorKind> {
    r.as_ref().map(|_| ()).map_err(|e| e.kind)
}

/// The outcome of a step whose result the model predicted as `want`, after
/// checking that the core returned the same.
fn judged<T: std::fmt::Debug>(
    got: &Result<T, worldfs::fs::FsError>,
    want: Result<(), ErrorKind>,
    blk: usize,
    at: &str,
) -> Outcome {
    assert_eq!(kind_of(got), want, "{at}: the core returned {got:?}");
    match want {
        Ok(()) => Outcome::Accepted(blk),
        // "No such file" and "exists" of a name change say all and are
        // not recorded; every other refusal is.
        Err(e) => Outcome::Refused { reported: !matches!(e, ErrorKind::NotFound | ErrorKind::Exists) },
    }
}

/// param1 and param2 of a block as stored in the map (decoded here, not by
/// the core).
fn stored(store: &MemoryStore, blk: usize) -> Option<[Vec<u8>; 2]> {
    let blob = store.get(block_pos(blk)).unwrap()?;
    let b = worldfs_codec::luanti::Block::decode(&blob).unwrap_or_else(|e| panic!("block {}: {e}", BLOCK_NAMES[blk]));
    Some([b.param1, b.param2])
}

/// A short description of file content (runs of equal bytes).
fn summary(files: &Option<[Vec<u8>; 2]>) -> String {
    let Some(files) = files else { return "absent".into() };
    let runs = |v: &Vec<u8>| {
        let mut out: Vec<String> = Vec::new();
        for run in v.chunk_by(|a, b| a == b) {
            out.push(format!("{}x{}", run[0], run.len()));
        }
        format!("{} bytes [{}]", v.len(), out.join(" "))
    };
    format!("param1 {}, param2 {}", runs(&files[0]), runs(&files[1]))
}

struct BlockReal {
    fs: WorldFs,
    store: Arc<MemoryStore>,
    world: tempfile::TempDir,
}

impl BlockReal {
    fn new() -> BlockReal {
        let (world, store) = demo_copy();
        let fs = Self::core(&world, &store);
        BlockReal { fs, store, world }
    }

    /// A core over the store, as a (re)mount makes it. Without a cache
    /// TTL: a change by another process shows at once (with one, after up
    /// to the TTL, as documented), so the model need not know the clock.
    fn core(world: &tempfile::TempDir, store: &Arc<MemoryStore>) -> WorldFs {
        let w = worldfs_store::world::World::open(world.path()).unwrap();
        let opts = Options { read_only: false, ttl: std::time::Duration::ZERO, ..Options::default() };
        worldfs::open::world_with_store(w, Box::new(store.clone()), opts)
    }

    fn block_dir(&self, blk: usize) -> Result<u64, worldfs::fs::FsError> {
        self.fs.lookup(worldfs::worlds::luanti::inode::BLOCKS, OsStr::new(BLOCK_NAMES[blk])).map(|a| a.ino)
    }

    fn file_ino(&self, blk: usize, file: usize) -> Result<u64, worldfs::fs::FsError> {
        self.fs.lookup(self.block_dir(blk)?, OsStr::new(PARAM_FILES[file])).map(|a| a.ino)
    }

    fn read_file(&self, blk: usize, file: usize) -> Vec<u8> {
        let o = self.fs.open(self.file_ino(blk, file).unwrap(), libc::O_RDONLY, PID).unwrap();
        let data = self.fs.read(o.fh, 0, 1 << 16).unwrap();
        self.fs.release(o.fh).unwrap();
        data
    }

    /// What the core shows of the three blocks.
    fn shown(&self, blk: usize) -> Option<[Vec<u8>; 2]> {
        match self.block_dir(blk) {
            Err(e) if e.kind == ErrorKind::NotFound => None,
            Err(e) => panic!("lookup of block {}: {e:?}", BLOCK_NAMES[blk]),
            Ok(_) => Some([self.read_file(blk, 0), self.read_file(blk, 1)]),
        }
    }
}

/// Open, write, flush, fsync or release a handle of a block file (`h`
/// picks one of the open handles).
fn handle_step(r: &mut BlockReal, m: &mut BlockModel, op: &BlockOp, at: &str) -> Outcome {
    let open = m.handles.len().max(1);
    match *op {
        BlockOp::Open { blk, file, trunc } => {
            let Some(files) = m.blocks[blk].clone() else {
                let e = r.file_ino(blk, file).expect_err(at);
                assert_eq!(e.kind, ErrorKind::NotFound, "{at}: {e:?}");
                return Outcome::Nothing;
            };
            let flags = libc::O_WRONLY | if trunc { libc::O_TRUNC } else { 0 };
            let o = r.fs.open(r.file_ino(blk, file).unwrap(), flags, PID).unwrap_or_else(|e| panic!("{at}: {e:?}"));
            let content = files[file].clone();
            m.handles.push(BlockHandle {
                fh: o.fh,
                blk,
                file,
                buf: if trunc { Vec::new() } else { content.clone() },
                base: (!trunc).then_some(content),
                pending: ModelPending::new(trunc),
            });
            Outcome::Nothing
        }
        BlockOp::Patch { h, .. } | BlockOp::WriteWhole { h, .. } if !m.handles.is_empty() => {
            let h = h % open;
            let (offset, data) = match op {
                BlockOp::Patch { offset, data, .. } => (*offset, data.clone()),
                BlockOp::WriteWhole { content, .. } => (0, content.bytes()),
                _ => unreachable!(),
            };
            let hd = &mut m.handles[h];
            let n = r.fs.write(hd.fh, offset as u64, &data).unwrap_or_else(|e| panic!("{at}: {e:?}"));
            assert_eq!(n as usize, data.len(), "{at}");
            write_into(&mut hd.buf, offset, &data);
            hd.pending.dirty = true;
            hd.pending.truncated = false;
            Outcome::Nothing
        }
        BlockOp::Flush { h } | BlockOp::Fsync { h } | BlockOp::Release { h } if !m.handles.is_empty() => {
            let h = h % open;
            let fh = m.handles[h].fh;
            let flush = matches!(op, BlockOp::Flush { .. });
            // The first close of a file truncated and never written fails
            // at once when an empty file is refused (param1 and param2 must
            // hold 4096 bytes), so that a program that is done hears it;
            // the change itself ends (and is recorded) later, as bash may
            // still write after closing a duplicate.
            let hd = &m.handles[h];
            let empty_refused_at_close = flush && hd.pending.only_truncated() && m.blocks[hd.blk].is_some();
            let commits = m.commits_now(h, flush);
            let got = match op {
                BlockOp::Flush { .. } => r.fs.flush(fh, PID),
                BlockOp::Fsync { .. } => r.fs.fsync(fh),
                _ => r.fs.release(fh),
            };
            let want = if commits {
                m.commit(h)
            } else if empty_refused_at_close {
                Err(ErrorKind::Invalid)
            } else {
                Ok(())
            };
            let blk = m.handles[h].blk;
            if matches!(op, BlockOp::Release { .. }) {
                m.handles.remove(h);
            }
            match judged(&got, want, blk, at) {
                Outcome::Refused { .. } if empty_refused_at_close => Outcome::Refused { reported: false },
                // A commit's refusal is always recorded (it may be a close
                // nobody checks).
                Outcome::Refused { .. } => Outcome::Refused { reported: true },
                _ if !commits => Outcome::Nothing,
                o => o,
            }
        }
        _ => Outcome::Nothing,
    }
}

/// `sed -i`: read the file, write a scratch file, close it; later rename it
/// over the file.
fn scratch_step(r: &mut BlockReal, m: &mut BlockModel, op: &BlockOp, at: &str) -> Outcome {
    match *op {
        BlockOp::PrepareScratch { blk, file, content } if m.blocks[blk].is_some() && m.prepared.len() < 3 => {
            let read = r.read_file(blk, file);
            assert!(
                read == m.blocks[blk].as_ref().unwrap()[file],
                "{at}: read {}",
                summary(&Some([read.clone(), read]))
            );
            m.next_scratch += 1;
            let name = format!(".sed{}", m.next_scratch);
            let dir = r.block_dir(blk).unwrap();
            let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
            let (_, o) =
                r.fs.create(dir, OsStr::new(&name), 0o100600, flags, PID).unwrap_or_else(|e| panic!("{at}: {e:?}"));
            let bytes = content.bytes();
            r.fs.write(o.fh, 0, &bytes).unwrap();
            r.fs.flush(o.fh, PID).unwrap();
            r.fs.release(o.fh).unwrap();
            m.prepared.push(Prepared {
                blk,
                file,
                name,
                content: bytes,
                generation: m.generations[blk],
                refused_as_stale: false,
            });
            Outcome::Nothing
        }
        BlockOp::RenameScratch { s } if !m.prepared.is_empty() => {
            let s = s % m.prepared.len();
            let mut p = m.prepared.remove(s);
            let dir = r.block_dir(p.blk);
            let Ok(dir) = dir else {
                // The block is gone, and its directory with the scratch file.
                assert!(m.blocks[p.blk].is_none(), "{at}: {dir:?}");
                return Outcome::Nothing;
            };
            let got = r.fs.rename(dir, OsStr::new(&p.name), dir, OsStr::new(PARAM_FILES[p.file]), 0);
            let stale = matches!(&got, Err(e) if e.kind == ErrorKind::Stale);
            let want = m.rename_scratch(&p, stale);
            match judged(&got, want, p.blk, at) {
                // A refused rename leaves the scratch file, for another try.
                Outcome::Refused { reported } => {
                    let again = stale && p.refused_as_stale;
                    p.refused_as_stale |= stale;
                    m.prepared.insert(s, p);
                    Outcome::Refused { reported: reported && !again }
                }
                o => o,
            }
        }
        _ => Outcome::Nothing,
    }
}

/// mkdir and rmdir of blocks, edits by another process, store failures.
fn map_step(r: &mut BlockReal, m: &mut BlockModel, op: &BlockOp, at: &str) -> Outcome {
    let blocks = worldfs::worlds::luanti::inode::BLOCKS;
    match *op {
        BlockOp::Mkdir { blk } => {
            let got = r.fs.mkdir(blocks, OsStr::new(BLOCK_NAMES[blk]));
            let want = match m.blocks[blk] {
                Some(_) => Err(ErrorKind::Exists),
                None if std::mem::take(&mut m.fail_next) => Err(ErrorKind::Io),
                None => {
                    // All air, lit by full sunlight.
                    m.blocks[blk] = Some([vec![0x0f; NODES], vec![0; NODES]]);
                    m.generations[blk] += 1;
                    Ok(())
                }
            };
            judged(&got, want, blk, at)
        }
        BlockOp::Rmdir { blk } => {
            let got = r.fs.rmdir(blocks, OsStr::new(BLOCK_NAMES[blk]));
            let want = match m.blocks[blk] {
                None => Err(ErrorKind::NotFound),
                Some(_) if std::mem::take(&mut m.fail_next) => Err(ErrorKind::Io),
                Some(_) => {
                    m.blocks[blk] = None;
                    m.generations[blk] += 1;
                    m.prepared.retain(|p| p.blk != blk);
                    Ok(())
                }
            };
            judged(&got, want, blk, at)
        }
        BlockOp::OutsideEdit { blk, file, value } if m.blocks[blk].is_some() => {
            let pos = block_pos(blk);
            let mut b = worldfs_codec::luanti::Block::decode(&r.store.get(pos).unwrap().unwrap()).unwrap();
            let param = if file == 0 { &mut b.param1 } else { &mut b.param2 };
            *param = vec![value; NODES];
            r.store.put_behind_the_back(pos, b.encode().unwrap());
            m.blocks[blk].as_mut().unwrap()[file] = vec![value; NODES];
            m.generations[blk] += 1;
            Outcome::Outside
        }
        BlockOp::FailNextCommit => {
            m.fail_next = true;
            r.store.fail_next(1, StoreError::Backend("injected failure".into()));
            Outcome::Nothing
        }
        _ => Outcome::Nothing,
    }
}

/// After a step: the map holds what the model says, a refused step changed
/// no stored byte and was reported, an accepted one changed only its block.
fn check_step(
    r: &BlockReal,
    m: &BlockModel,
    before: &BTreeMap<BlockPos, Vec<u8>>,
    errors: usize,
    o: &Outcome,
    at: &str,
) {
    let after = r.store.snapshot();
    match o {
        Outcome::Nothing | Outcome::Refused { .. } => {
            assert!(after == *before, "{at}: the map changed ({o:?})");
        }
        Outcome::Accepted(blk) => {
            let others = |s: &BTreeMap<BlockPos, Vec<u8>>| {
                s.iter().filter(|(p, _)| **p != block_pos(*blk)).map(|(p, b)| (*p, b.clone())).collect::<Vec<_>>()
            };
            assert!(others(&after) == others(before), "{at}: a block other than {} changed", BLOCK_NAMES[*blk]);
        }
        Outcome::Outside => {}
    }
    if let Outcome::Refused { reported: true } = o {
        assert!(r.fs.write_errors().len() > errors, "{at}: refused, but nothing added to write-errors");
    }
    for (blk, want) in m.blocks.iter().enumerate() {
        let got = stored(&r.store, blk);
        assert!(
            got == *want,
            "{at}: block {} in the map: {}, the model: {}",
            BLOCK_NAMES[blk],
            summary(&got),
            summary(want)
        );
    }
}

/// One step, checked.
fn block_step(r: &mut BlockReal, m: &mut BlockModel, op: &BlockOp, at: &str) {
    let before = r.store.snapshot();
    let errors = r.fs.write_errors().len();
    let o = match op {
        BlockOp::Open { .. }
        | BlockOp::Patch { .. }
        | BlockOp::WriteWhole { .. }
        | BlockOp::Flush { .. }
        | BlockOp::Fsync { .. }
        | BlockOp::Release { .. } => handle_step(r, m, op, at),
        BlockOp::PrepareScratch { .. } | BlockOp::RenameScratch { .. } => scratch_step(r, m, op, at),
        BlockOp::Remount => return remount(r, m, at),
        _ => map_step(r, m, op, at),
    };
    if !m.fail_next {
        r.store.heal();
    }
    check_step(r, m, &before, errors, &o, at);
}

/// Unmount (every handle released, in order, each checked) and mount again:
/// the new core shows what the model holds.
fn remount(r: &mut BlockReal, m: &mut BlockModel, at: &str) {
    while !m.handles.is_empty() {
        block_step(r, m, &BlockOp::Release { h: 0 }, &format!("{at}: release at unmount"));
    }
    let left = r.fs.shutdown();
    assert!(left.is_empty(), "{at}: left at unmount: {left:?}");
    r.fs = BlockReal::core(&r.world, &r.store);
    m.prepared.clear(); // scratch files are gone with the mount
    for (blk, want) in m.blocks.iter().enumerate() {
        let got = r.shown(blk);
        assert!(
            got == *want,
            "{at}: block {} after remount: {}, the model: {}",
            BLOCK_NAMES[blk],
            summary(&got),
            summary(want)
        );
    }
}

fn run_blocks(ops: Vec<BlockOp>) {
    let mut r = BlockReal::new();
    let mut m = BlockModel::default();
    for blk in 0..3 {
        m.blocks[blk] = stored(&r.store, blk);
    }
    assert!(m.blocks[0].is_some() && m.blocks[1].is_some() && m.blocks[2].is_none(), "the demo world's blocks");
    for (step, op) in ops.iter().enumerate() {
        block_step(&mut r, &mut m, op, &format!("step {step}: {op:?}"));
    }
    // The end: unmount, and what every accepted step did is in the map.
    remount(&mut r, &mut m, "at the end");
}
