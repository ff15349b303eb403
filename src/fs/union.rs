//! A tree with other trees mounted on directories of its root: how a Luanti
//! world shows its map (the main tree) beside `players/`, `auth/` and
//! `mod_storage/` (each a tree of its own over another database), and a
//! Minecraft world its `chunks/`, `block/`, `find/`, ... A union can be
//! mounted in another ([`Union::nested`]: a world's `dimensions/`).
//!
//! No numbers are translated: each mounted tree hands out inodes whose top
//! four bits are its own tag, and its root directory is an inode of that
//! tag too, so invalidations it sends need no rewriting. The union routes
//! every call by the tag of the inode it concerns.

use super::{Attr, DirEntry, FsError, NewName, ROOT, Result, Tree};
use std::sync::Arc;

/// Cookies of the root listing from here on are the mounted directories
/// (the main tree's own root cookies stay below).
const MOUNT_COOKIES: u64 = 1 << 61;

/// A tree mounted on a directory of the root.
pub struct Mounted {
    /// Its name in the root.
    pub(crate) name: String,
    /// The top four bits of every inode it hands out.
    pub(crate) tag: u64,
    /// Its root directory's inode (of that tag).
    pub(crate) root: u64,
    pub(crate) tree: Arc<dyn Tree>,
}

pub(crate) struct Union {
    main: Arc<dyn Tree>,
    mounted: Vec<Mounted>,
    /// The directory the trees are mounted on: [`ROOT`], or the root of
    /// `main` in a union mounted in another.
    root: u64,
    /// Where the four bits that name an inode's tree are.
    shift: u32,
    /// The union's path in the mount ("" at the root, else ending in '/').
    prefix: String,
}

impl Union {
    /// `main` must hand out no inode with a tag of `mounted`, nor list a
    /// root entry of the same name.
    pub(crate) fn new(main: Arc<dyn Tree>, mounted: Vec<Mounted>) -> Union {
        Union { main, mounted, root: ROOT, shift: 60, prefix: String::new() }
    }

    /// A union that is itself mounted in another, as directory `prefix`
    /// (its path in the mount, ending in '/'): `main`'s root `root` is
    /// that directory; every inode of `main` and of the trees in `mounted`
    /// shares the bits above `shift + 4`, and the four bits at `shift` are
    /// its tree's tag (0 for `main`). Paths are given with `prefix`.
    pub(crate) fn nested(main: Arc<dyn Tree>, mounted: Vec<Mounted>, root: u64, shift: u32, prefix: String) -> Union {
        Union { main, mounted, root, shift, prefix }
    }

    /// The directory the trees are mounted on.
    pub(crate) fn root(&self) -> u64 {
        self.root
    }

    fn owner(&self, ino: u64) -> &dyn Tree {
        let tag = (ino >> self.shift) & 0xF;
        self.mounted.iter().find(|m| m.tag == tag).map_or(self.main.as_ref(), |m| m.tree.as_ref())
    }

    fn mount_named(&self, name: &[u8]) -> Option<&Mounted> {
        self.mounted.iter().find(|m| m.name.as_bytes() == name)
    }

    fn same_owner(&self, a: u64, b: u64) -> Result<&dyn Tree> {
        let (ta, tb) = (self.owner(a), self.owner(b));
        if std::ptr::addr_eq(ta, tb) {
            Ok(ta)
        } else {
            Err(FsError::across_boundary("players, auth, mod storage and the map are separate databases"))
        }
    }
}

impl Tree for Union {
    fn describe(&self) -> String {
        let mut s = self.main.describe();
        for m in &self.mounted {
            s.push_str(&format!("; {}", m.tree.describe()));
        }
        s
    }

    fn readme(&self) -> String {
        format!("{}\nThis mount: {}\n", self.main.readme(), self.describe())
    }

    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Attr> {
        if parent == self.root
            && let Some(m) = self.mount_named(name)
        {
            m.tree.remember(m.root);
            return m.tree.getattr(m.root);
        }
        self.owner(parent).lookup(parent, name)
    }

    fn getattr(&self, ino: u64) -> Result<Attr> {
        self.owner(ino).getattr(ino)
    }

    fn parent(&self, ino: u64) -> Result<u64> {
        if self.mounted.iter().any(|m| m.root == ino) {
            return Ok(self.root);
        }
        self.owner(ino).parent(ino)
    }

