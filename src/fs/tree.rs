//! The seam between the filesystem core and a kind of world.
//!
//! A [`Tree`] is what a kind of world looks like as files: it names its
//! inodes (any number whose top four bits are not [`CORE_TAG`]), answers
//! lookups and listings, renders files, and validates and commits new
//! content. The core (`fs/mod.rs`) keeps everything that is the same for
//! every kind: scratch files for editors, the aliases a rename over a file
//! leaves, open handles and when they commit, `README`, `write-errors`,
//! reads without handles, and the FUSE-facing API.

use super::{Attr, DirEntry, Inval, Result};
use parking_lot::Mutex;
use std::sync::{Arc, OnceLock};

/// Inodes whose top four bits are this belong to the core (README,
/// write-errors, scratch files); a tree never hands them out.
pub(crate) const CORE_TAG: u64 = 0xF;

/// The root directory (FUSE's inode 1): every tree's root.
pub const ROOT: u64 = 1;

/// Cookies from here on list the core's scratch files of a directory,
/// after the tree's own entries (whose cookies must stay below).
pub(crate) const SCRATCH_COOKIES: u64 = 1 << 62;

/// The cookie of a listing's first entry: the core's `.` and `..` come first.
pub(crate) const FIRST_COOKIE: u64 = 3;

/// Lists `entries` in order from cookie `offset`, for a [`Tree::list`]
/// whose entries are numbered by position: the i-th gets cookie
/// [`FIRST_COOKIE`] + i, those at or before `offset` are passed over, and
/// `send` (given an entry and its cookie) returns true when the reply is
/// full, which ends the listing.
pub fn list_numbered<T>(
    entries: impl IntoIterator<Item = T>,
    offset: u64,
    mut send: impl FnMut(T, u64) -> Result<bool>,
) -> Result<()> {
    let first = offset.saturating_sub(FIRST_COOKIE - 1) as usize;
    for (i, entry) in entries.into_iter().enumerate().skip(first) {
        if send(entry, FIRST_COOKIE + i as u64)? {
            break;
        }
    }
    Ok(())
}

/// What a new name in a tree directory becomes when a program creates it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewName {
    /// A scratch file (an editor's temporary file): memory only.
    Scratch,
    /// A scratch file that becomes part of the world (through
    /// [`Tree::create`]) when its opener writes and closes it, or when a
    /// scratch file is renamed onto it: a new metadata key, say.
    Pending,
}

/// What a tree can tell the core and the kernel after the fact: refusals
/// and warnings for `MNT/write-errors`, and invalidations of what the
/// kernel may have cached. Shared by the core and its tree.
#[derive(Default)]
pub struct Services {
    errors: Mutex<std::collections::VecDeque<String>>,
    invalidator: OnceLock<super::Invalidator>,
}

/// How many lines MNT/write-errors keeps.
const WRITE_ERRORS_KEPT: usize = 100;

impl Services {
    pub fn new() -> Arc<Services> {
        Arc::new(Services::default())
    }

    /// Add a line to MNT/write-errors (with the time) and log it.
    pub(crate) fn report(&self, line: String) {
        // One line each, whatever names the message quotes.
        let line = super::error::one_line(&line);
        log::warn!("{line}");
        let mut errors = self.errors.lock();
        errors.push_back(format!("{} {line}\n", crate::sys::time::format_utc(crate::sys::time::now_secs())));
        while errors.len() > WRITE_ERRORS_KEPT {
            errors.pop_front();
        }
        drop(errors);
        self.invalidate(vec![Inval::Inode(super::WRITE_ERRORS)]);
    }

    /// The lines of MNT/write-errors, oldest first.
    pub(crate) fn write_errors(&self) -> Vec<String> {
        self.errors.lock().iter().cloned().collect()
    }

    /// Tell the kernel (after the current reply) that these changed.
    pub(crate) fn invalidate(&self, list: Vec<Inval>) {
        if let Some(f) = self.invalidator.get()
            && !list.is_empty()
        {
            f(list);
        }
    }

