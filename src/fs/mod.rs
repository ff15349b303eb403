//! The filesystem core: what each inode is, its attributes, directory
//! listings, file contents, open handles and the commit path. Plain Rust
//! signatures so that it can be tested without mounting; the FUSE adapter
//! only translates.
//!
//! * `mod.rs`: the state, node resolution, attributes, lookup/forget.
//! * `inode.rs`: inode numbers computed from what a file is.
//! * `table.rs`: numbers for names without a fixed place (world files,
//!   metadata fields, scratch files), counted by kernel references.
//! * `listing.rs`: directory listings (`blocks/` streamed from the store).
//! * `content.rs`: the bytes of each kind of file.
//! * `handles.rs`: open/read/write/flush/fsync/release/setattr.
//! * `namespace.rs`: create, mkdir, unlink, rmdir, rename.
//! * `scratch.rs`: editors' temporary files, kept in memory.
//! * `commit.rs`: a file's new content -> a validated block in the store.
//! * `cache.rs`: loaded blocks under a memory budget.
//! * `queue.rs`: grouped commits (-o group_ms).
//! * `serialized.rs`: this process's reads wait for its writes in memory.
//! * `guard.rs`: refusing writes while a server has the map open.
//! * `names.rs`: every node name of the world (warnings about typos).
//! * `error.rs`: errno and message of every refusal.

pub mod cache;
mod commit;
mod content;
pub mod error;
pub mod guard;
mod handles;
pub mod inode;
mod listing;
mod names;
mod namespace;
mod queue;
mod scratch;
mod serialized;
mod table;

pub use error::{FsError, Result};
pub use inode::Node;

use crate::codec::block::node_index;
use crate::codec::nodemeta::MetaEntry;
use crate::store::{BlockPos, MapStore, parse_triple};
use crate::view::{self, BlockFile, MetaFile, escape};
use crate::world::World;
use cache::{BlockCache, Loaded};
use handles::Handle;
use scratch::Scratch;
use std::collections::{HashMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};
use table::{InodeTable, TableKey};

/// The text of `MNT/README`: the short layout section of docs/layout.md.
pub fn readme_text() -> &'static str {
    const DOC: &str = include_str!("../../docs/layout.md");
    const START: &str = "<!-- readme:start -->\n";
    const END: &str = "<!-- readme:end -->";
    // Found once: every stat of README would otherwise search the guide.
    static TEXT: OnceLock<&str> = OnceLock::new();
    TEXT.get_or_init(|| {
        let from = DOC.find(START).map_or(0, |i| i + START.len());
        let to = DOC[from..].find(END).map_or(DOC.len(), |i| from + i);
        &DOC[from..to]
    })
}

#[derive(Clone, Debug)]
pub struct Options {
    pub read_only: bool,
    /// Write even while another process has the map database open.
    pub force: bool,
    /// How long the kernel may cache a file's attributes (its size), and
    /// how long a cached block is trusted before it is re-checked against
    /// the store: the delay before a running server's changes show.
    pub ttl: Duration,
    /// How long the kernel may keep a name it found, and a directory's
    /// attributes. Names change only through this mount, which tells the
    /// kernel at once, or when something else deletes a block or a node's
    /// metadata (then the stale name answers ENOENT when used). Missing
    /// names are kept only for `ttl`: new blocks appear within it.
    pub entry_ttl: Duration,
    /// Memory budget of the decoded-block cache.
    pub cache_bytes: usize,
    pub uid: u32,
    pub gid: u32,
    /// Keep the undo journal (worldfs-journal.sqlite) on writable mounts.
    pub journal: bool,
    /// Group commits: how long a validated block may wait in memory to be
    /// written with others (zero: each close commits at once).
    pub group_commit: Duration,
    /// How old the last check for a server holding the map may be when a
    /// write is made (zero: check before every write).
    pub guard_interval: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            read_only: true,
            force: false,
            ttl: Duration::from_secs(1),
            // An hour: a shell glob over millions of blocks takes minutes,
            // and the names it found must still be cached when the command
            // it feeds opens them.
            entry_ttl: Duration::from_secs(3600),
            cache_bytes: 48 << 20,
            uid: unsafe { libc::getuid() },
            gid: unsafe { libc::getgid() },
            journal: true,
            group_commit: Duration::ZERO,
            guard_interval: Duration::from_millis(500),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attr {
    pub ino: u64,
    pub kind: Kind,
    pub size: u64,
    pub perm: u16,
    pub nlink: u32,
    pub mtime: SystemTime,
    pub uid: u32,
    pub gid: u32,
}

/// One directory entry for a listing. `offset` is the cookie that resumes
/// the listing after this entry.
#[derive(Clone, Debug)]
pub struct DirEntry {
    pub ino: u64,
    pub offset: u64,
    pub kind: Kind,
    pub name: OsString,
}

/// The answer to `open`.
#[derive(Clone, Copy, Debug)]
pub struct Opened {
    pub fh: u64,
    /// The content is the same as at the last open: the kernel may keep its
    /// page cache.
    pub keep_cache: bool,
    /// Bypass the page cache. On writable mounts a decoded file's content
    /// and size change with every commit, and the kernel's idea of the size
    /// can lag behind (its attributes are invalidated after the reply):
    /// through the page cache a reader could get the new content cut at the
    /// old size. Direct reads serve exactly the snapshot taken at open.
    pub direct_io: bool,
}

/// Something the kernel may have cached that a commit made stale.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Inval {
    /// Attributes and data of an inode.
    Inode(u64),
    /// A name in a directory (it appeared, vanished or changed inode).
    Entry(u64, OsString),
}

