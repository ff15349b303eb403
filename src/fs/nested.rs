//! A directory of whole trees, read-only: `MNT/snapshots/NAME/` is the
//! tree of a world as it was (its map, players, ...), built over a
//! snapshot's stores exactly as the world's own tree is. Every such tree
//! numbers its inodes as a whole mount does (the same tags as the world
//! beside it), so this directory hands the kernel numbers of its own, all
//! under its tag, and translates each call to the child it concerns.
//!
//! The numbers are kept while the kernel holds them (`remember`/`forget`)
//! and dropped once it no longer does and the table has grown, as the
//! Luanti tree's inode table does; a child's tree is opened at its first
//! use and kept for the mount's life.

use super::{Access, Attr, DirEntry, FsError, Kind, NewName, Options, ROOT, Result, Tree, list_numbered};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// What the directory holds.
pub(crate) trait Children: Send + Sync {
    /// For messages: what the directory is.
    fn describe(&self) -> String;
    /// The children's names now, in listing order.
    fn names(&self) -> Result<Vec<String>>;
    /// The tree of child `name` (NotFound when there is none now).
    fn open(&self, name: &str) -> Result<Arc<dyn Tree>>;
    /// Why nothing here can be changed (the message of every refusal).
    fn read_only_why(&self) -> String;
    /// When the list of children last changed, if known (the directory's
    /// mtime: the kernel keeps a listing until that changes).
    fn changed(&self) -> Option<SystemTime> {
        None
    }
}

struct Slot {
    name: String,
    tree: OnceLock<Arc<dyn Tree>>,
}

struct Entry {
    slot: usize,
    inner: u64,
    lookups: u64,
    used: Instant,
}

#[derive(Default)]
struct Table {
    next: u64,
    by_outer: HashMap<u64, Entry>,
    by_inner: HashMap<(usize, u64), u64>,
}

/// Above this many numbers, those the kernel does not hold are dropped.
const SWEEP_ABOVE: usize = 100_000;
/// A number just handed out may be about to be given to the kernel.
const SWEEP_GRACE: Duration = Duration::from_secs(30);

impl Table {
    fn outer(&mut self, tag: u64, slot: usize, inner: u64, lookups: u64) -> u64 {
        // Both maps hold every entry (a miss would only hand out a new number).
        if let Some(&o) = self.by_inner.get(&(slot, inner))
            && let Some(e) = self.by_outer.get_mut(&o)
        {
            e.lookups += lookups;
            e.used = Instant::now();
            return o;
        }
        if self.by_outer.len() > SWEEP_ABOVE {
            self.sweep();
        }
        // 1 is the directory itself.
        self.next += 1;
        let o = (tag << 60) | (self.next + 1);
        self.by_outer.insert(o, Entry { slot, inner, lookups, used: Instant::now() });
        self.by_inner.insert((slot, inner), o);
        o
    }

    fn sweep(&mut self) {
        let now = Instant::now();
        let by_inner = &mut self.by_inner;
        self.by_outer.retain(|_, e| {
            let keep = e.lookups > 0 || now.duration_since(e.used) < SWEEP_GRACE;
            if !keep {
                by_inner.remove(&(e.slot, e.inner));
            }
            keep
        });
    }
}

pub(crate) struct Nested {
    tag: u64,
    children: Box<dyn Children>,
    opts: Options,
    mounted: SystemTime,
    slots: Mutex<Vec<Arc<Slot>>>,
    table: Mutex<Table>,
}

impl Nested {
    /// The directory's inodes all have `tag` as their top four bits.
    pub(crate) fn new(tag: u64, children: Box<dyn Children>, opts: &Options) -> Nested {
        let opts = Options { read_only: true, ..opts.clone() };
        Nested {
            tag,
            children,
            opts,
            mounted: SystemTime::now(),
            slots: Mutex::new(Vec::new()),
            table: Mutex::new(Table::default()),
        }
    }