    pub(super) fn set_invalidator(&self, f: super::Invalidator) {
        let _ = self.invalidator.set(f);
    }
}

/// A kind of world as a tree of files. Every method takes inode numbers of
/// the tree (never core ones: the core resolves aliases and scratch files
/// first). Errors carry their kind and a message saying what, where, why.
pub trait Tree: Send + Sync {
    /// For messages and the mount log: what is mounted ("sqlite3 map,
    /// legacy pos schema", "DDNet map, datafile version 4").
    fn describe(&self) -> String;

    /// The text of `MNT/README`; none by default (a tree mounted below a
    /// world's root, whose README is the root's).
    fn readme(&self) -> String {
        String::new()
    }

    /// The entry `name` of directory `parent`, with its attributes; ENOENT
    /// when there is none. Success means the kernel now holds one more
    /// reference to it (see [`forget`](Tree::forget)).
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Attr>;

    fn getattr(&self, ino: u64) -> Result<Attr>;

    /// The directory holding `ino` (the root's parent is the root).
    fn parent(&self, ino: u64) -> Result<u64>;

    /// What `root`, a root this tree has mounted in a [`Union`], is, known
    /// without computing its attributes (a listing of the union's root
    /// asks): a directory unless the tree says otherwise.
    ///
    /// [`Union`]: super::union::Union
    fn kind_of_root(&self, _root: u64) -> super::Kind {
        super::Kind::Dir
    }

