//! The filesystem core, the same for every kind of world: inode
//! resolution, attributes of its own files, listings with scratch files,
//! open handles and when they commit, and the names programs create. Plain
//! Rust signatures, so that it is tested without mounting; the FUSE adapter
//! (`fuse.rs`) only translates. What the files are comes from a [`Tree`]
//! (`tree.rs`) handed to [`WorldFs::new`] by the layer above, which knows
//! the kinds of world; the core names none of them, nor any store.
//!
//! * `mod.rs`: the core's state, its own files, lookup/getattr/forget,
//!   listings.
//! * `tree.rs`: the seam (`Tree`) and the services a tree reports through.
//! * `namespace.rs`: scratch files, aliases and the kernel's references to
//!   them, under one lock; create, mknod, mkdir, rmdir, unlink, rename.
//! * `handles.rs`: open handles, reads, writes, and the pure rule of when a
//!   handle commits.
//! * `scratch.rs`: editors' temporary files, kept in memory.
//! * `watch.rs`: files the kernel keeps until told they changed.
//! * `error.rs`: kind and message of every refusal (errno is the adapter's).

pub(crate) mod error;
mod handles;
mod namespace;
pub(crate) mod nested;
mod provenance;
mod scratch;
pub mod stats;
pub(crate) mod tree;
pub(crate) mod union;
mod watch;

pub use error::{ErrorKind, FsError, Result};
pub use provenance::Caller;
pub use tree::{NewName, ROOT, Services, Tree, list_numbered};

use namespace::Namespace;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime};

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
    /// Where the name index of a world is kept (None: the user's cache
    /// directory, chosen by the tree that keeps one).
    pub index_dir: Option<std::path::PathBuf>,
    /// How long a name index of a map without a change counter (not
    /// SQLite) is trusted after it was built.
    pub index_ttl: Duration,
    /// The snapshot store `snapshots/` shows (None: the world's own,
    /// `WORLD/worldfs-snapshots`, when it has one).
    pub snapshot_store: Option<std::path::PathBuf>,
    /// Worlds of at most this many blocks are listed with attributes on
    /// every page (`Tree::plus_everywhere`); 0: never.
    pub plus_max: u64,
    /// What the buffers of all files open for writing and all scratch
    /// files may hold together; a write past it fails with ENOSPC, so no
    /// number of writers can exhaust the daemon's memory.
    pub write_buffers: usize,
    /// The server's `max_objects_per_block` (None: its minetest.conf
    /// beside the worlds directory, else the engine's default 256).
    pub max_objects_per_block: Option<u16>,
    /// On a live mount, write the blocks of a big change the server does
    /// not hold to the database (`-o through_server` turns it off: every
    /// block goes through the server).
    pub live_direct: bool,
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
            // SAFETY: getuid and getgid have no preconditions.
            uid: unsafe { libc::getuid() },
            // SAFETY: as above.
            gid: unsafe { libc::getgid() },
            journal: true,
            group_commit: Duration::ZERO,
            guard_interval: Duration::from_millis(500),
            index_dir: None,
            index_ttl: Duration::from_secs(600),
            snapshot_store: None,
            // About 100 MB of kernel inodes and names at most.
            plus_max: 100_000,
            write_buffers: 512 << 20,
            max_objects_per_block: None,
            live_direct: true,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    /// A symbolic link (its target from `readlink`).
    Symlink,
}

/// Who may do what with a file or directory (the kernel enforces it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// 0755 / 0644 on writable mounts, 0555 / 0444 on read-only ones.
    Normal,
    /// Made by worldfs (README, write-errors, exports): 0444 / 0555.
    Generated,
    /// Only the mounting user may read it, nobody writes (password
    /// hashes): 0400.
    Secret,
    /// Only the mounting user may see it (accounts): 0700 / 0600 on
    /// writable mounts, 0500 / 0400 on read-only ones.
    Private,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attr {
    pub ino: u64,
    pub(crate) kind: Kind,
    pub size: u64,
    pub perm: u16,
    pub(crate) nlink: u32,
    pub mtime: SystemTime,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    /// A stand-in: the size is not known without work (an index over the
    /// whole world) that a listing should not cost. Given with a TTL of
    /// zero, so the kernel asks again (LOOKUP, GETATTR) before it uses it.
    pub(crate) provisional: bool,
    /// A directory whose listing others may change (a running server's
    /// saves: `blocks/`, `find/`, a block's `meta/`): kept for the TTL only,
    /// its mtime moving with the listing, since the kernel keeps listings
    /// (it opens directories itself) until a directory's mtime changes.
    pub(crate) listing_moves: bool,
}

