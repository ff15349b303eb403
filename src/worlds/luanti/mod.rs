//! A Luanti world directory as a tree of files (the [`Tree`] of a world
//! mount): every mapblock of the map database a directory of decoded
//! files, `node/X,Y,Z` for single nodes, and the world's own text files;
//! with the world's own check, demo and undo's records.
//!
//! * `mod.rs`: the tree's state, node resolution, attributes, lookup.
//! * `tree.rs`: the `Tree` methods, each a thin translation to nodes.
//! * `inode.rs`: inode numbers computed from what a file is.
//! * `table.rs`: numbers for names without a fixed place (world files,
//!   metadata fields), counted by kernel references.
//! * `listing.rs`: directory listings (`blocks/` streamed from the store).
//! * `content.rs`: the bytes of each kind of file.
//! * `names.rs` (the namespace side): mkdir/rmdir of blocks and metadata,
//!   fields as files (create, unlink, rename), which new names are scratch.
//! * `commit.rs`: a file's new content -> a validated block in the store.
//! * `limits.rs`: what the engine keeps of a block (refused past it).
//! * `cache.rs`: loaded blocks under a memory budget.
//! * `queue.rs`: grouped commits (-o group_ms).
//! * `serialized.rs`: this process's reads wait for its writes in memory.
//! * `unwritten.rs`: grouped changes an unmount could not write, kept for
//!   the next mount.
//! * `index.rs`: the world's index of node names (find/, names, typos);
//!   `scan.rs` visits every block for it on all cores.
//! * `find.rs`: `find/` and `names` in the mount, and world-wide renames.
//! * `draw.rs`: the world from above, for `map/`.
//! * `records/`: `players/`, `auth/` and `mod_storage/`.
//! * `snapshots.rs`, `snapshots/` and `snapshot_tree.rs`: `worldfs
//!   snapshot`'s snapshots seen from the world, and `MNT/snapshots/`.
//! * `import_export.rs`: builds moved between the world and schematics.
//! * `check.rs` (`worldfs check`) and `demo.rs` (`worldfs demo`).
//! * `store_error.rs`: a store's failures as the core's errors.
//!
//! Writes are refused while a server has the map open by
//! `worldfs_store::guard`.

pub mod cache;
pub mod check;
mod commit;
mod content;
pub mod demo;
pub(crate) mod draw;
mod find;
pub mod import_export;
pub mod index;
pub mod inode;
pub(crate) mod limits;
mod listing;
mod names;
mod queue;
pub mod records;
pub(crate) mod scan;
mod serialized;
mod snapshot_tree;
pub(crate) mod snapshots;
mod store_error;
mod table;
mod tree;
pub mod unwritten;

pub(crate) use inode::Node;

use crate::fs::{Access, Attr, FsError, Kind, Options, Result, Services};
use crate::view::{self, escape};
use cache::{BlockCache, Loaded};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};
use table::{InodeTable, TableKey};
use worldfs_codec::luanti::block::node_index;
use worldfs_codec::luanti::nodemeta::MetaEntry;
use worldfs_store::world::World;
use worldfs_store::{BlockPos, MapStore, parse_triple};

/// The text of `MNT/README`: the short layout section of docs/layout.md.
pub(crate) fn readme_text() -> &'static str {
    const DOC: &str = include_str!("../../../docs/layout.md");
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

pub struct LuantiTree {
    world: World,
    store: Box<dyn MapStore>,
    opts: Options,
    services: Arc<Services>,
    cache: BlockCache,
    table: Mutex<InodeTable>,
    /// Which loaded block each block-related inode was last served from,
    /// per block: for FOPEN_KEEP_CACHE and for invalidation after commits.
    served: Mutex<HashMap<BlockPos, HashMap<u64, u64>>>,
    /// One commit at a time: read-modify-write of a block must not race.
    /// Taken before any other lock of the tree. A live mount gives it up
    /// while the server applies a block's change, the block reserved
    /// meanwhile (`commit::BlockCommit`).
    commit_lock: Mutex<commit::Commits>,
    /// Told when a reserved block's commit ends.
    commit_done: parking_lot::Condvar,
    /// Validated blocks waiting to be written together (-o group_ms).
    queue: queue::CommitQueue,
    /// When blocks were last changed through this mount.
    changed: Mutex<HashMap<BlockPos, SystemTime>>,
    guard: worldfs_store::guard::ServerGuard,
    /// The block version new blocks get (the newest the world uses).
    new_block_version: OnceLock<u8>,
    block_count: Mutex<Option<(std::time::Instant, u64)>>,
    mount_time: SystemTime,
    /// The world's index of node names (None if no file could hold it).
    index: Option<index::NameIndex>,
    /// The server's max_objects_per_block (see `limits`).
    max_objects_per_block: u16,
    /// Changes go through the running server (`worldfs_store::live`).
    live: bool,
}

