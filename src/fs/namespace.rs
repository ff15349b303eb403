//! Names programs make: scratch files (editors' temporary files, in
//! memory), the aliases a scratch file renamed over a file of the world
//! leaves behind, and the kernel's references to both, under one lock
//! (`Namespace`); and the operations on names (create, mknod, mkdir,
//! rmdir, unlink, rename), which pass what concerns the world to the tree.

use super::error::escape_name;
use super::provenance::Caller;
use super::scratch::{Scratch, ScratchFile};
use super::{Attr, ErrorKind, FIRST_SCRATCH, FsError, Inval, NewName, Opened, Result, Target, WorldFs};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, SystemTime};

/// The core's names, under one lock.
#[derive(Default)]
pub(super) struct Namespace {
    pub(crate) scratch: Scratch,
    /// Scratch inodes that were renamed over a file of the tree: the
    /// kernel keeps using the old number for the name until it looks the
    /// name up again. Each alias holds one reference to its target.
    aliases: HashMap<u64, u64>,
    /// The kernel's references to core inodes (scratch files, aliases).
    refs: HashMap<u64, u64>,
    next: u64,
}

impl Namespace {
    pub(crate) fn alias(&self, ino: u64) -> Option<u64> {
        self.aliases.get(&ino).copied()
    }

    /// The alias inodes of tree inode `target`.
    pub(crate) fn aliases_of(&self, target: u64) -> Vec<u64> {
        self.aliases.iter().filter(|(_, t)| **t == target).map(|(a, _)| *a).collect()
    }

    fn new_ino(&mut self) -> u64 {
        self.next += 1;
        FIRST_SCRATCH + self.next
    }

    pub(crate) fn remember(&mut self, ino: u64) {
        *self.refs.entry(ino).or_insert(0) += 1;
    }

    /// Drop `n` references to core inode `ino`. Once none are left and the
    /// scratch file is gone, its alias goes too: returns the alias's target,
    /// whose reference the caller gives back to the tree.
    pub(crate) fn forget(&mut self, ino: u64, n: u64) -> Option<u64> {
        let left = match self.refs.get_mut(&ino) {
            Some(r) => {
                *r = r.saturating_sub(n);
                *r
            }
            None => 0,
        };
        if left > 0 || self.scratch.get(ino).is_some() {
            return None;
        }
        self.refs.remove(&ino);
        self.aliases.remove(&ino)
    }

    /// From now on `ino` means tree inode `target`. Returns a target an
    /// older alias of `ino` held (to be given back to the tree).
    fn add_alias(&mut self, ino: u64, target: u64) -> Option<u64> {
        self.aliases.insert(ino, target)
    }
}

impl WorldFs {
    fn writable_mount(&self) -> Result<()> {
        if self.opts.read_only {
            return Err(FsError::read_only("the mount is read-only (-o ro)"));
        }
        Ok(())
    }

    /// The existing node called `name` in tree directory `dir`: a file or
    /// directory of the tree, or a scratch file.
    pub(super) fn existing_child(&self, dir: u64, name: &[u8]) -> Result<Target> {
        if dir == super::ROOT {
            match name {
                b"README" => return Ok(Target::Readme),
                b"write-errors" if !self.opts.read_only => return Ok(Target::WriteErrors),
                super::STATS_NAME => return Ok(Target::Stats),
                _ => {}
            }
        }
        match self.tree.lookup(dir, name) {
            Ok(a) => Ok(Target::Tree(a.ino)),
            Err(e) if e.kind == ErrorKind::NotFound => {
                self.ns.lock().scratch.lookup(dir, name).map(Target::Scratch).ok_or(e)
            }
            Err(e) => Err(e),
        }
    }

    fn check_name(name: &[u8]) -> Result<()> {
        if name.is_empty() || name.len() > 255 || name.contains(&b'/') {
            return Err(FsError::invalid("bad file name"));
        }
        Ok(())
    }

