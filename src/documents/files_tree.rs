//! The one adapter of [`Document`]s to the core's [`Tree`]: whatever is
//! shown as files (a schematic, a DDNet map, a player, an account) is
//! served here, with inodes numbered by path (kept across edits), files
//! rendered on demand and kept until the item changes, and each accepted
//! edit made on a fresh decoding, encoded, checked to decode back, and
//! stored through its [`Home`] in one step that is refused if the item
//! changed since it was read.
//!
//! A [`Home`] says where the documents live and the few ways homes differ:
//! one file that is the whole mount ([`super::doc_tree::OneFile`]), or a
//! collection of named records, each a directory under the root
//! (`luanti::records::RecordSet`).

use super::{DocError, Document, Entry};
use crate::fs::{
    Access, Attr, DirEntry, ErrorKind, FsError, Inval, Kind, NewName, Options, Result, Services, Tree, list_numbered,
};
use crate::view::escape;
use parking_lot::{Mutex, MutexGuard};
use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

/// One stored version of an item, as its home reads it.
pub struct Stored<D, S> {
    pub(crate) bytes: Vec<u8>,
    pub(crate) doc: D,
    /// What identifies this version cheaply (a file's identity), if anything.
    pub(crate) stamp: S,
}

/// Where documents live: one file, or a store of named records.
pub trait Home<D: Document>: Send + Sync + 'static {
    /// Cheap identity of a stored version ([`Home::stamp`]).
    type Stamp: Clone + PartialEq + Send + Sync + 'static;

    /// Many named items, each a directory under the root (records), or one
    /// item, named "", that is the root (a document).
    const MANY: bool;

    /// For messages and the mount log.
    fn describe(&self) -> String;

    /// The text of `MNT/README` (`doc`: the item of a one-item home).
    fn readme(&self, _doc: Option<&D>) -> String {
        String::new()
    }

    /// Prefix of the paths in messages (the collection's directory).
    fn label(&self) -> &'static str {
        ""
    }

    /// What read-only files are made from, for the refusal of a write.
    fn made_from(&self) -> &'static str {
        D::NAME
    }

    /// Only the mount's owner may see the files (accounts).
    fn private(&self) -> bool {
        false
    }

    /// The items' names as shown (directory names), sorted; many-item homes.
    fn names(&self) -> Result<Vec<String>> {
        Ok(Vec::new())
    }

    /// The current stamp of `name` without reading it (None: cannot tell,
    /// read it again).
    fn stamp(&self, _name: &str) -> Result<Option<Self::Stamp>> {
        Ok(None)
    }

    /// The stored version of `name` (None: there is none).
    fn load(&self, name: &str) -> Result<Option<Stored<D, Self::Stamp>>>;

    /// `bytes` of `name` decoded (for a fresh copy to edit).
    fn decode(&self, name: &str, bytes: &[u8]) -> Result<D>;

    /// Replace `old` with `new` (None: delete) in one step, refused if the
    /// stored item is no longer `old`; `what` names the change (journal).
    /// Returns the new version's stamp when the written version may be
    /// kept as current (else it is read again).
    fn store(&self, name: &str, old: Option<&[u8]>, new: Option<&[u8]>, what: &str) -> Result<Option<Self::Stamp>>;

    /// Whether a change may be made now (a running server refuses it).
    fn before_change(&self) -> Result<()> {
        Ok(())
    }

    /// A refusal of a change of `full` as the user sees it (records put it
    /// in write-errors themselves, with the path).
    fn refused(&self, _full: &str, e: FsError) -> FsError {
        e
    }

    /// A refused unlink, mkdir or rmdir inside an item.
    fn refused_structure(&self, e: DocError) -> FsError {
        FsError::invalid(e.to_string())
    }

    /// Why `name` cannot name a new item, if it cannot (many-item homes).
    fn check_name(&self, _name: &str) -> std::result::Result<(), String> {
        Err("no items can be made here".into())
    }

    /// A new item for mkdir, or why there cannot be one.
    fn new_item(&self, _name: &str) -> std::result::Result<D, String> {
        Err("no items can be made here".into())
    }

    /// Whether file names inside items are escaped keys (`%XX`), so that a
    /// misspelt one is refused rather than kept as a scratch file.
    fn escaped_keys(&self) -> bool {
        false
    }

    /// Whether the kernel may remember missing names (not where items
    /// appear through other programs without an invalidation).
    fn negative_entries(&self) -> bool {
        true
    }

    /// Whether truncating writes of the items' files are held to what the
    /// file showed at open (see `Tree::checks_truncating_writes`).
    fn checks_truncating_writes(&self) -> bool {
        false
    }
}