impl Attr {
    /// Attributes owned by the mounting user, with the mode `access` and
    /// the mount's writability give.
    pub fn new(ino: u64, kind: Kind, size: u64, access: Access, mtime: SystemTime, opts: &Options) -> Attr {
        let writable = !opts.read_only && matches!(access, Access::Normal | Access::Private);
        let perm = match (kind, access, writable) {
            (Kind::Symlink, _, _) => 0o777,
            (Kind::File, Access::Secret, _) => 0o400,
            (Kind::Dir, Access::Private, true) => 0o700,
            (Kind::Dir, Access::Private, false) => 0o500,
            (Kind::File, Access::Private, true) => 0o600,
            (Kind::File, Access::Private, false) => 0o400,
            (Kind::Dir, _, true) => 0o755,
            (Kind::Dir, _, false) => 0o555,
            (_, _, true) => 0o644,
            (_, _, false) => 0o444,
        };
        Attr {
            ino,
            kind,
            size,
            perm,
            nlink: if kind == Kind::Dir { 2 } else { 1 },
            mtime,
            uid: opts.uid,
            gid: opts.gid,
            provisional: false,
            listing_moves: false,
        }
    }
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
    pub(crate) keep_cache: bool,
    /// Bypass the page cache. On writable mounts a file's content and size
    /// change with every commit, and the kernel's idea of the size can lag
    /// behind (its attributes are invalidated after the reply): through the
    /// page cache a reader could get the new content cut at the old size.
    /// Direct reads serve exactly the snapshot taken at open.
    pub(crate) direct_io: bool,
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
pub(crate) type Invalidator = Box<dyn Fn(Vec<Inval>) + Send + Sync>;

/// Receives the content of a small file just looked up, to be put in the
/// kernel's page cache after the reply (see `WorldFs::looked_up`).
pub(crate) type Pusher = Box<dyn Fn(u64, Arc<Vec<u8>>) + Send + Sync>;

/// Files at most one page long are pushed after their look-up,
const PUSH_MAX: u64 = 4096;
/// while the kernel keeps at most this many files until told: a pushed
/// page stays in the page cache until read or reclaimed, and a glob over
/// millions of files looks them all up before `grep` reads the first. On
/// the 2.8M-block world (11 GB of pages) the kernel then reclaimed pages
/// and inodes before they were read: 3.9 requests per file instead of 3.
/// 100 000 files are at most 400 MB of pages.
const PUSH_FILES_MAX: usize = 100_000;

/// The core's own inodes: tag [`tree::CORE_TAG`] in the top four bits.
const fn core_ino(n: u64) -> u64 {
    (tree::CORE_TAG << 60) | n
}
pub(crate) const README: u64 = core_ino(1);
pub(crate) const WRITE_ERRORS: u64 = core_ino(2);
/// `MNT/.worldfs-stats`: the requests served so far (`stats`); found by
/// its name, never listed.
pub(crate) const STATS_FILE: u64 = core_ino(3);
const STATS_NAME: &[u8] = b".worldfs-stats";
/// Scratch files are numbered from here.
const FIRST_SCRATCH: u64 = core_ino(16);

fn is_core(ino: u64) -> bool {
    ino >> 60 == tree::CORE_TAG
}

/// Cookies of the core's own entries of the root, after the tree's.
const README_COOKIE: u64 = tree::SCRATCH_COOKIES - 2;
const WRITE_ERRORS_COOKIE: u64 = tree::SCRATCH_COOKIES - 1;

/// A copy of a file's content and when it was taken.
type Snapshot = (std::time::Instant, Arc<Vec<u8>>);

/// What an inode number stands for, once aliases are followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Readme,
    WriteErrors,
    Stats,
    Scratch(u64),
    Tree(u64),
}

