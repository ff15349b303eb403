//! `players/`, `auth/` and `mod_storage/`: one collection of records
//! (a [`RecordStore`]) as the core's [`Tree`], mounted beside the map by
//! `fs::union`. Each record is a directory of files ([`RecordView`]); an
//! accepted edit re-encodes the record and stores it in one journaled
//! transaction that is refused if the record changed since it was read.
//!
//! Inodes are numbered by path from a counter under this tree's tag; the
//! collections are small (players and accounts of one server), so the
//! numbers are kept for the mount's life.

pub mod views;

use crate::fs::{Access, Attr, DirEntry, FsError, Inval, Kind, NewName, Options, Result, Services, Tree};
use crate::kinds::Entry;
use crate::kinds::luanti::guard::ServerGuard;
use crate::store::Note;
use crate::store::records::RecordStore;
use crate::view::escape;
use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};
pub use views::RecordView;

struct Cached<V> {
    at: Instant,
    /// The record's canonical bytes and decoding (None: absent).
    record: Option<(Vec<u8>, Arc<V>)>,
}

struct State<V> {
    inos: HashMap<String, u64>,
    paths: HashMap<u64, String>,
    next: u64,
    names: Option<(Instant, Vec<String>)>,
    records: HashMap<String, Cached<V>>,
    /// Records made by mkdir that hold nothing yet (not stored).
    empty: BTreeSet<String>,
    /// Stored names already reported as shown escaped.
    warned: BTreeSet<String>,
}

pub struct RecordsTree<V: RecordView> {
    tag: u64,
    store: Box<dyn RecordStore>,
    opts: Options,
    services: Arc<Services>,
    guards: Vec<ServerGuard>,
    state: Mutex<State<V>>,
    /// One change at a time: each is a read-modify-write of a record.
    commit: Mutex<()>,
    since: SystemTime,
}

fn split(path: &str) -> (&str, &str) {
    path.split_once('/').unwrap_or((path, ""))
}

fn parent_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(p, _)| p)
}

/// A record's directory name: its stored name with `%`, `/`, control
/// bytes and a leading `.` escaped as metadata keys are (the empty name is
/// `%`), so that a name no engine check lets in (`../evil` in auth.txt, a
/// mod storage row `x/y`) is one directory like any other. Names the engine
/// accepts are shown as they are.
fn shown_name(stored: &str) -> String {
    String::from_utf8(escape::key_to_name(stored.as_bytes())).expect("only ASCII bytes are escaped")
}

/// The stored name a directory name shows (None: no record's name).
fn stored_name(shown: &str) -> Option<String> {
    escape::name_to_key(shown.as_bytes()).and_then(|k| String::from_utf8(k).ok())
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() { name.to_string() } else { format!("{dir}/{name}") }
}

impl<V: RecordView> RecordsTree<V> {
    /// `tag`: the top four bits of every inode of this tree. `watch`:
    /// files a running server holds open (writes are refused meanwhile).
    pub fn new(
        tag: u64,
        store: Box<dyn RecordStore>,
        opts: Options,
        services: Arc<Services>,
        watch: Vec<std::path::PathBuf>,
    ) -> RecordsTree<V> {
        let enabled = !opts.read_only && !opts.force;
        let guards = watch
            .into_iter()
            .chain(store.watched())
            .map(|p| ServerGuard::new(p, enabled).with_interval(opts.guard_interval))
            .collect();
        let root = (tag << 60) | 1;
        let state = State {
            inos: HashMap::from([(String::new(), root)]),
            paths: HashMap::from([(root, String::new())]),
            next: 1,
            names: None,
            records: HashMap::new(),
            empty: BTreeSet::new(),
            warned: BTreeSet::new(),
        };
        RecordsTree {
            tag,
            store,
            opts,
            services,
            guards,
            state: Mutex::new(state),
            commit: Mutex::new(()),
            since: SystemTime::now(),
        }
    }

    /// The inode of the collection's directory.
    pub fn root(&self) -> u64 {
        (self.tag << 60) | 1
    }

    fn ino_of(&self, st: &mut State<V>, path: &str) -> u64 {
        if let Some(&i) = st.inos.get(path) {
            return i;
        }
        st.next += 1;
        let i = (self.tag << 60) | st.next;
        st.inos.insert(path.to_string(), i);
        st.paths.insert(i, path.to_string());
        i
    }