/// World files with password hashes (never writable through the mount).
const AUTH_FILES: [&str; 1] = ["auth.txt"];

/// Cap on tracked served inodes (it is only an optimization).
const SERVED_MAX: usize = 10_000;

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

/// Write the changes an earlier mount kept because it could not write
/// them at unmount (`unwritten.rs`); a read-only mount only says so.
fn replay_unwritten(world: &World, store: &dyn MapStore, read_only: bool) -> std::result::Result<(), String> {
    if read_only {
        for (file, kept) in unwritten::find(&world.dir)? {
            log::warn!(
                "{}: {} block change(s) from an unmount that could not write them are kept there and not \
                 shown by this read-only mount; a writable mount writes them",
                file.display(),
                kept.len()
            );
        }
        return Ok(());
    }
    for line in unwritten::replay(&world.dir, store)? {
        log::warn!("{line}");
    }
    Ok(())
}

/// The inode tag of `map/` (the map's tree uses 0 to 6, the records 7 to 9).
const MAP_TAG: u64 = 10;

/// A world directory as mounted: the map's tree with `players/`, `auth/`
/// and `mod_storage/` beside it.
pub(crate) fn open_world_tree(
    dir: &std::path::Path,
    opts: Options,
    services: Arc<Services>,
) -> std::result::Result<Arc<dyn crate::fs::Tree>, String> {
    let map = LuantiTree::open(dir, opts.clone(), services.clone())?;
    let world = World::open(dir)?;
    let tiles = crate::worlds::map_tree::MapTree::new(MAP_TAG, draw::LuantiTops(map.clone()), opts.clone());
    let mount =
        crate::fs::union::Mounted { name: "map".into(), tag: MAP_TAG, root: tiles.root(), tree: Arc::new(tiles) };
    let live = map.live;
    let mut more = vec![mount];
    more.extend(snapshot_tree::mounted(&world, &opts, &services)?);
    Ok(records::live_world_tree(map, &world, &opts, &services, more, live))
}

impl LuantiTree {
    pub fn new(world: World, store: Box<dyn MapStore>, opts: Options, services: Arc<Services>) -> LuantiTree {
        let guard = worldfs_store::guard::ServerGuard::new(world.map_path(), !opts.read_only && !opts.force)
            .with_interval(opts.guard_interval);
        let max_objects_per_block = limits::max_objects_per_block(&world.dir, opts.max_objects_per_block);
        LuantiTree {
            max_objects_per_block,
            queue: queue::CommitQueue::new(opts.group_commit),
            cache: BlockCache::new(opts.cache_bytes, opts.ttl),
            world,
            store: Box::new(serialized::Serialized::new(store)),
            opts,
            services,
            table: Mutex::new(InodeTable::default()),
            served: Mutex::new(HashMap::new()),
            commit_lock: Mutex::new(commit::Commits::default()),
            commit_done: parking_lot::Condvar::new(),
            changed: Mutex::new(HashMap::new()),
            guard,
            new_block_version: OnceLock::new(),
            block_count: Mutex::new(None),
            mount_time: SystemTime::now(),
            index: None,
            live: false,
        }
    }