    /// The directory's own inode.
    pub(crate) fn root(&self) -> u64 {
        (self.tag << 60) | 1
    }

    fn slot_named(&self, name: &str) -> usize {
        let mut slots = self.slots.lock();
        if let Some(i) = slots.iter().position(|s| s.name == name) {
            return i;
        }
        slots.push(Arc::new(Slot { name: name.to_string(), tree: OnceLock::new() }));
        slots.len() - 1
    }

    fn tree(&self, slot: usize) -> Result<(Arc<Slot>, Arc<dyn Tree>)> {
        let s = self.slots.lock().get(slot).cloned().ok_or_else(FsError::not_found)?;
        if let Some(t) = s.tree.get() {
            return Ok((s.clone(), t.clone()));
        }
        let t = self.children.open(&s.name)?;
        Ok((s.clone(), s.tree.get_or_init(|| t).clone()))
    }

    /// The child and its inode for one of ours.
    fn resolve(&self, ino: u64) -> Result<(usize, Arc<dyn Tree>, u64)> {
        let (slot, inner) = {
            let t = self.table.lock();
            let e = t.by_outer.get(&ino).ok_or_else(FsError::not_found)?;
            (e.slot, e.inner)
        };
        Ok((slot, self.tree(slot)?.1, inner))
    }

    fn outer(&self, slot: usize, inner: u64, lookups: u64) -> u64 {
        self.table.lock().outer(self.tag, slot, inner, lookups)
    }

    fn root_attr(&self) -> Attr {
        let mtime = self.children.changed().unwrap_or(self.mounted);
        Attr::new(self.root(), Kind::Dir, 0, Access::Generated, mtime, &self.opts)
    }

    fn refused(&self) -> FsError {
        FsError::read_only(self.children.read_only_why())
    }

    /// A child's root, looked up (`lookups`: the kernel now holds it).
    fn child_root(&self, name: &str, lookups: u64) -> Result<Attr> {
        if !self.children.names()?.iter().any(|n| n == name) {
            return Err(FsError::not_found());
        }
        let slot = self.slot_named(name);
        let (_, tree) = self.tree(slot)?;
        if lookups > 0 {
            tree.remember(ROOT);
        }
        let mut a = tree.getattr(ROOT)?;
        a.ino = self.outer(slot, ROOT, lookups);
        Ok(a)
    }
}

impl Tree for Nested {
    fn describe(&self) -> String {
        self.children.describe()
    }

    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Attr> {
        if parent == self.root() {
            let name = std::str::from_utf8(name).map_err(|_| FsError::not_found())?;
            return self.child_root(name, 1);
        }
        let (slot, tree, inner) = self.resolve(parent)?;
        let mut a = tree.lookup(inner, name)?;
        a.ino = self.outer(slot, a.ino, 1);
        Ok(a)
    }

    fn getattr(&self, ino: u64) -> Result<Attr> {
        if ino == self.root() {
            return Ok(self.root_attr());
        }
        let (slot, tree, inner) = self.resolve(ino)?;
        let mut a = tree.getattr(inner)?;
        a.ino = self.outer(slot, inner, 0);
        Ok(a)
    }

    fn parent(&self, ino: u64) -> Result<u64> {
        if ino == self.root() {
            return Ok(ROOT);
        }
        let (slot, tree, inner) = self.resolve(ino)?;
        if inner == ROOT {
            return Ok(self.root());
        }
        let p = tree.parent(inner)?;
        Ok(self.outer(slot, p, 0))
    }