pub struct WorldFs {
    tree: Arc<dyn Tree>,
    services: Arc<Services>,
    opts: Options,
    // Lock order, where two are held at once: handles before the
    // namespace; the namespace before `reads` and any lock inside the tree.
    ns: Mutex<Namespace>,
    handles: Mutex<HashMap<u64, handles::Handle>>,
    /// What each process last read of files of the world (the bases of
    /// the scratch files it writes).
    reads: Mutex<provenance::Reads>,
    /// Bytes held by the buffers of write handles (changed under the
    /// handles lock; scratch files count theirs in `Scratch`, which reads
    /// this to keep the two within `Options::write_buffers`).
    buffered: Arc<std::sync::atomic::AtomicUsize>,
    next_fh: AtomicU64,
    /// Copies of files being read without a handle, by inode, with when
    /// they were taken (`read_unopened`).
    unopened: Mutex<HashMap<u64, Snapshot>>,
    /// Files whose attributes the kernel keeps past the TTL.
    watch: watch::Watch,
    pusher: std::sync::OnceLock<Pusher>,
    /// Files handed to the pusher and not read since (`push_still_wanted`).
    unpushed: Mutex<std::collections::HashSet<u64>>,
    mount_time: SystemTime,
}

impl WorldFs {
    /// A core serving `tree`, which reports through `services`.
    pub fn new(tree: Arc<dyn Tree>, services: Arc<Services>, opts: Options) -> WorldFs {
        let buffered = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut ns = Namespace::default();
        ns.scratch.set_budget(opts.write_buffers, buffered.clone());
        WorldFs {
            tree,
            services,
            opts,
            ns: Mutex::new(ns),
            buffered,
            handles: Mutex::new(HashMap::new()),
            reads: Mutex::new(provenance::Reads::default()),
            next_fh: AtomicU64::new(1),
            unopened: Mutex::new(HashMap::new()),
            watch: watch::Watch::default(),
            pusher: std::sync::OnceLock::new(),
            unpushed: Mutex::new(std::collections::HashSet::new()),
            mount_time: SystemTime::now(),
        }
    }

    /// Where invalidations go (set once by the FUSE layer). Every inode
    /// invalidated is also invalidated under the numbers of its aliases.
    pub fn set_invalidator(self: &Arc<Self>, f: Invalidator) {
        let weak = Arc::downgrade(self);
        self.services.set_invalidator(Box::new(move |mut list: Vec<Inval>| {
            if let Some(fs) = weak.upgrade() {
                let ns = fs.ns.lock();
                let extra: Vec<Inval> = list
                    .iter()
                    .filter_map(|i| match i {
                        Inval::Inode(t) => Some(ns.aliases_of(*t)),
                        _ => None,
                    })
                    .flatten()
                    .map(Inval::Inode)
                    .collect();
                drop(ns);
                list.extend(extra);
            }
            f(list)
        }));
        watch::start(Arc::downgrade(self), self.opts.ttl);
    }

    /// What is mounted, for the log.
    pub(crate) fn describe(&self) -> String {
        self.tree.describe()
    }

    /// How long the kernel may cache attributes and missing names.
    pub(crate) fn ttl(&self) -> Duration {
        self.opts.ttl
    }

    /// How long the kernel may keep a name it found (never less than `ttl`).
    pub fn entry_ttl(&self) -> Duration {
        self.opts.entry_ttl.max(self.opts.ttl)
    }

    /// How long the kernel may keep the name of `a`: not at all for the
    /// stats file, whose every reading must come from the daemon.
    pub(crate) fn entry_ttl_of(&self, a: &Attr) -> Duration {
        if a.ino == STATS_FILE { Duration::ZERO } else { self.entry_ttl() }
    }

    /// The tree this core serves (examples/fuse_floor.rs renders it).
    pub fn tree(&self) -> &dyn Tree {
        self.tree.as_ref()
    }

    /// The text of `MNT/.worldfs-stats`.
    pub(crate) fn stats_text(&self) -> String {
        stats::stats().text_with(&self.tree.stats_counters())
    }

    /// How long the kernel may keep these attributes: a file's size changes
    /// with its content, a directory's attributes only through this mount
    /// (which invalidates them), so those are kept as long as names, except
    /// a directory whose listing others change (`Attr::listing_moves`); so are
    /// a file's when the tree watches it for outside changes (`watch`).
    /// Called for every reply that hands attributes to the kernel.
    pub fn attr_ttl(&self, a: &Attr) -> Duration {
        match a.kind {
            _ if a.ino == STATS_FILE || a.provisional => Duration::ZERO,
            Kind::Dir if a.listing_moves => self.ttl(),
            Kind::Dir => self.entry_ttl(),
            Kind::File if !is_core(a.ino) && self.tree.watched(a.ino) && self.watch.hand_out(a.ino) => self.entry_ttl(),
            Kind::File | Kind::Symlink => self.ttl(),
        }
    }

