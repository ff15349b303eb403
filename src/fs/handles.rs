//! Open files: snapshots for reading, buffers for writing (committed at
//! flush, fsync or release, by the pure rule [`Pending::commit_on`]), and
//! scratch files.

use super::provenance::Caller;
use super::{Attr, ErrorKind, FsError, Kind, Opened, Result, Target, WorldFs};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Files being read without a handle whose copy is kept for the reads
/// that continue them (see `read_unopened`).
const UNOPENED_MAX: usize = 256;

/// Largest content a write buffer may grow to.
const MAX_WRITE: usize = 256 << 20;

/// Why a handle is asked to commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum When {
    /// A close(2) by process `pid`.
    Flush(u32),
    Fsync,
    Release,
}

/// What a write handle has not committed yet, and who may commit it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pending {
    /// Written to since the last commit.
    pub(crate) dirty: bool,
    /// Opened with O_TRUNC and not written since. Bash sends a FLUSH
    /// between its truncating open and its first write (it dup2s the file
    /// descriptor and closes the original), so the first flush of a handle
    /// does not commit the empty content; a later flush by the opener, an
    /// fsync, or release does.
    pub(crate) truncated: bool,
    /// The process that opened the file, and how often it flushed. Flushes
    /// by other processes (children that inherited the file and exited, or
    /// closed it at exec) commit nothing: the opener may not have finished
    /// writing.
    pub(crate) opener: u32,
    pub(crate) opener_flushes: u32,
}

impl Pending {
    pub(crate) fn new(opener: u32, truncated: bool) -> Pending {
        Pending { dirty: false, truncated, opener, opener_flushes: 0 }
    }

    /// Whether this moment commits the handle's content; if so, it is
    /// then clean. Pure: all of the rule is here.
    pub(crate) fn commit_on(&mut self, when: When) -> bool {
        let now = match when {
            When::Flush(pid) if pid != self.opener => false,
            When::Flush(_) => {
                self.opener_flushes += 1;
                self.dirty || (self.truncated && self.opener_flushes > 1)
            }
            When::Fsync | When::Release => self.dirty || self.truncated,
        };
        if now {
            self.dirty = false;
            self.truncated = false;
        }
        now
    }

    pub(crate) fn wrote(&mut self) {
        self.dirty = true;
        self.truncated = false;
    }

    /// Truncated at open and nothing written since: what a close now
    /// would leave is an empty file.
    pub(crate) fn only_truncated(&self) -> bool {
        self.truncated && !self.dirty
    }

    /// The change was refused (at a write): nothing is left to commit
    /// until the next write.
    pub(crate) fn refused(&mut self) {
        self.dirty = false;
        self.truncated = false;
    }
}

pub(super) enum Handle {
    /// A snapshot of the content taken at open.
    Read { content: Arc<Vec<u8>> },
    /// A file of the tree opened for writing: the new content is built in
    /// `buf` and committed when `pending` says so. `base` is what the
    /// buffer was made from, the file's content at open (or at the last
    /// commit): a commit is refused if the file shows something else by
    /// then (someone changed it meanwhile, and writing would undo their
    /// change). None for a file opened with O_TRUNC: its new content owes
    /// nothing to the old one, and the last writer wins; except in a file
    /// the tree holds to what it showed at open (`checks_truncating_writes`).
    Write { ino: u64, buf: Vec<u8>, base: Option<Arc<Vec<u8>>>, pending: Pending, append: bool },
    /// A scratch file: reads and writes go to it directly; a pending one
    /// is committed to the world by its opener's flush. `writer_group`:
    /// the process group of an opener that may write it, whose reads
    /// become its bases at each close (see `provenance`).
    Scratch { ino: u64, append: bool, pending: Pending, writer_group: Option<u32> },
}

/// Put `data` at `offset` of `buf` (or at its end when appending).
fn write_into(buf: &mut Vec<u8>, offset: u64, data: &[u8], append: bool) -> Result<()> {
    let at = if append { buf.len() } else { offset as usize };
    let end = end_of_write(buf.len(), offset, data.len(), append)?;
    if buf.len() < end {
        buf.resize(end, 0);
    }
    buf[at..end].copy_from_slice(data);
    Ok(())
}

