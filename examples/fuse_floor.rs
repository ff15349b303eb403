//! The floor of a walk through FUSE: a file system that does no work. It
//! serves the tree shape of a world's read-only mount that the grep walk
//! of contrib/bench.sh touches (`blocks/X/names`, with the same contents,
//! rendered in memory from the world before it mounts) through the same
//! fuser version, mount options, INIT flags, thread count, TTLs, no-open
//! and no-opendir answers, CPU following and spinners as `worldfs mount
//! -o ro`. What a walk costs here is what FUSE itself costs on this
//! machine; the rest of worldfs's figure is worldfs's.
//!
//! ```text
//! cargo run --release --example fuse_floor -- WORLD MOUNTPOINT
//! ```
//!
//! It also serves `rtt`, an empty file whose attributes the kernel may
//! not keep (TTL 0): each `stat` of it is one GETATTR round trip, the
//! bare cost of a FUSE request. `.worldfs-stats` counts requests as the
//! daemon's does (`worldfs::fs::stats`), so the bench reads both alike.
//! Runs in the foreground until unmounted or signalled; `MOUNTPOINT/README`
//! appears once it serves.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a tool run by a bench script: a failure ends it with its message"
)]

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, Generation, INodeNo, KernelConfig, LockOwner, OpenFlags,
    ReplyAttr, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyXattr, Request,
};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, Instant, SystemTime};
use worldfs::fs::stats::{self, Op, Phase};
use worldfs::fs::{Options, Tree};
use worldfs::worlds::luanti::inode;

const ROOT: u64 = 1;
const BLOCKS: u64 = 2;
const README: u64 = 3;
const RTT: u64 = 4;
const STATS: u64 = 5;
/// Block `i`'s directory is `FIRST + 2i`, its `names` the next number.
const FIRST: u64 = 16;
const README_TEXT: &[u8] = b"fuse_floor: a FUSE file system that does no work (examples/fuse_floor.rs)\n";

struct Floor {
    names: Vec<OsString>,
    by_name: HashMap<OsString, usize>,
    contents: Vec<Box<[u8]>>,
    /// The TTL worldfs gives names and the attributes of directories and of
    /// the files it watches (its `entry_ttl`): all of these.
    ttl: Duration,
    /// READDIRPLUS on every page (worldfs does so up to `plus_max` blocks).
    plus_everywhere: bool,
    local_opendir: bool,
    awake: worldfs::sys::awake::Awake,
    mtime: SystemTime,
}

fn attr(ino: u64, kind: FileType, size: u64, mtime: SystemTime) -> FileAttr {
    let dir = kind == FileType::Directory;
    FileAttr {
        ino: INodeNo(ino),
        size,
        blocks: size.div_ceil(512),
        atime: mtime,
        mtime,
        ctime: mtime,
        crtime: mtime,
        kind,
        perm: if dir { 0o555 } else { 0o444 },
        nlink: if dir { 2 } else { 1 },
        // SAFETY: getuid and getgid have no preconditions.
        uid: unsafe { libc::getuid() },
        // SAFETY: as above.
        gid: unsafe { libc::getgid() },
        rdev: 0,
        blksize: 64 * 1024,
        flags: 0,
    }
}

impl Floor {
    fn attr_of(&self, ino: u64) -> Option<FileAttr> {
        let file = |size: usize| attr(ino, FileType::RegularFile, size as u64, self.mtime);
        match ino {
            ROOT | BLOCKS => Some(attr(ino, FileType::Directory, 0, self.mtime)),
            README => Some(file(README_TEXT.len())),
            RTT => Some(file(0)),
            // A new mtime at each look: the kernel drops the page it keeps.
            STATS => Some(attr(ino, FileType::RegularFile, stats::stats().text().len() as u64, SystemTime::now())),
            _ => {
                let i = usize::try_from((ino.checked_sub(FIRST)?) / 2).ok()?;
                let content = self.contents.get(i)?;
                if (ino - FIRST).is_multiple_of(2) {
                    Some(attr(ino, FileType::Directory, 0, self.mtime))
                } else {
                    Some(file(content.len()))
                }
            }
        }
    }