    fn list(
        &self,
        dir: u64,
        offset: u64,
        plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<()> {
        if dir != self.root {
            return self.owner(dir).list(dir, offset, plus, add);
        }
        if offset < MOUNT_COOKIES {
            let mut full = false;
            self.main.list(dir, offset, plus, &mut |e, a| {
                full = add(e, a);
                full
            })?;
            if full {
                return Ok(());
            }
        }
        let first = offset.saturating_sub(MOUNT_COOKIES) as usize;
        for (i, m) in self.mounted.iter().enumerate().skip(first) {
            let attr = if plus { Some(m.tree.getattr(m.root)?) } else { None };
            let e = DirEntry {
                ino: m.root,
                offset: MOUNT_COOKIES + i as u64 + 1,
                kind: m.tree.kind_of_root(m.root),
                name: m.name.clone().into(),
            };
            if add(&e, attr.as_ref()) {
                return Ok(());
            }
            if plus {
                m.tree.remember(m.root);
            }
        }
        Ok(())
    }

    fn read(&self, ino: u64) -> Result<Arc<Vec<u8>>> {
        self.owner(ino).read(ino)
    }

    fn open_read(&self, ino: u64) -> Result<(Arc<Vec<u8>>, bool)> {
        self.owner(ino).open_read(ino)
    }

    fn sized_by_reading(&self, ino: u64) -> bool {
        self.owner(ino).sized_by_reading(ino)
    }

    fn has_files_sized_by_reading(&self) -> bool {
        self.main.has_files_sized_by_reading() || self.mounted.iter().any(|m| m.tree.has_files_sized_by_reading())
    }

    fn readlink(&self, ino: u64) -> Result<Vec<u8>> {
        self.owner(ino).readlink(ino)
    }

    fn check_writable(&self, ino: u64) -> Result<()> {
        self.owner(ino).check_writable(ino)
    }

    fn write(&self, ino: u64, content: &[u8], base: Option<&[u8]>) -> Result<()> {
        self.owner(ino).write(ino, content, base)
    }

    fn checks_truncating_writes(&self, ino: u64) -> bool {
        self.owner(ino).checks_truncating_writes(ino)
    }

    fn check_content(&self, ino: u64, content: &[u8]) -> Result<()> {
        self.owner(ino).check_content(ino, content)
    }

    fn complete(&self, ino: u64, content: &[u8]) -> bool {
        self.owner(ino).complete(ino, content)
    }

    fn new_name(&self, dir: u64, name: &[u8]) -> Result<NewName> {
        if dir == self.root && self.mount_named(name).is_some() {
            return Err(FsError::exists("that name is a directory of the world"));
        }
        self.owner(dir).new_name(dir, name)
    }

    fn create(&self, dir: u64, name: &[u8], content: &[u8]) -> Result<u64> {
        self.owner(dir).create(dir, name, content)
    }

    fn mkdir(&self, dir: u64, name: &[u8]) -> Result<Attr> {
        if dir == self.root && self.mount_named(name).is_some() {
            return Err(FsError::exists("that directory exists"));
        }
        self.owner(dir).mkdir(dir, name)
    }

    fn rmdir(&self, dir: u64, name: &[u8]) -> Result<()> {
        if dir == self.root && self.mount_named(name).is_some() {
            return Err(FsError::perm("players/, auth/, mod_storage/ and map/ are part of every world mount"));
        }
        self.owner(dir).rmdir(dir, name)
    }

    fn unlink(&self, dir: u64, name: &[u8]) -> Result<()> {
        self.owner(dir).unlink(dir, name)
    }

    fn rename(&self, dir: u64, name: &[u8], newdir: u64, newname: &[u8]) -> Result<()> {
        self.same_owner(dir, newdir)?.rename(dir, name, newdir, newname)
    }

    fn remember(&self, ino: u64) {
        self.owner(ino).remember(ino)
    }

    fn forget(&self, ino: u64, n: u64) {
        self.owner(ino).forget(ino, n)
    }

    fn watched(&self, ino: u64) -> bool {
        self.owner(ino).watched(ino)
    }

    /// The main tree's: mounted trees watch nothing of their own.
    fn outside_version(&self) -> Option<u64> {
        self.main.outside_version()
    }

    fn plus_everywhere(&self) -> bool {
        self.main.plus_everywhere()
    }

    fn stats_counters(&self) -> Vec<(&'static str, (u64, u64))> {
        self.main.stats_counters()
    }

    fn commits_wait_for_server(&self) -> bool {
        self.main.commits_wait_for_server() || self.mounted.iter().any(|m| m.tree.commits_wait_for_server())
    }

    fn path(&self, ino: u64) -> String {
        match self.owner(ino).path(ino) {
            p if p.is_empty() => self.prefix.trim_end_matches('/').to_string(),
            p => format!("{}{p}", self.prefix),
        }
    }

    fn negative_entries(&self, dir: u64) -> bool {
        self.owner(dir).negative_entries(dir)
    }

    fn sync(&self) -> Result<()> {
        for m in &self.mounted {
            m.tree.sync()?;
        }
        self.main.sync()
    }

    fn shutdown(&self) -> Vec<String> {
        let mut lost = self.main.shutdown();
        for m in &self.mounted {
            lost.extend(m.tree.shutdown());
        }
        lost
    }

    fn count(&self) -> u64 {
        self.main.count()
    }
}
