//! The thin adapter between the kernel (fuser) and the filesystem core:
//! translate arguments, call the core, reply. The only place that knows
//! fuser types, and the one table from core errors to errno.

use crate::fs::stats::{self, Op, Phase};
use crate::fs::{Attr, Caller, ErrorKind, FsError, Inval, Kind, WorldFs};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags, KernelConfig,
    LockOwner, Notifier, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use std::ffi::OsStr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// What worldfs asks of the kernel at INIT (the floor example asks the
/// same): the flags it can have of those it wants, and the background
/// requests. `plus_everywhere`: READDIRPLUS on every page of a listing.
/// Whether the kernel answers OPENDIR itself (no OPENDIR requests).
pub fn negotiate(config: &mut KernelConfig, plus_everywhere: bool) -> bool {
    // readdirplus (in the kernel's adaptive mode) saves a LOOKUP per
    // entry for `ls -l`; atomic O_TRUNC brings truncation inside OPEN.
    let wanted = InitFlags::FUSE_DO_READDIRPLUS
        | InitFlags::FUSE_READDIRPLUS_AUTO
        | InitFlags::FUSE_ATOMIC_O_TRUNC
        | InitFlags::FUSE_PARALLEL_DIROPS
        // drop cached pages when a file's mtime changes (fs::mtime_of)
        | InitFlags::FUSE_AUTO_INVAL_DATA
        // mmap of files opened with FOPEN_DIRECT_IO (kernel 6.6+)
        | InitFlags::FUSE_DIRECT_IO_ALLOW_MMAP;
    // Small worlds: READDIRPLUS on every page, not only the first (the
    // kernel's adaptive mode): a glob over `blocks/*/names` then needs
    // no LOOKUP of each block directory.
    let wanted = if plus_everywhere { wanted - InitFlags::FUSE_READDIRPLUS_AUTO } else { wanted };
    if let Err(missing) = config.add_capabilities(wanted) {
        let _ = config.add_capabilities(wanted - missing);
    }
    let _ = config.set_max_background(64);
    config.capabilities().contains(InitFlags::FUSE_NO_OPENDIR_SUPPORT)
}

/// The mount options every worldfs mount has (`name`: the file system's
/// name and subtype in /proc/mounts), read-only or not.
pub fn mount_options(name: &str, read_only: bool) -> Vec<fuser::MountOption> {
    use fuser::MountOption as O;
    vec![
        O::FSName(name.into()),
        O::Subtype(name.into()),
        O::DefaultPermissions,
        O::NoAtime,
        O::NoDev,
        O::NoSuid,
        if read_only { O::RO } else { O::RW },
    ]
}

/// The FUSE threads of a mount that does not say (`-o threads=`): one a
/// core, at most 4.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get().min(4)).unwrap_or(2)
}

