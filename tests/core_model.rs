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

mod common;

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::sync::Arc;
use worldfs::fs::{Options, ROOT, WorldFs};
use worldfs::store::memory::MemoryStore;
use worldfs::store::sqlite::SqliteStore;
use worldfs::store::{BlockPos, Change, MapStore, Note, StoreError};

const CHEST_FIELDS: &str = "blocks/0,0,0/meta/3,1,3/fields";
const DIRS: [&str; 2] = ["", CHEST_FIELDS];
/// Names used in each directory (index into this per directory).
const ROOT_NAMES: [&str; 4] = ["world.mt", "a", "b", ".x"];
const FIELD_NAMES: [&str; 4] = ["infotext", "k", "m", ".s"];

fn name_of(dir: usize, i: usize) -> &'static str {
    if dir == 0 { ROOT_NAMES[i] } else { FIELD_NAMES[i] }
}

/// A store shared between the core and the test (for failures).
struct Shared(Arc<MemoryStore>);

impl MapStore for Shared {
    fn describe(&self) -> String {
        self.0.describe()
    }
    fn get(&self, pos: BlockPos) -> worldfs::store::Result<Option<Vec<u8>>> {
        self.0.get(pos)
    }
    fn list_after(&self, after: Option<BlockPos>, limit: usize) -> worldfs::store::Result<Vec<BlockPos>> {
        self.0.list_after(after, limit)
    }
    fn scan_after(&self, a: Option<BlockPos>, limit: usize) -> worldfs::store::Result<Vec<(BlockPos, Vec<u8>)>> {
        self.0.scan_after(a, limit)
    }
    fn apply(&self, changes: &[Change], note: &Note) -> worldfs::store::Result<()> {
        self.0.apply(changes, note)
    }
    fn count(&self) -> worldfs::store::Result<u64> {
        self.0.count()
    }
    fn is_read_only(&self) -> bool {
        false
    }
    fn data_version(&self) -> Option<u64> {
        self.0.data_version()
    }
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

fn real() -> Real {
    let world = common::demo_world();
    let sqlite = SqliteStore::open(&world.path().join("map.sqlite"), true).unwrap();
    let blocks = sqlite.scan_after(None, 100_000).unwrap();
    let store = Arc::new(MemoryStore::with_blocks(blocks));
    let w = worldfs::world::World::open(world.path()).unwrap();
    let opts = Options { read_only: false, ..Options::default() };
    let fs = WorldFs::with_store(w, Box::new(Shared(store.clone())), opts);
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_core_behaves_like_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        run(ops);
    }
}