/// Where a write of `len` bytes at `offset` (or at the end of a buffer of
/// `buf_len` bytes when appending) ends; EFBIG past the largest file.
fn end_of_write(buf_len: usize, offset: u64, len: usize, append: bool) -> Result<usize> {
    let at = if append { buf_len } else { offset as usize };
    at.checked_add(len)
        .filter(|&e| e <= MAX_WRITE)
        .ok_or_else(|| FsError::too_large("file larger than 256 MiB, the largest a write may make"))
}

fn slice(data: &[u8], offset: u64, size: u32) -> Vec<u8> {
    let start = (offset as usize).min(data.len());
    let end = start.saturating_add(size as usize).min(data.len());
    data[start..end].to_vec()
}

/// What committing a handle means.
enum Job {
    Tree {
        ino: u64,
        content: Vec<u8>,
        base: Option<Arc<Vec<u8>>>,
    },
    Pending(u64),
    /// Nothing to commit yet, but say now if an empty file would be
    /// refused (see `commit_handle`).
    CheckEmpty(u64),
}

impl WorldFs {
    fn new_handle(&self, h: Handle) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        self.handles.lock().insert(fh, h);
        fh
    }

    /// The content of a file of the core or the tree now.
    fn content_of(&self, t: Target) -> Result<Arc<Vec<u8>>> {
        match t {
            Target::Readme => Ok(Arc::new(self.readme())),
            Target::WriteErrors => Ok(Arc::new(self.write_errors().concat().into_bytes())),
            Target::Stats => Ok(Arc::new(self.stats_text().into_bytes())),
            Target::Scratch(s) => {
                let ns = self.ns.lock();
                Ok(Arc::new(ns.scratch.get(s).ok_or_else(FsError::not_found)?.data.clone()))
            }
            Target::Tree(t) => self.tree.read(t),
        }
    }

    fn is_tree_dir(&self, t: Target) -> Result<bool> {
        Ok(matches!(t, Target::Tree(i) if self.tree.getattr(i)?.kind == Kind::Dir))
    }

    /// Open a file for process `pid`, whose group is not known (see
    /// `open_by`).
    pub fn open(&self, ino: u64, flags: i32, pid: u32) -> Result<Opened> {
        self.open_by(ino, flags, Caller::alone(pid))
    }

    /// Open a file. `flags` are the open(2) flags.
    pub fn open_by(&self, ino: u64, flags: i32, caller: Caller) -> Result<Opened> {
        let pid = caller.pid;
        let target = self.target(ino)?;
        if self.is_tree_dir(target)? {
            return Err(FsError::is_dir());
        }
        let write = flags & libc::O_ACCMODE != libc::O_RDONLY;
        let trunc = flags & libc::O_TRUNC != 0;
        let append = flags & libc::O_APPEND != 0;
        let direct_io = !self.opts.read_only;
        if (write || trunc) && self.opts.read_only {
            return Err(FsError::read_only("the mount is read-only (-o ro)"));
        }
        match target {
            Target::Scratch(s) => {
                let mut ns = self.ns.lock();
                let mut reads = self.reads.lock();
                if trunc {
                    // New content, from what the opener read.
                    let (bases, group_bases) = reads.made_by(caller);
                    let _ = ns.scratch.edit(s, |f| {
                        f.data.clear();
                        f.bases = bases;
                        f.group_bases = group_bases;
                    });
                } else if let Some(f) = ns.scratch.get(s) {
                    reads.inherit(caller, &f.all_bases());
                    if write {
                        // Edited in place: the content it had stays part
                        // of it, so its older bases stand.
                        let more = reads.of(pid);
                        let _ = ns.scratch.edit(s, |f| {
                            for (ino, c) in more {
                                f.bases.entry(ino).or_insert(c);
                            }
                        });
                    }
                }
                drop(reads);
                drop(ns);
                let fh = self.open_scratch(s, flags, caller);
                Ok(Opened { fh, keep_cache: false, direct_io: false })
            }
            Target::Readme | Target::WriteErrors | Target::Stats if write || trunc => {
                Err(FsError::perm("this file is generated by worldfs"))
            }
            Target::Readme | Target::WriteErrors | Target::Stats => {
                let content = self.content_of(target)?;
                Ok(Opened { fh: self.new_handle(Handle::Read { content }), keep_cache: false, direct_io })
            }
            Target::Tree(t) if !write && !trunc => {
                let (content, keep_cache) = self.tree.open_read(t)?;
                if !self.opts.read_only {
                    self.reads.lock().record(caller, t, content.clone());
                }
                let direct_io = direct_io || self.tree.sized_by_reading(t);
                Ok(Opened { fh: self.new_handle(Handle::Read { content }), keep_cache, direct_io })
            }
            Target::Tree(t) => {
                let prepared = self.tree.check_writable(t).and_then(|()| {
                    if trunc {
                        let held = self.tree.checks_truncating_writes(t);
                        Ok((Vec::new(), if held { self.tree.read(t).ok() } else { None }))
                    } else {
                        let base = self.tree.read(t)?;
                        Ok((base.to_vec(), Some(base)))
                    }
                });
                // A write that cannot start because the database failed
                // (a lost server, say) is a failed write: its reason goes
                // to write-errors like a failed commit's.
                let (buf, base) = match prepared {
                    Err(e) if e.kind == ErrorKind::Io => self.recorded(|| self.tree.path(t), Err(e))?,
                    r => r?,
                };
                let charged = self.charge(buf.len());
                self.recorded(|| self.tree.path(t), charged)?;
                let fh =
                    self.new_handle(Handle::Write { ino: t, buf, base, pending: Pending::new(pid, trunc), append });
                Ok(Opened { fh, keep_cache: false, direct_io })
            }
        }
    }

    /// Whether files can be read without OPEN and RELEASE round trips: on
    /// read-only mounts nothing is committed at close and no snapshot needs
    /// a handle, so the FUSE adapter tells the kernel that opening is not
    /// implemented (it then opens locally, keeps its page cache across
    /// opens, and sends reads with file handle 0 to `read_unopened`). Not
    /// where a file's size is known only by reading it: it needs direct I/O.
    pub fn opens_are_local(&self) -> bool {
        self.opts.read_only && !self.tree.has_files_sized_by_reading()
    }

    /// A read without an open handle (see `opens_are_local`). A read at
    /// offset 0 takes a fresh copy of the file; the reads that continue it
    /// (within the TTL) are served from that copy, so a file read in several
    /// requests is one version of it even while it changes.
    pub fn read_unopened(&self, ino: u64, offset: u64, size: u32) -> Result<Vec<u8>> {
        let mut unopened = self.unopened.lock();
        if offset > 0
            && let Some((at, content)) = unopened.get(&ino)
            && at.elapsed() <= self.opts.ttl
        {
            return Ok(slice(content, offset, size));
        }
        drop(unopened);
        self.was_read(ino);
        let target = self.target(ino)?;
        if self.is_tree_dir(target)? {
            return Err(FsError::is_dir());
        }
        let content = self.content_of(target)?;
        if content.len() as u64 > offset + size as u64 {
            unopened = self.unopened.lock();
            if unopened.len() >= UNOPENED_MAX {
                unopened.clear();
            }
            unopened.insert(ino, (std::time::Instant::now(), content.clone()));
        }
        Ok(slice(&content, offset, size))
    }

    pub fn read(&self, fh: u64, offset: u64, size: u32) -> Result<Vec<u8>> {
        let handles = self.handles.lock();
        match handles.get(&fh).ok_or_else(FsError::bad_handle)? {
            Handle::Read { content } => Ok(slice(content, offset, size)),
            Handle::Write { buf, .. } => Ok(slice(buf, offset, size)),
            Handle::Scratch { ino, .. } => {
                let ns = self.ns.lock();
                Ok(slice(&ns.scratch.get(*ino).ok_or_else(FsError::bad_handle)?.data, offset, size))
            }
        }
    }

    pub fn write(&self, fh: u64, offset: u64, data: &[u8]) -> Result<u32> {
        if let Some(ino) = self.whole_content_write(fh, offset, data) {
            self.judge_at_write(fh, ino, data)?;
        }
        let mut handles = self.handles.lock();
        match handles.get_mut(&fh).ok_or_else(FsError::bad_handle)? {
            Handle::Read { .. } => Err(FsError::bad_handle()),
            Handle::Write { ino, buf, pending, append, .. } => {
                let ino = *ino;
                let grown = end_of_write(buf.len(), offset, data.len(), *append).and_then(|end| {
                    let grow = end.saturating_sub(buf.len());
                    self.charge(grow)
                });
                self.recorded(|| self.tree.path(ino), grown)?;
                write_into(buf, offset, data, *append)?;
                pending.wrote();
                Ok(data.len() as u32)
            }
            Handle::Scratch { ino, append, pending, .. } => {
                let mut ns = self.ns.lock();
                match ns.scratch.edit(*ino, |f| write_into(&mut f.data, offset, data, *append)) {
                    None => Err(FsError::bad_handle()),
                    Some(Err(())) => {
                        let held = ns.scratch.bytes() + self.buffered.load(Ordering::Relaxed);
                        drop(ns);
                        let e = self.over_budget(held);
                        self.recorded(|| self.path(*ino), Err(e))
                    }
                    Some(Ok(r)) => {
                        r?;
                        pending.wrote();
                        Ok(data.len() as u32)
                    }
                }
            }
        }
    }

    /// The file a write on handle `fh` gives its whole content to, if it
    /// does: the buffer then holds exactly `data`, and the tree says
    /// nothing more could make it valid (`Tree::complete`).
    fn whole_content_write(&self, fh: u64, offset: u64, data: &[u8]) -> Option<u64> {
        let handles = self.handles.lock();
        match handles.get(&fh)? {
            Handle::Write { ino, buf, append, .. } => {
                let replaces = if *append { buf.is_empty() } else { offset == 0 && buf.len() <= data.len() };
                (replaces && self.tree.complete(*ino, data)).then_some(*ino)
            }
            _ => None,
        }
    }

    /// Judge a write that holds a file's whole content now, so that a
    /// refusal reaches programs that never look at close() (a shell's
    /// `echo bad > file`). Only content refusals (EINVAL) are given here;
    /// anything else is left to the commit at close.
    fn judge_at_write(&self, fh: u64, ino: u64, data: &[u8]) -> Result<()> {
        match self.tree.check_content(ino, data) {
            Err(e) if e.kind == ErrorKind::Invalid => {
                if let Some(Handle::Write { pending, .. }) = self.handles.lock().get_mut(&fh) {
                    // The change ends here: the file stays as it was.
                    pending.refused();
                }
                self.recorded(|| self.tree.path(ino), Err(e))
            }
            _ => Ok(()),
        }
    }

    /// Take `grow` more bytes for a write handle's buffer, or refuse with
    /// ENOSPC when buffers and scratch files would hold more than the
    /// mount allows (`Options::write_buffers`).
    fn charge(&self, grow: usize) -> Result<()> {
        let scratch = self.ns.lock().scratch.bytes();
        let held = self.buffered.load(Ordering::Relaxed);
        if grow > 0 && held + scratch + grow > self.opts.write_buffers {
            return Err(self.over_budget(held + scratch));
        }
        self.buffered.fetch_add(grow, Ordering::Relaxed);
        Ok(())
    }

    /// Give back `n` bytes of write buffers.
    fn credit(&self, n: usize) {
        self.buffered.fetch_sub(n, Ordering::Relaxed);
    }

    fn over_budget(&self, held: usize) -> FsError {
        FsError::no_space(format!(
            "files being written and scratch files hold {} MiB, all the mount allows (-o write_mb={}); \
             nothing written: close other files, or mount with a larger write_mb",
            held >> 20,
            self.opts.write_buffers >> 20
        ))
    }

    /// Commit what a handle holds, if it changed and the moment is right
    /// (see `Pending::commit_on`).
    fn commit_handle(&self, fh: u64, when: When) -> Result<()> {
        let job = {
            let mut handles = self.handles.lock();
            match handles.get_mut(&fh).ok_or_else(FsError::bad_handle)? {
                Handle::Read { .. } => None,
                Handle::Write { ino, buf, base, pending, .. } => {
                    if pending.commit_on(when) {
                        Some(Job::Tree { ino: *ino, content: buf.clone(), base: base.clone() })
                    } else if pending.only_truncated() && when == When::Flush(pending.opener) {
                        // Truncated and closed unwritten: bash writes after
                        // this first close (of a dup), but a program that
                        // is done would never hear that the empty file is
                        // refused at release. Its close fails now; the
                        // refusal is recorded when the change ends.
                        Some(Job::CheckEmpty(*ino))
                    } else {
                        None
                    }
                }
                Handle::Scratch { ino, pending, .. } => {
                    let is_pending = self.ns.lock().scratch.get(*ino).is_some_and(|f| f.pending);
                    // Only a pending scratch file has anything to commit.
                    (is_pending && pending.commit_on(when)).then_some(Job::Pending(*ino))
                }
            }
        };
        match job {
            None => Ok(()),
            Some(Job::Tree { ino, content, base }) => {
                let r = self.tree.write(ino, &content, base.as_deref().map(Vec::as_slice));
                self.recorded(|| self.tree.path(ino), r)?;
                // What the file shows now is the base of what follows (the
                // tree may show what was written normalized: a field's
                // newline).
                let shown = self.tree.read(ino).ok();
                if let Some(Handle::Write { base, .. }) = self.handles.lock().get_mut(&fh) {
                    *base = shown.or_else(|| Some(Arc::new(content)));
                }
                Ok(())
            }
            Some(Job::Pending(ino)) => self.commit_pending(ino),
            Some(Job::CheckEmpty(ino)) => match self.tree.check_content(ino, b"") {
                Err(e) if e.kind == ErrorKind::Invalid => Err(e),
                _ => Ok(()),
            },
        }
    }

    /// close(2) of a descriptor (every one, including dup'ed copies).
    pub fn flush(&self, fh: u64, pid: u32) -> Result<()> {
        self.take_writer_group_reads(fh);
        self.commit_handle(fh, When::Flush(pid))
    }

    /// A scratch file's writer closes it: what its process group has read
    /// by now is what the content can be made from (the reader of a
    /// pipeline may open its file after the writer made the scratch file).
    /// The newest read of each file replaces an older one.
    fn take_writer_group_reads(&self, fh: u64) {
        let (ino, group) = match self.handles.lock().get(&fh) {
            Some(Handle::Scratch { ino, writer_group: Some(g), .. }) => (*ino, *g),
            _ => return,
        };
        let mut ns = self.ns.lock();
        let read = self.reads.lock().of_group(group);
        ns.scratch.note(ino, |f| f.group_bases.extend(read));
    }

    /// Commits are durable when they return, so fsync commits what the
    /// handle holds, and what the tree still holds back.
    pub fn fsync(&self, fh: u64) -> Result<()> {
        self.commit_handle(fh, When::Fsync)?;
        self.tree.sync()
    }

    /// Release a handle. An error here cannot reach the program (the kernel
    /// does not wait for release); it is logged and kept in write-errors.
    pub fn release(&self, fh: u64) -> Result<()> {
        let r = self.commit_handle(fh, When::Release);
        let h = self.handles.lock().remove(&fh);
        match h {
            Some(Handle::Scratch { ino, .. }) => self.drop_orphan(ino),
            Some(Handle::Write { buf, .. }) => self.credit(buf.len()),
            _ => {}
        }
        r
    }

    /// At unmount: commit what handles that were never released still hold
    /// (as their release would have), then what the tree holds back.
    /// Returns one line per thing that had something to commit, saying
    /// what became of it.
    pub fn shutdown(&self) -> Vec<String> {
        let fhs: Vec<u64> = self.handles.lock().keys().copied().collect();
        let mut report = Vec::new();
        for fh in fhs {
            let ino = match self.handles.lock().get(&fh) {
                Some(Handle::Write { ino, pending, .. }) if pending.dirty || pending.truncated => *ino,
                _ => continue,
            };
            let what = self.tree.path(ino);
            match self.release(fh) {
                Ok(()) => report.push(format!("{what}: committed at unmount")),
                Err(e) => report.push(format!("{what}: refused at unmount: {e}")),
            }
        }
        report.extend(self.tree.shutdown());
        report
    }

    /// Whether any open handle refers to scratch file `ino`.
    pub(super) fn scratch_open_in(handles: &HashMap<u64, Handle>, ino: u64) -> bool {
        handles.values().any(|h| matches!(h, Handle::Scratch { ino: i, .. } if *i == ino))
    }

    /// Change attributes. Sizes truncate or extend (on the handle's buffer
    /// when `fh` is given); modes are kept for scratch files and accepted
    /// without effect on files of the world.
    pub fn setattr(&self, ino: u64, fh: Option<u64>, size: Option<u64>, mode: Option<u32>) -> Result<Attr> {
        let target = self.target(ino)?;
        if let Some(size) = size {
            if self.is_tree_dir(target)? {
                return Err(FsError::is_dir());
            }
            if self.opts.read_only {
                return Err(FsError::read_only("the mount is read-only (-o ro)"));
            }
            let size = size as usize;
            if size > MAX_WRITE {
                return Err(FsError::too_large("file larger than 256 MiB"));
            }
            let mut handled = false;
            if let Some(fh) = fh {
                let mut handles = self.handles.lock();
                if let Some(Handle::Write { buf, pending, .. }) = handles.get_mut(&fh) {
                    // An explicit ftruncate is a change, committed at the
                    // next flush (O_TRUNC at open arrives inside OPEN, with
                    // FUSE_ATOMIC_O_TRUNC, and is handled there).
                    if size > buf.len() {
                        self.charge(size - buf.len())?;
                    } else {
                        self.credit(buf.len() - size);
                    }
                    buf.resize(size, 0);
                    pending.wrote();
                    handled = true;
                }
            }
            if !handled {
                match target {
                    Target::Scratch(s) => {
                        let mut ns = self.ns.lock();
                        match ns.scratch.edit(s, |f| f.data.resize(size, 0)) {
                            None => return Err(FsError::not_found()),
                            Some(Err(())) => {
                                let held = ns.scratch.bytes() + self.buffered.load(Ordering::Relaxed);
                                return Err(self.over_budget(held));
                            }
                            Some(Ok(())) => {}
                        }
                    }
                    Target::Readme | Target::WriteErrors | Target::Stats => {
                        return Err(FsError::perm("this file is generated by worldfs"));
                    }
                    Target::Tree(t) => {
                        self.tree.check_writable(t)?;
                        let base = self.tree.read(t)?;
                        let mut content = base.to_vec();
                        content.resize(size, 0);
                        let r = self.tree.write(t, &content, Some(&base));
                        self.recorded(|| self.tree.path(t), r)?;
                    }
                }
            }
        }
        if let (Some(mode), Target::Scratch(s)) = (mode, target) {
            let _ = self.ns.lock().scratch.edit(s, |f| f.mode = (mode & 0o7777) as u16);
        }
        let mut attr = self.getattr(ino)?;
        if let Some(fh) = fh
            && let Some(Handle::Write { buf, .. }) = self.handles.lock().get(&fh)
        {
            attr.size = buf.len() as u64;
        }
        Ok(attr)
    }

    /// Attributes through an open handle: a file being written has the
    /// size of what that writer has written so far.
    pub fn getattr_open(&self, ino: u64, fh: Option<u64>) -> Result<Attr> {
        let mut attr = self.getattr(ino)?;
        if let Some(fh) = fh
            && let Some(Handle::Write { buf, .. }) = self.handles.lock().get(&fh)
        {
            attr.size = buf.len() as u64;
        }
        Ok(attr)
    }

    /// The size of tree file `t` while a handle is changing it (truncated
    /// or written, not yet committed): what its writer wrote so far, as on
    /// any filesystem. The kernel's fstat asks without a handle.
    pub(super) fn size_being_written(&self, t: u64) -> Option<u64> {
        let handles = self.handles.lock();
        let mut changing: Vec<(u64, usize)> = handles
            .iter()
            .filter_map(|(&fh, h)| match h {
                Handle::Write { ino, buf, pending, .. } if *ino == t && (pending.dirty || pending.truncated) => {
                    Some((fh, buf.len()))
                }
                _ => None,
            })
            .collect();
        // Several writers: the newest handle's.
        changing.sort();
        changing.last().map(|&(_, len)| len as u64)
    }

    /// Open handle for scratch file `ino`.
    pub(super) fn open_scratch(&self, ino: u64, flags: i32, caller: Caller) -> u64 {
        let writes = flags & libc::O_ACCMODE != libc::O_RDONLY || flags & libc::O_TRUNC != 0;
        self.new_handle(Handle::Scratch {
            ino,
            append: flags & libc::O_APPEND != 0,
            pending: Pending::new(caller.pid, false),
            writer_group: caller.group.filter(|_| writes),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_opener_commits_what_it_wrote_at_its_close() {
        let mut p = Pending::new(7, false);
        assert!(!p.commit_on(When::Flush(7)), "nothing written");
        p.wrote();
        assert!(!p.commit_on(When::Flush(8)), "a child's close commits nothing");
        assert!(p.commit_on(When::Flush(7)));
        assert!(!p.commit_on(When::Release), "clean after the commit");
        p.wrote();
        assert!(p.commit_on(When::Fsync));
        p.wrote();
        assert!(p.commit_on(When::Release));
    }

    #[test]
    fn a_truncation_alone_waits_for_the_second_flush_or_release() {
        // `: > file` in bash: open(O_TRUNC), flush (dup2), flush (close).
        let mut p = Pending::new(7, true);
        assert!(!p.commit_on(When::Flush(7)));
        assert!(p.commit_on(When::Flush(7)));
        let mut p = Pending::new(7, true);
        assert!(p.commit_on(When::Release));
        let mut p = Pending::new(7, true);
        assert!(p.commit_on(When::Fsync));
    }
}