    fn path_of(st: &State<V>, ino: u64) -> Result<String> {
        st.paths.get(&ino).cloned().ok_or_else(FsError::not_found)
    }

    fn names(&self, st: &mut State<V>) -> Result<Vec<String>> {
        if let Some((at, names)) = &st.names
            && at.elapsed() < self.opts.ttl
        {
            return Ok(names.clone());
        }
        let mut names = Vec::new();
        for stored in self.store.names()? {
            let shown = shown_name(&stored);
            if shown != stored && st.warned.insert(stored.clone()) {
                self.services.report(format!(
                    "{}: warning: a record is named {stored:?}, which the engine's own checks refuse; it is shown \
                     as {}/{shown}",
                    V::COLLECTION.name(),
                    V::COLLECTION.name()
                ));
            }
            names.push(shown);
        }
        st.names = Some((Instant::now(), names.clone()));
        Ok(names)
    }

    /// A record as cached (read again after the TTL).
    /// Whether a new file `rel` of record `rec` would become part of it.
    fn accepts_new(&self, st: &mut State<V>, rec: &str, rel: &str) -> Result<bool> {
        Ok(match self.record(st, rec)? {
            Some((_, v)) => v.accepts_new(rel),
            None => V::create(rec).map(|v| v.accepts_new(rel)).unwrap_or(false),
        })
    }

    fn record(&self, st: &mut State<V>, name: &str) -> Result<Option<(Vec<u8>, Arc<V>)>> {
        if let Some(c) = st.records.get(name)
            && c.at.elapsed() < self.opts.ttl
        {
            return Ok(c.record.clone());
        }
        let record = self.load(name)?;
        st.records.insert(name.to_string(), Cached { at: Instant::now(), record: record.clone() });
        Ok(record)
    }

    fn load(&self, name: &str) -> Result<Option<(Vec<u8>, Arc<V>)>> {
        let Some(stored) = stored_name(name) else { return Ok(None) };
        match self.store.get(&stored)? {
            None => Ok(None),
            Some(b) => {
                let v = V::decode(&b).map_err(|e| FsError::io(format!("{}/{name}: {e}", V::COLLECTION.name())))?;
                Ok(Some((b, Arc::new(v))))
            }
        }
    }

    /// The entry at `path` (the root and record directories included).
    fn entry(&self, st: &mut State<V>, path: &str) -> Result<Entry> {
        if path.is_empty() {
            return Ok(Entry::dir(""));
        }
        let (name, rest) = split(path);
        let record = self.record(st, name)?;
        let Some((_, v)) = record else {
            if rest.is_empty() && st.empty.contains(name) {
                return Ok(Entry::dir(name));
            }
            return Err(FsError::not_found());
        };
        if rest.is_empty() {
            return Ok(Entry::dir(name));
        }
        v.entries().into_iter().find(|e| e.path == rest).ok_or_else(FsError::not_found)
    }

    fn dir_attr(&self, ino: u64) -> Attr {
        let normal = if V::PRIVATE { Access::Private } else { Access::Normal };
        Attr::new(ino, Kind::Dir, 0, normal, self.since, &self.opts)
    }

    fn attr(&self, st: &mut State<V>, path: &str) -> Result<Attr> {
        let e = self.entry(st, path)?;
        let ino = self.ino_of(st, path);
        let normal = if V::PRIVATE { Access::Private } else { Access::Normal };
        if e.dir {
            return Ok(self.dir_attr(ino));
        }
        let size = self.render(st, path)?.len() as u64;
        let access = match (e.writable, V::PRIVATE) {
            (true, _) => normal,
            (false, true) => Access::Secret,
            (false, false) => Access::Generated,
        };
        Ok(Attr::new(ino, Kind::File, size, access, self.since, &self.opts))
    }

    fn render(&self, st: &mut State<V>, path: &str) -> Result<Vec<u8>> {
        let (name, rest) = split(path);
        let (_, v) = self.record(st, name)?.ok_or_else(FsError::not_found)?;
        v.render(rest).map_err(|e| FsError::io(format!("{}/{name}/{e}", V::COLLECTION.name())))
    }