    /// A new scratch file `name` in `dir` (what it becomes is the tree's
    /// call), made by `maker` (its bases are what it and its group read;
    /// none without a maker).
    fn new_scratch(&self, dir: u64, name: &[u8], mode: u32, maker: Option<Caller>) -> Result<u64> {
        Self::check_name(name)?;
        let kind = self.tree.new_name(dir, name)?;
        let (bases, group_bases) = maker.map(|c| self.reads.lock().made_by(c)).unwrap_or_default();
        let mut ns = self.ns.lock();
        let ino = ns.new_ino();
        ns.scratch.insert(
            ino,
            ScratchFile {
                parent: dir,
                name: name.to_vec(),
                data: Vec::new(),
                mode: (mode & 0o7777) as u16,
                mtime: SystemTime::now(),
                pending: kind == NewName::Pending,
                bases,
                group_bases,
                stale_at: None,
            },
        );
        Ok(ino)
    }

    /// create(2) by a process whose group is not known (see `create_by`).
    pub fn create(&self, parent: u64, name: &OsStr, mode: u32, flags: i32, pid: u32) -> Result<(Attr, Opened)> {
        self.create_by(parent, name, mode, flags, Caller::alone(pid))
    }

    /// create(2): open an existing file, or make a scratch file.
    pub fn create_by(
        &self,
        parent: u64,
        name: &OsStr,
        mode: u32,
        flags: i32,
        caller: Caller,
    ) -> Result<(Attr, Opened)> {
        self.writable_mount()?;
        let dir = self.tree_dir(parent)?;
        let name = name.as_bytes();
        if let Ok(existing) = self.existing_child(dir, name) {
            if flags & libc::O_EXCL != 0 {
                return Err(FsError::exists("file exists"));
            }
            let ino = match existing {
                Target::Tree(t) => t,
                Target::Scratch(s) => s,
                Target::Readme => super::README,
                Target::WriteErrors => super::WRITE_ERRORS,
                Target::Stats => super::STATS_FILE,
            };
            let opened = self.open_by(ino, flags, caller)?;
            let attr = self.getattr(ino)?;
            self.remember(ino);
            return Ok((attr, opened));
        }
        // What the creator read is what its content is made from.
        let ino = self.new_scratch(dir, name, mode, Some(caller))?;
        let fh = self.open_scratch(ino, flags, caller);
        self.remember(ino);
        Ok((self.getattr(ino)?, Opened { fh, keep_cache: false, direct_io: false }))
    }

    /// mknod(2) of a regular file: a scratch file.
    pub(crate) fn mknod(&self, parent: u64, name: &OsStr, mode: u32) -> Result<Attr> {
        self.writable_mount()?;
        if mode & libc::S_IFMT != libc::S_IFREG && mode & libc::S_IFMT != 0 {
            return Err(FsError::perm("only regular files can be created here"));
        }
        let dir = self.tree_dir(parent)?;
        if self.existing_child(dir, name.as_bytes()).is_ok() {
            return Err(FsError::exists("file exists"));
        }
        // No process to take bases from: renamed over a file, it is a
        // deliberate overwrite.
        let ino = self.new_scratch(dir, name.as_bytes(), mode, None)?;
        self.remember(ino);
        self.getattr(ino)
    }

    /// Drop a scratch file that was unlinked while open, once it is closed.
    /// (Locks: handles before the namespace, as everywhere.)
    pub(super) fn drop_orphan(&self, ino: u64) {
        let handles = self.handles.lock();
        let mut ns = self.ns.lock();
        if ns.scratch.get(ino).is_some_and(|f| f.parent == 0) && !Self::scratch_open_in(&handles, ino) {
            ns.scratch.remove(ino);
        }
    }

    /// Remove a scratch file (kept as an orphan while a handle has it open).
    fn remove_scratch(&self, ino: u64) {
        // Both locks at once, so that a release between the check and the
        // removal cannot leave an orphan nobody drops.
        let handles = self.handles.lock();
        let open = Self::scratch_open_in(&handles, ino);
        let mut ns = self.ns.lock();
        if open {
            // An orphan: parent 0 is no directory, and it becomes nothing.
            ns.scratch.rename(ino, 0, &ino.to_le_bytes());
            let _ = ns.scratch.edit(ino, |f| f.pending = false);
        } else {
            ns.scratch.remove(ino);
        }
    }

    /// Scratch file `ino` has become tree inode `target` (its content was
    /// committed there): remove the file and leave an alias.
    fn became(&self, ino: u64, target: u64) {
        self.remove_scratch(ino);
        self.tree.remember(target);
        let old = self.ns.lock().add_alias(ino, target);
        if let Some(old) = old {
            self.tree.forget(old, 1);
        }
    }

