//! Any [`Document`] as the core's [`Tree`]: the file is decoded whole, its
//! tree of files numbered by path (numbers stay the same across edits),
//! files rendered on demand and kept until the next change, and an
//! accepted edit encoded and written back atomically: a temporary file in
//! the same directory, fsync, rename over the original, fsync of the
//! directory. A change made to the file by another program shows within
//! the TTL (the file's identity is checked then), and a write based on
//! content that changed meanwhile is refused (ESTALE).

use super::{Context, DocError, Document, Entry};
use crate::fs::{Access, Attr, DirEntry, FsError, Inval, Kind, NewName, Options, Result, Services, Tree};
use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

/// Largest file a document kind loads (they are read whole into memory).
pub const MAX_FILE: u64 = 256 << 20;

/// What identifies one version of the file on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

fn file_id(path: &Path) -> std::io::Result<FileId> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)?;
    Ok(FileId {
        dev: m.dev(),
        ino: m.ino(),
        size: m.size(),
        mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
    })
}

/// One loaded version of the document.
struct Loaded<D> {
    doc: D,
    /// The file's bytes (edits decode them afresh, so that a refused edit
    /// cannot leave a half-changed document behind).
    bytes: Vec<u8>,
    entries: Vec<Entry>,
    by_path: HashMap<String, usize>,
    rendered: HashMap<String, Arc<Vec<u8>>>,
    id: FileId,
    /// When this version was loaded or written (the files' mtime).
    since: SystemTime,
}

struct State<D> {
    loaded: Loaded<D>,
    /// When the file's identity was last compared with the disk.
    checked: Instant,
    /// Inode numbers by path ("" is the root), and back.
    inos: HashMap<String, u64>,
    paths: HashMap<u64, String>,
    next_ino: u64,
}

pub struct DocTree<D: Document> {
    path: PathBuf,
    ctx: Context,
    opts: Options,
    services: Arc<Services>,
    /// One lock: edits are read-modify-write of the whole file.
    state: Mutex<State<D>>,
}

fn doc_err(e: DocError) -> FsError {
    FsError::invalid(e.to_string())
}

fn parent_path(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(p, _)| p)
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() { name.to_string() } else { format!("{dir}/{name}") }
}

impl<D: Document> Loaded<D> {
    fn new(doc: D, bytes: Vec<u8>, id: FileId) -> Loaded<D> {
        let entries = doc.entries();
        let by_path = entries.iter().enumerate().map(|(i, e)| (e.path.clone(), i)).collect();
        Loaded { doc, bytes, entries, by_path, rendered: HashMap::new(), id, since: SystemTime::now() }
    }

    fn entry(&self, path: &str) -> Option<&Entry> {
        self.by_path.get(path).map(|&i| &self.entries[i])
    }

    fn render(&mut self, path: &str) -> Result<Arc<Vec<u8>>> {
        if let Some(r) = self.rendered.get(path) {
            return Ok(r.clone());
        }
        let bytes = Arc::new(self.doc.render(path).map_err(|e| FsError::io(e.in_file(path).to_string()))?);
        self.rendered.insert(path.to_string(), bytes.clone());
        Ok(bytes)
    }
}

impl<D: Document> DocTree<D> {
    /// Load `path` (and its companions) as a `D`.
    pub fn open(
        path: &Path,
        options: Vec<(String, Option<String>)>,
        opts: Options,
        services: Arc<Services>,
    ) -> std::result::Result<Arc<DocTree<D>>, String> {
        let companions =
            D::companions(path).into_iter().filter_map(|p| std::fs::read(&p).ok().map(|b| (p, b))).collect();
        let ctx = Context { path: path.to_path_buf(), companions, options };
        let loaded = Self::load(path, &ctx).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut inos = HashMap::new();
        inos.insert(String::new(), crate::fs::ROOT);
        let mut paths = HashMap::new();
        paths.insert(crate::fs::ROOT, String::new());
        let state = State { loaded, checked: Instant::now(), inos, paths, next_ino: crate::fs::ROOT };
        Ok(Arc::new(DocTree { path: path.to_path_buf(), ctx, opts, services, state: Mutex::new(state) }))
    }