    fn dir_path(&self, st: &mut State<V>, ino: u64) -> Result<String> {
        let p = Self::path_of(st, ino)?;
        if self.entry(st, &p)?.dir { Ok(p) } else { Err(FsError::not_dir()) }
    }

    fn check_guard(&self) -> Result<()> {
        for g in &self.guards {
            let who = g.current();
            if !who.is_empty() {
                return Err(FsError::new(
                    libc::EBUSY,
                    format!(
                        "a server is running on this world ({}); it would overwrite the change: \
                         stop it first (or mount with -o force)",
                        who.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Change record `name` with `f` and store it (None from `f`: delete).
    fn change(
        &self,
        name: &str,
        what: &str,
        base: Option<(&str, &[u8])>,
        f: impl FnOnce(Option<V>) -> std::result::Result<Option<V>, FsError>,
    ) -> Result<()> {
        if self.opts.read_only {
            return Err(FsError::read_only("the mount is read-only (-o ro)"));
        }
        let _one = self.commit.lock().unwrap();
        self.check_guard()?;
        let current = self.load(name)?;
        if let (Some((rest, base)), Some((_, v))) = (base, &current)
            && v.render(rest).ok().as_deref() != Some(base)
        {
            return Err(FsError::new(
                libc::ESTALE,
                format!("{what}: changed by someone else since it was opened; nothing written: read it again"),
            ));
        }
        let old_bytes = current.as_ref().map(|(b, _)| b.clone());
        let old = match current {
            Some((b, _)) => Some(V::decode(&b).map_err(FsError::io)?),
            None => None,
        };
        let new = f(old)?.filter(|v| !v.is_empty());
        let new_bytes = new.as_ref().map(V::encode);
        if new_bytes == old_bytes {
            return Ok(());
        }
        let stored = stored_name(name).ok_or_else(FsError::not_found)?;
        self.store.put(&stored, old_bytes.as_deref(), new_bytes.as_deref(), &Note::new(what))?;
        self.after_change(name);
        Ok(())
    }

    /// Forget what was cached of `name` and tell the kernel.
    fn after_change(&self, name: &str) {
        let mut st = self.state.lock().unwrap();
        st.records.remove(name);
        st.names = None;
        let prefix = format!("{name}/");
        let mut inv: Vec<Inval> = st
            .inos
            .iter()
            .filter(|(p, _)| p.as_str() == name || p.starts_with(&prefix))
            .map(|(_, &i)| Inval::Inode(i))
            .collect();
        inv.push(Inval::Inode(self.root()));
        inv.push(Inval::Entry(self.root(), OsString::from(name)));
        // names inside the record may have appeared or vanished
        for (p, &i) in st.inos.iter() {
            if p.starts_with(&prefix) {
                let dir = parent_of(p);
                if let Some(&d) = st.inos.get(dir) {
                    inv.push(Inval::Entry(d, OsString::from(p.rsplit('/').next().unwrap_or(p))));
                }
                let _ = i;
            }
        }
        drop(st);
        self.services.invalidate(inv);
    }

    fn report(&self, what: &str, e: FsError) -> FsError {
        if e.errno == libc::ENOENT {
            return e;
        }
        let mut e = FsError { message: format!("{what}: {}", e.message), ..e };
        self.services.report(format!("refused: {}", e.message));
        e.reported = true;
        e
    }

    fn full(&self, path: &str) -> String {
        join(V::COLLECTION.name(), path)
    }
}

fn name_str(name: &[u8]) -> Result<&str> {
    std::str::from_utf8(name).map_err(|_| FsError::invalid("names here are UTF-8 text"))
}

fn doc_err(e: crate::kinds::DocError) -> FsError {
    FsError::invalid(e.to_string())
}

impl<V: RecordView> Tree for RecordsTree<V> {
    fn describe(&self) -> String {
        self.store.describe()
    }

    fn readme(&self) -> String {
        String::new()
    }

    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Attr> {
        let mut st = self.state.lock().unwrap();
        let dir = self.dir_path(&mut st, parent)?;
        let path = join(&dir, name_str(name).map_err(|_| FsError::not_found())?);
        self.attr(&mut st, &path)
    }

    fn getattr(&self, ino: u64) -> Result<Attr> {
        let mut st = self.state.lock().unwrap();
        let path = Self::path_of(&st, ino)?;
        self.attr(&mut st, &path)
    }

    fn parent(&self, ino: u64) -> Result<u64> {
        let mut st = self.state.lock().unwrap();
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
        let mut st = self.state.lock().unwrap();
        let dir = self.dir_path(&mut st, dir)?;
        let children: Vec<(String, bool)> = if dir.is_empty() {
            let mut all: BTreeSet<String> = self.names(&mut st)?.into_iter().collect();
            all.extend(st.empty.iter().cloned());
            all.into_iter().map(|n| (n, true)).collect()
        } else {
            let (name, rest) = split(&dir);
            let (_, v) = self.record(&mut st, name)?.ok_or_else(FsError::not_found)?;
            v.entries()
                .into_iter()
                .filter(|e| parent_of(&e.path) == rest && !(rest.is_empty() && e.path.is_empty()))
                .map(|e| (e.path.rsplit('/').next().unwrap_or(&e.path).to_string(), e.dir))
                .collect()
        };
        for (i, (name, is_dir)) in children.into_iter().enumerate() {
            let cookie = i as u64 + 3;
            if offset >= cookie {
                continue;
            }
            let path = join(&dir, &name);
            let ino = self.ino_of(&mut st, &path);
            // A record's directory needs nothing read: one record that
            // cannot be read fails its own lookup, not the whole listing.
            let attr = match (plus, dir.is_empty()) {
                (false, _) => None,
                (true, true) => Some(self.dir_attr(ino)),
                (true, false) => Some(self.attr(&mut st, &path)?),
            };
            let kind = if is_dir { Kind::Dir } else { Kind::File };
            if add(&DirEntry { ino, offset: cookie, kind, name: name.into() }, attr.as_ref()) {
                break;
            }
        }
        Ok(())
    }

    fn read(&self, ino: u64) -> Result<Arc<Vec<u8>>> {
        let mut st = self.state.lock().unwrap();
        let path = Self::path_of(&st, ino)?;
        if self.entry(&mut st, &path)?.dir {
            return Err(FsError::is_dir());
        }
        Ok(Arc::new(self.render(&mut st, &path)?))
    }

    fn check_writable(&self, ino: u64) -> Result<()> {
        if self.opts.read_only {
            return Err(FsError::read_only("the mount is read-only (-o ro)"));
        }
        let mut st = self.state.lock().unwrap();
        let path = Self::path_of(&st, ino)?;
        let e = self.entry(&mut st, &path)?;
        if e.dir {
            return Err(FsError::is_dir());
        }
        if !e.writable {
            return Err(FsError::perm(format!("{} is made from the account and cannot be written", self.full(&path))));
        }
        Ok(())
    }

    fn write(&self, ino: u64, content: &[u8], base: Option<&[u8]>) -> Result<()> {
        let path = Self::path_of(&self.state.lock().unwrap(), ino)?;
        let (name, rest) = split(&path);
        let what = format!("write {}", self.full(&path));
        let r = self.change(name, &what, base.map(|b| (rest, b)), |v| {
            let mut v = v.ok_or_else(FsError::not_found)?;
            v.apply(rest, content).map_err(doc_err)?;
            Ok(Some(v))
        });
        r.map_err(|e| self.report(&self.full(&path), e))
    }

    fn check_content(&self, ino: u64, content: &[u8]) -> Result<()> {
        let mut st = self.state.lock().unwrap();
        let path = Self::path_of(&st, ino)?;
        let (name, rest) = split(&path);
        let Some((bytes, _)) = self.record(&mut st, name)? else { return Ok(()) };
        drop(st);
        // A copy to apply to (the record itself is shared).
        let Ok(mut v) = V::decode(&bytes) else { return Ok(()) };
        v.apply(rest, content).map_err(|e| {
            let e = doc_err(e);
            FsError { message: format!("{}: {}", self.full(&path), e.message), ..e }
        })
    }

    fn complete(&self, ino: u64, content: &[u8]) -> bool {
        let Ok(path) = Self::path_of(&self.state.lock().unwrap(), ino) else { return false };
        let one_line = content.ends_with(b"\n") && content.iter().filter(|&&c| c == b'\n').count() == 1;
        one_line && V::single_line_file(split(&path).1)
    }

    fn new_name(&self, dir: u64, name: &[u8]) -> Result<NewName> {
        let mut st = self.state.lock().unwrap();
        let dir = self.dir_path(&mut st, dir)?;
        let Ok(name) = name_str(name) else { return Ok(NewName::Scratch) };
        if dir.is_empty() {
            return Ok(NewName::Scratch);
        }
        let (rec, rest) = split(&dir);
        let rel = join(rest, name);
        if self.accepts_new(&mut st, rec, &rel)? {
            return Ok(NewName::Pending);
        }
        // A key's name misspelt (`50%` for `50%25`) would be a file kept
        // nowhere: refused, naming the file that would be the key.
        if let Some((canonical, why)) = escape::refuse_key_name(name.as_bytes())
            && self.accepts_new(&mut st, rec, &join(rest, &String::from_utf8_lossy(&canonical)))?
        {
            return Err(FsError::invalid(why));
        }
        Ok(NewName::Scratch)
    }

    fn create(&self, dir: u64, name: &[u8], content: &[u8]) -> Result<u64> {
        let dir_path = Self::path_of(&self.state.lock().unwrap(), dir)?;
        let name = name_str(name)?;
        let path = join(&dir_path, name);
        let (rec, rest) = split(&path);
        let what = format!("create {}", self.full(&path));
        self.change(rec, &what, None, |v| {
            let mut v = match v {
                Some(v) => v,
                None => V::create(rec).map_err(FsError::perm)?,
            };
            if !v.accepts_new(rest) {
                return Err(FsError::perm("no such file can be made here"));
            }
            v.apply(rest, content).map_err(doc_err)?;
            Ok(Some(v))
        })
        .map_err(|e| self.report(&self.full(&path), e))?;
        let mut st = self.state.lock().unwrap();
        st.empty.remove(rec);
        Ok(self.ino_of(&mut st, &path))
    }

    fn mkdir(&self, dir: u64, name: &[u8]) -> Result<Attr> {
        let dir_path = Self::path_of(&self.state.lock().unwrap(), dir)?;
        let name = name_str(name)?.to_string();
        let full = self.full(&join(&dir_path, &name));
        if !dir_path.is_empty() {
            return Err(self.report(&full, FsError::perm("no directories can be made inside a record")));
        }
        V::check_name(&name).map_err(|m| self.report(&full, FsError::invalid(m)))?;
        let fresh = V::create(&name).map_err(|m| self.report(&full, FsError::perm(m)))?;
        if fresh.is_empty() {
            // kept in memory until a first key is written into it
            let mut st = self.state.lock().unwrap();
            if self.record(&mut st, &name)?.is_some() || !st.empty.insert(name.clone()) {
                return Err(FsError::new(libc::EEXIST, "exists"));
            }
        } else {
            self.change(&name, &format!("mkdir {full}"), None, |v| match v {
                Some(_) => Err(FsError::new(libc::EEXIST, format!("{full} exists"))),
                None => Ok(Some(fresh)),
            })
            .map_err(|e| self.report(&full, e))?;
        }
        let mut st = self.state.lock().unwrap();
        self.attr(&mut st, &name)
    }

    fn rmdir(&self, dir: u64, name: &[u8]) -> Result<()> {
        let dir_path = Self::path_of(&self.state.lock().unwrap(), dir)?;
        let name = name_str(name)?.to_string();
        let full = self.full(&join(&dir_path, &name));
        if !dir_path.is_empty() {
            return Err(self.report(&full, FsError::perm("this directory is part of the record")));
        }
        if self.state.lock().unwrap().empty.remove(&name) {
            return Ok(());
        }
        // rmdir of a record deletes it and all it holds (journaled: worldfs
        // undo brings it back), as `rm -r` would file by file.
        self.change(&name, &format!("rmdir {full}"), None, |v| match v {
            Some(_) => Ok(None),
            None => Err(FsError::not_found()),
        })
        .map_err(|e| self.report(&full, e))
    }

    fn unlink(&self, dir: u64, name: &[u8]) -> Result<()> {
        let dir_path = Self::path_of(&self.state.lock().unwrap(), dir)?;
        let path = join(&dir_path, name_str(name)?);
        let (rec, rest) = split(&path);
        if rest.is_empty() {
            return Err(FsError::is_dir());
        }
        let what = format!("rm {}", self.full(&path));
        self.change(rec, &what, None, |v| {
            let mut v = v.ok_or_else(FsError::not_found)?;
            v.remove(rest).map_err(|e| FsError::perm(e.to_string()))?;
            Ok(Some(v))
        })
        .map_err(|e| self.report(&self.full(&path), e))?;
        // a record left empty (a mod without keys) stays visible until unmount
        let mut st = self.state.lock().unwrap();
        if self.record(&mut st, rec)?.is_none() {
            st.empty.insert(rec.to_string());
        }
        Ok(())
    }

    fn path(&self, ino: u64) -> String {
        match Self::path_of(&self.state.lock().unwrap(), ino) {
            Ok(p) => self.full(&p),
            Err(_) => format!("inode {ino:#x}"),
        }
    }

    /// Records appear through other programs (a server, another mount).
    fn negative_entries(&self, _dir: u64) -> bool {
        false
    }
}

/// The record stores of a world that can be opened (for `worldfs undo`).
pub fn open_stores(
    world: &crate::world::World,
    read_only: bool,
    journal: bool,
) -> Vec<(&'static str, Box<dyn RecordStore>)> {
    use crate::store::records::{self, Collection};
    let dir = world.dir.as_path();
    let j = journal.then(|| world.journal_path());
    let settings = |k: &str| world.setting(k).map(String::from);
    Collection::ALL
        .into_iter()
        .filter_map(|c| {
            records::open(dir, &settings, dir.join("world.mt").is_file(), c, read_only, j.as_deref())
                .ok()
                .map(|s| (c.name(), s))
        })
        .collect()
}

/// The inode tags of the three collections (the map's tree uses 0 to 6).
const TAGS: [u64; 3] = [7, 8, 9];

/// A Luanti world's whole tree: the map, with `players/`, `auth/` and
/// `mod_storage/` (and `more`) mounted beside it. A collection whose backend worldfs
/// cannot open is left out, with the reason in the log.
pub fn world_tree(
    map: Arc<dyn Tree>,
    world: &crate::world::World,
    opts: &Options,
    services: &Arc<Services>,
    more: Vec<crate::fs::union::Mounted>,
) -> Arc<dyn Tree> {
    use crate::codec::{auth::AuthEntry, mod_storage::ModStorage, player::Player};
    use crate::store::records::{self, Collection};
    let dir = world.dir.as_path();
    let journal = (!opts.read_only && opts.journal).then(|| world.journal_path());
    let has_mt = dir.join("world.mt").is_file();
    let watch = vec![world.map_path()];
    let mut mounted = Vec::new();
    for (c, tag) in Collection::ALL.into_iter().zip(TAGS) {
        let settings = |k: &str| world.setting(k).map(String::from);
        let store = match records::open(dir, &settings, has_mt, c, opts.read_only, journal.as_deref()) {
            Ok(s) => s,
            Err(e) => {
                log::warn!("{}: {} not shown: {e}", dir.display(), c.name());
                continue;
            }
        };
        let (o, s, w) = (opts.clone(), services.clone(), watch.clone());
        let (tree, root): (Arc<dyn Tree>, u64) = match c {
            Collection::Players => {
                let t = RecordsTree::<Player>::new(tag, store, o, s, w);
                let r = t.root();
                (Arc::new(t), r)
            }
            Collection::Auth => {
                let t = RecordsTree::<AuthEntry>::new(tag, store, o, s, w);
                let r = t.root();
                (Arc::new(t), r)
            }
            Collection::ModStorage => {
                let t = RecordsTree::<ModStorage>::new(tag, store, o, s, w);
                let r = t.root();
                (Arc::new(t), r)
            }
        };
        mounted.push(crate::fs::union::Mounted { name: c.name().to_string(), tag, root, tree });
    }
    mounted.extend(more);
    Arc::new(crate::fs::union::Union::new(map, mounted))
}