    pub fn mkdir(&self, parent: u64, name: &OsStr) -> Result<Attr> {
        let r = (|| {
            self.writable_mount()?;
            let dir = self.tree_dir(parent)?;
            let a = self.tree.mkdir(dir, name.as_bytes())?;
            self.invalidate(vec![Inval::Entry(parent, name.to_os_string())]);
            self.tree.remember(a.ino);
            Ok(a)
        })();
        self.name_change(|| self.describe_name("mkdir", parent, name), r)
    }

    pub fn rmdir(&self, parent: u64, name: &OsStr) -> Result<()> {
        let r = (|| {
            self.writable_mount()?;
            let dir = self.tree_dir(parent)?;
            self.tree.rmdir(dir, name.as_bytes())?;
            self.invalidate(vec![Inval::Entry(parent, name.to_os_string())]);
            Ok(())
        })();
        self.name_change(|| self.describe_name("rmdir", parent, name), r)
    }

    pub fn unlink(&self, parent: u64, name: &OsStr) -> Result<()> {
        let r = (|| {
            self.writable_mount()?;
            let dir = self.tree_dir(parent)?;
            match self.existing_child(dir, name.as_bytes())? {
                Target::Scratch(s) => {
                    self.remove_scratch(s);
                    Ok(())
                }
                Target::Readme | Target::WriteErrors | Target::Stats => {
                    Err(FsError::perm("this file is generated by worldfs"))
                }
                Target::Tree(t) => {
                    if self.tree.getattr(t)?.kind == super::Kind::Dir {
                        return Err(FsError::is_dir());
                    }
                    self.tree.unlink(dir, name.as_bytes())?;
                    self.invalidate(vec![Inval::Entry(parent, name.to_os_string())]);
                    Ok(())
                }
            }
        })();
        self.name_change(|| self.describe_name("unlink", parent, name), r)
    }

    pub fn rename(&self, parent: u64, name: &OsStr, newparent: u64, newname: &OsStr, flags: u32) -> Result<()> {
        let r = self.rename_inner(parent, name, newparent, newname, flags);
        self.name_change(
            || {
                let to = self.describe_name("", newparent, newname);
                format!("{} to{to}", self.describe_name("rename", parent, name))
            },
            r,
        )
    }

    fn rename_inner(&self, parent: u64, name: &OsStr, newparent: u64, newname: &OsStr, flags: u32) -> Result<()> {
        self.writable_mount()?;
        if flags & libc::RENAME_EXCHANGE != 0 {
            return Err(FsError::invalid("RENAME_EXCHANGE is not supported"));
        }
        let (src_dir, dst_dir) = (self.tree_dir(parent)?, self.tree_dir(newparent)?);
        let (name_b, newname_b) = (name.as_bytes(), newname.as_bytes());
        Self::check_name(newname_b)?;
        let src = self.existing_child(src_dir, name_b)?;
        let dst = self.existing_child(dst_dir, newname_b).ok();
        if flags & libc::RENAME_NOREPLACE != 0 && dst.is_some() {
            return Err(FsError::exists("target exists"));
        }
        if dst == Some(src) {
            return Ok(());
        }
        if matches!(src, Target::Readme | Target::WriteErrors | Target::Stats)
            || matches!(dst, Some(Target::Readme | Target::WriteErrors | Target::Stats))
        {
            return Err(FsError::perm("README and write-errors are generated by worldfs"));
        }
        match src {
            Target::Scratch(s) => self.rename_scratch(s, dst_dir, newname_b, dst)?,
            Target::Tree(t) => {
                let onto_scratch = match dst {
                    Some(Target::Scratch(_)) => true,
                    Some(_) => false,
                    None => self.tree.new_name(dst_dir, newname_b) == Ok(NewName::Scratch),
                };
                if onto_scratch && self.tree.getattr(t)?.kind == super::Kind::File {
                    // Renamed to a scratch name (a backup): the file leaves
                    // the world and its content lives on as a scratch file.
                    // The file goes first: if the tree keeps it, nothing
                    // has changed.
                    let content = self.tree.read(t)?.to_vec();
                    self.tree.unlink(src_dir, name_b)?;
                    if let Some(Target::Scratch(d)) = dst {
                        self.remove_scratch(d);
                    }
                    let ino = self.new_scratch(dst_dir, newname_b, 0o644, None)?;
                    let _ = self.ns.lock().scratch.edit(ino, |f| {
                        f.data = content;
                        f.pending = false;
                    });
                } else {
                    self.tree.rename(src_dir, name_b, dst_dir, newname_b)?;
                }
            }
            Target::Readme | Target::WriteErrors | Target::Stats => unreachable!("refused above"),
        }
        self.invalidate(vec![
            Inval::Entry(parent, name.to_os_string()),
            Inval::Entry(newparent, newname.to_os_string()),
        ]);
        Ok(())
    }