    fn ttl_of(&self, ino: u64) -> Duration {
        if ino == RTT || ino == STATS { Duration::ZERO } else { self.ttl }
    }

    fn child(&self, parent: u64, name: &OsStr) -> Option<u64> {
        match (parent, name.as_bytes()) {
            (ROOT, b"blocks") => Some(BLOCKS),
            (ROOT, b"README") => Some(README),
            (ROOT, b"rtt") => Some(RTT),
            (ROOT, b".worldfs-stats") => Some(STATS),
            (BLOCKS, _) => self.by_name.get(name).map(|&i| FIRST + 2 * i as u64),
            (dir, b"names") if dir >= FIRST && (dir - FIRST).is_multiple_of(2) => self.attr_of(dir).map(|_| dir + 1),
            _ => None,
        }
    }

    /// The entries of a directory after cookie `offset`: (cookie, ino, name).
    fn entries(&self, dir: u64, offset: u64) -> Vec<(u64, u64, OsString)> {
        let mut out = Vec::new();
        let mut push = |cookie: u64, ino: u64, name: &OsStr| {
            if cookie > offset {
                out.push((cookie, ino, name.to_os_string()))
            }
        };
        let parent = if dir >= FIRST { BLOCKS } else { ROOT };
        push(1, dir, OsStr::new("."));
        push(2, parent, OsStr::new(".."));
        match dir {
            ROOT => {
                push(3, BLOCKS, OsStr::new("blocks"));
                push(4, README, OsStr::new("README"));
                push(5, RTT, OsStr::new("rtt"));
            }
            BLOCKS => {
                // Only the page asked for: a listing of millions pages on.
                let from = offset.saturating_sub(2) as usize;
                for (i, n) in self.names.iter().enumerate().skip(from).take(4096) {
                    push(i as u64 + 3, FIRST + 2 * i as u64, n);
                }
            }
            _ => push(3, dir + 1, OsStr::new("names")),
        }
        out
    }

    fn serve(&self, op: Op, req: &Request, f: impl FnOnce()) {
        let t0 = Instant::now();
        self.awake.touch();
        worldfs::sys::affinity::follow(req.pid());
        f();
        stats::request(op, t0);
    }
}

impl Filesystem for Floor {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // What worldfs's adapter asks of the kernel.
        self.local_opendir = worldfs::fuse::negotiate(config, self.plus_everywhere);
        Ok(())
    }

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        self.serve(Op::Lookup, req, || match self.child(parent.0, name).and_then(|i| self.attr_of(i)) {
            Some(a) => {
                let ttl = self.ttl_of(a.ino.0);
                let entry_ttl = if a.ino.0 == STATS { Duration::ZERO } else { self.ttl };
                stats::timed(Phase::Reply, || reply.entry_with_ttls(&ttl, &entry_ttl, &a, Generation(0)))
            }
            None => reply.error(Errno::ENOENT),
        });
    }

    fn getattr(&self, req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        self.serve(Op::Getattr, req, || match self.attr_of(ino.0) {
            Some(a) => stats::timed(Phase::Reply, || reply.attr(&self.ttl_of(ino.0), &a)),
            None => reply.error(Errno::ENOENT),
        });
    }

    fn open(&self, req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        // As worldfs's read-only mount: the kernel opens files itself.
        self.serve(Op::Open, req, || reply.error(Errno::ENOSYS));
    }

    fn read(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        self.serve(Op::Read, req, || {
            let stats_text;
            let data: &[u8] = match ino.0 {
                README => README_TEXT,
                STATS => {
                    stats_text = stats::stats().text().into_bytes();
                    &stats_text
                }
                RTT => b"",
                i if i >= FIRST && !(i - FIRST).is_multiple_of(2) => {
                    self.contents.get(((i - FIRST) / 2) as usize).map_or(&b""[..], |c| c)
                }
                _ => return reply.error(Errno::EISDIR),
            };
            let from = (offset as usize).min(data.len());
            let to = (from + size as usize).min(data.len());
            stats::timed(Phase::Reply, || reply.data(&data[from..to]))
        });
    }

    fn flush(&self, req: &Request, _ino: INodeNo, _fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        self.serve(Op::Flush, req, || reply.error(Errno::ENOSYS));
    }

    fn opendir(&self, req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.serve(Op::Opendir, req, || {
            if self.local_opendir {
                reply.error(Errno::ENOSYS)
            } else {
                reply.opened(FileHandle(0), fuser::FopenFlags::empty())
            }
        });
    }

    fn readdir(&self, req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        self.serve(Op::Readdir, req, || {
            for (cookie, child, name) in self.entries(ino.0, offset) {
                let kind = self.attr_of(child).map_or(FileType::RegularFile, |a| a.kind);
                if reply.add(INodeNo(child), cookie, kind, &name) {
                    break;
                }
            }
            reply.ok()
        });
    }

    fn readdirplus(&self, req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectoryPlus) {
        self.serve(Op::Readdirplus, req, || {
            for (cookie, child, name) in self.entries(ino.0, offset) {
                let Some(a) = self.attr_of(child) else { continue };
                if reply.add(INodeNo(child), cookie, &name, &self.ttl_of(child), &a, Generation(0)) {
                    break;
                }
            }
            reply.ok()
        });
    }

    fn getxattr(&self, req: &Request, _ino: INodeNo, _name: &OsStr, _size: u32, reply: ReplyXattr) {
        self.serve(Op::Xattr, req, || reply.error(Errno::ENOSYS));
    }

    fn listxattr(&self, req: &Request, _ino: INodeNo, _size: u32, reply: ReplyXattr) {
        self.serve(Op::Xattr, req, || reply.error(Errno::ENOSYS));
    }
}

