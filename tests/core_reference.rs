//! A reference model of the whole core, in the spirit of mountpoint-s3's
//! `tests/reftests`: random sequences of operations run against the real
//! core (no FUSE) and against a model of what the world holds, checked
//! after every step.
//!
//! The core serves the demo world with its map in an in-memory store
//! (wrapped to fail the Nth read or transaction on demand) and its record
//! databases (mod storage) in SQLite files beside it, and, in the same
//! run, a second core serves a one-file document (a 2x2x2 `.mts`
//! schematic). Operations: write handles on block files (`param1`,
//! `param2`), `node/X,Y,Z`, mod storage keys and the schematic's files,
//! several open at once, with partial writes at offsets, whole contents
//! (valid or not), ftruncate, flush, fsync and release; reads; lookups;
//! `sed -i`-style scratch files renamed over files; `mv find/A find/B`;
//! mkdir and rmdir of blocks; `echo ... > node/X,Y,Z`; keys written and
//! removed, or moved aside to a backup name and back (a second property,
//! so that the seeds kept for the first still make the same sequences);
//! injected store failures; remounts (every handle released, the cores
//! dropped, new ones opened on the same store and files).
//!
//! The checks: every call returns what the model says (the error's kind included);
//! after every step the map's own bytes, decoded here, hold what the model
//! holds (so every close() or rename() that returned 0 is in the store and
//! every refused one changed nothing); after every remount the new cores
//! show the model. When an injected read failure fires during a step, the
//! step may fail with EIO instead: the store must then hold either what
//! the model predicted (and the call said so) or what it held before.

use crate::common;

use common::core_fs::{FlakyStore, ModelPending, Source, demo_copy, open_core};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use worldfs::documents::mts::Schematic;
use worldfs::fs::{ErrorKind, FsError, Options, ROOT, WorldFs};
use worldfs_codec::luanti::Block;
use worldfs_codec::luanti::block::node_index;
use worldfs_store::BlockPos;

/// The writer's process id (a reader uses another).
const PID: u32 = 4242;
const READER: u32 = 7;
const NODES: usize = 4096;
/// Blocks the test writes (the last is absent from the demo world).
const BLOCKS: [&str; 3] = ["0,0,0", "1,-1,1", "0,1,0"];
/// Nodes written and read through `node/`: two in each of `BLOCKS`.
const NODE_AT: [[i32; 3]; 6] = [[3, 1, 3], [1, 2, 1], [16, -16, 16], [20, -3, 30], [0, 16, 0], [15, 31, 15]];
/// Lines written to `node/X,Y,Z` (the last two are refused).
const NODE_LINES: [&str; 5] = ["default:mese\n", "default:dirt 3 4\n", "air 0\n", "?5\n", "default:dirt 300\n"];
/// Names renamed with `mv find/A find/B` (the last is not a node name).
const FIND_NAMES: [&str; 5] = ["default:cobble", "default:dirt", "default:stonebrick", "default:mese", "?7"];
const MOD: &str = "refmod";
const KEYS: [&str; 2] = ["k1", "k2"];
/// Values written to keys whole (never empty: see `ModPut`).
const KEY_VALUES: [&[u8]; 3] = [b"v1", b"hello\n", b"x y"];
/// The schematic's size and node count.
const DOC_SIZE: [u16; 3] = [2, 2, 2];
const DOC_NODES: usize = 8;

/// The model's answer to a refused call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Want {
    /// This kind of error.
    Is(ErrorKind),
    /// Any error is right.
    AnyError,
    /// Success and any error are right (nothing is written either way; the
    /// checks of the store still apply).
    AnyOutcome,
}

impl From<ErrorKind> for Want {
    fn from(kind: ErrorKind) -> Want {
        Want::Is(kind)
    }
}

/// A file the model knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FileSel {
    /// `blocks/B/param1` or `param2`.
    Param { blk: usize, two: bool },
    /// `node/X,Y,Z` of `NODE_AT`.
    Node(usize),
    /// `mod_storage/refmod/K` of `KEYS`.
    Key(usize),
    /// The schematic's `param1` or `param2`.
    Doc { two: bool },
}

impl FileSel {
    fn path(self) -> String {
        let p = |two: bool| if two { "param2" } else { "param1" };
        match self {
            FileSel::Param { blk, two } => format!("blocks/{}/{}", BLOCKS[blk], p(two)),
            FileSel::Node(n) => format!("node/{},{},{}", NODE_AT[n][0], NODE_AT[n][1], NODE_AT[n][2]),
            FileSel::Key(k) => format!("mod_storage/{MOD}/{}", KEYS[k]),
            FileSel::Doc { two } => p(two).to_string(),
        }
    }

    fn is_doc(self) -> bool {
        matches!(self, FileSel::Doc { .. })
    }
}

fn block_pos(blk: usize) -> BlockPos {
    let v: Vec<i16> = BLOCKS[blk].split(',').map(|c| c.parse().unwrap()).collect();
    BlockPos::new(v[0], v[1], v[2])
}

/// The block of node `n` and its index in it.
fn node_place(n: usize) -> (BlockPos, usize) {
    let [x, y, z] = NODE_AT[n];
    let pos = BlockPos::of_node(x, y, z).unwrap();
    let (ox, oy, oz) = pos.origin();
    (pos, node_index((x - ox) as usize, (y - oy) as usize, (z - oz) as usize))
}