    /// Whether the kernel may send READDIRPLUS for every page of every
    /// listing (a kernel inode for each entry listed): for small worlds.
    pub fn plus_everywhere(&self) -> bool {
        self.tree.plus_everywhere()
    }

    /// Whether commits wait for a running server (see
    /// `Tree::commits_wait_for_server`).
    pub fn commits_wait_for_server(&self) -> bool {
        self.tree.commits_wait_for_server()
    }

    /// How many files the kernel keeps until told (for tests).
    pub fn watched_count(&self) -> usize {
        self.watch.len()
    }

    /// Whether the kernel may cache that a name is missing from `dir`.
    pub(crate) fn negative_entries(&self, dir: u64) -> bool {
        match self.target(dir) {
            Ok(Target::Tree(d)) => self.tree.negative_entries(d),
            _ => true,
        }
    }

    /// The lines of MNT/write-errors.
    pub fn write_errors(&self) -> Vec<String> {
        self.services.write_errors()
    }

    /// A count for statfs.
    pub fn block_count(&self) -> u64 {
        self.tree.count()
    }

    /// The target of a symbolic link.
    pub fn readlink(&self, ino: u64) -> Result<Vec<u8>> {
        match self.target(ino)? {
            Target::Tree(t) => self.tree.readlink(t),
            _ => Err(FsError::invalid("not a symbolic link")),
        }
    }

    /// What an inode stands for (aliases followed).
    fn target(&self, ino: u64) -> Result<Target> {
        match ino {
            README => return Ok(Target::Readme),
            WRITE_ERRORS => return Ok(Target::WriteErrors),
            STATS_FILE => return Ok(Target::Stats),
            _ => {}
        }
        if !is_core(ino) {
            return Ok(Target::Tree(ino));
        }
        let ns = self.ns.lock();
        if let Some(t) = ns.alias(ino) {
            return Ok(Target::Tree(t));
        }
        if ns.scratch.get(ino).is_some() {
            return Ok(Target::Scratch(ino));
        }
        Err(FsError::not_found())
    }

    /// A directory of the tree (scratch and core files are not directories).
    fn tree_dir(&self, ino: u64) -> Result<u64> {
        match self.target(ino)? {
            Target::Tree(d) => {
                let a = self.tree.getattr(d)?;
                if a.kind == Kind::Dir { Ok(d) } else { Err(FsError::not_dir()) }
            }
            _ => Err(FsError::not_dir()),
        }
    }

    fn readme(&self) -> Vec<u8> {
        self.tree.readme().into_bytes()
    }

    /// Attributes of the core's own files.
    fn core_attr(&self, t: Target, ino: u64) -> Result<Attr> {
        let generated =
            |size: usize| Attr::new(ino, Kind::File, size as u64, Access::Generated, self.mount_time, &self.opts);
        match t {
            Target::Readme => Ok(generated(self.readme().len())),
            Target::WriteErrors => {
                let mut a = generated(self.write_errors().concat().len());
                a.mtime = SystemTime::now();
                Ok(a)
            }
            Target::Stats => {
                let mut a = generated(self.stats_text().len());
                a.mtime = SystemTime::now();
                Ok(a)
            }
            Target::Scratch(s) => {
                let ns = self.ns.lock();
                let f = ns.scratch.get(s).ok_or_else(FsError::not_found)?;
                let mut a = Attr::new(ino, Kind::File, f.data.len() as u64, Access::Normal, f.mtime, &self.opts);
                a.perm = f.mode & 0o7777;
                Ok(a)
            }
            Target::Tree(_) => unreachable!("not a core file"),
        }
    }

    pub fn getattr(&self, ino: u64) -> Result<Attr> {
        let mut a = match self.target(ino)? {
            Target::Tree(t) => {
                let mut a = self.tree.getattr(t)?;
                if a.kind == Kind::File
                    && let Some(size) = self.size_being_written(t)
                {
                    a.size = size;
                }
                a
            }
            t => self.core_attr(t, ino)?,
        };
        a.ino = ino;
        Ok(a)
    }