/// One version of an item as served: decoded, its entries indexed, its
/// files rendered on demand.
struct Version<D, S> {
    bytes: Vec<u8>,
    doc: Arc<D>,
    entries: Vec<Entry>,
    by_path: HashMap<String, usize>,
    rendered: HashMap<String, Arc<Vec<u8>>>,
    stamp: S,
    /// The files' mtime: when this content was first seen.
    since: SystemTime,
}

impl<D: Document, S> Version<D, S> {
    fn new(stored: Stored<D, S>, since: SystemTime) -> Version<D, S> {
        let entries = stored.doc.entries();
        let by_path = entries.iter().enumerate().map(|(i, e)| (e.path.clone(), i)).collect();
        Version {
            bytes: stored.bytes,
            doc: Arc::new(stored.doc),
            entries,
            by_path,
            rendered: HashMap::new(),
            stamp: stored.stamp,
            since,
        }
    }

    fn entry(&self, rest: &str) -> Option<&Entry> {
        self.by_path.get(rest).map(|&i| &self.entries[i])
    }
}

struct Cached<D, S> {
    /// When it was read or last found unchanged.
    checked: Instant,
    version: Option<Version<D, S>>,
}

struct State<D, S> {
    inos: HashMap<String, u64>,
    paths: HashMap<u64, String>,
    next: u64,
    names: Option<(Instant, Vec<String>)>,
    items: HashMap<String, Cached<D, S>>,
    /// Items made by mkdir that hold nothing yet (not stored).
    empty: BTreeSet<String>,
}

/// Any [`Document`] in its [`Home`] as the core's [`Tree`].
pub struct FilesTree<D: Document, H: Home<D>> {
    home: H,
    /// Every inode of the tree is this with a number below 1 << 48.
    base: u64,
    opts: Options,
    services: Arc<Services>,
    state: Mutex<State<D, H::Stamp>>,
    /// One change at a time: each is a read-modify-write of an item.
    commit: Mutex<()>,
    since: SystemTime,
    _doc: PhantomData<fn() -> D>,
}

fn parent_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(p, _)| p)
}

fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() { name.to_string() } else { format!("{dir}/{name}") }
}

fn name_str(name: &[u8]) -> Result<&str> {
    std::str::from_utf8(name).map_err(|_| FsError::invalid("file names here are UTF-8"))
}

fn doc_err(e: DocError) -> FsError {
    FsError::invalid(e.to_string())
}

/// A write's file (inside its item), new content, and the content its
/// writer started from.
#[derive(Clone, Copy)]
struct WriteOf<'a> {
    rest: &'a str,
    content: &'a [u8],
    base: Option<&'a [u8]>,
}

/// Child names per directory path.
fn children_by_dir(entries: &[Entry]) -> HashMap<String, Vec<String>> {
    let mut m: HashMap<String, Vec<String>> = HashMap::new();
    for e in entries {
        m.entry(parent_of(&e.path).to_string()).or_default().push(base_name(&e.path).to_string());
    }
    m
}

impl<D: Document, H: Home<D>> FilesTree<D, H> {
    /// `tag`: the top four bits of every inode of this tree (0 for a tree
    /// that is the whole mount: its root is then the core's root).
    pub(crate) fn with_home(tag: u64, home: H, opts: Options, services: Arc<Services>) -> FilesTree<D, H> {
        Self::with_home_at(tag << 60, home, opts, services)
    }