/// Receives invalidations after the reply that caused them (the FUSE layer
/// sends them to the kernel from another thread: sending from inside a
/// request handler can deadlock).
pub type Invalidator = Box<dyn Fn(Vec<Inval>) + Send + Sync>;

pub struct WorldFs {
    world: World,
    store: Box<dyn MapStore>,
    opts: Options,
    cache: BlockCache,
    // Lock order, where two are held at once: handles before scratch;
    // table before scratch and aliases; commit_lock before everything.
    table: Mutex<InodeTable>,
    handles: Mutex<HashMap<u64, Handle>>,
    next_fh: AtomicU64,
    scratch: Mutex<Scratch>,
    /// Inodes of scratch files that were renamed over a decoded file: the
    /// kernel may still use the old number for the new name for a moment.
    aliases: Mutex<HashMap<u64, Node>>,
    /// Which loaded block each block-related inode was last served from,
    /// per block: for FOPEN_KEEP_CACHE and for invalidation after commits.
    served: Mutex<HashMap<BlockPos, HashMap<u64, u64>>>,
    /// One commit at a time: read-modify-write of a block must not race.
    commit_lock: Mutex<()>,
    /// Copies of files being read without a handle, by inode, with when
    /// they were taken (`read_unopened`).
    unopened: Mutex<HashMap<u64, Snapshot>>,
    /// Validated blocks waiting to be written together (-o group_ms).
    queue: queue::CommitQueue,
    /// Recent refused writes, shown in MNT/write-errors.
    write_errors: Mutex<VecDeque<String>>,
    /// When blocks were last changed through this mount.
    changed: Mutex<HashMap<BlockPos, SystemTime>>,
    invalidator: OnceLock<Invalidator>,
    guard: guard::ServerGuard,
    /// The block version new blocks get (the newest the world uses).
    new_block_version: OnceLock<u8>,
    block_count: Mutex<Option<(std::time::Instant, u64)>>,
    mount_time: SystemTime,
    /// Every node name of the world (made on first need).
    world_names: names::WorldNames,
}

/// A copy of a file's content and when it was taken.
type Snapshot = (std::time::Instant, Arc<Vec<u8>>);

/// World files with password hashes (never writable through the mount).
const AUTH_FILES: [&str; 1] = ["auth.txt"];

/// Cap on tracked served inodes (it is only an optimization).
const SERVED_MAX: usize = 10_000;

fn name_bytes(name: &OsStr) -> &[u8] {
    name.as_bytes()
}

/// Parse world node coordinates "X,Y,Z".
fn parse_node_coords(name: &[u8]) -> Option<[i32; 3]> {
    let s = std::str::from_utf8(name).ok()?;
    let (x, y, z) = parse_triple::<i32>(s)?;
    BlockPos::of_node(x, y, z)?;
    Some([x, y, z])
}

/// The in-block index of world node coordinates, if they are in `pos`.
fn in_block(pos: BlockPos, [x, y, z]: [i32; 3]) -> Option<u16> {
    (BlockPos::of_node(x, y, z)? == pos)
        .then(|| node_index(x.rem_euclid(16) as usize, y.rem_euclid(16) as usize, z.rem_euclid(16) as usize) as u16)
}