    fn list(
        &self,
        dir: u64,
        offset: u64,
        plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<()> {
        if dir == self.root() {
            return list_numbered(self.children.names()?, offset, |name, cookie| {
                let attr = if plus { Some(self.child_root(&name, 1)?) } else { None };
                let ino = match &attr {
                    Some(a) => a.ino,
                    None => self.outer(self.slot_named(&name), ROOT, 0),
                };
                Ok(add(&DirEntry { ino, offset: cookie, kind: Kind::Dir, name: name.into() }, attr.as_ref()))
            });
        }
        let (slot, tree, inner) = self.resolve(dir)?;
        tree.list(inner, offset, plus, &mut |e, a| {
            let ino = self.outer(slot, e.ino, u64::from(a.is_some()));
            let e = DirEntry { ino, ..e.clone() };
            let a = a.map(|a| Attr { ino, ..a.clone() });
            add(&e, a.as_ref())
        })
    }

    fn read(&self, ino: u64) -> Result<Arc<Vec<u8>>> {
        let (_, tree, inner) = self.resolve(ino)?;
        tree.read(inner)
    }

    fn open_read(&self, ino: u64) -> Result<(Arc<Vec<u8>>, bool)> {
        let (_, tree, inner) = self.resolve(ino)?;
        tree.open_read(inner)
    }

    fn sized_by_reading(&self, ino: u64) -> bool {
        self.resolve(ino).is_ok_and(|(_, tree, inner)| tree.sized_by_reading(inner))
    }

    /// The children are worlds' trees, whose `names` files are.
    fn has_files_sized_by_reading(&self) -> bool {
        true
    }

    fn readlink(&self, ino: u64) -> Result<Vec<u8>> {
        let (_, tree, inner) = self.resolve(ino)?;
        tree.readlink(inner)
    }

    fn check_writable(&self, _ino: u64) -> Result<()> {
        Err(self.refused())
    }

    fn write(&self, _ino: u64, _content: &[u8], _base: Option<&[u8]>) -> Result<()> {
        Err(self.refused())
    }

    fn new_name(&self, _dir: u64, _name: &[u8]) -> Result<NewName> {
        Err(self.refused())
    }

    fn mkdir(&self, _dir: u64, _name: &[u8]) -> Result<Attr> {
        Err(self.refused())
    }

    fn rmdir(&self, _dir: u64, _name: &[u8]) -> Result<()> {
        Err(self.refused())
    }

    fn unlink(&self, _dir: u64, _name: &[u8]) -> Result<()> {
        Err(self.refused())
    }

    fn rename(&self, _dir: u64, _name: &[u8], _newdir: u64, _newname: &[u8]) -> Result<()> {
        Err(self.refused())
    }

    fn remember(&self, ino: u64) {
        let found = self.table.lock().by_outer.get_mut(&ino).map(|e| {
            e.lookups += 1;
            (e.slot, e.inner)
        });
        if let Some((slot, inner)) = found
            && let Ok((_, tree)) = self.tree(slot)
        {
            tree.remember(inner);
        }
    }

    fn forget(&self, ino: u64, n: u64) {
        let found = self.table.lock().by_outer.get_mut(&ino).map(|e| {
            e.lookups = e.lookups.saturating_sub(n);
            e.used = Instant::now();
            (e.slot, e.inner)
        });
        if let Some((slot, inner)) = found
            && let Ok((_, tree)) = self.tree(slot)
        {
            tree.forget(inner, n);
        }
    }

    fn path(&self, ino: u64) -> String {
        let base = self.children.describe();
        if ino == self.root() {
            return base;
        }
        match self.resolve(ino) {
            Ok((slot, tree, inner)) => {
                let name = self.slots.lock().get(slot).map(|s| s.name.clone()).unwrap_or_default();
                let rest = tree.path(inner);
                if rest.is_empty() { format!("{base}/{name}") } else { format!("{base}/{name}/{rest}") }
            }
            Err(_) => format!("{base}/#{ino}"),
        }
    }

    /// Children appear (new snapshots) without an invalidation.
    fn negative_entries(&self, dir: u64) -> bool {
        dir != self.root() && self.resolve(dir).is_ok_and(|(_, tree, inner)| tree.negative_entries(inner))
    }
}