pub(crate) struct FuseAdapter {
    fs: Arc<WorldFs>,
    /// Serve each request on its caller's CPU (see `affinity`).
    follow_cpu: bool,
    /// Keep the serving CPUs awake while requests flow (see `awake`).
    awake: Option<crate::sys::awake::Awake>,
    /// The kernel opens directories itself when OPENDIR answers ENOSYS
    /// (Linux 5.1+; told at INIT).
    local_opendir: bool,
    /// Called once when the session has ended (the kernel let go of the
    /// mount and every serving thread has stopped).
    on_end: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl FuseAdapter {
    pub(crate) fn new(fs: Arc<WorldFs>, follow_cpu: bool, spin: bool) -> FuseAdapter {
        FuseAdapter {
            fs,
            follow_cpu,
            awake: spin.then(crate::sys::awake::Awake::new),
            local_opendir: false,
            on_end: None,
        }
    }

    /// Call `f` when the session ends (fuser's `destroy`, after its last
    /// serving thread stopped).
    pub(crate) fn on_end(mut self, f: impl FnOnce() + Send + Sync + 'static) -> FuseAdapter {
        self.on_end = Some(Box::new(f));
        self
    }
}

/// Send the core's invalidations to the kernel from a thread of their own:
/// a notification sent from inside a request handler can deadlock.
pub(crate) fn start_invalidator(fs: &Arc<WorldFs>, notifier: Notifier) -> std::io::Result<()> {
    start_pusher(fs, notifier.clone())?;
    let (tx, rx) = std::sync::mpsc::channel::<Vec<Inval>>();
    std::thread::Builder::new().name("worldfs-inval".into()).spawn(move || {
        for list in rx {
            for inv in list {
                // ENOENT just means the kernel had nothing cached.
                let _ = match &inv {
                    Inval::Inode(ino) => notifier.inval_inode(INodeNo(*ino), 0, 0),
                    Inval::Entry(parent, name) => notifier.inval_entry(INodeNo(*parent), name),
                };
            }
        }
    })?;
    let tx = parking_lot::Mutex::new(tx);
    fs.set_invalidator(Box::new(move |list| {
        let _ = tx.lock().send(list);
    }));
    Ok(())
}

/// A pushed page waits this long: the kernel makes the inode of a look-up
/// only after it has the reply, and a store for an inode it does not have
/// yet is refused (then the file is READ as usual).
const PUSH_DELAY: Duration = Duration::from_millis(2);
/// A push older than this is dropped: the watch's invalidation rounds, at
/// least 100 ms apart, must come after any page pushed before a change.
const PUSH_STALE: Duration = Duration::from_millis(50);

/// Put the small files the core hands over (`WorldFs::looked_up`) into the
/// kernel's page cache, from a thread of its own.
fn start_pusher(fs: &Arc<WorldFs>, notifier: Notifier) -> std::io::Result<()> {
    let (tx, rx) = std::sync::mpsc::channel::<(Instant, u64, Arc<Vec<u8>>)>();
    // Weak: the core holds the sending side, which ends this thread.
    let core = Arc::downgrade(fs);
    std::thread::Builder::new().name("worldfs-push".into()).spawn(move || {
        for (at, ino, data) in rx {
            let age = at.elapsed();
            std::thread::sleep(PUSH_DELAY.saturating_sub(age));
            let wanted = core.upgrade().is_some_and(|fs| fs.push_still_wanted(ino));
            if !wanted || age > PUSH_STALE {
                continue;
            }
            // ENOENT: the kernel has no inode for it (any more).
            let _ = stats::timed(Phase::Push, || notifier.store(INodeNo(ino), 0, &data));
        }
    })?;
    let tx = parking_lot::Mutex::new(tx);
    fs.set_pusher(Box::new(move |ino, data| {
        let _ = tx.lock().send((Instant::now(), ino, data));
    }));
    Ok(())
}

/// The one table from the core's kinds of error to errno: what the
/// programs on the mount see.
pub(crate) fn errno_of(kind: ErrorKind) -> i32 {
    match kind {
        ErrorKind::NotFound => libc::ENOENT,
        ErrorKind::NotDir => libc::ENOTDIR,
        ErrorKind::IsDir => libc::EISDIR,
        ErrorKind::ReadOnly => libc::EROFS,
        ErrorKind::NotPermitted => libc::EPERM,
        ErrorKind::Denied => libc::EACCES,
        ErrorKind::Invalid => libc::EINVAL,
        ErrorKind::Io => libc::EIO,
        ErrorKind::BadHandle => libc::EBADF,
        ErrorKind::NoSpace => libc::ENOSPC,
        ErrorKind::TooLarge => libc::EFBIG,
        ErrorKind::Stale => libc::ESTALE,
        ErrorKind::Exists => libc::EEXIST,
        ErrorKind::Busy => libc::EBUSY,
        ErrorKind::AcrossBoundary => libc::EXDEV,
    }
}

/// The single error translation: log, then the errno.
fn errno(op: &str, e: &FsError) -> Errno {
    // One line in the log, whatever names the message quotes.
    let message = crate::fs::error::one_line(&e.message);
    match e.kind {
        // Normal answers: a missing name, `mkdir -p` of an existing one.
        ErrorKind::NotFound | ErrorKind::Exists => log::debug!("{op}: {message}"),
        // Refusals of what the user asked.
        ErrorKind::Invalid | ErrorKind::ReadOnly | ErrorKind::NotPermitted => log::info!("{op}: {message}"),
        _ => log::warn!("{op}: {message}"),
    }
    Errno::from_i32(errno_of(e.kind))
}

/// Run one request. A panic in it (a bug) costs that request only: it is
/// caught here and logged, and the request is answered EIO (its reply,
/// dropped unsent while the panic unwinds, sends EIO itself: fuser's `Drop`
/// for replies). Uncaught, it would end the fuser thread serving the
/// request, and the mount with it for the first thread. The locks it held
/// are parking_lot's, which a panic does not poison, so later requests run
/// on (see "Panics and locks" in docs/design.md). Returns whether the
/// request ran to its end.
pub fn run_request(op: &str, request: impl FnOnce()) -> bool {
    // Unwind safety: what a panic can leave half-changed under a lock is
    // listed in docs/design.md; each is repaired or harmless.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(request)) {
        Ok(()) => true,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("no message");
            log::error!(
                "{op}: internal error (a panic: {}); the request failed with EIO",
                crate::fs::error::one_line(what)
            );
            false
        }
    }
}