    /// Look a name up. On success the kernel holds one more reference to
    /// the inode (see `forget`).
    pub fn lookup(&self, parent: u64, name: &OsStr) -> Result<Attr> {
        let dir = self.tree_dir(parent)?;
        let name = name.as_bytes();
        if dir == ROOT {
            match name {
                b"README" => return self.core_attr(Target::Readme, README),
                b"write-errors" if !self.opts.read_only => {
                    return self.core_attr(Target::WriteErrors, WRITE_ERRORS);
                }
                STATS_NAME => return self.core_attr(Target::Stats, STATS_FILE),
                _ => {}
            }
        }
        match self.tree.lookup(dir, name) {
            Ok(a) => {
                self.tree.remember(a.ino);
                Ok(a)
            }
            Err(e) if e.kind == ErrorKind::NotFound => {
                let ino = self.ns.lock().scratch.lookup(dir, name).ok_or(e)?;
                let a = self.core_attr(Target::Scratch(ino), ino)?;
                self.remember(ino);
                Ok(a)
            }
            // The database failed (a lost server, say): on a writable
            // mount the reason goes to write-errors, as the program that
            // got EIO may have been about to write.
            Err(e) if e.kind == ErrorKind::Io && !self.opts.read_only => {
                self.recorded(|| self.describe_name("look up", parent, OsStr::from_bytes(name)), Err(e))
            }
            Err(e) => Err(e),
        }
    }

    /// Where `looked_up` sends what the kernel may keep (the FUSE layer
    /// stores it in the page cache from a thread of its own).
    pub fn set_pusher(&self, f: Pusher) {
        let _ = self.pusher.set(f);
    }

    /// After the reply to a look-up of `a`: a file the kernel keeps until
    /// told (`watch`) and at most a page long is read at once and pushed
    /// into the kernel's page cache, so the program that looked it up (a
    /// glob, then `grep`) reads it without a READ request. Its size was
    /// known only by rendering it, so this costs a copy, not a decode. The
    /// watch drops the page with the attributes when the map changes.
    pub fn looked_up(&self, a: &Attr) {
        let Some(push) = self.pusher.get() else { return };
        // Writable mounts read with direct I/O: a pushed page would not be read.
        let small = self.opts.read_only && a.kind == Kind::File && a.size > 0 && a.size <= PUSH_MAX && !is_core(a.ino);
        if !small || !self.watch.holds_within(a.ino, PUSH_FILES_MAX) {
            return;
        }
        if let Ok(data) = self.tree.read(a.ino)
            && data.len() as u64 == a.size
        {
            self.unpushed.lock().insert(a.ino);
            push(a.ino, data);
        }
    }

    /// Whether the content handed to the pusher for `ino` is still worth
    /// storing in the page cache: not when the file was read meanwhile (a
    /// program that reads what it just looked up, as `xargs grep` does,
    /// reads before the push could come, and the READ filled the page
    /// cache). Called once per push, which it takes off the list.
    pub fn push_still_wanted(&self, ino: u64) -> bool {
        self.unpushed.lock().remove(&ino)
    }

    /// `ino` was read: a push of it is not needed any more.
    fn was_read(&self, ino: u64) {
        let mut unpushed = self.unpushed.lock();
        if !unpushed.is_empty() {
            unpushed.remove(&ino);
        }
    }

    /// The kernel was handed `ino` once more.
    fn remember(&self, ino: u64) {
        if is_core(ino) {
            self.ns.lock().remember(ino);
        } else {
            self.tree.remember(ino);
        }
    }

    /// The kernel dropped `n` references to `ino`.
    pub fn forget(&self, ino: u64, n: u64) {
        if !is_core(ino) {
            self.watch.forget(ino);
            self.tree.forget(ino, n);
            return;
        }
        let dropped = self.ns.lock().forget(ino, n);
        if let Some(target) = dropped {
            // The alias held a reference of its own to its target.
            self.tree.forget(target, 1);
        }
    }