    fn load(path: &Path, ctx: &Context) -> std::result::Result<Loaded<D>, String> {
        let id = file_id(path).map_err(|e| e.to_string())?;
        if id.size > MAX_FILE {
            return Err(format!("{} bytes is more than the {MAX_FILE} a {} file may have here", id.size, D::NAME));
        }
        let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
        let doc = D::decode(&bytes, ctx).map_err(|e| e.to_string())?;
        Ok(Loaded::new(doc, bytes, id))
    }

    /// The state, reloaded first if the file changed on disk since it was
    /// last looked at more than a TTL ago.
    fn state(&self) -> Result<std::sync::MutexGuard<'_, State<D>>> {
        let mut st = self.state.lock().unwrap();
        if st.checked.elapsed() >= self.opts.ttl {
            st.checked = Instant::now();
            self.reload_if_changed(&mut st)?;
        }
        Ok(st)
    }

    fn reload_if_changed(&self, st: &mut State<D>) -> Result<()> {
        let id = file_id(&self.path).map_err(|e| FsError::io(format!("{}: {e}", self.path.display())))?;
        if id == st.loaded.id {
            return Ok(());
        }
        let loaded = Self::load(&self.path, &self.ctx)
            .map_err(|e| FsError::io(format!("{} changed on disk and cannot be read now: {e}", self.path.display())))?;
        st.loaded = loaded;
        let all: Vec<Inval> = st.paths.keys().map(|&i| Inval::Inode(i)).collect();
        self.services.invalidate(all);
        Ok(())
    }

    fn ino_of(st: &mut State<D>, path: &str) -> u64 {
        if let Some(&i) = st.inos.get(path) {
            return i;
        }
        st.next_ino += 1;
        let i = st.next_ino;
        st.inos.insert(path.to_string(), i);
        st.paths.insert(i, path.to_string());
        i
    }

    fn path_of(st: &State<D>, ino: u64) -> Result<String> {
        st.paths.get(&ino).cloned().ok_or_else(FsError::not_found)
    }

    fn attr_of(&self, st: &mut State<D>, path: &str) -> Result<Attr> {
        let ino = Self::ino_of(st, path);
        let since = st.loaded.since;
        if path.is_empty() {
            return Ok(Attr::new(ino, Kind::Dir, 0, Access::Normal, since, &self.opts));
        }
        let e = st.loaded.entry(path).cloned().ok_or_else(FsError::not_found)?;
        if e.dir {
            return Ok(Attr::new(ino, Kind::Dir, 0, Access::Normal, since, &self.opts));
        }
        let size = st.loaded.render(path)?.len() as u64;
        let access = if e.writable { Access::Normal } else { Access::Generated };
        Ok(Attr::new(ino, Kind::File, size, access, since, &self.opts))
    }

    fn dir_path(st: &State<D>, ino: u64) -> Result<String> {
        let p = Self::path_of(st, ino)?;
        if p.is_empty() || st.loaded.entry(&p).is_some_and(|e| e.dir) {
            Ok(p)
        } else if st.loaded.entry(&p).is_some() {
            Err(FsError::not_dir())
        } else {
            Err(FsError::not_found())
        }
    }

    fn name_str(name: &[u8]) -> Result<&str> {
        std::str::from_utf8(name).map_err(|_| FsError::not_found())
    }

    /// Apply an edit to a fresh decoding, encode it, check the encoding
    /// decodes, write the file atomically, and make it current.
    fn edit(&self, st: &mut State<D>, what: &str, f: impl FnOnce(&mut D) -> super::DocResult<()>) -> Result<()> {
        if self.opts.read_only {
            return Err(FsError::read_only("the mount is read-only (-o ro)"));
        }
        let mut doc = D::decode(&st.loaded.bytes, &self.ctx).map_err(|e| FsError::io(e.to_string()))?;
        f(&mut doc).map_err(|e| doc_err(e.in_file(what)))?;
        let bytes = doc.encode().map_err(|e| doc_err(e.in_file(what)))?;
        if bytes == st.loaded.bytes {
            return Ok(());
        }
        D::decode(&bytes, &self.ctx).map_err(|e| {
            FsError::io(format!("{what}: internal error: the encoded {} does not decode back: {e}", D::NAME))
        })?;
        write_atomically(&self.path, &bytes)?;
        let id = file_id(&self.path).map_err(|e| FsError::io(format!("{}: {e}", self.path.display())))?;
        let old_dirs: HashMap<String, Vec<String>> = children_by_dir(&st.loaded.entries);
        st.loaded = Loaded::new(doc, bytes, id);
        st.checked = Instant::now();
        // Every file may render differently now; directories whose names
        // changed get their entries invalidated.
        let mut inv: Vec<Inval> = st.paths.keys().map(|&i| Inval::Inode(i)).collect();
        let new_dirs = children_by_dir(&st.loaded.entries);
        for (dir, names) in old_dirs.iter().chain(new_dirs.iter()) {
            let (a, b) = (old_dirs.get(dir), new_dirs.get(dir));
            if a != b
                && let Some(&dir_ino) = st.inos.get(dir)
            {
                inv.extend(names.iter().map(|n| Inval::Entry(dir_ino, OsString::from_vec(n.as_bytes().to_vec()))));
            }
        }
        self.services.invalidate(inv);
        Ok(())
    }
}