/// The file name a path-like message uses for a node.
fn describe(node: &Node, fs: &WorldFs) -> String {
    match node {
        Node::BlockFile(p, f) => format!("blocks/{p}/{}", f.name()),
        Node::MetaFile(p, i, f) => format!("blocks/{p}/meta/{}/{}", view::meta_dir_name(*p, *i), f.name()),
        Node::MetaDir(p, i) => format!("blocks/{p}/meta/{}", view::meta_dir_name(*p, *i)),
        Node::BlockDir(p) => format!("blocks/{p}"),
        Node::Root => String::new(),
        Node::Blocks => "blocks".into(),
        Node::NodeDir => "node".into(),
        Node::Readme => "README".into(),
        Node::WriteErrors => "write-errors".into(),
        Node::MetaRoot(p) => format!("blocks/{p}/meta"),
        Node::FieldsDir(p, i) => format!("blocks/{p}/meta/{}/fields", view::meta_dir_name(*p, *i)),
        Node::NodeFile([x, y, z]) => format!("node/{x},{y},{z}"),
        Node::Table(id) => match fs.table.lock().unwrap().get(*id) {
            Some(TableKey::WorldFile(n)) => n.clone(),
            Some(TableKey::Field { pos, p16, key }) => format!(
                "blocks/{pos}/meta/{}/fields/{}",
                view::meta_dir_name(*pos, *p16),
                String::from_utf8_lossy(&escape::key_to_name(key))
            ),
            _ => format!("{node:?}"),
        },
    }
}

/// "op path/name" for messages about a name in directory `parent`.
fn describe_name(fs: &WorldFs, op: &str, parent: u64, name: &OsStr) -> String {
    let dir = fs.node(parent).map(|n| describe(&n, fs)).unwrap_or_default();
    // Control characters escaped: a message is one line of write-errors.
    let name: String = name
        .to_string_lossy()
        .chars()
        .flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] })
        .collect();
    if dir.is_empty() { format!("{op} {name}") } else { format!("{op} {dir}/{name}") }
}

impl WorldFs {
    pub fn new(world: World, store: Box<dyn MapStore>, opts: Options) -> WorldFs {
        let guard = guard::ServerGuard::new(world.map_path(), !opts.read_only && !opts.force)
            .with_interval(opts.guard_interval);
        WorldFs {
            queue: queue::CommitQueue::new(opts.group_commit),
            cache: BlockCache::new(opts.cache_bytes, opts.ttl),
            world,
            store: Box::new(serialized::Serialized::new(store)),
            opts,
            table: Mutex::new(InodeTable::default()),
            handles: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            scratch: Mutex::new(Scratch::default()),
            aliases: Mutex::new(HashMap::new()),
            served: Mutex::new(HashMap::new()),
            unopened: Mutex::new(HashMap::new()),
            commit_lock: Mutex::new(()),
            write_errors: Mutex::new(VecDeque::new()),
            changed: Mutex::new(HashMap::new()),
            invalidator: OnceLock::new(),
            guard,
            new_block_version: OnceLock::new(),
            block_count: Mutex::new(None),
            mount_time: SystemTime::now(),
            world_names: names::WorldNames::default(),
        }
    }