    /// List a directory from `offset` (0 = the start). `add` receives each
    /// entry (with its attributes when `plus`) and returns true when the
    /// reply buffer is full; the entry it was given is then not consumed.
    pub fn readdir(
        &self,
        ino: u64,
        offset: u64,
        plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<()> {
        let dir = self.tree_dir(ino)?;
        let dots = [(1u64, ".", dir), (2, "..", self.tree.parent(dir)?)];
        for (cookie, name, node) in dots {
            if offset < cookie {
                let attr = if plus { Some(self.tree.getattr(node)?) } else { None };
                let entry = DirEntry { ino: node, offset: cookie, kind: Kind::Dir, name: name.into() };
                if add(&entry, attr.as_ref()) {
                    return Ok(());
                }
            }
        }
        let mut full = false;
        if offset < README_COOKIE {
            let mut counted = |e: &DirEntry, a: Option<&Attr>| {
                let f = add(e, a);
                if plus && !f {
                    self.tree.remember(e.ino);
                }
                full = f;
                f
            };
            self.tree.list(dir, offset.max(2), plus, &mut counted)?;
            if full {
                return Ok(());
            }
        }
        let mut own: Vec<(u64, OsString, Target, u64)> = Vec::new();
        if dir == ROOT {
            own.push((README_COOKIE, "README".into(), Target::Readme, README));
            if !self.opts.read_only {
                own.push((WRITE_ERRORS_COOKIE, "write-errors".into(), Target::WriteErrors, WRITE_ERRORS));
            }
        }
        let scratch = self.ns.lock().scratch.children(dir);
        for (i, (name, s)) in scratch.into_iter().enumerate() {
            // A pending name the tree has taken meanwhile is listed once.
            if self.tree.lookup(dir, &name).is_err() {
                let name = OsStr::from_bytes(&name).to_os_string();
                own.push((tree::SCRATCH_COOKIES + i as u64, name, Target::Scratch(s), s));
            }
        }
        for (cookie, name, t, ino) in own {
            if offset >= cookie {
                continue;
            }
            let attr = match (plus, self.core_attr(t, ino)) {
                (false, _) => None,
                (true, Ok(a)) => Some(a),
                (true, Err(e)) if e.kind == ErrorKind::NotFound => continue,
                (true, Err(e)) => return Err(e),
            };
            let entry = DirEntry { ino, offset: cookie, kind: Kind::File, name };
            if add(&entry, attr.as_ref()) {
                return Ok(());
            }
            if plus {
                self.remember(ino);
            }
        }
        Ok(())
    }

    /// A path-like name of an inode for messages.
    fn path(&self, ino: u64) -> String {
        match self.target(ino) {
            Ok(Target::Readme) => "README".into(),
            Ok(Target::WriteErrors) => "write-errors".into(),
            Ok(Target::Stats) => ".worldfs-stats".into(),
            Ok(Target::Tree(t)) => self.tree.path(t),
            Ok(Target::Scratch(s)) => {
                let ns = self.ns.lock();
                match ns.scratch.get(s) {
                    Some(f) => {
                        let dir = self.tree.path(f.parent);
                        let name = error::escape_name(&f.name);
                        if dir.is_empty() { name } else { format!("{dir}/{name}") }
                    }
                    None => format!("scratch file {s:#x}"),
                }
            }
            Err(_) => format!("inode {ino:#x}"),
        }
    }

    /// "op path/name" for messages about a name in directory `parent`.
    fn describe_name(&self, op: &str, parent: u64, name: &OsStr) -> String {
        let dir = self.path(parent);
        // Escaped: a message is one line of write-errors.
        let name = error::escape_name(name.as_bytes());
        if dir.is_empty() { format!("{op} {name}") } else { format!("{op} {dir}/{name}") }
    }

    /// Run a write operation; a refusal is recorded for MNT/write-errors
    /// (once: a tree may have recorded it already).
    fn recorded<T>(&self, what: impl FnOnce() -> String, r: Result<T>) -> Result<T> {
        match r {
            Err(mut e) if !e.reported => {
                let what = what();
                let line =
                    if e.message.starts_with(&what) { e.message.clone() } else { format!("{what}: {}", e.message) };
                self.services.report(line);
                e.reported = true;
                Err(e)
            }
            r => r,
        }
    }

    /// A refusal of a change to names (mkdir, rmdir, unlink, rename) is
    /// recorded too, except "no such file" and "exists", which say all
    /// (and `mkdir -p` meets the latter in normal use).
    fn name_change<T>(&self, what: impl FnOnce() -> String, r: Result<T>) -> Result<T> {
        match r {
            Err(e) if matches!(e.kind, ErrorKind::NotFound | ErrorKind::Exists) => Err(e),
            r => self.recorded(what, r),
        }
    }

    fn invalidate(&self, list: Vec<Inval>) {
        self.services.invalidate(list);
    }
}