fn file_attr(a: &Attr) -> FileAttr {
    FileAttr {
        ino: INodeNo(a.ino),
        size: a.size,
        blocks: a.size.div_ceil(512),
        atime: a.mtime,
        mtime: a.mtime,
        ctime: a.mtime,
        crtime: a.mtime,
        kind: file_type(a.kind),
        perm: a.perm,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        rdev: 0,
        // Programs size their buffers by this; our files are read whole.
        blksize: 64 * 1024,
        flags: 0,
    }
}

fn file_type(k: Kind) -> FileType {
    match k {
        Kind::Dir => FileType::Directory,
        Kind::File => FileType::RegularFile,
        Kind::Symlink => FileType::Symlink,
    }
}

impl FuseAdapter {
    fn entry(&self, reply: ReplyEntry, r: Result<Attr, FsError>, op: &str) {
        match r {
            Ok(a) => {
                let (attr_ttl, entry_ttl) = (self.fs.attr_ttl(&a), self.fs.entry_ttl_of(&a));
                stats::timed(Phase::Reply, || {
                    reply.entry_with_ttls(&attr_ttl, &entry_ttl, &file_attr(&a), Generation(0))
                })
            }
            Err(e) => reply.error(errno(op, &e)),
        }
    }

    /// Every request goes through here: it is served (see `run_request`)
    /// and counted (`fs::stats`, shown in `MNT/.worldfs-stats`).
    fn serve(&self, op: Op, name: &str, req: &Request, request: impl FnOnce()) {
        let t0 = std::time::Instant::now();
        if let Some(a) = &self.awake {
            a.touch();
        }
        if self.follow_cpu {
            crate::sys::affinity::follow(req.pid());
        }
        run_request(name, request);
        stats::request(op, t0);
    }

    /// Who asks: the process and its process group (a shell pipeline or
    /// job), whose reads a scratch file it writes may be made from.
    fn caller(req: &Request) -> Caller {
        let pid = req.pid();
        // pid 0: the kernel itself, no process; getpgid(0) would be ours.
        // A process already gone has no group (-1).
        // SAFETY: getpgid takes a number and touches no memory of ours.
        let group = if pid == 0 { -1 } else { unsafe { libc::getpgid(pid as libc::pid_t) } };
        Caller { pid, group: u32::try_from(group).ok() }
    }

    fn empty(&self, reply: ReplyEmpty, r: Result<(), FsError>, op: &str) {
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(op, &e)),
        }
    }
}