    /// Open a world directory with the store its world.mt names. A writable
    /// open is refused while another process has the map database open,
    /// unless `opts.force`.
    pub fn open_world(dir: &std::path::Path, opts: Options) -> std::result::Result<WorldFs, String> {
        let world = World::open(dir)?;
        if !opts.read_only {
            // SQLite writes its rollback journal beside the map, so a writable
            // mount needs a writable directory, not only a writable file.
            use std::os::unix::ffi::OsStrExt;
            let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
            if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
                return Err(format!(
                    "{}: the world directory is not writable ({}), and changes need it \
                     (SQLite keeps its journal there); mount it with -o ro",
                    dir.display(),
                    std::io::Error::last_os_error()
                ));
            }
        }
        if !opts.read_only && !opts.force && world.backend() == "sqlite3" {
            let who = guard::openers(&world.map_path());
            if !who.is_empty() {
                return Err(format!(
                    "{} is open in {} (a running server would overwrite changes made through \
                     the mount); stop it, mount read-only with -o ro, or use --force",
                    world.map_path().display(),
                    who.join(", ")
                ));
            }
        }
        let store = world.open_store(opts.read_only, opts.journal)?;
        Ok(WorldFs::new(world, store, opts))
    }

    /// Start the thread that writes grouped commits when they are due
    /// (nothing to do unless -o group_ms is set).
    pub fn start_background(fs: &Arc<WorldFs>) {
        if !fs.queue.enabled() {
            return;
        }
        let weak = Arc::downgrade(fs);
        std::thread::Builder::new()
            .name("worldfs-commit".into())
            .spawn(move || {
                while let Some(fs) = weak.upgrade() {
                    if fs.queue.wait_due(Duration::from_millis(200)) {
                        let _ = fs.flush_queue();
                    }
                }
            })
            .expect("start the commit thread");
    }

    /// Where invalidations go (set once by the FUSE layer).
    pub fn set_invalidator(&self, f: Invalidator) {
        let _ = self.invalidator.set(f);
    }

    pub fn options(&self) -> &Options {
        &self.opts
    }

    pub fn store(&self) -> &dyn MapStore {
        self.store.as_ref()
    }

    /// How long the kernel may cache attributes and missing names.
    pub fn ttl(&self) -> Duration {
        self.opts.ttl
    }

    /// How long the kernel may keep a name it found (never less than `ttl`).
    pub fn entry_ttl(&self) -> Duration {
        self.opts.entry_ttl.max(self.opts.ttl)
    }

    /// How long the kernel may keep these attributes: a file's size changes
    /// with its block, a directory's attributes only through this mount
    /// (which invalidates them), so those are kept as long as names.
    pub fn attr_ttl(&self, a: &Attr) -> Duration {
        match a.kind {
            Kind::Dir => self.entry_ttl(),
            Kind::File => self.ttl(),
        }
    }

    /// The refused writes shown in MNT/write-errors.
    pub fn write_errors(&self) -> Vec<String> {
        self.write_errors.lock().unwrap().iter().cloned().collect()
    }

    fn block(&self, pos: BlockPos) -> Result<Option<Arc<Loaded>>> {
        if let Some(blob) = self.queue.get(pos) {
            return Ok(Some(self.loaded_from(pos, blob)));
        }
        Ok(self.cache.get(pos, self.store.as_ref())?)
    }

    /// A block from bytes not (yet) in the store: the cached copy if it
    /// holds the same bytes.
    fn loaded_from(&self, pos: BlockPos, blob: Vec<u8>) -> Arc<Loaded> {
        if let Some(l) = self.cache.peek(pos)
            && l.blob == blob
        {
            return l;
        }
        let l = Arc::new(Loaded::new(pos, blob));
        self.cache.insert(l.clone());
        l
    }

    fn existing_block(&self, pos: BlockPos) -> Result<Arc<Loaded>> {
        self.block(pos)?.ok_or_else(FsError::not_found)
    }

    /// A block's metadata entry at `p16`, with the block it came from.
    fn meta_entry(&self, pos: BlockPos, p16: u16) -> Result<(Arc<Loaded>, MetaEntry)> {
        let l = self.existing_block(pos)?;
        let entry = l.decoded().and_then(|b| b.metadata.get(p16).cloned()).ok_or_else(FsError::not_found)?;
        Ok((l, entry))
    }

    fn table_key(&self, id: u64) -> Result<TableKey> {
        self.table.lock().unwrap().get(id).cloned().ok_or_else(FsError::not_found)
    }

    fn table_node(&self, key: TableKey) -> Node {
        Node::Table(self.table.lock().unwrap().id(key))
    }

    /// The node of an inode number, following scratch-to-decoded aliases.
    fn node(&self, ino: u64) -> Result<Node> {
        if let Some(n) = self.aliases.lock().unwrap().get(&ino) {
            return Ok(n.clone());
        }
        Node::from_ino(ino).ok_or_else(FsError::not_found)
    }

    fn is_scratch(&self, node: &Node) -> bool {
        matches!(node, Node::Table(id) if matches!(self.table.lock().unwrap().get(*id), Some(TableKey::Scratch(_))))
    }

    fn is_dir(&self, node: &Node) -> Result<bool> {
        Ok(matches!(
            node,
            Node::Root
                | Node::Blocks
                | Node::NodeDir
                | Node::BlockDir(_)
                | Node::MetaRoot(_)
                | Node::MetaDir(..)
                | Node::FieldsDir(..)
        ))
    }

    /// The block a node belongs to.
    fn block_of(&self, node: &Node) -> Option<BlockPos> {
        match node {
            Node::BlockDir(p)
            | Node::BlockFile(p, _)
            | Node::MetaRoot(p)
            | Node::MetaDir(p, _)
            | Node::FieldsDir(p, _)
            | Node::MetaFile(p, _, _) => Some(*p),
            Node::NodeFile([x, y, z]) => BlockPos::of_node(*x, *y, *z),
            Node::Table(id) => match self.table.lock().unwrap().get(*id) {
                Some(TableKey::Field { pos, .. }) => Some(*pos),
                _ => None,
            },
            _ => None,
        }
    }

    /// Remember that the kernel got `ino`'s content (serial of the load it
    /// came from) or size (serial 0). Returns the serial recorded before.
    /// Only an optimization (FOPEN_KEEP_CACHE) and a list of what to
    /// invalidate after a commit, so it is simply emptied when it grows
    /// large: the kernel's own caches expire after the TTL anyway.
    fn record_served(&self, node: &Node, ino: u64, serial: u64) -> Option<u64> {
        let pos = self.block_of(node)?;
        let mut served = self.served.lock().unwrap();
        if served.len() >= SERVED_MAX && !served.contains_key(&pos) {
            served.clear();
        }
        served.entry(pos).or_default().insert(ino, serial)
    }

    /// Whether `ino` was last served from the same load (then the kernel's
    /// page cache of it is still right).
    fn note_served(&self, node: &Node, ino: u64, serial: u64) -> bool {
        self.record_served(node, ino, serial) == Some(serial)
    }

    /// Check that a directory node exists.
    fn check_dir(&self, node: &Node) -> Result<()> {
        match node {
            Node::Root | Node::Blocks | Node::NodeDir => Ok(()),
            // Loaded rather than only looked for: whoever looks up a block
            // directory reads its files next, and one query instead of two
            // halves SQLite's locking system calls on a walk.
            Node::BlockDir(pos) => {
                if self.cache.peek(*pos).is_some() || self.block(*pos)?.is_some() {
                    Ok(())
                } else {
                    Err(FsError::not_found())
                }
            }
            Node::MetaRoot(pos) => {
                let l = self.existing_block(*pos)?;
                l.is_decodable().then_some(()).ok_or_else(FsError::not_found)
            }
            Node::MetaDir(pos, p16) | Node::FieldsDir(pos, p16) => self.meta_entry(*pos, *p16).map(|_| ()),
            _ => Err(FsError::not_dir()),
        }
    }

    /// When the node's block last changed through this mount (the mount
    /// time if it did not), in whole seconds, plus `version` (which changes
    /// with the block's content) as nanoseconds: the kernel drops its page
    /// cache of a file when its mtime changes (FUSE_AUTO_INVAL_DATA), which
    /// is how a change made by another process reaches readers of a
    /// read-only mount, where the kernel keeps pages across opens.
    fn mtime_of(&self, node: &Node, version: u32) -> SystemTime {
        let base = match self.block_of(node) {
            Some(p) => self.changed.lock().unwrap().get(&p).copied().unwrap_or(self.mount_time),
            None => self.mount_time,
        };
        let secs = base.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        SystemTime::UNIX_EPOCH + Duration::new(secs, version % 1_000_000_000)
    }

    /// Whether a node is a world file holding players' password hashes
    /// (`auth.txt` of the old "files" auth backend): shown to the mounting
    /// user only, never writable.
    fn is_auth(&self, node: &Node) -> bool {
        matches!(node, Node::Table(id)
            if matches!(self.table.lock().unwrap().get(*id), Some(TableKey::WorldFile(n)) if AUTH_FILES.contains(&n.as_str())))
    }

    /// Modes: 0755 directories and 0644 files, owned by the mounting user,
    /// on writable mounts; 0555 and 0444 on read-only mounts and for files
    /// worldfs generates (README, write-errors); 0400 for auth data. The
    /// kernel enforces them (default_permissions).
    fn attr_of(&self, node: &Node, kind: Kind, size: u64) -> Attr {
        self.versioned_attr(node, kind, size, 0)
    }

    /// `attr_of` for a file rendered from a block whose content has
    /// `version` (see `mtime_of`).
    fn versioned_attr(&self, node: &Node, kind: Kind, size: u64, version: u32) -> Attr {
        let writable = !self.opts.read_only && !matches!(node, Node::Readme | Node::WriteErrors);
        let perm = match (kind, writable) {
            (Kind::File, _) if self.is_auth(node) => 0o400,
            (Kind::Dir, true) => 0o755,
            (Kind::Dir, false) => 0o555,
            (Kind::File, true) => 0o644,
            (Kind::File, false) => 0o444,
        };
        Attr {
            ino: node.ino(),
            kind,
            size,
            perm,
            nlink: if kind == Kind::Dir { 2 } else { 1 },
            mtime: self.mtime_of(node, version),
            uid: self.opts.uid,
            gid: self.opts.gid,
        }
    }

    fn stat(&self, node: &Node) -> Result<Attr> {
        if self.is_dir(node)? {
            self.check_dir(node)?;
            return Ok(self.attr_of(node, Kind::Dir, 0));
        }
        if let Node::Table(id) = node
            && let TableKey::Scratch(_) = self.table_key(*id)?
        {
            let s = self.scratch.lock().unwrap();
            let f = s.get(node.ino()).ok_or_else(FsError::not_found)?;
            let mut a = self.attr_of(node, Kind::File, f.data.len() as u64);
            a.perm = f.mode & 0o7777;
            a.mtime = f.mtime;
            return Ok(a);
        }
        let (size, version) = match node {
            Node::BlockFile(pos, f) => {
                let l = self.existing_block(*pos)?;
                (l.file_size(*f).ok_or_else(FsError::not_found)? as u64, l.version())
            }
            _ => {
                let c = self.content(node)?;
                (c.bytes.len() as u64, c.version)
            }
        };
        if let Node::NodeFile(_) = node
            && !self.opts.read_only
        {
            // node/X,Y,Z cannot be enumerated from its block: remember that
            // the kernel knows its size, to invalidate it after a commit.
            self.record_served(node, node.ino(), 0);
        }
        Ok(self.versioned_attr(node, Kind::File, size, version))
    }

    pub fn getattr(&self, ino: u64) -> Result<Attr> {
        let mut a = self.stat(&self.node(ino)?)?;
        a.ino = ino;
        Ok(a)
    }

    /// Look a name up. On success the kernel holds one more reference to
    /// the inode (see `forget`).
    pub fn lookup(&self, parent: u64, name: &OsStr) -> Result<Attr> {
        let parent_node = self.node(parent)?;
        let attr = match self.child(&parent_node, name_bytes(name)) {
            Ok(child) => match self.stat(&child) {
                Err(e) if e.errno == libc::ENOENT => self.scratch_attr(parent_node.ino(), name_bytes(name)),
                r => r,
            },
            Err(e) if e.errno == libc::ENOENT => self.scratch_attr(parent_node.ino(), name_bytes(name)),
            Err(e) => Err(e),
        }?;
        self.remember(attr.ino);
        Ok(attr)
    }

    /// The kernel was handed `ino` (by lookup, create, readdirplus...).
    pub(crate) fn remember(&self, ino: u64) {
        if let Some(Node::Table(id)) = Node::from_ino(ino) {
            self.table.lock().unwrap().remember(id);
        }
    }

    /// The kernel dropped `n` references to `ino`. Unreferenced table
    /// entries of things that no longer exist are removed.
    pub fn forget(&self, ino: u64, n: u64) {
        let Some(Node::Table(id)) = Node::from_ino(ino) else { return };
        let mut table = self.table.lock().unwrap();
        self.drop_refs(&mut table, id, n);
    }

    /// Drop `n` references to table entry `id`; remove it once nothing
    /// holds it and what it named is gone, with its alias (which held a
    /// reference of its own to its target).
    fn drop_refs(&self, table: &mut InodeTable, id: u64, n: u64) {
        let Some(key) = table.forget(id, n) else { return };
        let ino = Node::Table(id).ino();
        let gone = match key {
            TableKey::Scratch(_) => self.scratch.lock().unwrap().get(ino).is_none(),
            _ => true,
        };
        if gone {
            table.remove(id);
            let alias = self.aliases.lock().unwrap().remove(&ino);
            if let Some(Node::Table(target)) = alias {
                self.drop_refs(table, target, 1);
            }
        }
    }

    /// From now on `ino` (a scratch file renamed over `node`) means `node`:
    /// the kernel keeps using the old number for the name until it looks
    /// the name up again. The alias holds a reference to a table entry, so
    /// that the kernel forgetting the number it had for `node` before the
    /// rename does not take the entry away from under the alias.
    pub(super) fn add_alias(&self, ino: u64, node: Node) {
        let mut table = self.table.lock().unwrap();
        if let Node::Table(id) = node {
            table.remember(id);
        }
        let old = self.aliases.lock().unwrap().insert(ino, node);
        if let Some(Node::Table(id)) = old {
            self.drop_refs(&mut table, id, 1);
        }
    }

    fn scratch_attr(&self, parent: u64, name: &[u8]) -> Result<Attr> {
        let ino = self.scratch.lock().unwrap().lookup(parent, name).ok_or_else(FsError::not_found)?;
        self.stat(&Node::from_ino(ino).ok_or_else(FsError::not_found)?)
    }

    /// The node `name` in directory `parent`, if it could exist (existence
    /// is checked by `stat`).
    fn child(&self, parent: &Node, name: &[u8]) -> Result<Node> {
        let nf = FsError::not_found;
        match parent {
            Node::Root => Ok(match name {
                b"README" => Node::Readme,
                b"blocks" => Node::Blocks,
                b"node" => Node::NodeDir,
                b"write-errors" if !self.opts.read_only => Node::WriteErrors,
                _ => {
                    let s = std::str::from_utf8(name).map_err(|_| nf())?;
                    if !World::is_text_file_name(s) || !self.world.dir.join(s).is_file() {
                        return Err(nf());
                    }
                    self.table_node(TableKey::WorldFile(s.to_string()))
                }
            }),
            Node::Blocks => {
                let s = std::str::from_utf8(name).map_err(|_| nf())?;
                Ok(Node::BlockDir(s.parse().map_err(|_| nf())?))
            }
            Node::BlockDir(pos) => {
                if name == b"meta" {
                    return Ok(Node::MetaRoot(*pos));
                }
                let f = BlockFile::from_name(name).ok_or_else(nf)?;
                Ok(Node::BlockFile(*pos, f))
            }
            Node::MetaRoot(pos) => {
                let c = parse_node_coords(name).ok_or_else(nf)?;
                Ok(Node::MetaDir(*pos, in_block(*pos, c).ok_or_else(nf)?))
            }
            Node::MetaDir(pos, p16) => match name {
                b"fields" => Ok(Node::FieldsDir(*pos, *p16)),
                _ => Ok(Node::MetaFile(*pos, *p16, MetaFile::from_name(name).ok_or_else(nf)?)),
            },
            Node::FieldsDir(pos, p16) => {
                let key = escape::name_to_key(name).ok_or_else(nf)?;
                // Numbers are handed out only for keys that exist.
                let (_, entry) = self.meta_entry(*pos, *p16)?;
                entry.get(&key).ok_or_else(nf)?;
                Ok(self.table_node(TableKey::Field { pos: *pos, p16: *p16, key }))
            }
            Node::NodeDir => Ok(Node::NodeFile(parse_node_coords(name).ok_or_else(nf)?)),
            _ => Err(FsError::not_dir()),
        }
    }

    fn parent_of(&self, node: &Node) -> Result<Node> {
        Ok(match node {
            Node::Root | Node::Blocks | Node::NodeDir | Node::Readme | Node::WriteErrors => Node::Root,
            Node::BlockDir(_) => Node::Blocks,
            Node::BlockFile(p, _) | Node::MetaRoot(p) => Node::BlockDir(*p),
            Node::MetaDir(p, _) => Node::MetaRoot(*p),
            Node::FieldsDir(p, i) | Node::MetaFile(p, i, _) => Node::MetaDir(*p, *i),
            Node::NodeFile(_) => Node::NodeDir,
            Node::Table(id) => match self.table_key(*id)? {
                TableKey::WorldFile(_) => Node::Root,
                TableKey::Field { pos, p16, .. } => Node::FieldsDir(pos, p16),
                TableKey::Scratch(_) => {
                    let parent = self.scratch.lock().unwrap().get(node.ino()).map(|f| f.parent);
                    self.node(parent.ok_or_else(FsError::not_found)?)?
                }
            },
        })
    }

    /// Number of stored blocks (for statfs).
    /// Counting scans the whole index (a second on millions of blocks), so
    /// the figure is reused for a minute.
    pub fn block_count(&self) -> u64 {
        let mut c = self.block_count.lock().unwrap();
        match *c {
            Some((at, n)) if at.elapsed() < Duration::from_secs(60) => n,
            _ => {
                let n = self.store.count().unwrap_or(0);
                *c = Some((std::time::Instant::now(), n));
                n
            }
        }
    }
}