    /// Keep the world's name index in `dir` (see `index.rs`).
    pub fn with_index(mut self) -> LuantiTree {
        let dir = self.opts.index_dir.clone().unwrap_or_else(index::default_dir);
        let map = self.map_identity();
        let files = self.map_files();
        match index::NameIndex::open(&dir, map.clone(), self.opts.ttl, self.opts.index_ttl) {
            Ok(i) => self.index = Some(i.with_files(files)),
            Err(e) => {
                log::warn!("name index: {e}; trying the temporary directory");
                let tmp = std::env::temp_dir().join("worldfs");
                match index::NameIndex::open(&tmp, map, self.opts.ttl, self.opts.index_ttl) {
                    Ok(i) => self.index = Some(i.with_files(files)),
                    Err(e) => log::warn!("name index: {e}; find/ and names are not available"),
                }
            }
        }
        self
    }

    /// The files that hold the map (for the index's fingerprint): the
    /// SQLite map and its WAL, or LevelDB's directory; none for a map on
    /// a database server.
    fn map_files(&self) -> Vec<std::path::PathBuf> {
        let map = self.world.map_path();
        match self.world.backend() {
            "sqlite3" => {
                let mut wal = map.as_os_str().to_owned();
                wal.push("-wal");
                vec![map, wal.into()]
            }
            "leveldb" => vec![self.world.dir.join("map.db")],
            _ => Vec::new(),
        }
    }

    /// What identifies this world's map for its index: the world's path,
    /// the backend, and the map file's device and inode.
    fn map_identity(&self) -> String {
        use std::os::unix::fs::MetadataExt;
        let dir = self.world.dir.canonicalize().unwrap_or_else(|_| self.world.dir.clone());
        let file =
            std::fs::metadata(self.world.map_path()).map(|m| format!("{}:{}", m.dev(), m.ino())).unwrap_or_default();
        format!("{}|{}|{file}", dir.display(), self.store.describe())
    }