/// Every block's name and `names` file, in the order of the listing.
fn render(world: &str) -> (Vec<OsString>, Vec<Box<[u8]>>, bool) {
    let opts = Options { read_only: true, ..Options::default() };
    let fs = worldfs::open::open_world(std::path::Path::new(world), opts).unwrap_or_else(|e| {
        eprintln!("fuse_floor: {e}");
        std::process::exit(2)
    });
    let tree: &dyn Tree = fs.tree();
    let mut names = Vec::new();
    let mut offset = 2;
    loop {
        let before = names.len();
        tree.list(inode::BLOCKS, offset, false, &mut |e, _| {
            names.push(e.name.clone());
            offset = e.offset;
            names.len() - before >= 4096
        })
        .expect("listing blocks/");
        if names.len() == before {
            break;
        }
    }
    let mut contents = Vec::with_capacity(names.len());
    for n in &names {
        let dir = tree.lookup(inode::BLOCKS, n.as_bytes()).expect("a listed block");
        let file = tree.lookup(dir.ino, b"names").expect("its names file");
        contents.push(tree.read(file.ino).expect("its names").as_slice().into());
    }
    (names, contents, tree.plus_everywhere())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, world, mountpoint] = &args[..] else {
        eprintln!("usage: fuse_floor WORLD MOUNTPOINT");
        std::process::exit(2)
    };
    let t = Instant::now();
    let (names, contents, plus_everywhere) = render(world);
    let bytes: usize = contents.iter().map(|c| c.len()).sum();
    eprintln!("fuse_floor: {} blocks rendered ({bytes} bytes) in {:.1} s", names.len(), t.elapsed().as_secs_f64());
    let by_name = names.iter().enumerate().map(|(i, n)| (n.clone(), i)).collect();
    let floor = Floor {
        names,
        by_name,
        contents,
        ttl: Options::default().entry_ttl,
        plus_everywhere,
        local_opendir: false,
        awake: worldfs::sys::awake::Awake::new(),
        mtime: SystemTime::now(),
    };
    // The options and threads of `worldfs mount -o ro`.
    let mut config = fuser::Config::default();
    config.mount_options = worldfs::fuse::mount_options("fuse_floor", true);
    config.n_threads = Some(worldfs::fuse::default_threads());
    let session = fuser::Session::new(floor, mountpoint, &config).expect("mounting");
    session.run().expect("serving");
}