impl Filesystem for FuseAdapter {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        self.local_opendir = negotiate(config, self.fs.plus_everywhere());
        Ok(())
    }

    fn destroy(&mut self) {
        if let Some(f) = self.on_end.take() {
            f();
        }
    }

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        self.serve(Op::Lookup, "lookup", req, || {
            match self.fs.lookup(parent.0, name) {
                // A negative entry (inode 0) lets the kernel answer repeated
                // lookups of a missing name itself for the TTL. Not under node/,
                // where a name can appear through another directory (mkdir of
                // its block) without an invalidation for it.
                Err(e) if e.kind == ErrorKind::NotFound && self.fs.negative_entries(parent.0) => {
                    let mut attr = file_attr(&Attr {
                        ino: 0,
                        kind: Kind::File,
                        size: 0,
                        perm: 0,
                        nlink: 0,
                        mtime: SystemTime::UNIX_EPOCH,
                        uid: 0,
                        gid: 0,
                        provisional: false,
                        listing_moves: false,
                    });
                    attr.ino = INodeNo(0);
                    reply.entry(&self.fs.ttl(), &attr, Generation(0));
                }
                r => {
                    let found = r.as_ref().ok().cloned();
                    self.entry(reply, r, "lookup");
                    if let Some(a) = found {
                        self.fs.looked_up(&a);
                    }
                }
            }
        });
    }

    fn readlink(&self, req: &Request, ino: INodeNo, reply: ReplyData) {
        self.serve(Op::Readlink, "readlink", req, || match self.fs.readlink(ino.0) {
            Ok(target) => reply.data(&target),
            Err(e) => reply.error(errno("readlink", &e)),
        });
    }

    fn forget(&self, req: &Request, ino: INodeNo, nlookup: u64) {
        self.serve(Op::Forget, "forget", req, || {
            self.fs.forget(ino.0, nlookup);
        });
    }

    fn getattr(&self, req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        self.serve(Op::Getattr, "getattr", req, || match self.fs.getattr_open(ino.0, fh.map(|f| f.0)) {
            Ok(a) => {
                let ttl = self.fs.attr_ttl(&a);
                stats::timed(Phase::Reply, || reply.attr(&ttl, &file_attr(&a)))
            }
            Err(e) => reply.error(errno("getattr", &e)),
        });
    }

    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        self.serve(Op::Setattr, "setattr", req, || match self.fs.setattr(ino.0, fh.map(|f| f.0), size, mode) {
            Ok(a) => reply.attr(&self.fs.attr_ttl(&a), &file_attr(&a)),
            Err(e) => reply.error(errno("setattr", &e)),
        });
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        self.serve(Op::Mknod, "mknod", req, || {
            self.entry(reply, self.fs.mknod(parent.0, name, mode), "mknod");
        });
    }

    fn mkdir(&self, req: &Request, parent: INodeNo, name: &OsStr, _mode: u32, _umask: u32, reply: ReplyEntry) {
        self.serve(Op::Mkdir, "mkdir", req, || {
            self.entry(reply, self.fs.mkdir(parent.0, name), "mkdir");
        });
    }

    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.serve(Op::Unlink, "unlink", req, || {
            self.empty(reply, self.fs.unlink(parent.0, name), "unlink");
        });
    }

    fn rmdir(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.serve(Op::Rmdir, "rmdir", req, || {
            self.empty(reply, self.fs.rmdir(parent.0, name), "rmdir");
        });
    }

    fn rename(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        self.serve(Op::Rename, "rename", req, || {
            self.empty(reply, self.fs.rename(parent.0, name, newparent.0, newname, flags.bits()), "rename");
        });
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        self.serve(Op::Open, "open", req, || {
            if self.fs.opens_are_local() {
                // The kernel remembers ENOSYS: no more OPEN, FLUSH or RELEASE
                // round trips on this mount (two or three of a file's five).
                reply.error(Errno::ENOSYS);
                return;
            }
            match self.fs.open_by(ino.0, flags.0, Self::caller(req)) {
                Ok(o) => {
                    let mut f = if o.keep_cache { FopenFlags::FOPEN_KEEP_CACHE } else { FopenFlags::empty() };
                    if o.direct_io {
                        f |= FopenFlags::FOPEN_DIRECT_IO;
                    }
                    // A file opened only for reading has nothing to commit at
                    // close: the kernel then skips the FLUSH request, one of
                    // the five synchronous round trips of `cat FILE`.
                    if flags.0 & libc::O_ACCMODE == libc::O_RDONLY && flags.0 & libc::O_TRUNC == 0 {
                        f |= FopenFlags::FOPEN_NOFLUSH;
                    }
                    reply.opened(FileHandle(o.fh), f)
                }
                Err(e) => reply.error(errno("open", &e)),
            }
        });
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        self.serve(Op::Create, "create", req, || {
            match self.fs.create_by(parent.0, name, mode, flags, Self::caller(req)) {
                Ok((a, o)) => {
                    reply.created(&self.fs.ttl(), &file_attr(&a), Generation(0), FileHandle(o.fh), FopenFlags::empty())
                }
                Err(e) => reply.error(errno("create", &e)),
            }
        });
    }

    fn read(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        self.serve(Op::Read, "read", req, || {
            let r = match fh.0 {
                0 => self.fs.read_unopened(ino.0, offset, size),
                fh => self.fs.read(fh, offset, size),
            };
            match r {
                Ok(data) => stats::timed(Phase::Reply, || reply.data(&data)),
                Err(e) => reply.error(errno("read", &e)),
            }
        });
    }

    fn write(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        self.serve(Op::Write, "write", req, || match self.fs.write(fh.0, offset, data) {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(errno("write", &e)),
        });
    }

    fn flush(&self, req: &Request, _ino: INodeNo, fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        self.serve(Op::Flush, "flush", req, || {
            if fh.0 == 0 {
                // A file the kernel opened itself (see `open`): nothing to
                // commit, and ENOSYS stops further FLUSH requests.
                reply.error(Errno::ENOSYS);
                return;
            }
            self.empty(reply, self.fs.flush(fh.0, req.pid()), "flush");
        });
    }

    fn fsync(&self, req: &Request, _ino: INodeNo, fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        self.serve(Op::Fsync, "fsync", req, || {
            match fh.0 {
                0 => reply.ok(), // opened by the kernel itself: nothing to write
                fh => self.empty(reply, self.fs.fsync(fh), "fsync"),
            }
        });
    }

    fn release(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.serve(Op::Release, "release", req, || {
            match fh.0 {
                0 => reply.ok(), // opened by the kernel itself (see `open`)
                fh => self.empty(reply, self.fs.release(fh), "release"),
            }
        });
    }

    fn fsyncdir(&self, req: &Request, _ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        self.serve(Op::Fsyncdir, "fsyncdir", req, || {
            // Every directory change is committed before it is answered.
            reply.ok();
        });
    }

    fn opendir(&self, req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.serve(Op::Opendir, "opendir", req, || {
            if self.local_opendir {
                // Listings keep no per-handle state (a cookie says where to
                // resume), so there is nothing to open: the kernel remembers
                // ENOSYS and stops sending OPENDIR and RELEASEDIR, two of the
                // four round trips of listing a small directory (`ls -R`, `find`).
                reply.error(Errno::ENOSYS);
            } else {
                reply.opened(FileHandle(0), FopenFlags::empty());
            }
        });
    }

    fn readdir(&self, req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        self.serve(Op::Readdir, "readdir", req, || {
            let r = self.fs.readdir(ino.0, offset, false, &mut |e, _| {
                reply.add(INodeNo(e.ino), e.offset, file_type(e.kind), &e.name)
            });
            match r {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno("readdir", &e)),
            }
        });
    }

    #[allow(clippy::expect_used, reason = "the core gives every entry of a listing with attributes its attributes")]
    fn readdirplus(&self, req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectoryPlus) {
        self.serve(Op::Readdirplus, "readdirplus", req, || {
            let r = self.fs.readdir(ino.0, offset, true, &mut |e, a| {
                let a = a.expect("readdirplus gives attributes");
                // One TTL for the name and the attributes here: a file's size
                // may change from outside, a directory's attributes may not.
                let ttl = self.fs.attr_ttl(a);
                reply.add(INodeNo(e.ino), e.offset, &e.name, &ttl, &file_attr(a), Generation(0))
            });
            match r {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno("readdirplus", &e)),
            }
        });
    }

    fn statfs(&self, req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        self.serve(Op::Statfs, "statfs", req, || {
            let blocks = self.fs.block_count();
            reply.statfs(blocks, 0, 0, blocks, 0, 4096, 255, 4096);
        });
    }

    fn getxattr(&self, req: &Request, _ino: INodeNo, _name: &OsStr, _size: u32, reply: ReplyXattr) {
        self.serve(Op::Xattr, "getxattr", req, || {
            // ENOSYS is remembered by the kernel: no more xattr round trips.
            reply.error(Errno::ENOSYS);
        });
    }

    fn listxattr(&self, req: &Request, _ino: INodeNo, _size: u32, reply: ReplyXattr) {
        self.serve(Op::Xattr, "listxattr", req, || {
            reply.error(Errno::ENOSYS);
        });
    }

    fn setxattr(
        &self,
        req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        self.serve(Op::Xattr, "setxattr", req, || {
            // Editors copy ACLs onto the files they write; there are none here.
            reply.error(Errno::ENOSYS);
        });
    }

    fn ioctl(
        &self,
        req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: fuser::IoctlFlags,
        _cmd: u32,
        _in_data: &[u8],
        _out_size: u32,
        reply: fuser::ReplyIoctl,
    ) {
        self.serve(Op::Ioctl, "ioctl", req, || {
            // sed and python ask whether a file is a terminal (TCGETS).
            reply.error(Errno::ENOTTY);
        });
    }

    fn symlink(&self, req: &Request, _parent: INodeNo, _name: &OsStr, _target: &std::path::Path, reply: ReplyEntry) {
        self.serve(Op::Symlink, "symlink", req, || {
            // emacs makes its lock files as symlinks; it carries on without.
            reply.error(Errno::EPERM);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::errno_of;
    use crate::fs::{ErrorKind, FsError};
    use std::collections::HashSet;
    use worldfs_store::StoreError;

    #[test]
    fn every_kind_has_its_own_errno() {
        let mut seen = HashSet::new();
        for &kind in ErrorKind::ALL {
            let errno = errno_of(kind);
            assert!(errno > 0, "{kind:?} has no errno");
            assert!(seen.insert(errno), "{kind:?} shares errno {errno} with another kind");
        }
        assert_eq!(seen.len(), 15, "a kind was added: give it an errno and count it here");
    }

    #[test]
    fn constructors_keep_their_errno() {
        let cases = [
            (FsError::not_found(), libc::ENOENT),
            (FsError::not_dir(), libc::ENOTDIR),
            (FsError::is_dir(), libc::EISDIR),
            (FsError::read_only("ro"), libc::EROFS),
            (FsError::perm("no"), libc::EPERM),
            (FsError::invalid("bad"), libc::EINVAL),
            (FsError::io("lost"), libc::EIO),
            (FsError::bad_handle(), libc::EBADF),
            (FsError::stale("old"), libc::ESTALE),
            (FsError::exists("there"), libc::EEXIST),
            (FsError::busy("server"), libc::EBUSY),
            (FsError::no_space("full"), libc::ENOSPC),
            (FsError::too_large("big"), libc::EFBIG),
            (FsError::across_boundary("apart"), libc::EXDEV),
        ];
        for (e, want) in cases {
            assert_eq!(errno_of(e.kind), want, "{e:?}");
        }
    }

    #[test]
    fn os_errors_keep_their_errno() {
        let cases = [
            (libc::ENOSPC, libc::ENOSPC),
            (libc::EDQUOT, libc::ENOSPC), // a quota is a full disk to the user
            (libc::EROFS, libc::EROFS),
            (libc::EACCES, libc::EACCES),
            (libc::EFBIG, libc::EFBIG),
            (libc::EPERM, libc::EIO),
            (libc::ENOENT, libc::EIO),
            (libc::EIO, libc::EIO),
        ];
        for (os, want) in cases {
            let e = FsError::from_io(&std::io::Error::from_raw_os_error(os), "writing");
            assert_eq!(errno_of(e.kind), want, "OS error {os}");
            assert_eq!(e.message, "writing");
        }
        let not_os = std::io::Error::new(std::io::ErrorKind::StorageFull, "made up");
        assert_eq!(errno_of(FsError::from_io(&not_os, "x").kind), libc::EIO);
    }

    #[test]
    fn store_errors_keep_their_errno() {
        let cases = [
            (StoreError::Busy("locked".into()), libc::EIO),
            (StoreError::ReadOnly, libc::EROFS),
            (StoreError::Full("disk".into()), libc::ENOSPC),
            (StoreError::Conflict("changed".into()), libc::ESTALE),
            (StoreError::Unreachable("gone".into()), libc::EIO),
            (StoreError::Backend("broken".into()), libc::EIO),
        ];
        for (e, want) in cases {
            let shown = e.to_string();
            let e = FsError::from(e);
            assert_eq!(errno_of(e.kind), want, "{shown}");
            assert_eq!(e.message, shown);
        }
    }
}