    /// A scratch file renamed onto `dst_dir/newname`: onto a file of the
    /// tree (or a pending name) it is a write of that file (validated, then
    /// committed); anything else is a plain scratch rename.
    fn rename_scratch(&self, ino: u64, dst_dir: u64, newname: &[u8], dst: Option<Target>) -> Result<()> {
        let data = || self.ns.lock().scratch.get(ino).map(|f| f.data.clone()).ok_or_else(FsError::not_found);
        match dst {
            Some(Target::Tree(t)) => {
                if self.tree.getattr(t)?.kind == super::Kind::Dir {
                    return Err(FsError::is_dir());
                }
                self.tree.check_writable(t)?;
                // Made from what `t` showed when its writer read it: if it
                // shows something else now, the rename would undo that.
                let base = self.ns.lock().scratch.get(ino).and_then(|f| f.base_of(t));
                let r = self.tree.write(t, &data()?, base.as_deref().map(Vec::as_slice));
                let r = r.map_err(|e| self.explain_stale_rename(ino, e));
                self.recorded(|| self.path(t), r)?;
                self.became(ino, t);
                Ok(())
            }
            _ => {
                let kind = self.tree.new_name(dst_dir, newname)?;
                if kind == NewName::Pending {
                    let r = self.tree.create(dst_dir, newname, &data()?);
                    let t = self.recorded(|| self.describe_name("write", dst_dir, OsStr::from_bytes(newname)), r)?;
                    if let Some(Target::Scratch(d)) = dst {
                        self.remove_scratch(d);
                    }
                    self.became(ino, t);
                    return Ok(());
                }
                if let Some(Target::Scratch(d)) = dst {
                    self.remove_scratch(d);
                }
                let mut ns = self.ns.lock();
                ns.scratch.rename(ino, dst_dir, newname);
                let _ = ns.scratch.edit(ino, |f| f.pending = false);
                Ok(())
            }
        }
    }

    /// A refused rename says which scratch file was made from an older
    /// version of the file it was to replace.
    fn explain_stale_rename(&self, ino: u64, e: FsError) -> FsError {
        if e.kind != ErrorKind::Stale {
            return e;
        }
        let mut ns = self.ns.lock();
        let name = ns.scratch.get(ino).map(|f| escape_name(&f.name)).unwrap_or_default();
        let now = std::time::Instant::now();
        let retried = ns.scratch.get(ino).and_then(|f| f.stale_at).is_some_and(|t| now - t < Duration::from_secs(1));
        ns.scratch.note(ino, |f| f.stale_at = Some(now));
        drop(ns);
        FsError {
            // The kernel's retry of the same rename: already in write-errors.
            reported: e.reported || retried,
            message: format!(
                "{}; the rename of {name} over it was refused: {name} was made from the file as it was \
                 before that change, and would undo it ({name} is kept)",
                e.message
            ),
            ..e
        }
    }

    /// A written pending scratch file becomes part of the world.
    pub(super) fn commit_pending(&self, ino: u64) -> Result<()> {
        let (parent, name, data) = {
            let ns = self.ns.lock();
            let f = ns.scratch.get(ino).ok_or_else(FsError::not_found)?;
            (f.parent, f.name.clone(), f.data.clone())
        };
        let r = self.tree.create(parent, &name, &data);
        let t = self.recorded(|| self.describe_name("write", parent, OsStr::from_bytes(&name)), r)?;
        self.became(ino, t);
        self.invalidate(vec![Inval::Entry(parent, OsStr::from_bytes(&name).to_os_string())]);
        Ok(())
    }
}