    /// A tree whose inodes are `base` with its own numbers (below 1 << 48)
    /// in the low bits: a tree in a union mounted in another
    /// (`fs::union::Union::nested`).
    pub(crate) fn with_home_at(base: u64, home: H, opts: Options, services: Arc<Services>) -> FilesTree<D, H> {
        let root = base | 1;
        let state = State {
            inos: HashMap::from([(String::new(), root)]),
            paths: HashMap::from([(root, String::new())]),
            next: 1,
            names: None,
            items: HashMap::new(),
            empty: BTreeSet::new(),
        };
        FilesTree {
            home,
            base,
            opts,
            services,
            state: Mutex::new(state),
            commit: Mutex::new(()),
            since: SystemTime::now(),
            _doc: PhantomData,
        }
    }

    /// The inode of the tree's root directory.
    pub(crate) fn root(&self) -> u64 {
        self.base | 1
    }

    /// Make `stored` the current version of item `name` (a document read
    /// at mount).
    pub(crate) fn prime(&self, name: &str, stored: Stored<D, H::Stamp>) {
        let version = Some(Version::new(stored, SystemTime::now()));
        self.lock().items.insert(name.to_string(), Cached { checked: Instant::now(), version });
    }

    /// The item a path is in, and the path inside it.
    fn split<'a>(&self, path: &'a str) -> (&'a str, &'a str) {
        if H::MANY { path.split_once('/').unwrap_or((path, "")) } else { ("", path) }
    }

    /// The path in messages (`players/alice/hp`).
    fn full(&self, path: &str) -> String {
        join(self.home.label(), path)
    }

    fn ino_of(&self, st: &mut State<D, H::Stamp>, path: &str) -> u64 {
        if let Some(&i) = st.inos.get(path) {
            return i;
        }
        st.next += 1;
        let i = self.base | st.next;
        st.inos.insert(path.to_string(), i);
        st.paths.insert(i, path.to_string());
        i
    }

    fn path_of(st: &State<D, H::Stamp>, ino: u64) -> Result<String> {
        st.paths.get(&ino).cloned().ok_or_else(FsError::not_found)
    }

    fn lock(&self) -> MutexGuard<'_, State<D, H::Stamp>> {
        self.state.lock()
    }

    /// The current version of item `name`: the cached one within the TTL
    /// (or when its stamp is unchanged), else read again. `now`: ignore
    /// the TTL (before a change).
    fn current<'s>(
        &self,
        st: &'s mut State<D, H::Stamp>,
        name: &str,
        now: bool,
    ) -> Result<Option<&'s mut Version<D, H::Stamp>>> {
        let fresh = match st.items.get_mut(name) {
            Some(c) if !now && c.checked.elapsed() < self.opts.ttl => true,
            Some(c) => {
                let same = match (&c.version, self.home.stamp(name)?) {
                    (Some(v), Some(s)) => v.stamp == s,
                    _ => false,
                };
                if same {
                    c.checked = Instant::now();
                }
                same
            }
            None => false,
        };
        if !fresh {
            self.reload(st, name)?;
        }
        Ok(st.items.get_mut(name).and_then(|c| c.version.as_mut()))
    }

    /// Read item `name` again; if it changed, tell the kernel.
    fn reload(&self, st: &mut State<D, H::Stamp>, name: &str) -> Result<()> {
        let stored = self.home.load(name)?;
        let old = st.items.remove(name).and_then(|c| c.version);
        let changed = old.as_ref().map(|v| &v.bytes) != stored.as_ref().map(|s| &s.bytes);
        let since = match &old {
            Some(v) if !changed => v.since,
            Some(_) => SystemTime::now(),
            None if H::MANY => self.since,
            None => SystemTime::now(),
        };
        if changed && old.is_some() {
            self.services.invalidate(self.item_inodes(st, name));
        }
        let version = stored.map(|s| Version::new(s, since));
        st.items.insert(name.to_string(), Cached { checked: Instant::now(), version });
        Ok(())
    }

    /// The inodes of item `name`'s files (all of a one-item tree).
    fn item_inodes(&self, st: &State<D, H::Stamp>, name: &str) -> Vec<Inval> {
        let prefix = format!("{name}/");
        st.inos
            .iter()
            .filter(|(p, _)| !H::MANY || p.as_str() == name || p.starts_with(&prefix))
            .map(|(_, &i)| Inval::Inode(i))
            .collect()
    }

    /// The entry at `path` (the root and item directories included).
    fn entry(&self, st: &mut State<D, H::Stamp>, path: &str) -> Result<Entry> {
        if path.is_empty() {
            return Ok(Entry::dir(""));
        }
        let (name, rest) = self.split(path);
        let empty = st.empty.contains(name);
        match self.current(st, name, false)? {
            None if rest.is_empty() && empty => Ok(Entry::dir(name)),
            None => Err(FsError::not_found()),
            Some(_) if rest.is_empty() => Ok(Entry::dir(name)),
            Some(v) => v.entry(rest).cloned().ok_or_else(FsError::not_found),
        }
    }

    fn render(&self, st: &mut State<D, H::Stamp>, path: &str) -> Result<Arc<Vec<u8>>> {
        let (name, rest) = self.split(path);
        let full = self.full(path);
        let v = self.current(st, name, false)?.ok_or_else(FsError::not_found)?;
        if let Some(r) = v.rendered.get(rest) {
            return Ok(r.clone());
        }
        let bytes = Arc::new(v.doc.render(rest).map_err(|e| FsError::io(e.in_file(&full).to_string()))?);
        v.rendered.insert(rest.to_string(), bytes.clone());
        Ok(bytes)
    }

    /// When the files at `path` last changed.
    fn since_of(&self, st: &State<D, H::Stamp>, path: &str) -> SystemTime {
        let (name, rest) = self.split(path);
        if H::MANY && rest.is_empty() {
            return self.since;
        }
        st.items.get(name).and_then(|c| c.version.as_ref()).map_or(self.since, |v| v.since)
    }

    fn dir_attr(&self, ino: u64, since: SystemTime) -> Attr {
        let access = if self.home.private() { Access::Private } else { Access::Normal };
        Attr::new(ino, Kind::Dir, 0, access, since, &self.opts)
    }

    fn attr(&self, st: &mut State<D, H::Stamp>, path: &str) -> Result<Attr> {
        let e = self.entry(st, path)?;
        let ino = self.ino_of(st, path);
        let since = self.since_of(st, path);
        if e.dir {
            return Ok(self.dir_attr(ino, since));
        }
        let size = self.render(st, path)?.len() as u64;
        let access = match (e.writable, self.home.private()) {
            (true, false) => Access::Normal,
            (true, true) => Access::Private,
            (false, true) => Access::Secret,
            (false, false) => Access::Generated,
        };
        Ok(Attr::new(ino, Kind::File, size, access, since, &self.opts))
    }

    fn dir_path(&self, st: &mut State<D, H::Stamp>, ino: u64) -> Result<String> {
        let p = Self::path_of(st, ino)?;
        if self.entry(st, &p)?.dir { Ok(p) } else { Err(FsError::not_dir()) }
    }

    /// Names in the root of a many-item tree (cached for the TTL).
    fn item_names(&self, st: &mut State<D, H::Stamp>) -> Result<Vec<String>> {
        if let Some((at, names)) = &st.names
            && at.elapsed() < self.opts.ttl
        {
            return Ok(names.clone());
        }
        let names = self.home.names()?;
        st.names = Some((Instant::now(), names.clone()));
        Ok(names)
    }

    /// The children of directory `dir`: (name, is a directory).
    fn children(&self, st: &mut State<D, H::Stamp>, dir: &str) -> Result<Vec<(String, bool)>> {
        if H::MANY && dir.is_empty() {
            let mut names = self.item_names(st)?;
            names.extend(st.empty.iter().cloned());
            names.sort();
            names.dedup();
            return Ok(names.into_iter().map(|n| (n, true)).collect());
        }
        let (name, rest) = self.split(dir);
        let v = self.current(st, name, false)?;
        Ok(v.map(|v| {
            v.entries
                .iter()
                .filter(|e| !e.path.is_empty() && parent_of(&e.path) == rest)
                .map(|e| (base_name(&e.path).to_string(), e.dir))
                .collect()
        })
        .unwrap_or_default())
    }

    /// Change item `name` with `f` on a fresh decoding and store it (None
    /// from `f`: delete). `write`: the file and content of a write, and
    /// the content its writer started from.
    fn change(
        &self,
        name: &str,
        what: &str,
        write: Option<WriteOf>,
        f: impl FnOnce(Option<D>) -> Result<Option<D>>,
    ) -> Result<()> {
        if self.opts.read_only {
            return Err(FsError::read_only("the mount is read-only (-o ro)"));
        }
        let _one = self.commit.lock();
        self.home.before_change()?;
        let current = self.current(&mut self.lock(), name, true)?.map(|v| (v.bytes.clone(), v.doc.clone()));
        if let (Some(w), Some((_, doc))) = (write, &current) {
            let now = doc.render(w.rest).ok();
            if now.as_deref() == Some(w.content) {
                return Ok(());
            }
            if w.base.is_some_and(|b| now.as_deref() != Some(b)) {
                return Err(FsError::stale(format!(
                    "{what}: changed by someone else since it was opened; nothing written: read it again"
                )));
            }
        }
        let old_bytes = current.map(|(bytes, _)| bytes);
        let old = old_bytes.as_deref().map(|b| self.home.decode(name, b)).transpose()?;
        let new = f(old)?.filter(|d| !d.is_empty());
        let new_bytes = new.as_ref().map(|d| d.encode().map_err(|e| doc_err(e.in_file(what)))).transpose()?;
        if new_bytes == old_bytes {
            return Ok(());
        }
        let decoded = new_bytes.as_deref().map(|b| self.home.decode(name, b)).transpose().map_err(|e| {
            FsError::io(format!("{what}: internal error: the encoded {} does not decode back: {}", D::NAME, e.message))
        })?;
        let stamp = self.home.store(name, old_bytes.as_deref(), new_bytes.as_deref(), what)?;
        let new = match (new_bytes, decoded, stamp) {
            (Some(bytes), Some(doc), Some(stamp)) => {
                Some(Version::new(Stored { bytes, doc, stamp }, SystemTime::now()))
            }
            _ => None,
        };
        self.after_change(&mut self.lock(), name, new);
        Ok(())
    }

    /// Make `new` current for `name` (None: read it again when next
    /// needed) and tell the kernel what changed.
    fn after_change(&self, st: &mut State<D, H::Stamp>, name: &str, new: Option<Version<D, H::Stamp>>) {
        let old = st.items.remove(name).and_then(|c| c.version);
        let old_dirs = old.as_ref().map(|v| children_by_dir(&v.entries)).unwrap_or_default();
        let new_dirs = new.as_ref().map(|v| children_by_dir(&v.entries)).unwrap_or_default();
        if let Some(v) = new {
            st.items.insert(name.to_string(), Cached { checked: Instant::now(), version: Some(v) });
        }
        st.names = None;
        let mut inv = self.item_inodes(st, name);
        // Directories whose names changed get their entries invalidated.
        for (dir, names) in old_dirs.iter().chain(new_dirs.iter()) {
            if old_dirs.get(dir) != new_dirs.get(dir)
                && let Some(&dir_ino) = st.inos.get(&self.item_path(name, dir))
            {
                inv.extend(names.iter().map(|n| Inval::Entry(dir_ino, OsString::from(n))));
            }
        }
        if H::MANY {
            inv.push(Inval::Inode(self.root()));
            inv.push(Inval::Entry(self.root(), OsString::from(name)));
        }
        self.services.invalidate(inv);
    }

    /// The tree's path of `rest` inside item `name`.
    fn item_path(&self, name: &str, rest: &str) -> String {
        match (H::MANY, rest) {
            (true, "") => name.to_string(),
            (true, _) => join(name, rest),
            (false, _) => rest.to_string(),
        }
    }

    /// The error of a refused change of `path`, as the home shows it.
    fn refused(&self, path: &str, e: FsError) -> FsError {
        if e.kind == ErrorKind::NotFound { e } else { self.home.refused(&self.full(path), e) }
    }

    /// The item `name` or, when there is none yet, a new one (to ask what
    /// it accepts).
    fn accepts_new(&self, st: &mut State<D, H::Stamp>, name: &str, rest: &str) -> Result<bool> {
        Ok(match self.current(st, name, false)? {
            Some(v) => v.doc.accepts_new(rest),
            None => self.home.new_item(name).is_ok_and(|d| d.accepts_new(rest)),
        })
    }

    /// mkdir in the root of a many-item tree: a new item.
    fn make_item(&self, name: &str) -> Result<()> {
        let full = self.full(name);
        self.home.check_name(name).map_err(|m| self.refused(name, FsError::invalid(m)))?;
        let fresh = self.home.new_item(name).map_err(|m| self.refused(name, FsError::perm(m)))?;
        if fresh.is_empty() {
            // kept in memory until a first file is written into it
            let mut st = self.lock();
            if self.current(&mut st, name, false)?.is_some() || !st.empty.insert(name.to_string()) {
                return Err(FsError::exists("exists"));
            }
            return Ok(());
        }
        self.change(name, &format!("mkdir {full}"), None, |v| match v {
            Some(_) => Err(FsError::exists(format!("{full} exists"))),
            None => Ok(Some(fresh)),
        })
        .map_err(|e| self.refused(name, e))
    }
}