/// Child names per directory path.
fn children_by_dir(entries: &[Entry]) -> HashMap<String, Vec<String>> {
    let mut m: HashMap<String, Vec<String>> = HashMap::new();
    for e in entries {
        let name = e.path.rsplit('/').next().unwrap_or(&e.path).to_string();
        m.entry(parent_path(&e.path).to_string()).or_default().push(name);
    }
    m
}

/// Replace `path` with `bytes`: temporary file beside it, fsync, rename,
/// fsync of the directory. The original's permissions are kept.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.worldfs-{}-{}", std::process::id(), SERIAL.fetch_add(1, Ordering::Relaxed)));
    let io = |e: std::io::Error| FsError::from_io(&e, format!("{}: {e}; the file is unchanged", path.display()));
    let r = (|| {
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(bytes).map_err(io)?;
        f.sync_all().map_err(io)?;
        if let Ok(meta) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, meta.permissions()).map_err(io)?;
        }
        std::fs::rename(&tmp, path).map_err(io)?;
        std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io)
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

impl<D: Document> Tree for DocTree<D> {
    fn describe(&self) -> String {
        format!("{} file {}", D::NAME, self.path.display())
    }

    fn readme(&self) -> String {
        self.state.lock().unwrap().loaded.doc.readme()
    }

    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Attr> {
        let mut st = self.state()?;
        let dir = Self::dir_path(&st, parent)?;
        let path = join(&dir, Self::name_str(name)?);
        if st.loaded.entry(&path).is_none() {
            return Err(FsError::not_found());
        }
        self.attr_of(&mut st, &path)
    }

    fn getattr(&self, ino: u64) -> Result<Attr> {
        let mut st = self.state()?;
        let path = Self::path_of(&st, ino)?;
        self.attr_of(&mut st, &path)
    }

    fn parent(&self, ino: u64) -> Result<u64> {
        let mut st = self.state()?;
        let path = Self::path_of(&st, ino)?;
        let parent = parent_path(&path).to_string();
        Ok(Self::ino_of(&mut st, &parent))
    }