#[derive(Clone, Debug)]
enum Op {
    Open {
        file: FileSel,
        trunc: bool,
    },
    /// A write on open handle `h` (modulo the number open): `small`, a
    /// byte or two at one of a few offsets; else a whole content.
    Write {
        h: usize,
        sel: usize,
        small: bool,
    },
    /// ftruncate through handle `h` to one of a few sizes.
    Truncate {
        h: usize,
        sel: usize,
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
    Read {
        file: FileSel,
    },
    Lookup {
        blk: usize,
    },
    /// `echo LINE > node/X,Y,Z`.
    NodeWrite {
        node: usize,
        line: usize,
    },
    /// `printf VALUE > mod_storage/refmod/K` (making the mod's directory
    /// first when needed).
    ModPut {
        key: usize,
        value: usize,
    },
    ModUnlink {
        key: usize,
    },
    /// `sed -i`: read the file, write a scratch file beside it, close it,
    /// rename it over the file.
    ScratchOver {
        file: FileSel,
        sel: usize,
    },
    /// `mv find/A find/B`.
    FindRename {
        from: usize,
        to: usize,
    },
    Mkdir {
        blk: usize,
    },
    Rmdir {
        blk: usize,
    },
    /// The transaction after the next `after` ones fails.
    FailApply {
        after: usize,
    },
    /// The store read after the next `after` ones fails.
    FailRead {
        after: usize,
    },
    Remount,
    /// `mv mod_storage/refmod/K mod_storage/refmod/.K.bak`: the key leaves
    /// the world, its value lives on in a scratch file (an editor's backup).
    KeyAway {
        key: usize,
    },
    /// `mv mod_storage/refmod/.K.bak mod_storage/refmod/K`: the backup
    /// becomes the key again (over what it holds now, if anything).
    KeyBack {
        key: usize,
    },
}

fn file_sel() -> impl Strategy<Value = FileSel> {
    prop_oneof![
        4 => (0..3usize, any::<bool>()).prop_map(|(blk, two)| FileSel::Param { blk, two }),
        2 => (0..6usize).prop_map(FileSel::Node),
        2 => (0..2usize).prop_map(FileSel::Key),
        2 => any::<bool>().prop_map(|two| FileSel::Doc { two }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let h = 0..6usize;
    let sel = 0..12usize;
    prop_oneof![
        5 => (file_sel(), proptest::bool::weighted(0.3)).prop_map(|(file, trunc)| Op::Open { file, trunc }),
        6 => (h.clone(), sel.clone(), any::<bool>()).prop_map(|(h, sel, small)| Op::Write { h, sel, small }),
        1 => (h.clone(), sel.clone()).prop_map(|(h, sel)| Op::Truncate { h, sel }),
        3 => h.clone().prop_map(|h| Op::Flush { h }),
        1 => h.clone().prop_map(|h| Op::Fsync { h }),
        3 => h.prop_map(|h| Op::Release { h }),
        3 => file_sel().prop_map(|file| Op::Read { file }),
        1 => (0..3usize).prop_map(|blk| Op::Lookup { blk }),
        3 => (0..6usize, 0..5usize).prop_map(|(node, line)| Op::NodeWrite { node, line }),
        2 => (0..2usize, 0..3usize).prop_map(|(key, value)| Op::ModPut { key, value }),
        1 => (0..2usize).prop_map(|key| Op::ModUnlink { key }),
        3 => (file_sel(), sel).prop_map(|(file, sel)| Op::ScratchOver { file, sel }),
        2 => (0..5usize, 0..5usize).prop_map(|(from, to)| Op::FindRename { from, to }),
        1 => (0..3usize).prop_map(|blk| Op::Mkdir { blk }),
        1 => (0..3usize).prop_map(|blk| Op::Rmdir { blk }),
        1 => (0..3usize).prop_map(|after| Op::FailApply { after }),
        1 => (0..6usize).prop_map(|after| Op::FailRead { after }),
        1 => Just(Op::Remount),
    ]
}

/// The operations of `op` and keys moved aside and back (a strategy of its
/// own, so that the seeds kept for `op` still make the same sequences).
fn op_with_key_moves() -> impl Strategy<Value = Op> {
    prop_oneof![
        16 => op(),
        // keys written more often, so that there is something to move
        2 => (0..2usize, 0..3usize).prop_map(|(key, value)| Op::ModPut { key, value }),
        2 => (0..2usize).prop_map(|key| Op::KeyAway { key }),
        2 => (0..2usize).prop_map(|key| Op::KeyBack { key }),
    ]
}

// ---------------------------------------------------------------- model

/// A block as the model holds it: every node's name (an index into
/// `Names`), param1 and param2.
#[derive(Clone, Debug, PartialEq, Eq)]
struct BlockState {
    ids: Vec<u16>,
    p1: Vec<u8>,
    p2: Vec<u8>,
}

/// Node names by number (only ever grows).
#[derive(Default)]
struct Names(Vec<String>);

impl Names {
    fn id(&mut self, name: &str) -> u16 {
        match self.0.iter().position(|n| n == name) {
            Some(i) => i as u16,
            None => {
                self.0.push(name.to_string());
                (self.0.len() - 1) as u16
            }
        }
    }
}

/// Whether the engine accepts `name` for a new node (the documented rule:
/// `air`, `ignore`, `unknown`, or `mod:item`).
fn valid_node_name(name: &str) -> bool {
    if ["air", "ignore", "unknown"].contains(&name) {
        return true;
    }
    let Some((m, i)) = name.split_once(':') else { return false };
    !m.is_empty()
        && !i.is_empty()
        && m.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
        && i.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// What a world file's new content does to the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Effect {
    /// Nothing changes.
    None,
    /// One map transaction.
    Map,
    /// A record or document change (not counted by the map store).
    Other,
}

/// What the world holds: every block of the map, the mod's keys, the
/// schematic's param1 and param2.
#[derive(Clone, Debug, PartialEq, Eq)]
struct World {
    blocks: BTreeMap<BlockPos, BlockState>,
    keys: BTreeMap<String, Vec<u8>>,
    doc: [Vec<u8>; 2],
}

impl World {
    /// What `f` shows, None when it does not exist.
    fn shown(&self, names: &Names, f: FileSel) -> Option<Vec<u8>> {
        match f {
            FileSel::Param { blk, two } => {
                let b = self.blocks.get(&block_pos(blk))?;
                Some(if two { b.p2.clone() } else { b.p1.clone() })
            }
            FileSel::Node(n) => {
                let (pos, i) = node_place(n);
                let b = self.blocks.get(&pos)?;
                Some(format!("{} {} {}\n", names.0[b.ids[i] as usize], b.p1[i], b.p2[i]).into_bytes())
            }
            FileSel::Key(k) => self.keys.get(KEYS[k]).cloned(),
            FileSel::Doc { two } => Some(self.doc[two as usize].clone()),
        }
    }

    /// Give `f` new content: its effect, or the kind of the refusal
    /// (nothing changed then).
    fn apply(&mut self, names: &mut Names, f: FileSel, content: &[u8]) -> Result<Effect, ErrorKind> {
        let now = self.shown(names, f).ok_or(ErrorKind::NotFound)?;
        match f {
            FileSel::Param { blk, two } => {
                if content.len() != NODES {
                    return Err(ErrorKind::Invalid);
                }
                let b = self.blocks.get_mut(&block_pos(blk)).unwrap();
                *(if two { &mut b.p2 } else { &mut b.p1 }) = content.to_vec();
            }
            FileSel::Node(n) => {
                let (pos, i) = node_place(n);
                let b = self.blocks.get_mut(&pos).unwrap();
                let (id, p1, p2) = parse_node_line(names, b, i, content).ok_or(ErrorKind::Invalid)?;
                (b.ids[i], b.p1[i], b.p2[i]) = (id, p1, p2);
            }
            FileSel::Key(k) => {
                if content.is_empty() {
                    return Err(ErrorKind::Invalid);
                }
                self.keys.insert(KEYS[k].to_string(), content.to_vec());
            }
            FileSel::Doc { two } => {
                if content.len() != DOC_NODES {
                    return Err(ErrorKind::Invalid);
                }
                self.doc[two as usize] = content.to_vec();
            }
        }
        Ok(match f {
            _ if self.shown(names, f).unwrap() == now => Effect::None,
            FileSel::Param { .. } | FileSel::Node(_) => Effect::Map,
            _ => Effect::Other,
        })
    }

    /// `mv find/A find/B`: every block holding A.
    fn find_rename(&mut self, names: &mut Names, from: &str, to: &str) -> Result<Effect, ErrorKind> {
        let from = names.id(from);
        if !self.blocks.values().any(|b| b.ids.contains(&from)) {
            return Err(ErrorKind::NotFound);
        }
        if !valid_node_name(to) {
            return Err(ErrorKind::Invalid);
        }
        let to = names.id(to);
        for b in self.blocks.values_mut() {
            b.ids.iter_mut().filter(|i| **i == from).for_each(|i| *i = to);
        }
        Ok(Effect::Map)
    }
}

/// `name [param1 [param2]]` on one line for node `i` of `b` (names the
/// block has are taken as they are; new ones must be valid).
fn parse_node_line(names: &mut Names, b: &BlockState, i: usize, content: &[u8]) -> Option<(u16, u8, u8)> {
    let body = content.strip_suffix(b"\n").unwrap_or(content);
    if body.is_empty() || body.contains(&b'\n') {
        return None;
    }
    let text = std::str::from_utf8(body).ok()?;
    let words: Vec<&str> = text.split(' ').filter(|w| !w.is_empty()).collect();
    if words.is_empty() || words.len() > 3 {
        return None;
    }
    let known = b.ids.iter().any(|&id| names.0[id as usize] == words[0]);
    if !known && !valid_node_name(words[0]) {
        return None;
    }
    let p1 = match words.get(1) {
        Some(w) => w.parse().ok()?,
        None => b.p1[i],
    };
    let p2 = match words.get(2) {
        Some(w) => w.parse().ok()?,
        None => b.p2[i],
    };
    Some((names.id(words[0]), p1, p2))
}

/// An open write handle in the model (the commit rule of the core's
/// `Pending`, written again here).
#[derive(Clone, Debug)]
struct Handle {
    fh: u64,
    ino: u64,
    file: FileSel,
    buf: Vec<u8>,
    /// What the file showed when the buffer was made from it (None after
    /// O_TRUNC): a commit is refused (ESTALE) if it shows something else.
    base: Option<Vec<u8>>,
    pending: ModelPending,
}

struct Model {
    world: World,
    names: Names,
    handles: Vec<Handle>,
    /// Transactions left before the injected failure (`FailApply`).
    fail_apply_in: Option<usize>,
    /// `mkdir mod_storage/refmod` was done in this mount (a mod without
    /// keys is not stored, so it goes at unmount).
    mod_dir_made: bool,
    /// Blocks the last step changed in the model.
    touched: BTreeSet<BlockPos>,
    next_scratch: u32,
    /// The store's count of injected read failures when the step began.
    read_failures_before: usize,
    /// Keys moved aside (`KeyAway`): their values in scratch files, until
    /// moved back or unmounted.
    backups: BTreeMap<usize, Vec<u8>>,
}

impl Model {
    /// Whether the next map transaction goes through (the injected failure
    /// takes the one it was armed for).
    fn transaction_passes(&mut self) -> bool {
        match self.fail_apply_in {
            Some(0) => {
                self.fail_apply_in = None;
                false
            }
            Some(n) => {
                self.fail_apply_in = Some(n - 1);
                true
            }
            None => true,
        }
    }

    /// Change the world with `change` if it is accepted and its map
    /// transaction (if any) goes through.
    fn change(
        &mut self,
        change: impl FnOnce(&mut World, &mut Names) -> Result<Effect, ErrorKind>,
    ) -> Result<(), ErrorKind> {
        let mut next = self.world.clone();
        let effect = change(&mut next, &mut self.names)?;
        if effect == Effect::Map && !self.transaction_passes() {
            return Err(ErrorKind::Io);
        }
        for (pos, b) in &next.blocks {
            if self.world.blocks.get(pos) != Some(b) {
                self.touched.insert(*pos);
            }
        }
        self.touched.extend(self.world.blocks.keys().filter(|p| !next.blocks.contains_key(p)));
        self.world = next;
        Ok(())
    }

    fn shown(&self, f: FileSel) -> Option<Vec<u8>> {
        self.world.shown(&self.names, f)
    }

    /// What committing handle `h` does (the core's write of a tree file
    /// with a base).
    fn commit(&mut self, h: usize) -> Result<(), Want> {
        let hd = self.handles[h].clone();
        // A file that is gone is not written; which check says so first
        // (its content's, its existence's) is the tree's business.
        let now = self.shown(hd.file).ok_or(Want::AnyError)?;
        // Content the file already shows is nothing to write, whoever put
        // it there: the handle goes on from the file as it is (for every
        // kind of file, records included).
        if hd.buf == now {
            self.handles[h].base = Some(now);
            return Ok(());
        }
        if hd.base.as_ref().is_some_and(|b| *b != now) {
            return Err(Want::Is(ErrorKind::Stale));
        }
        self.change(|w, n| w.apply(n, hd.file, &hd.buf))?;
        self.handles[h].base = self.shown(hd.file);
        Ok(())
    }

    /// Whether this flush (or fsync or release) commits handle `h`.
    fn commits_now(&mut self, h: usize, flush: bool) -> bool {
        self.handles[h].pending.commits_now(flush)
    }
}

// ---------------------------------------------------------------- the core

/// The cores under test and what they stand on.
struct Real {
    fs: WorldFs,
    doc: WorldFs,
    store: Arc<FlakyStore>,
    world: tempfile::TempDir,
    doc_file: PathBuf,
    _doc_dir: tempfile::TempDir,
}

/// A writable mount's options; no cache TTL, so that the model need not
/// know the clock; the name index kept beside the world; no watch for a
/// server holding the map (no other process uses it here, and the scans
/// of /proc for one took most of the run's time).
fn options(world: &Path) -> Options {
    Options {
        read_only: false,
        force: true,
        ttl: std::time::Duration::ZERO,
        index_dir: Some(world.join("index")),
        ..Options::default()
    }
}

impl Real {
    fn new() -> Real {
        let (world, memory) = demo_copy();
        let store = Arc::new(FlakyStore::new(memory));
        let doc_dir = common::core_fs::memory_dir();
        let doc_file = doc_dir.path().join("box.mts");
        std::fs::write(&doc_file, Schematic::new_air(DOC_SIZE).unwrap().encode().unwrap()).unwrap();
        let (fs, doc) = Real::cores(world.path(), &store, &doc_file);
        Real { fs, doc, store, world, doc_file, _doc_dir: doc_dir }
    }

    /// New cores over the same store and files, as a mount makes them.
    fn cores(world: &Path, store: &Arc<FlakyStore>, doc_file: &Path) -> (WorldFs, WorldFs) {
        let fs = open_core(Source::World { dir: world, store: store.clone() }, options(world));
        let doc = open_core(Source::Document { file: doc_file, kind: "mts" }, options(world));
        (fs, doc)
    }

    fn core(&self, f: FileSel) -> &WorldFs {
        if f.is_doc() { &self.doc } else { &self.fs }
    }

    fn file_ino(&self, f: FileSel) -> Result<u64, FsError> {
        ino_of(self.core(f), &f.path())
    }

    /// The mod's directory, made when it is missing (a mod without keys
    /// exists only while mkdir made it).
    fn mod_dir(&self, m: &mut Model, at: &str) -> Result<u64, FsError> {
        match ino_of(&self.fs, &format!("mod_storage/{MOD}")) {
            Err(e) if e.kind == ErrorKind::NotFound => {
                assert!(m.world.keys.is_empty(), "{at}: the mod's directory is missing, keys {:?}", m.world.keys);
                let ino = self.fs.mkdir(ino_of(&self.fs, "mod_storage")?, OsStr::new(MOD))?.ino;
                m.mod_dir_made = true;
                Ok(ino)
            }
            r => r,
        }
    }
}

/// The inode of a path like "blocks/0,0,0/param1".
fn ino_of(fs: &WorldFs, path: &str) -> Result<u64, FsError> {
    path.split('/').try_fold(ROOT, |dir, name| fs.lookup(dir, OsStr::new(name)).map(|a| a.ino))
}

/// Open, read and release `ino` as the reader.
fn read_whole(fs: &WorldFs, ino: u64) -> Result<Vec<u8>, FsError> {
    let o = fs.open(ino, libc::O_RDONLY, READER)?;
    let data = fs.read(o.fh, 0, 1 << 20);
    fs.release(o.fh)?;
    data
}

fn kind_of<T>(r: &Result<T, FsError>) -> Result<(), ErrorKind> {
    r.as_ref().map(|_| ()).map_err(|e| e.kind)
}

/// A write's offset and bytes for `file` (see `Op::Write`).
fn payload(file: FileSel, sel: usize, small: bool) -> (u64, Vec<u8>) {
    let whole = |len: usize| {
        let v = [0u8, 7, 15][sel % 3];
        match sel % 5 {
            3 => vec![v; len - 1],
            4 => vec![v; len + 1],
            _ => vec![v; len],
        }
    };
    let patch = |offsets: [u64; 4]| (offsets[sel % 4], vec![1 + (sel % 2) as u8; 1 + sel % 2]);
    match file {
        FileSel::Param { .. } if small => patch([0, 100, 4094, 4096]),
        FileSel::Param { .. } => (0, whole(NODES)),
        FileSel::Doc { .. } if small => patch([0, 3, 7, 8]),
        FileSel::Doc { .. } => (0, whole(DOC_NODES)),
        FileSel::Node(_) => (0, NODE_LINES[sel % NODE_LINES.len()].as_bytes().to_vec()),
        FileSel::Key(_) if small => ([0, 1, 3][sel % 3], b"ab"[..1 + sel % 2].to_vec()),
        FileSel::Key(_) => (0, KEY_VALUES[sel % KEY_VALUES.len()].to_vec()),
    }
}

/// The size an ftruncate of `file` sets.
fn truncated_size(file: FileSel, sel: usize) -> usize {
    match file {
        FileSel::Param { .. } => [0, NODES, 10][sel % 3],
        FileSel::Doc { .. } => [0, DOC_NODES, 3][sel % 3],
        FileSel::Node(_) => 0,
        FileSel::Key(_) => [0, 1, 4][sel % 3],
    }
}

/// Whether a write of `data` gives `file` content nothing written later
/// could make valid, so that the core judges it at once (one line with its
/// newline for `node/`, 4096 bytes for `param1`/`param2`).
fn complete(file: FileSel, data: &[u8]) -> bool {
    match file {
        FileSel::Node(_) => data.ends_with(b"\n") && data.iter().filter(|&&c| c == b'\n').count() == 1,
        FileSel::Param { .. } => data.len() == NODES,
        _ => false,
    }
}

fn write_into(buf: &mut Vec<u8>, offset: usize, data: &[u8]) {
    if buf.len() < offset + data.len() {
        buf.resize(offset + data.len(), 0);
    }
    buf[offset..offset + data.len()].copy_from_slice(data);
}

// ---------------------------------------------------------------- steps

/// What a step may take back when an injected read failure refused it.
struct Saved {
    world: World,
    handles: Vec<Handle>,
}

impl Model {
    fn save(&self) -> Saved {
        Saved { world: self.world.clone(), handles: self.handles.clone() }
    }

    /// The open handle `h` picks, if any.
    fn pick(&self, h: usize) -> Option<usize> {
        (!self.handles.is_empty()).then(|| h % self.handles.len())
    }
}

/// The core's answer must be the model's, unless an injected read failure
/// fired during the step: the step may then have been refused where the
/// model accepted it (or said Ok where a check could not be made), and the
/// model goes back to `saved`. The checks after the step then find the
/// store as it was.
fn judge<W: Into<Want>>(
    r: &Real,
    m: &mut Model,
    got: Result<(), ErrorKind>,
    want: Result<(), W>,
    saved: Saved,
    at: &str,
) {
    let want = want.map_err(Into::into);
    let agrees = match want {
        Ok(()) => got.is_ok(),
        Err(Want::Is(kind)) => got == Err(kind),
        Err(Want::AnyError) => got.is_err(),
        Err(Want::AnyOutcome) => true,
    };
    if agrees {
        return;
    }
    let handles: Vec<String> = saved
        .handles
        .iter()
        .map(|h| format!("{} {} dirty {} truncated {}", h.fh, h.file.path(), h.pending.dirty, h.pending.truncated))
        .collect();
    assert!(
        r.store.read_failures() > m.read_failures_before,
        "{at}: the core returned {got:?}, the model says {want:?} (handles: {handles:?})"
    );
    m.world = saved.world;
    for hd in &mut m.handles {
        // Handle numbers are per core.
        if let Some(old) = saved.handles.iter().find(|o| o.fh == hd.fh && o.file.is_doc() == hd.file.is_doc()) {
            hd.base = old.base.clone();
        }
    }
}

/// Open a write handle.
fn open_step(r: &Real, m: &mut Model, file: FileSel, trunc: bool, at: &str) {
    if m.handles.len() >= 6 {
        return;
    }
    let saved = m.save();
    let shown = m.shown(file);
    let flags = libc::O_WRONLY | if trunc { libc::O_TRUNC } else { 0 };
    let got = r.file_ino(file).and_then(|ino| r.core(file).open(ino, flags, PID).map(|o| (ino, o.fh)));
    let want = if shown.is_some() { Ok(()) } else { Err(ErrorKind::NotFound) };
    judge(r, m, kind_of(&got), want, saved, at);
    if let (Ok((ino, fh)), Some(content)) = (got, shown) {
        let (buf, base) = if trunc { (Vec::new(), None) } else { (content.clone(), Some(content)) };
        m.handles.push(Handle { fh, ino, file, buf, base, pending: ModelPending::new(trunc) });
    }
}

/// A write through a handle: into its buffer, or refused at once when it
/// gives the file a whole content that is invalid.
fn write_step(r: &Real, m: &mut Model, h: usize, sel: usize, small: bool, at: &str) {
    let Some(i) = m.pick(h) else { return };
    let hd = m.handles[i].clone();
    let (offset, data) = payload(hd.file, sel, small);
    let judged_now = offset == 0 && hd.buf.len() <= data.len() && complete(hd.file, &data);
    let refused = judged_now && m.world.clone().apply(&mut m.names, hd.file, &data) == Err(ErrorKind::Invalid);
    let got = r.core(hd.file).write(hd.fh, offset, &data);
    let fired = r.store.read_failures() > m.read_failures_before;
    let hd = &mut m.handles[i];
    match got {
        Ok(n) => {
            // A judgement that could not read the block is left to the
            // commit.
            assert!(!refused || fired, "{at}: accepted, the model refuses it");
            assert_eq!(n as usize, data.len(), "{at}");
            write_into(&mut hd.buf, offset as usize, &data);
            hd.pending.dirty = true;
        }
        Err(e) => {
            assert!(refused && e.kind == ErrorKind::Invalid, "{at}: {e:?}");
            // The change ends here: nothing left to commit.
            hd.pending.dirty = false;
        }
    }
    hd.pending.truncated = false;
}

/// ftruncate through a handle: its buffer takes the size.
fn truncate_step(r: &Real, m: &mut Model, h: usize, sel: usize, at: &str) {
    let Some(i) = m.pick(h) else { return };
    let hd = m.handles[i].clone();
    // Where the core's lookups of a file that is gone, or a read failure,
    // stop a truncation is not part of the model.
    if m.shown(hd.file).is_none() || r.store.read_failure_armed() {
        return;
    }
    let size = truncated_size(hd.file, sel);
    let got = r.core(hd.file).setattr(hd.ino, Some(hd.fh), Some(size as u64), None);
    let attr = got.unwrap_or_else(|e| panic!("{at}: {e:?}"));
    assert_eq!(attr.size as usize, size, "{at}: the size through the handle");
    let hd = &mut m.handles[i];
    hd.buf.resize(size, 0);
    hd.pending.dirty = true;
    hd.pending.truncated = false;
}

/// flush (a close), fsync or release of a handle: a commit when the
/// handle's state says so.
fn commit_step(r: &Real, m: &mut Model, op: &Op, at: &str) {
    let (Op::Flush { h } | Op::Fsync { h } | Op::Release { h }) = *op else { unreachable!() };
    let Some(i) = m.pick(h) else { return };
    let flush = matches!(op, Op::Flush { .. });
    let hd = &m.handles[i];
    // The first close of a file truncated and never written fails at once
    // when an empty file is refused (it is, for every file here), so that
    // a program that is done hears it; bash writes after such a close.
    let first_close_of_truncated = flush && hd.pending.only_truncated();
    // Whether the empty content of a file that is gone would be refused
    // depends on which check the tree makes first.
    let gone = m.shown(hd.file).is_none();
    let (fh, core) = (hd.fh, r.core(hd.file));
    let commits = m.commits_now(i, flush);
    let saved = m.save();
    let want = if commits {
        m.commit(i)
    } else if first_close_of_truncated && gone {
        Err(Want::AnyOutcome)
    } else if first_close_of_truncated {
        Err(Want::Is(ErrorKind::Invalid))
    } else {
        Ok(())
    };
    let got = match op {
        Op::Flush { .. } => core.flush(fh, PID),
        Op::Fsync { .. } => core.fsync(fh),
        _ => core.release(fh),
    };
    if matches!(op, Op::Release { .. }) {
        m.handles.remove(i);
    }
    judge(r, m, kind_of(&got), want, saved, at);
}

/// Read a file, or look up a block: what the model shows.
fn read_step(r: &Real, m: &mut Model, op: &Op, at: &str) {
    let fired = |m: &Model| r.store.read_failures() > m.read_failures_before;
    if let Op::Lookup { blk } = *op {
        let got = ino_of(&r.fs, &format!("blocks/{}", BLOCKS[blk]));
        let want = if m.world.blocks.contains_key(&block_pos(blk)) { Ok(()) } else { Err(ErrorKind::NotFound) };
        assert!(kind_of(&got) == want || fired(m), "{at}: {got:?}");
        return;
    }
    let Op::Read { file } = *op else { unreachable!() };
    let core = r.core(file);
    let got = r.file_ino(file).and_then(|ino| Ok((core.getattr(ino)?.size, read_whole(core, ino)?)));
    match (got, m.shown(file)) {
        (Ok((size, data)), Some(want)) => {
            assert!(data == want, "{at}: read {:?}, the model: {:?}", short(&data), short(&want));
            // A file being written has the size its writer gave it so far.
            let changing = m.handles.iter().any(|h| h.file == file && (h.pending.dirty || h.pending.truncated));
            assert!(changing || size as usize == data.len(), "{at}: size {size} for {} bytes", data.len());
        }
        (Err(e), None) => assert!(e.kind == ErrorKind::NotFound || fired(m), "{at}: {e:?}"),
        (Err(e), Some(_)) => assert!(fired(m), "{at}: {e:?}"),
        (Ok((_, data)), None) => panic!("{at}: read {:?}, the model has no such file", short(&data)),
    }
}

/// The start of some bytes, for messages.
fn short(data: &[u8]) -> String {
    let text = String::from_utf8_lossy(&data[..data.len().min(40)]).into_owned();
    format!("{} bytes: {text:?}", data.len())
}

/// `echo LINE > node/X,Y,Z`: open with O_TRUNC, write, close, release.
fn node_write_step(r: &Real, m: &mut Model, node: usize, line: usize, at: &str) {
    let (file, data) = (FileSel::Node(node), NODE_LINES[line].as_bytes());
    let saved = m.save();
    let want = m.change(|w, n| w.apply(n, file, data));
    let got = r.file_ino(file).and_then(|ino| {
        let fh = r.fs.open(ino, libc::O_WRONLY | libc::O_TRUNC, PID)?.fh;
        let written = r.fs.write(fh, 0, data).map(|_| ());
        let closed = r.fs.flush(fh, PID);
        let released = r.fs.release(fh);
        written.and(closed).and(released)
    });
    judge(r, m, kind_of(&got), want, saved, at);
}

/// `printf VALUE > mod_storage/refmod/K`, or `rm` of the key.
fn key_step(r: &Real, m: &mut Model, op: &Op, at: &str) {
    let saved = m.save();
    let got = match *op {
        Op::ModPut { key, value } => {
            let value = KEY_VALUES[value];
            let dir = r.mod_dir(m, at);
            let want = m.change(|w, _| {
                w.keys.insert(KEYS[key].to_string(), value.to_vec());
                Ok(Effect::Other)
            });
            let got = dir.and_then(|dir| {
                let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC;
                let (_, o) = r.fs.create(dir, OsStr::new(KEYS[key]), 0o100644, flags, PID)?;
                let written = r.fs.write(o.fh, 0, value).map(|_| ());
                let closed = r.fs.flush(o.fh, PID);
                let released = r.fs.release(o.fh);
                written.and(closed).and(released)
            });
            (got, want)
        }
        Op::ModUnlink { key } => {
            let want = m.change(|w, _| w.keys.remove(KEYS[key]).map(|_| Effect::Other).ok_or(ErrorKind::NotFound));
            let dir = ino_of(&r.fs, &format!("mod_storage/{MOD}"));
            (dir.and_then(|dir| r.fs.unlink(dir, OsStr::new(KEYS[key]))), want)
        }
        _ => unreachable!(),
    };
    judge(r, m, kind_of(&got.0), got.1, saved, at);
}

/// `sed -i`: read the file, write a scratch file beside it, close it and
/// rename it over the file.
fn scratch_step(r: &Real, m: &mut Model, file: FileSel, sel: usize, at: &str) {
    let (dir, name, content) = match file {
        FileSel::Param { blk, two } => (
            ino_of(&r.fs, &format!("blocks/{}", BLOCKS[blk])),
            ["param1", "param2"][two as usize],
            payload(file, sel, false).1,
        ),
        FileSel::Doc { two } => (Ok(ROOT), ["param1", "param2"][two as usize], payload(file, sel, false).1),
        FileSel::Key(k) => (r.mod_dir(m, at), KEYS[k], KEY_VALUES[sel % KEY_VALUES.len()].to_vec()),
        // node/ holds no scratch files.
        FileSel::Node(_) => return,
    };
    let exists = m.shown(file).is_some();
    m.next_scratch += 1;
    let scratch = format!(".sed{}", m.next_scratch);
    let saved = m.save();
    let want = match file {
        // A new name in the mod's directory becomes a key.
        FileSel::Key(k) => m.change(|w, _| {
            w.keys.insert(KEYS[k].to_string(), content.clone());
            Ok(Effect::Other)
        }),
        _ => m.change(|w, n| w.apply(n, file, &content)),
    };
    let core = r.core(file);
    let got = dir.and_then(|dir| {
        if exists {
            read_whole(core, core.lookup(dir, OsStr::new(name))?.ino)?;
        }
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
        let (_, o) = core.create(dir, OsStr::new(&scratch), 0o100600, flags, PID)?;
        core.write(o.fh, 0, &content)?;
        core.flush(o.fh, PID)?;
        core.release(o.fh)?;
        core.rename(dir, OsStr::new(&scratch), dir, OsStr::new(name), 0)
    });
    judge(r, m, kind_of(&got), want, saved, at);
}

/// `mv find/A find/B`, mkdir and rmdir of blocks.
fn map_step(r: &Real, m: &mut Model, op: &Op, at: &str) {
    let saved = m.save();
    let (got, want) = match *op {
        Op::FindRename { from, to } if from != to => {
            let want = m.change(|w, n| w.find_rename(n, FIND_NAMES[from], FIND_NAMES[to]));
            let (a, b) = (OsStr::new(FIND_NAMES[from]), OsStr::new(FIND_NAMES[to]));
            (ino_of(&r.fs, "find").and_then(|d| r.fs.rename(d, a, d, b, 0)), want)
        }
        Op::Mkdir { blk } => {
            let want = m.change(|w, n| {
                if w.blocks.contains_key(&block_pos(blk)) {
                    return Err(ErrorKind::Exists);
                }
                // All air, lit by full sunlight.
                let air = BlockState { ids: vec![n.id("air"); NODES], p1: vec![0x0f; NODES], p2: vec![0; NODES] };
                w.blocks.insert(block_pos(blk), air);
                Ok(Effect::Map)
            });
            let name = OsStr::new(BLOCKS[blk]);
            (ino_of(&r.fs, "blocks").and_then(|d| r.fs.mkdir(d, name)).map(|_| ()), want)
        }
        Op::Rmdir { blk } => {
            let want =
                m.change(|w, _| w.blocks.remove(&block_pos(blk)).map(|_| Effect::Map).ok_or(ErrorKind::NotFound));
            let name = OsStr::new(BLOCKS[blk]);
            (ino_of(&r.fs, "blocks").and_then(|d| r.fs.rmdir(d, name)), want)
        }
        _ => return,
    };
    judge(r, m, kind_of(&got), want, saved, at);
}

/// A key moved aside to its backup (`away`), or its backup moved back.
fn key_move_step(r: &Real, m: &mut Model, key: usize, away: bool, at: &str) {
    let saved = m.save();
    let backup = format!(".{}.bak", KEYS[key]);
    let (from, to) = if away { (KEYS[key], backup.as_str()) } else { (backup.as_str(), KEYS[key]) };
    let moved = if away { m.world.keys.get(KEYS[key]).cloned() } else { m.backups.get(&key).cloned() };
    let want = match moved.clone() {
        None => Err(ErrorKind::NotFound),
        Some(value) => m.change(|w, _| {
            if away {
                w.keys.remove(KEYS[key]);
            } else {
                w.keys.insert(KEYS[key].to_string(), value);
            }
            Ok(Effect::Other)
        }),
    };
    let dir = ino_of(&r.fs, &format!("mod_storage/{MOD}"));
    let got = dir.and_then(|d| r.fs.rename(d, OsStr::new(from), d, OsStr::new(to), 0));
    if got.is_ok() {
        match (away, moved) {
            (true, Some(value)) => {
                m.backups.insert(key, value);
            }
            _ => {
                m.backups.remove(&key);
            }
        }
    }
    judge(r, m, kind_of(&got), want, saved, at);
}

/// One step, checked.
fn step(r: &mut Real, m: &mut Model, op: &Op, at: &str) {
    if let Op::Remount = op {
        return remount(r, m, at);
    }
    let before = r.store.inner.snapshot();
    m.read_failures_before = r.store.read_failures();
    m.touched.clear();
    match *op {
        Op::Open { file, trunc } => open_step(r, m, file, trunc, at),
        Op::Write { h, sel, small } => write_step(r, m, h, sel, small, at),
        Op::Truncate { h, sel } => truncate_step(r, m, h, sel, at),
        Op::Flush { .. } | Op::Fsync { .. } | Op::Release { .. } => commit_step(r, m, op, at),
        Op::Read { .. } | Op::Lookup { .. } => read_step(r, m, op, at),
        Op::NodeWrite { node, line } => node_write_step(r, m, node, line, at),
        Op::ModPut { .. } | Op::ModUnlink { .. } => key_step(r, m, op, at),
        Op::ScratchOver { file, sel } => scratch_step(r, m, file, sel, at),
        Op::FindRename { .. } | Op::Mkdir { .. } | Op::Rmdir { .. } => map_step(r, m, op, at),
        Op::FailApply { after } => {
            m.fail_apply_in = Some(after);
            r.store.fail_apply_after(after);
        }
        Op::FailRead { after } => r.store.fail_read_after(after),
        Op::KeyAway { key } | Op::KeyBack { key } => key_move_step(r, m, key, matches!(op, Op::KeyAway { .. }), at),
        Op::Remount => unreachable!(),
    }
    if r.store.read_failures() > m.read_failures_before {
        // The failure may have stopped a transaction the model counted.
        m.fail_apply_in = r.store.applies_left();
    }
    check_store(r, m, &before, at);
}

/// Unmount (every handle released, in order, each checked) and mount
/// again: the new cores show what the model holds.
fn remount(r: &mut Real, m: &mut Model, at: &str) {
    while !m.handles.is_empty() {
        step(r, m, &Op::Release { h: 0 }, &format!("{at}: release at unmount"));
    }
    r.store.heal();
    m.fail_apply_in = None;
    for core in [&r.fs, &r.doc] {
        let left = core.shutdown();
        assert!(left.is_empty(), "{at}: left at unmount: {left:?}");
    }
    (r.fs, r.doc) = Real::cores(r.world.path(), &r.store, &r.doc_file);
    m.mod_dir_made = false;
    m.backups.clear();
    check_shown(r, m, at);
}

// ---------------------------------------------------------------- checks

/// A stored block as the model holds blocks (decoded here, not by the
/// core).
fn decoded(names: &mut Names, blob: &[u8]) -> BlockState {
    let b = Block::decode(blob).unwrap();
    let table: BTreeMap<u16, u16> =
        b.mapping.iter().map(|e| (e.id, names.id(&String::from_utf8_lossy(&e.name)))).collect();
    BlockState { ids: b.param0.iter().map(|id| table[id]).collect(), p1: b.param1, p2: b.param2 }
}

/// The mod's keys as stored in mod_storage.sqlite (read here, not by the
/// core).
fn stored_keys(world: &Path) -> BTreeMap<String, Vec<u8>> {
    let path = world.join("mod_storage.sqlite");
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    let Ok(conn) = rusqlite::Connection::open_with_flags(&path, flags) else { return BTreeMap::new() };
    let Ok(mut stmt) = conn.prepare("SELECT key, value FROM entries WHERE modname = ?1") else {
        return BTreeMap::new();
    };
    let rows = stmt.query_map([MOD], |row| Ok((row.get::<_, Vec<u8>>(0)?, row.get::<_, Vec<u8>>(1)?))).unwrap();
    rows.map(|r| r.unwrap()).map(|(k, v)| (String::from_utf8(k).unwrap(), v)).collect()
}

/// The schematic's param1 and param2 as stored in its file.
fn stored_doc(file: &Path) -> [Vec<u8>; 2] {
    let s = Schematic::decode(&std::fs::read(file).unwrap()).unwrap();
    [s.param1, s.param2]
}

/// After a step: the map (every block whose bytes changed, or that the
/// model changed), the keys and the schematic hold what the model holds.
fn check_store(r: &Real, m: &mut Model, before: &BTreeMap<BlockPos, Vec<u8>>, at: &str) {
    let after = r.store.inner.snapshot();
    let mut positions: BTreeSet<BlockPos> = before.keys().chain(after.keys()).copied().collect();
    positions.extend(m.touched.iter().copied());
    for pos in positions {
        if before.get(&pos) == after.get(&pos) && !m.touched.contains(&pos) {
            continue; // unchanged on both sides, and equal since the start
        }
        let stored = after.get(&pos).map(|b| decoded(&mut m.names, b));
        let want = m.world.blocks.get(&pos);
        assert!(stored.as_ref() == want, "{at}: block {pos} in the map: {}, the model: {}", said(&stored), said(&want));
    }
    let keys = stored_keys(r.world.path());
    assert_eq!(keys, m.world.keys, "{at}: the mod's keys in mod_storage.sqlite");
    assert!(stored_doc(&r.doc_file) == m.world.doc, "{at}: the schematic's file");
}

/// A block, briefly, for messages.
fn said<B: std::borrow::Borrow<BlockState>>(b: &Option<B>) -> String {
    match b {
        None => "absent".into(),
        Some(b) => {
            let b = b.borrow();
            format!("param1 starts {:?}, param2 starts {:?}, ids start {:?}", &b.p1[..8], &b.p2[..8], &b.ids[..8])
        }
    }
}

/// Every file the model knows.
fn every_file() -> Vec<FileSel> {
    let mut v: Vec<FileSel> = (0..3).flat_map(|blk| [false, true].map(|two| FileSel::Param { blk, two })).collect();
    v.extend((0..NODE_AT.len()).map(FileSel::Node));
    v.extend((0..KEYS.len()).map(FileSel::Key));
    v.extend([false, true].map(|two| FileSel::Doc { two }));
    v
}

fn listing(fs: &WorldFs, ino: u64) -> BTreeSet<String> {
    let mut v = BTreeSet::new();
    fs.readdir(ino, 0, false, &mut |e, _| {
        v.insert(e.name.to_string_lossy().into_owned());
        false
    })
    .unwrap();
    v.retain(|n| n != "." && n != "..");
    v
}

/// After a remount: the new cores show every file, block, key and name of
/// the model, and nothing more.
fn check_shown(r: &Real, m: &mut Model, at: &str) {
    for file in every_file() {
        m.read_failures_before = r.store.read_failures();
        read_step(r, m, &Op::Read { file }, &format!("{at}: {}", file.path()));
    }
    for (blk, name) in BLOCKS.iter().enumerate() {
        read_step(r, m, &Op::Lookup { blk }, &format!("{at}: blocks/{name}"));
    }
    let dir = ino_of(&r.fs, &format!("mod_storage/{MOD}"));
    match dir {
        Ok(dir) => {
            let want: BTreeSet<String> = m.world.keys.keys().cloned().collect();
            assert_eq!(listing(&r.fs, dir), want, "{at}: the mod's keys");
        }
        Err(e) => assert!(e.kind == ErrorKind::NotFound && m.world.keys.is_empty(), "{at}: {e:?}"),
    }
    // find/ lists the names the map holds.
    let held: BTreeSet<u16> = m.world.blocks.values().flat_map(|b| b.ids.iter().copied()).collect();
    let want: BTreeSet<String> = held.into_iter().map(|id| m.names.0[id as usize].clone()).collect();
    let find = ino_of(&r.fs, "find").unwrap();
    assert_eq!(listing(&r.fs, find), want, "{at}: find/");
}

fn initial_model(r: &Real) -> Model {
    let mut names = Names::default();
    let blocks = r.store.inner.snapshot().iter().map(|(p, b)| (*p, decoded(&mut names, b))).collect();
    let world = World { blocks, keys: stored_keys(r.world.path()), doc: stored_doc(&r.doc_file) };
    Model {
        world,
        names,
        handles: Vec::new(),
        fail_apply_in: None,
        mod_dir_made: false,
        touched: BTreeSet::new(),
        next_scratch: 0,
        read_failures_before: 0,
        backups: BTreeMap::new(),
    }
}

fn run(ops: Vec<Op>) {
    let mut r = Real::new();
    let mut m = initial_model(&r);
    let present: Vec<bool> = (0..3).map(|blk| m.world.blocks.contains_key(&block_pos(blk))).collect();
    assert_eq!(present, [true, true, false], "the demo world's blocks");
    for (i, op) in ops.iter().enumerate() {
        step(&mut r, &mut m, op, &format!("step {i}: {op:?}"));
    }
    // The end: unmount, and what every accepted step did is shown.
    remount(&mut r, &mut m, "at the end");
}

/// Failing cases are kept next to this file (and run first from then on).
/// `cases` a CI run; PROPTEST_CASES=N runs N instead (longer local runs).
fn config(cases: u32) -> ProptestConfig {
    let persistence = proptest::test_runner::FileFailurePersistence::SourceParallel("proptest-regressions");
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(cases);
    ProptestConfig { cases, failure_persistence: Some(Box::new(persistence)), ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn the_whole_core_behaves_like_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        run(ops);
    }
}

proptest! {
    #![proptest_config(config(300))]

    /// Keys moved aside to a backup name and back, among everything else.
    #[test]
    fn keys_moved_aside_and_back_behave_like_the_model(ops in proptest::collection::vec(op_with_key_moves(), 1..40)) {
        run(ops);
    }
}
