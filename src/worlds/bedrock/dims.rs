//! `dimensions/`: the nether's and the end's chunks of a Bedrock world,
//! `dimensions/nether/chunks/X,Z/` and `dimensions/end/chunks/X,Z/`. This
//! tree owns the directories `dimensions/`, `nether/` and `end/`, and
//! nests each dimension's chunk tree (a tree of its own tag, which the
//! union routes here) as `chunks`; every call about a nested tree's inode
//! goes to that tree.

use crate::fs::{Access, Attr, DirEntry, FsError, Kind, NewName, Options, ROOT, Result, Tree, list_numbered};
use std::sync::Arc;
use std::time::SystemTime;

pub(crate) struct DimsTree {
    tag: u64,
    /// Each dimension's directory name, its chunk tree and that tree's root.
    dims: Vec<(&'static str, Arc<dyn Tree>, u64)>,
    opts: Options,
}

impl DimsTree {
    pub(crate) fn new(tag: u64, dims: Vec<(&'static str, Arc<dyn Tree>, u64)>, opts: Options) -> DimsTree {
        DimsTree { tag, dims, opts }
    }

    /// `dimensions/`.
    pub(crate) fn root(&self) -> u64 {
        (self.tag << 60) | 1
    }

    /// The directory of dimension `i`.
    fn dir(&self, i: usize) -> u64 {
        (self.tag << 60) | (2 + i as u64)
    }

    fn own(&self, ino: u64) -> bool {
        ino >> 60 == self.tag
    }

    /// The dimension whose directory `ino` is.
    fn dir_index(&self, ino: u64) -> Option<usize> {
        (0..self.dims.len()).find(|&i| self.dir(i) == ino)
    }

    /// The nested tree that answers for `ino`.
    fn inner(&self, ino: u64) -> Result<&dyn Tree> {
        self.dims
            .iter()
            .find(|(_, _, root)| root >> 60 == ino >> 60 && !self.own(ino))
            .map(|(_, t, _)| t.as_ref())
            .ok_or_else(FsError::not_found)
    }

    fn dir_attr(&self, ino: u64) -> Attr {
        Attr::new(ino, Kind::Dir, 0, Access::Normal, SystemTime::now(), &self.opts)
    }
}

impl Tree for DimsTree {
    fn describe(&self) -> String {
        let inner: Vec<String> = self.dims.iter().map(|(n, t, _)| format!("{n}: {}", t.describe())).collect();
        inner.join("; ")
    }
    fn readme(&self) -> String {
        String::new()
    }
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Attr> {
        if parent == self.root() {
            let i = self.dims.iter().position(|(n, _, _)| n.as_bytes() == name).ok_or_else(FsError::not_found)?;
            return Ok(self.dir_attr(self.dir(i)));
        }
        if let Some(i) = self.dir_index(parent) {
            if name != b"chunks" {
                return Err(FsError::not_found());
            }
            let (_, t, root) = &self.dims[i];
            t.remember(*root);
            return t.getattr(*root);
        }
        self.inner(parent)?.lookup(parent, name)
    }
    fn getattr(&self, ino: u64) -> Result<Attr> {
        if ino == self.root() || self.dir_index(ino).is_some() {
            return Ok(self.dir_attr(ino));
        }
        self.inner(ino)?.getattr(ino)
    }
    fn parent(&self, ino: u64) -> Result<u64> {
        if ino == self.root() {
            return Ok(ROOT);
        }
        if self.dir_index(ino).is_some() {
            return Ok(self.root());
        }
        if let Some(i) = self.dims.iter().position(|(_, _, root)| *root == ino) {
            return Ok(self.dir(i));
        }
        self.inner(ino)?.parent(ino)
    }
    fn list(
        &self,
        dir: u64,
        offset: u64,
        plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<()> {
        let entries: Vec<(String, u64, Option<usize>)> = if dir == self.root() {
            self.dims.iter().enumerate().map(|(i, (n, _, _))| (n.to_string(), self.dir(i), None)).collect()
        } else if let Some(i) = self.dir_index(dir) {
            vec![("chunks".to_string(), self.dims[i].2, Some(i))]
        } else {
            return self.inner(dir)?.list(dir, offset, plus, add);
        };
        list_numbered(entries, offset, |(name, ino, nested), cookie| {
            let attr = match (plus, nested) {
                (false, _) => None,
                (true, Some(i)) => {
                    self.dims[i].1.remember(ino);
                    Some(self.dims[i].1.getattr(ino)?)
                }
                (true, None) => Some(self.dir_attr(ino)),
            };
            Ok(add(&DirEntry { ino, offset: cookie, kind: Kind::Dir, name: name.into() }, attr.as_ref()))
        })
    }
    fn read(&self, ino: u64) -> Result<Arc<Vec<u8>>> {
        if self.own(ino) {
            return Err(FsError::is_dir());
        }
        self.inner(ino)?.read(ino)
    }
    fn open_read(&self, ino: u64) -> Result<(Arc<Vec<u8>>, bool)> {
        if self.own(ino) {
            return Err(FsError::is_dir());
        }
        self.inner(ino)?.open_read(ino)
    }
    fn check_writable(&self, ino: u64) -> Result<()> {
        if self.own(ino) {
            return Err(FsError::is_dir());
        }
        self.inner(ino)?.check_writable(ino)
    }
    fn write(&self, ino: u64, content: &[u8], base: Option<&[u8]>) -> Result<()> {
        self.inner(ino)?.write(ino, content, base)
    }
    fn check_content(&self, ino: u64, content: &[u8]) -> Result<()> {
        self.inner(ino)?.check_content(ino, content)
    }
    fn complete(&self, ino: u64, content: &[u8]) -> bool {
        self.inner(ino).is_ok_and(|t| t.complete(ino, content))
    }
    fn new_name(&self, dir: u64, name: &[u8]) -> Result<NewName> {
        if self.own(dir) {
            return Err(FsError::perm("dimensions/ holds one directory per dimension; nothing can be added"));
        }
        self.inner(dir)?.new_name(dir, name)
    }
    fn create(&self, dir: u64, name: &[u8], content: &[u8]) -> Result<u64> {
        self.inner(dir)?.create(dir, name, content)
    }
    fn mkdir(&self, dir: u64, name: &[u8]) -> Result<Attr> {
        if self.own(dir) {
            return Err(FsError::perm("dimensions/ holds one directory per dimension; nothing can be added"));
        }
        self.inner(dir)?.mkdir(dir, name)
    }
    fn rmdir(&self, dir: u64, name: &[u8]) -> Result<()> {
        if self.own(dir) {
            return Err(FsError::perm("the dimensions' directories cannot be removed"));
        }
        self.inner(dir)?.rmdir(dir, name)
    }
    fn unlink(&self, dir: u64, name: &[u8]) -> Result<()> {
        if self.own(dir) {
            return Err(FsError::is_dir());
        }
        self.inner(dir)?.unlink(dir, name)
    }
    fn rename(&self, dir: u64, name: &[u8], newdir: u64, newname: &[u8]) -> Result<()> {
        if self.own(dir) || dir >> 60 != newdir >> 60 {
            return Err(FsError::perm("the dimensions' directories cannot be renamed"));
        }
        self.inner(dir)?.rename(dir, name, newdir, newname)
    }
    fn remember(&self, ino: u64) {
        if let Ok(t) = self.inner(ino) {
            t.remember(ino)
        }
    }
    fn forget(&self, ino: u64, n: u64) {
        if let Ok(t) = self.inner(ino) {
            t.forget(ino, n)
        }
    }
    fn path(&self, ino: u64) -> String {
        if ino == self.root() {
            return "dimensions".into();
        }
        if let Some(i) = self.dir_index(ino) {
            return format!("dimensions/{}", self.dims[i].0);
        }
        match (self.inner(ino), self.dims.iter().find(|(_, _, r)| r >> 60 == ino >> 60)) {
            (Ok(t), Some((n, _, _))) => format!("dimensions/{n}/{}", t.path(ino)),
            _ => format!("inode {ino:#x}"),
        }
    }
    fn negative_entries(&self, dir: u64) -> bool {
        match self.inner(dir) {
            Ok(t) => t.negative_entries(dir),
            Err(_) => true,
        }
    }
    fn sync(&self) -> Result<()> {
        self.dims.iter().try_for_each(|(_, t, _)| t.sync())
    }
    fn shutdown(&self) -> Vec<String> {
        self.dims.iter().flat_map(|(_, t, _)| t.shutdown()).collect()
    }
}