    fn list(
        &self,
        dir: u64,
        offset: u64,
        plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<()> {
        let mut st = self.state()?;
        let dir = Self::dir_path(&st, dir)?;
        let children: Vec<Entry> =
            st.loaded.entries.iter().filter(|e| !e.path.is_empty() && parent_path(&e.path) == dir).cloned().collect();
        for (i, e) in children.into_iter().enumerate() {
            let cookie = i as u64 + 3;
            if offset >= cookie {
                continue;
            }
            let ino = Self::ino_of(&mut st, &e.path);
            let name = e.path.rsplit('/').next().unwrap_or(&e.path).to_string();
            let kind = if e.dir { Kind::Dir } else { Kind::File };
            let entry = DirEntry { ino, offset: cookie, kind, name: name.into() };
            let attr = if plus { Some(self.attr_of(&mut st, &e.path)?) } else { None };
            if add(&entry, attr.as_ref()) {
                return Ok(());
            }
        }
        Ok(())
    }

    fn read(&self, ino: u64) -> Result<Arc<Vec<u8>>> {
        let mut st = self.state()?;
        let path = Self::path_of(&st, ino)?;
        match st.loaded.entry(&path) {
            None => Err(FsError::not_found()),
            Some(e) if e.dir => Err(FsError::is_dir()),
            Some(_) => st.loaded.render(&path),
        }
    }

    fn check_writable(&self, ino: u64) -> Result<()> {
        if self.opts.read_only {
            return Err(FsError::read_only("the mount is read-only (-o ro)"));
        }
        let st = self.state()?;
        let path = Self::path_of(&st, ino)?;
        match st.loaded.entry(&path) {
            None => Err(FsError::not_found()),
            Some(e) if e.dir => Err(FsError::is_dir()),
            Some(e) if !e.writable => {
                Err(FsError::perm(format!("{path} is made from the {} and cannot be written", D::NAME)))
            }
            Some(_) => Ok(()),
        }
    }

    fn write(&self, ino: u64, content: &[u8], base: Option<&[u8]>) -> Result<()> {
        self.check_writable(ino)?;
        let mut st = self.state()?;
        let path = Self::path_of(&st, ino)?;
        // Another program may have replaced the file just now.
        self.reload_if_changed(&mut st)?;
        let now = st.loaded.render(&path)?;
        if now.as_slice() == content {
            return Ok(());
        }
        if base.is_some_and(|b| b != now.as_slice()) {
            return Err(FsError::stale(format!(
                "{path} was changed by someone else since it was opened; nothing written"
            )));
        }
        self.edit(&mut st, &path, |d| d.apply(&path, content))
    }

    fn new_name(&self, dir: u64, name: &[u8]) -> Result<NewName> {
        let st = self.state()?;
        let dir = Self::dir_path(&st, dir)?;
        let path = join(&dir, Self::name_str(name).map_err(|_| FsError::invalid("file names here are UTF-8"))?);
        Ok(if !name.starts_with(b".") && st.loaded.doc.accepts_new(&path) {
            NewName::Pending
        } else {
            NewName::Scratch
        })
    }

    fn create(&self, dir: u64, name: &[u8], content: &[u8]) -> Result<u64> {
        let mut st = self.state()?;
        let dir = Self::dir_path(&st, dir)?;
        let path = join(&dir, Self::name_str(name)?);
        self.edit(&mut st, &path, |d| d.apply(&path, content))?;
        if st.loaded.entry(&path).is_none() {
            return Err(FsError::io(format!("{path}: accepted, but the {} has no such file afterwards", D::NAME)));
        }
        Ok(Self::ino_of(&mut st, &path))
    }

    fn mkdir(&self, dir: u64, name: &[u8]) -> Result<Attr> {
        let mut st = self.state()?;
        let dir = Self::dir_path(&st, dir)?;
        let path = join(&dir, Self::name_str(name).map_err(|_| FsError::invalid("file names here are UTF-8"))?);
        if st.loaded.entry(&path).is_some() {
            return Err(FsError::exists(format!("{path} exists")));
        }
        self.edit(&mut st, &path, |d| d.mkdir(&path))?;
        self.attr_of(&mut st, &path)
    }

    fn rmdir(&self, dir: u64, name: &[u8]) -> Result<()> {
        let mut st = self.state()?;
        let dir = Self::dir_path(&st, dir)?;
        let path = join(&dir, Self::name_str(name)?);
        match st.loaded.entry(&path) {
            None => return Err(FsError::not_found()),
            Some(e) if !e.dir => return Err(FsError::not_dir()),
            _ => {}
        }
        self.edit(&mut st, &path, |d| d.rmdir(&path))
    }

    fn unlink(&self, dir: u64, name: &[u8]) -> Result<()> {
        let mut st = self.state()?;
        let dir = Self::dir_path(&st, dir)?;
        let path = join(&dir, Self::name_str(name)?);
        if st.loaded.entry(&path).is_none() {
            return Err(FsError::not_found());
        }
        self.edit(&mut st, &path, |d| d.remove(&path))
    }

    fn path(&self, ino: u64) -> String {
        self.state.lock().unwrap().paths.get(&ino).cloned().unwrap_or_else(|| format!("inode {ino:#x}"))
    }

    fn count(&self) -> u64 {
        self.state.lock().unwrap().loaded.entries.len() as u64
    }
}