impl<D: Document, H: Home<D>> Tree for FilesTree<D, H> {
    fn describe(&self) -> String {
        self.home.describe()
    }

    fn readme(&self) -> String {
        if H::MANY {
            return self.home.readme(None);
        }
        let mut st = self.lock();
        match self.current(&mut st, "", false) {
            Ok(v) => {
                let doc = v.map(|v| v.doc.clone());
                self.home.readme(doc.as_deref())
            }
            Err(e) => e.message,
        }
    }

    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Attr> {
        let mut st = self.lock();
        let dir = self.dir_path(&mut st, parent)?;
        let path = join(&dir, std::str::from_utf8(name).map_err(|_| FsError::not_found())?);
        self.attr(&mut st, &path)
    }

    fn getattr(&self, ino: u64) -> Result<Attr> {
        let mut st = self.lock();
        let path = Self::path_of(&st, ino)?;
        self.attr(&mut st, &path)
    }

    fn parent(&self, ino: u64) -> Result<u64> {
        let mut st = self.lock();
        let path = Self::path_of(&st, ino)?;
        if path.is_empty() {
            return Ok(crate::fs::ROOT);
        }
        let p = parent_of(&path).to_string();
        Ok(self.ino_of(&mut st, &p))
    }

    fn list(
        &self,
        dir: u64,
        offset: u64,
        plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<()> {
        let mut st = self.lock();
        let dir = self.dir_path(&mut st, dir)?;
        let children = self.children(&mut st, &dir)?;
        list_numbered(children, offset, |(name, is_dir), cookie| {
            let path = join(&dir, &name);
            let ino = self.ino_of(&mut st, &path);
            // An item's directory needs nothing read: one item that cannot
            // be read fails its own lookup, not the whole listing.
            let attr = match (plus, H::MANY && dir.is_empty()) {
                (false, _) => None,
                (true, true) => Some(self.dir_attr(ino, self.since)),
                (true, false) => Some(self.attr(&mut st, &path)?),
            };
            let kind = if is_dir { Kind::Dir } else { Kind::File };
            Ok(add(&DirEntry { ino, offset: cookie, kind, name: name.into() }, attr.as_ref()))
        })
    }

    fn read(&self, ino: u64) -> Result<Arc<Vec<u8>>> {
        let mut st = self.lock();
        let path = Self::path_of(&st, ino)?;
        if self.entry(&mut st, &path)?.dir {
            return Err(FsError::is_dir());
        }
        self.render(&mut st, &path)
    }

    fn check_writable(&self, ino: u64) -> Result<()> {
        if self.opts.read_only {
            return Err(FsError::read_only("the mount is read-only (-o ro)"));
        }
        let mut st = self.lock();
        let path = Self::path_of(&st, ino)?;
        let e = self.entry(&mut st, &path)?;
        if e.dir {
            return Err(FsError::is_dir());
        }
        if !e.writable {
            let (full, from) = (self.full(&path), self.home.made_from());
            return Err(FsError::perm(format!("{full} is made from the {from} and cannot be written")));
        }
        Ok(())
    }

    fn write(&self, ino: u64, content: &[u8], base: Option<&[u8]>) -> Result<()> {
        self.check_writable(ino)?;
        let path = Self::path_of(&self.lock(), ino)?;
        let (name, rest) = self.split(&path);
        let what = format!("write {}", self.full(&path));
        let r = self.change(name, &what, Some(WriteOf { rest, content, base }), |d| {
            let mut d = d.ok_or_else(FsError::not_found)?;
            // A record's file opened before its key was deleted or renamed
            // does not bring it back (as a node's metadata fields do not).
            // `check_writable` looked before the commit lock; this looks at
            // the item as it is now, so an `rm` in between is seen too.
            if H::MANY && !d.entries().iter().any(|e| e.path == rest) {
                return Err(FsError::new(
                    ErrorKind::NotFound,
                    format!("{what}: the key was deleted or renamed meanwhile"),
                ));
            }
            d.apply(rest, content).map_err(|e| doc_err(e.in_file(rest)))?;
            Ok(Some(d))
        });
        r.map_err(|e| self.refused(&path, e))
    }

    fn checks_truncating_writes(&self, _ino: u64) -> bool {
        self.home.checks_truncating_writes()
    }

    fn check_content(&self, ino: u64, content: &[u8]) -> Result<()> {
        let mut st = self.lock();
        let path = Self::path_of(&st, ino)?;
        let (name, rest) = self.split(&path);
        let Some(v) = self.current(&mut st, name, false)? else { return Ok(()) };
        let (bytes, doc) = (v.bytes.clone(), v.doc.clone());
        drop(st);
        let judged = if H::MANY {
            // A record: its own checks only; the whole edit is judged at
            // close, after the check that the key is still what was read.
            doc.check_content(rest, content)
        } else {
            // A document: on a fresh copy, as the edit itself would be
            // made; when no copy can be made the edit says why.
            match self.home.decode(name, &bytes) {
                Ok(copy) => D::judge(copy, rest, content),
                Err(_) => Ok(()),
            }
        };
        judged.map_err(|e| {
            let e = doc_err(e.in_file(rest));
            if H::MANY { FsError { message: format!("{}: {}", self.full(&path), e.message), ..e } } else { e }
        })
    }

    fn complete(&self, ino: u64, content: &[u8]) -> bool {
        let mut st = self.lock();
        let Ok(path) = Self::path_of(&st, ino) else { return false };
        let (name, rest) = self.split(&path);
        match self.current(&mut st, name, false) {
            Ok(Some(v)) => v.doc.complete(rest, content),
            _ => false,
        }
    }

    fn new_name(&self, dir: u64, name: &[u8]) -> Result<NewName> {
        let mut st = self.lock();
        let dir = self.dir_path(&mut st, dir)?;
        let name = match std::str::from_utf8(name) {
            Ok(name) => name,
            // names of records' files are keys: any other is an editor's
            Err(_) if H::MANY => return Ok(NewName::Scratch),
            Err(_) => return Err(FsError::invalid("file names here are UTF-8")),
        };
        if (H::MANY && dir.is_empty()) || name.starts_with('.') {
            return Ok(NewName::Scratch);
        }
        let (item, rest) = self.split(&dir);
        if self.accepts_new(&mut st, item, &join(rest, name))? {
            return Ok(NewName::Pending);
        }
        // A key's name misspelt (`50%` for `50%25`) would be a file kept
        // nowhere: refused, naming the file that would be the key.
        if self.home.escaped_keys()
            && let Some((canonical, why)) = escape::refuse_key_name(name.as_bytes())
            && self.accepts_new(&mut st, item, &join(rest, &String::from_utf8_lossy(&canonical)))?
        {
            return Err(FsError::invalid(why));
        }
        Ok(NewName::Scratch)
    }

    fn create(&self, dir: u64, name: &[u8], content: &[u8]) -> Result<u64> {
        let dir_path = Self::path_of(&self.lock(), dir)?;
        let path = join(&dir_path, name_str(name)?);
        let (item, rest) = self.split(&path);
        let what = format!("create {}", self.full(&path));
        self.change(item, &what, None, |d| {
            let mut d = match d {
                Some(d) => d,
                None => self.home.new_item(item).map_err(FsError::perm)?,
            };
            if !d.accepts_new(rest) {
                return Err(FsError::perm("no such file can be made here"));
            }
            d.apply(rest, content).map_err(|e| doc_err(e.in_file(rest)))?;
            Ok(Some(d))
        })
        .map_err(|e| self.refused(&path, e))?;
        let mut st = self.lock();
        st.empty.remove(item);
        if self.entry(&mut st, &path).is_err() {
            return Err(FsError::io(format!("{path}: accepted, but the {} has no such file afterwards", D::NAME)));
        }
        Ok(self.ino_of(&mut st, &path))
    }

    fn mkdir(&self, dir: u64, name: &[u8]) -> Result<Attr> {
        let dir_path = self.dir_path(&mut self.lock(), dir)?;
        let path = join(&dir_path, name_str(name)?);
        if H::MANY && dir_path.is_empty() {
            self.make_item(&path)?;
        } else {
            if self.entry(&mut self.lock(), &path).is_ok() {
                return Err(FsError::exists(format!("{} exists", self.full(&path))));
            }
            let (item, rest) = self.split(&path);
            self.change(item, &format!("mkdir {}", self.full(&path)), None, |d| {
                let mut d = d.ok_or_else(FsError::not_found)?;
                d.mkdir(rest).map_err(|e| self.home.refused_structure(e.in_file(rest)))?;
                Ok(Some(d))
            })
            .map_err(|e| self.refused(&path, e))?;
        }
        self.attr(&mut self.lock(), &path)
    }

    fn rmdir(&self, dir: u64, name: &[u8]) -> Result<()> {
        let dir_path = self.dir_path(&mut self.lock(), dir)?;
        let path = join(&dir_path, name_str(name)?);
        let (item, rest) = self.split(&path);
        let full = self.full(&path);
        if H::MANY && rest.is_empty() {
            if self.lock().empty.remove(item) {
                return Ok(());
            }
            // rmdir of an item deletes it and all it holds (journaled:
            // worldfs undo brings it back), as `rm -r` would file by file.
            return self
                .change(item, &format!("rmdir {full}"), None, |d| match d {
                    Some(_) => Ok(None),
                    None => Err(FsError::not_found()),
                })
                .map_err(|e| self.refused(&path, e));
        }
        if !self.entry(&mut self.lock(), &path)?.dir {
            return Err(FsError::not_dir());
        }
        self.change(item, &format!("rmdir {full}"), None, |d| {
            let mut d = d.ok_or_else(FsError::not_found)?;
            d.rmdir(rest).map_err(|e| self.home.refused_structure(e.in_file(rest)))?;
            Ok(Some(d))
        })
        .map_err(|e| self.refused(&path, e))
    }

    fn unlink(&self, dir: u64, name: &[u8]) -> Result<()> {
        let dir_path = Self::path_of(&self.lock(), dir)?;
        let path = join(&dir_path, name_str(name)?);
        let (item, rest) = self.split(&path);
        if H::MANY && rest.is_empty() {
            return Err(FsError::is_dir());
        }
        if !H::MANY && self.entry(&mut self.lock(), &path).is_err() {
            return Err(FsError::not_found());
        }
        let what = format!("rm {}", self.full(&path));
        self.change(item, &what, None, |d| {
            let mut d = d.ok_or_else(FsError::not_found)?;
            d.remove(rest).map_err(|e| self.home.refused_structure(e.in_file(rest)))?;
            Ok(Some(d))
        })
        .map_err(|e| self.refused(&path, e))?;
        // an item left empty (a mod without keys) stays visible until unmount
        let mut st = self.lock();
        if H::MANY && self.current(&mut st, item, false)?.is_none() {
            st.empty.insert(item.to_string());
        }
        Ok(())
    }

    fn path(&self, ino: u64) -> String {
        match Self::path_of(&self.lock(), ino) {
            Ok(p) => self.full(&p),
            Err(_) => format!("inode {ino:#x}"),
        }
    }

    fn negative_entries(&self, _dir: u64) -> bool {
        self.home.negative_entries()
    }

    fn count(&self) -> u64 {
        if H::MANY {
            return 0;
        }
        let mut st = self.lock();
        self.current(&mut st, "", false).ok().flatten().map_or(0, |v| v.entries.len() as u64)
    }
}
