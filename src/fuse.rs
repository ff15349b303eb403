//! The thin adapter between the kernel (fuser) and the filesystem core:
//! translate arguments, call the core, reply. The only place that knows
//! fuser types, and the one table from core errors to errno.

use crate::fs::{Attr, FsError, Kind, WorldFs};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenAccMode, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory,
    ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyXattr, Request,
};
use std::ffi::OsStr;
use std::sync::Arc;

pub struct FuseAdapter {
    fs: Arc<WorldFs>,
}

impl FuseAdapter {
    pub fn new(fs: Arc<WorldFs>) -> FuseAdapter {
        FuseAdapter { fs }
    }
}

/// The single error translation: log, then the errno.
fn errno(op: &str, e: &FsError) -> Errno {
    if e.errno == libc::ENOENT {
        log::debug!("{op}: {}", e.message);
    } else {
        log::warn!("{op}: {}", e.message);
    }
    Errno::from_i32(e.errno)
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
        kind: match a.kind {
            Kind::Dir => FileType::Directory,
            Kind::File => FileType::RegularFile,
        },
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
    }
}

impl Filesystem for FuseAdapter {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // readdirplus (with the kernel's adaptive mode) saves a LOOKUP per entry
        // for `ls -l`; atomic O_TRUNC brings truncation inside OPEN.
        let wanted = InitFlags::FUSE_DO_READDIRPLUS
            | InitFlags::FUSE_READDIRPLUS_AUTO
            | InitFlags::FUSE_ATOMIC_O_TRUNC
            | InitFlags::FUSE_PARALLEL_DIROPS;
        if let Err(missing) = config.add_capabilities(wanted) {
            let _ = config.add_capabilities(wanted - missing);
        }
        let _ = config.set_max_background(64);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.fs.lookup(parent.0, name) {
            Ok(a) => reply.entry(&self.fs.ttl(), &file_attr(&a), Generation(0)),
            Err(e) => reply.error(errno("lookup", &e)),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.fs.getattr(ino.0) {
            Ok(a) => reply.attr(&self.fs.ttl(), &file_attr(&a)),
            Err(e) => reply.error(errno("getattr", &e)),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let write = flags.acc_mode() != OpenAccMode::O_RDONLY || flags.0 & libc::O_TRUNC != 0;
        match self.fs.open(ino.0, write) {
            Ok(o) => {
                let f = if o.keep_cache {
                    FopenFlags::FOPEN_KEEP_CACHE
                } else {
                    FopenFlags::empty()
                };
                reply.opened(FileHandle(o.fh), f)
            }
            Err(e) => reply.error(errno("open", &e)),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.fs.read(fh.0, offset, size) {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(errno("read", &e)),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        match self.fs.release(fh.0) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("release", &e)),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let r = self.fs.readdir(ino.0, offset, false, &mut |e, _| {
            reply.add(INodeNo(e.ino), e.offset, file_type(e.kind), &e.name)
        });
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("readdir", &e)),
        }
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let ttl = self.fs.ttl();
        let r = self.fs.readdir(ino.0, offset, true, &mut |e, a| {
            let attr = file_attr(a.expect("readdirplus gives attributes"));
            reply.add(
                INodeNo(e.ino),
                e.offset,
                &e.name,
                &ttl,
                &attr,
                Generation(0),
            )
        });
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("readdirplus", &e)),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let blocks = self.fs.block_count();
        reply.statfs(blocks, 0, 0, blocks, 0, 4096, 255, 4096);
    }

    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: ReplyXattr,
    ) {
        // ENOSYS is remembered by the kernel: no more xattr round trips.
        reply.error(Errno::ENOSYS);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, _size: u32, reply: ReplyXattr) {
        reply.error(Errno::ENOSYS);
    }
}