    /// Open a world directory with the store its world.mt names. A writable
    /// open is refused while another process has the map database open,
    /// unless `opts.force`. Starts the thread of grouped commits if asked.
    pub(crate) fn open(
        dir: &std::path::Path,
        opts: Options,
        services: Arc<Services>,
    ) -> std::result::Result<Arc<LuantiTree>, String> {
        let world = World::open(dir)?;
        if !opts.read_only {
            // SQLite writes its rollback journal beside the map, so a writable
            // mount needs a writable directory, not only a writable file.
            use std::os::unix::ffi::OsStrExt;
            let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
            // SAFETY: `c` is a NUL-terminated path that outlives the call.
            if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
                return Err(format!(
                    "{}: the world directory is not writable ({}), and changes need it \
                     (SQLite keeps its journal there); mount it with -o ro",
                    dir.display(),
                    std::io::Error::last_os_error()
                ));
            }
        }
        // A server running the mod is asked first: it opens the map only
        // when it first loads a block, so the holders may not show it yet.
        let live =
            matches!(worldfs_store::live::server_state(&world.dir), worldfs_store::live::ServerState::Running { .. });
        if !opts.read_only && !opts.force && live {
            return LuantiTree::open_live(world, opts, services, "a server runs this world".into());
        }
        if !opts.read_only && !opts.force && world.backend() == "sqlite3" {
            let who = worldfs_store::holders::openers_after_daemons_exit(&world.map_path());
            if !who.is_empty() {
                let why = format!(
                    "{} is open in {} (a running server would overwrite changes made through \
                     the mount)",
                    world.map_path().display(),
                    who.join(", ")
                );
                return LuantiTree::open_live(world, opts, services, why);
            }
        }
        let mut store = world.open_store(opts.read_only, opts.journal)?;
        if !opts.read_only && !opts.force {
            store.set_write_gate(no_server_started(&world.dir));
        }
        if !opts.read_only
            && !opts.force
            && world.backend() != "sqlite3"
            && let Err(why) = worldfs_store::guard::refuse_other_users(&*store)
        {
            drop(store);
            return LuantiTree::open_live(world, opts, services, why);
        }
        replay_unwritten(&world, &*store, opts.read_only)?;
        let tree = Arc::new(LuantiTree::new(world, store, opts, services).with_index());
        tree.start_background()?;
        Ok(tree)
    }

    /// A writable mount of a map a server holds (`why`): through the
    /// server when it runs the worldfs_live mod (`worldfs_store::live`), else
    /// refused with how to make it possible.
    fn open_live(
        world: World,
        opts: Options,
        services: Arc<Services>,
        why: String,
    ) -> std::result::Result<Arc<LuantiTree>, String> {
        let state = worldfs_store::live::server_state(&world.dir);
        let worldfs_store::live::ServerState::Running { version, .. } = &state else {
            return Err(format!(
                "{why}; {}. Stop it, mount read-only with -o ro, use --force, or let the server apply the \
                 changes: `worldfs live install {}` and restart the server once",
                state.why_not(),
                world.dir.display()
            ));
        };
        worldfs_store::live::check_spool(&world.dir).map_err(|e| format!("{why}, with worldfs_live: {e}"))?;
        log::info!("{why}; it runs worldfs_live ({version}): changes go through the server");
        if world.backend() == "leveldb" {
            return Err(format!(
                "{why}, with worldfs_live ({version}); but its map is in LevelDB, which one process at a time may \
                 open, and the server holds it: a live mount needs a map the server shares, in sqlite3 or \
                 PostgreSQL (`minetestserver --migrate sqlite3` or `--migrate postgresql` converts a map); stop \
                 the server to mount this one"
            ));
        }
        let journal = opts.journal.then(|| world.journal_path());
        // The changed blocks the server has not saved yet: as much as one
        // part of a world-wide rename holds (`find.rs`, `part_budget`: a
        // quarter of the cache each on a live mount, so that both stay
        // within what an offline part holds).
        let store =
            world.open_live_store(journal, opts.live_direct)?.with_shown_bytes((opts.cache_bytes / 4).max(64 << 10));
        let mut tree = LuantiTree::new(world, Box::new(store), opts, services).with_index();
        tree.index = tree.index.map(index::NameIndex::refreshed_by_rows);
        // The server holds the map by design: the guard would refuse every write.
        tree.guard = worldfs_store::guard::ServerGuard::new(tree.world.map_path(), false);
        tree.live = true;
        let tree = Arc::new(tree);
        tree.start_background()?;
        Ok(tree)
    }

    /// Start the thread that writes grouped commits when they are due
    /// (nothing to do unless -o group_ms is set).
    fn start_background(self: &Arc<Self>) -> std::result::Result<(), String> {
        if !self.queue.enabled() {
            return Ok(());
        }
        let weak = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("worldfs-commit".into())
            .spawn(move || {
                while let Some(tree) = weak.upgrade() {
                    if tree.queue.wait_due(Duration::from_millis(200)) {
                        let _ = tree.flush_queue();
                    }
                }
            })
            .map(drop)
            .map_err(|e| format!("cannot start the thread that writes grouped commits: {e}"))
    }

    pub(crate) fn store(&self) -> &dyn MapStore {
        self.store.as_ref()
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
        self.table.lock().get(id).cloned().ok_or_else(FsError::not_found)
    }

    fn table_node(&self, key: TableKey) -> Node {
        Node::Table(self.table.lock().id(key))
    }

    fn node(&self, ino: u64) -> Result<Node> {
        Node::from_ino(ino).ok_or_else(FsError::not_found)
    }

    fn is_dir(node: &Node) -> bool {
        matches!(
            node,
            Node::Root
                | Node::Blocks
                | Node::NodeDir
                | Node::BlockDir(_)
                | Node::MetaRoot(_)
                | Node::MetaDir(..)
                | Node::FieldsDir(..)
                | Node::FindDir
                | Node::FindName(_)
        )
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
            Node::Table(id) => match self.table.lock().get(*id) {
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
    fn record_served(&self, node: &Node, serial: u64) -> Option<u64> {
        let pos = self.block_of(node)?;
        let mut served = self.served.lock();
        if served.len() >= SERVED_MAX && !served.contains_key(&pos) {
            served.clear();
        }
        served.entry(pos).or_default().insert(node.ino(), serial)
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
            Node::FindDir => self.index.as_ref().map(|_| ()).ok_or_else(FsError::not_found),
            Node::FindName(n) => self.find_name(*n).map(|_| ()),
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
            Some(p) => self.changed.lock().get(&p).copied().unwrap_or(self.mount_time),
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
            if matches!(self.table.lock().get(*id), Some(TableKey::WorldFile(n)) if AUTH_FILES.contains(&n.as_str())))
    }

    /// Attributes of a node whose content has `version` (see `mtime_of`).
    fn attr(&self, node: &Node, kind: Kind, size: u64, version: u32) -> Attr {
        let access = match node {
            _ if self.is_auth(node) => Access::Secret,
            Node::BlockFile(_, view::BlockFile::Schematic | view::BlockFile::Top) | Node::NamesFile => {
                Access::Generated
            }
            _ => Access::Normal,
        };
        Attr::new(node.ino(), kind, size, access, self.mtime_of(node, version), &self.opts)
    }

    /// For a directory whose listing another process can change (a running
    /// server), what its mtime moves with (`Attr::listing_moves`); None for
    /// the others, which change only through this mount.
    fn listing_version(&self, node: &Node) -> Result<Option<u32>> {
        Ok(match node {
            Node::FindDir | Node::FindName(_) => match &self.index {
                Some(index) => Some(index.generation(self.store.as_ref()).map_err(FsError::io)? as u32),
                None => None,
            },
            // Blocks added or deleted: the map's version (Redis: its
            // number of blocks).
            Node::Blocks => self.store.listing_version().map(|v| v as u32),
            // What the block holds (a chest placed): as its files' mtime.
            Node::MetaRoot(pos) | Node::MetaDir(pos, _) | Node::FieldsDir(pos, _) => {
                Some(self.existing_block(*pos)?.version())
            }
            _ => None,
        })
    }

    fn stat(&self, node: &Node) -> Result<Attr> {
        if Self::is_dir(node) {
            self.check_dir(node)?;
            return Ok(match self.listing_version(node)? {
                Some(version) => Attr { listing_moves: true, ..self.attr(node, Kind::Dir, 0, version) },
                None => self.attr(node, Kind::Dir, 0, 0),
            });
        }
        if let Node::FindLink(..) = node {
            return self.link_attr(node);
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
            self.record_served(node, 0);
        }
        Ok(self.attr(node, Kind::File, size, version))
    }

    /// The node `name` in directory `parent`, if it could exist (existence
    /// is checked by `stat`).
    fn child(&self, parent: &Node, name: &[u8]) -> Result<Node> {
        let nf = FsError::not_found;
        match parent {
            Node::Root => Ok(match name {
                b"blocks" => Node::Blocks,
                b"node" => Node::NodeDir,
                b"find" if self.index.is_some() => Node::FindDir,
                b"names" if self.index.is_some() => Node::NamesFile,
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
                let f = view::BlockFile::from_name(name).ok_or_else(nf)?;
                Ok(Node::BlockFile(*pos, f))
            }
            Node::MetaRoot(pos) => {
                let c = parse_node_coords(name).ok_or_else(nf)?;
                Ok(Node::MetaDir(*pos, in_block(*pos, c).ok_or_else(nf)?))
            }
            Node::MetaDir(pos, p16) => match name {
                b"fields" => Ok(Node::FieldsDir(*pos, *p16)),
                _ => Ok(Node::MetaFile(*pos, *p16, view::MetaFile::from_name(name).ok_or_else(nf)?)),
            },
            Node::FieldsDir(pos, p16) => {
                let key = escape::name_to_key(name).ok_or_else(nf)?;
                // Numbers are handed out only for keys that exist.
                let (_, entry) = self.meta_entry(*pos, *p16)?;
                entry.get(&key).ok_or_else(nf)?;
                Ok(self.table_node(TableKey::Field { pos: *pos, p16: *p16, key }))
            }
            Node::NodeDir => Ok(Node::NodeFile(parse_node_coords(name).ok_or_else(nf)?)),
            Node::FindDir => self.find_name_node(name),
            Node::FindName(n) => {
                let s = std::str::from_utf8(name).map_err(|_| nf())?;
                Ok(Node::FindLink(*n, s.parse().map_err(|_| nf())?))
            }
            _ => Err(FsError::not_dir()),
        }
    }

    fn parent_of(&self, node: &Node) -> Result<Node> {
        Ok(match node {
            Node::Root | Node::Blocks | Node::NodeDir | Node::FindDir | Node::NamesFile => Node::Root,
            Node::FindName(_) => Node::FindDir,
            Node::FindLink(n, _) => Node::FindName(*n),
            Node::BlockDir(_) => Node::Blocks,
            Node::BlockFile(p, _) | Node::MetaRoot(p) => Node::BlockDir(*p),
            Node::MetaDir(p, _) => Node::MetaRoot(*p),
            Node::FieldsDir(p, i) | Node::MetaFile(p, i, _) => Node::MetaDir(*p, *i),
            Node::NodeFile(_) => Node::NodeDir,
            Node::Table(id) => match self.table_key(*id)? {
                TableKey::WorldFile(_) => Node::Root,
                TableKey::Field { pos, p16, .. } => Node::FieldsDir(pos, p16),
            },
        })
    }

    /// The file name a path-like message uses for a node.
    fn describe(&self, node: &Node) -> String {
        match node {
            Node::BlockFile(p, f) => format!("blocks/{p}/{}", f.name()),
            Node::MetaFile(p, i, f) => format!("blocks/{p}/meta/{}/{}", view::meta_dir_name(*p, *i), f.name()),
            Node::MetaDir(p, i) => format!("blocks/{p}/meta/{}", view::meta_dir_name(*p, *i)),
            Node::BlockDir(p) => format!("blocks/{p}"),
            Node::Root => String::new(),
            Node::Blocks => "blocks".into(),
            Node::NodeDir => "node".into(),
            Node::MetaRoot(p) => format!("blocks/{p}/meta"),
            Node::FieldsDir(p, i) => format!("blocks/{p}/meta/{}/fields", view::meta_dir_name(*p, *i)),
            Node::NodeFile([x, y, z]) => format!("node/{x},{y},{z}"),
            Node::FindDir => "find".into(),
            Node::NamesFile => "names".into(),
            Node::FindName(n) => format!(
                "find/{}",
                self.index.as_ref().and_then(|i| i.name_of(*n)).map_or_else(
                    || format!("#{n}"),
                    |name| String::from_utf8_lossy(&escape::key_to_name(&name)).into_owned()
                )
            ),
            Node::FindLink(n, p) => format!("{}/{p}", self.describe(&Node::FindName(*n))),
            Node::Table(id) => match self.table.lock().get(*id) {
                Some(TableKey::WorldFile(n)) => n.clone(),
                Some(TableKey::Field { pos, p16, key }) => format!(
                    "blocks/{pos}/meta/{}/fields/{}",
                    view::meta_dir_name(*pos, *p16),
                    String::from_utf8_lossy(&escape::key_to_name(key))
                ),
                None => format!("{node:?}"),
            },
        }
    }

    /// Number of stored blocks (for statfs).
    /// Counting scans the whole index (a second on millions of blocks), so
    /// the figure is reused for a minute.
    fn cached_count(&self) -> u64 {
        let mut c = self.block_count.lock();
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

/// The check inside every direct write of a mount made while no server
/// ran: a server that starts with worldfs_live marks it in its heartbeat
/// while its mods load, before it reads any block, and the write holds the
/// map's exclusive lock while it looks, so a server that read the old
/// blocks was seen, and one that starts later reads the new ones. Then
/// the write is refused: the server would save its copy over it.
fn no_server_started(dir: &std::path::Path) -> worldfs_store::WriteGate {
    let dir = dir.to_path_buf();
    Box::new(move || match worldfs_store::live::server_state(&dir) {
        worldfs_store::live::ServerState::Running { version, .. } => Err(worldfs_store::StoreError::Busy(format!(
            "a server ({version}, with worldfs_live) started on this world after this mount was made; the mount \
             writes the database itself, and the server would save its own copy of the blocks over such writes: \
             nothing written. Unmount and mount again to send changes through the server"
        ))),
        _ => Ok(()),
    })
}