    /// List directory `dir` from cookie `offset` (0: from the start; `.` and
    /// `..` are the core's). Entries get cookies from 3 up, below
    /// [`SCRATCH_COOKIES`]. `add` gets each entry, with its attributes when
    /// `plus` (an entry given attributes counts as a lookup), and returns
    /// true when the reply is full (that entry was not taken).
    fn list(
        &self,
        dir: u64,
        offset: u64,
        plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<()>;

    /// A file's content now.
    fn read(&self, ino: u64) -> Result<Arc<Vec<u8>>>;

    /// Whether file `ino`'s size is known only by making its content (an
    /// index over the whole world): its attributes then say 0, as /proc's
    /// files do, and it is read with direct I/O, so that a `stat` or a
    /// listing costs nothing and a read gets all of it.
    fn sized_by_reading(&self, _ino: u64) -> bool {
        false
    }

    /// Whether any file of the tree is [`sized_by_reading`](Tree::sized_by_reading):
    /// the kernel must then open files here (local opens read through the
    /// page cache, which stops at the size the attributes give).
    fn has_files_sized_by_reading(&self) -> bool {
        false
    }

    /// A file's content for an open for reading, and whether the kernel's
    /// cached pages of it (from its previous open) are still right.
    fn open_read(&self, ino: u64) -> Result<(Arc<Vec<u8>>, bool)> {
        Ok((self.read(ino)?, false))
    }

    /// The target of a symbolic link of the tree.
    fn readlink(&self, _ino: u64) -> Result<Vec<u8>> {
        Err(super::FsError::invalid("not a symbolic link"))
    }

    /// Whether the file may be written at all (checked at open).
    fn check_writable(&self, ino: u64) -> Result<()>;

    /// Whether a write of the file opened with O_TRUNC is still held, at
    /// commit, to what the file showed at open (ESTALE if it shows
    /// something else by then). Most files let the last writer win; one
    /// that shows many things at once (a Minecraft section's 4096 blocks)
    /// would otherwise undo another program's change to parts its writer
    /// never meant to touch.
    fn checks_truncating_writes(&self, _ino: u64) -> bool {
        false
    }

    /// New content for a file: validate, commit, invalidate. `base` is the
    /// content the writer started from (what it read when it opened the
    /// file), when known: if the file shows something else now, someone
    /// changed it meanwhile and the write is refused (ESTALE) rather than
    /// overwriting their change.
    fn write(&self, ino: u64, content: &[u8], base: Option<&[u8]>) -> Result<()>;

    /// Judge `content` as the whole new content of file `ino` without
    /// writing it: the error `write` would give for it, or Ok (also when
    /// the tree cannot tell before writing). Lets the core refuse at the
    /// call the writer sees (a write, the first close) what would be
    /// refused later.
    fn check_content(&self, _ino: u64, _content: &[u8]) -> Result<()> {
        Ok(())
    }

    /// Whether `content`, written in one piece at offset 0, is all that
    /// file `ino` can hold, so that nothing a later write adds could make
    /// it valid: a one-line file's line with its newline, a fixed-size
    /// file's bytes. Such a write is judged at once.
    fn complete(&self, _ino: u64, _content: &[u8]) -> bool {
        false
    }

    /// What a new name in `dir` becomes (or why it cannot be made).
    fn new_name(&self, dir: u64, name: &[u8]) -> Result<NewName>;

    /// Make a [`NewName::Pending`] name part of the world with `content`;
    /// returns its inode.
    fn create(&self, _dir: u64, _name: &[u8], _content: &[u8]) -> Result<u64> {
        Err(super::FsError::perm("new files cannot be made here"))
    }

    fn mkdir(&self, _dir: u64, _name: &[u8]) -> Result<Attr> {
        Err(super::FsError::perm("directories cannot be made here"))
    }

    fn rmdir(&self, _dir: u64, _name: &[u8]) -> Result<()> {
        Err(super::FsError::perm("this directory cannot be removed"))
    }

    /// Remove a file of the tree.
    fn unlink(&self, _dir: u64, _name: &[u8]) -> Result<()> {
        Err(super::FsError::perm("files of the world cannot be deleted (write them instead)"))
    }

    /// Rename within the tree (onto a name that is not a scratch file).
    fn rename(&self, _dir: u64, _name: &[u8], _newdir: u64, _newname: &[u8]) -> Result<()> {
        Err(super::FsError::perm("files of the world cannot be renamed; copy them instead"))
    }

    /// The kernel was handed `ino` once more (by create or an alias).
    fn remember(&self, _ino: u64) {}

    /// Whether the kernel may keep this file's attributes and pages until
    /// told they changed: its content changes only through this mount or
    /// with [`Tree::outside_version`]. Otherwise they are kept for the TTL.
    fn watched(&self, _ino: u64) -> bool {
        false
    }

    /// A number that moves whenever another process may have changed a
    /// watched file (cheap: polled every TTL); None when nothing is watched.
    fn outside_version(&self) -> Option<u64> {
        None
    }

    /// Whether the kernel may get attributes for every entry of every
    /// listing (READDIRPLUS on every page), building an inode for each:
    /// saves a LOOKUP per entry that is then used, and costs kernel memory
    /// per entry listed, so only for small worlds.
    fn plus_everywhere(&self) -> bool {
        false
    }

    /// Whether a commit waits for another process to apply it (a running
    /// server, at its next step): the mount then serves more requests at
    /// once, so that the changes of many writers wait, and are applied,
    /// together.
    fn commits_wait_for_server(&self) -> bool {
        false
    }

    /// More counters for `MNT/.worldfs-stats`: the parts of the tree's own
    /// work worth timing, as (name, (count, nanoseconds)). The same names
    /// at every call (the file keeps its length; the core formats them).
    fn stats_counters(&self) -> Vec<(&'static str, (u64, u64))> {
        Vec::new()
    }

    /// The kernel dropped `n` references to `ino`.
    fn forget(&self, _ino: u64, _n: u64) {}

    /// A path-like name of an inode for messages (`blocks/1,2,3/names`).
    fn path(&self, ino: u64) -> String;

    /// Whether the kernel may remember that a name is missing from `dir`
    /// for the TTL (not where names can appear without an invalidation).
    fn negative_entries(&self, _dir: u64) -> bool {
        true
    }

    /// Write what was accepted but not yet stored (grouped commits):
    /// before fsync returns, and at unmount.
    fn sync(&self) -> Result<()> {
        Ok(())
    }

    /// At unmount, after the handles: what could not be stored.
    fn shutdown(&self) -> Vec<String> {
        Vec::new()
    }

    /// A count for statfs (blocks, files...).
    fn count(&self) -> u64 {
        0
    }
}
