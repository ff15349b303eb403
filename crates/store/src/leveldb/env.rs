//! The two file systems the LevelDB crate runs on (its `Env`).
//!
//! * [`SyncedEnv`], for writable opens: the disk, but every file the
//!   database writes is fsynced when flushed or closed, and a rename fsyncs
//!   the directory. The crate itself never calls fsync, so without this a
//!   power cut could lose a "synced" write batch or leave CURRENT naming a
//!   manifest that never reached the disk.
//! * [`SnapshotEnv`], for read-only opens: the files as they were when it
//!   was made, each kept open (so a server deleting or replacing them later
//!   changes nothing we see), and every write the crate makes on opening
//!   (log recovery, a new manifest, CURRENT, compactions) kept in memory.
//!   Nothing in the directory is created, changed or deleted.
//!
//! Both show tables named `NNNNNN.sst` (LevelDB before 1.14) as
//! `NNNNNN.ldb`, which is the only name the crate looks for.

use rusty_leveldb::env::{Env, FileLock, Logger, RandomAccess};
use rusty_leveldb::{PosixDiskEnv, Result, Status, StatusCode};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

fn not_found(p: &Path) -> Status {
    Status::new(StatusCode::NotFound, &format!("{}: no such file", p.display()))
}

fn io(p: &Path, e: std::io::Error) -> Status {
    Status::new(StatusCode::IOError, &format!("{}: {e}", p.display()))
}

fn micros_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// `NNNNNN.sst` for `NNNNNN.ldb`.
fn sst_twin(p: &Path) -> Option<PathBuf> {
    (p.extension()? == "ldb").then(|| p.with_extension("sst"))
}

/// The file name as the crate expects it (`.sst` shown as `.ldb`).
fn shown_name(name: &str) -> String {
    match name.strip_suffix(".sst") {
        Some(stem) if !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit()) => format!("{stem}.ldb"),
        _ => name.to_string(),
    }
}

/// What the synced file system shares with its files and its owner: once
/// a write failed, or a table written since the last manifest record was
/// deleted (the crate's clean-up after a failed compaction or flush), it
/// refuses every further change. The crate would otherwise go on and
/// record the failed compaction as done, dropping its input tables (and
/// so every key in their range) from the database. The owner sees the
/// reason and reopens the database from what is on disk.
#[derive(Default)]
pub struct Health {
    failed: RefCell<Option<String>>,
    /// Tables written since the manifest was last written.
    unrecorded: RefCell<HashSet<String>>,
}

impl Health {
    /// Why changes are refused, if they are.
    pub fn failure(&self) -> Option<String> {
        self.failed.borrow().clone()
    }

    /// Refuse every change from now on (a read-only snapshot, once open).
    pub fn freeze(&self) {
        self.failed.borrow_mut().get_or_insert_with(|| "a read-only snapshot".into());
    }

    fn fail(&self, why: String) {
        log::error!("leveldb: {why}; no further change is made until the database is reopened");
        self.failed.borrow_mut().get_or_insert(why);
    }

    fn check(&self) -> std::io::Result<()> {
        match &*self.failed.borrow() {
            Some(why) => Err(std::io::Error::other(format!("an earlier write failed ({why})"))),
            None => Ok(()),
        }
    }
}

/// A file written by the database: synced on flush and when closed.
struct SyncedFile {
    file: File,
    path: PathBuf,
    health: Rc<Health>,
    manifest: bool,
}

impl SyncedFile {
    fn watch<T>(&self, r: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &r {
            self.health.fail(format!("{}: {e}", self.path.display()));
        }
        r
    }
}

impl Write for SyncedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.health.check()?;
        let r = self.file.write(buf);
        self.watch(r)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.health.check()?;
        let r = self.file.sync_data();
        self.watch(r)?;
        if self.manifest {
            self.health.unrecorded.borrow_mut().clear();
        }
        Ok(())
    }
}

impl Drop for SyncedFile {
    fn drop(&mut self) {
        if let Err(e) = self.file.sync_data() {
            self.health.fail(format!("{}: fsync failed: {e}", self.path.display()));
        }
    }
}

fn sync_dir(p: &Path) -> std::io::Result<()> {
    let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    File::open(dir)?.sync_all()
}

/// The disk, with fsyncs and the [`Health`] guard (see the module comment).
pub struct SyncedEnv {
    disk: PosixDiskEnv,
    health: Rc<Health>,
}

impl SyncedEnv {
    pub fn new(health: Rc<Health>) -> SyncedEnv {
        SyncedEnv { disk: PosixDiskEnv::new(), health }
    }

    /// The file on disk for `p` (an old `.sst` for a missing `.ldb`).
    fn real(&self, p: &Path) -> PathBuf {
        if !p.exists()
            && let Some(twin) = sst_twin(p)
            && twin.exists()
        {
            return twin;
        }
        p.to_path_buf()
    }

    fn refuse_if_failed(&self) -> Result<()> {
        self.health.check().map_err(|e| Status::new(StatusCode::IOError, &e.to_string()))
    }

    fn writable(&self, p: &Path, append: bool) -> Result<Box<dyn Write>> {
        self.refuse_if_failed()?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(p)
            .map_err(|e| io(p, e))?;
        let name = name_of(p);
        if name.ends_with(".ldb") {
            self.health.unrecorded.borrow_mut().insert(name.clone());
        }
        let manifest = name.starts_with("MANIFEST-");
        Ok(Box::new(SyncedFile { file, path: p.to_path_buf(), health: self.health.clone(), manifest }))
    }
}

impl Env for SyncedEnv {
    fn open_sequential_file(&self, p: &Path) -> Result<Box<dyn Read>> {
        self.disk.open_sequential_file(&self.real(p))
    }
    fn open_random_access_file(&self, p: &Path) -> Result<Box<dyn RandomAccess>> {
        self.disk.open_random_access_file(&self.real(p))
    }
    fn open_writable_file(&self, p: &Path) -> Result<Box<dyn Write>> {
        self.writable(p, false)
    }
    fn open_appendable_file(&self, p: &Path) -> Result<Box<dyn Write>> {
        self.writable(p, true)
    }
    fn exists(&self, p: &Path) -> Result<bool> {
        Ok(self.real(p).exists())
    }
    fn children(&self, p: &Path) -> Result<Vec<PathBuf>> {
        let names = self.disk.children(p)?;
        Ok(names.into_iter().map(|n| PathBuf::from(shown_name(&n.to_string_lossy()))).collect())
    }
    fn size_of(&self, p: &Path) -> Result<usize> {
        self.disk.size_of(&self.real(p))
    }
    fn delete(&self, p: &Path) -> Result<()> {
        if self.health.unrecorded.borrow().contains(&name_of(p)) {
            self.health.fail(format!("{}: a compaction or flush failed (its output is being removed)", p.display()));
        }
        self.refuse_if_failed()?;
        self.disk.delete(&self.real(p))
    }
    fn mkdir(&self, p: &Path) -> Result<()> {
        self.disk.mkdir(p)
    }
    fn rmdir(&self, p: &Path) -> Result<()> {
        self.refuse_if_failed()?;
        self.disk.rmdir(p)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.refuse_if_failed()?;
        std::fs::rename(from, to).map_err(|e| io(from, e))?;
        // CURRENT is replaced by a rename: make the new name durable.
        sync_dir(to).map_err(|e| io(to, e))
    }
    fn lock(&self, p: &Path) -> Result<FileLock> {
        self.disk.lock(p)
    }
    fn unlock(&self, l: FileLock) -> Result<()> {
        self.disk.unlock(l)
    }
    fn new_logger(&self, p: &Path) -> Result<Logger> {
        self.disk.new_logger(p)
    }
    fn micros(&self) -> u64 {
        micros_now()
    }
    fn sleep_for(&self, micros: u32) {
        std::thread::sleep(std::time::Duration::from_micros(micros as u64))
    }
}

/// A file of the directory, open since the snapshot, and its size then.
#[derive(Clone)]
struct Pinned {
    file: Rc<File>,
    size: u64,
}

type MemFile = Rc<RefCell<Vec<u8>>>;

/// The directory as it was, with the crate's writes in memory (see the
/// module comment). Files are known by name only: the database lives in
/// one directory and the crate names it in two spellings.
pub struct SnapshotEnv {
    pinned: HashMap<String, Pinned>,
    hidden: RefCell<HashSet<String>>,
    mem: RefCell<HashMap<String, MemFile>>,
    /// Failed (frozen) once the database is open: see [`SnapshotEnv::pin`].
    health: Rc<Health>,
}

fn name_of(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Reads a pinned file up to its snapshot size.
struct PinnedReader {
    pinned: Pinned,
    pos: u64,
}

impl Read for PinnedReader {
    fn read(&mut self, dst: &mut [u8]) -> std::io::Result<usize> {
        let left = self.pinned.size.saturating_sub(self.pos) as usize;
        let n = dst.len().min(left);
        if n == 0 {
            return Ok(0);
        }
        let got = FileExt::read_at(&*self.pinned.file, &mut dst[..n], self.pos)?;
        self.pos += got as u64;
        Ok(got)
    }
}

impl RandomAccess for PinnedReader {
    fn read_at(&self, off: usize, dst: &mut [u8]) -> Result<usize> {
        let left = self.pinned.size.saturating_sub(off as u64) as usize;
        let n = dst.len().min(left);
        Ok(FileExt::read_at(&*self.pinned.file, &mut dst[..n], off as u64)?)
    }
}

struct MemReader {
    data: MemFile,
    pos: usize,
}

impl Read for MemReader {
    fn read(&mut self, dst: &mut [u8]) -> std::io::Result<usize> {
        let data = self.data.borrow();
        let n = dst.len().min(data.len().saturating_sub(self.pos));
        dst[..n].copy_from_slice(&data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl RandomAccess for MemReader {
    fn read_at(&self, off: usize, dst: &mut [u8]) -> Result<usize> {
        let data = self.data.borrow();
        let n = dst.len().min(data.len().saturating_sub(off));
        dst[..n].copy_from_slice(&data[off..off + n]);
        Ok(n)
    }
}

struct MemWriter(MemFile, Rc<Health>);

impl Write for MemWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.1.check()?;
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl SnapshotEnv {
    /// Pin the files of the LevelDB directory `dir`. CURRENT, the
    /// manifest it names and the logs are taken first: every table they
    /// mention existed before them, so it is in the listing taken after
    /// (unless a compaction removed it meanwhile: opening then fails with
    /// missing files, and the caller takes a new snapshot).
    ///
    /// Once the database is open, the caller fails `health` ("frozen"):
    /// from then on nothing can be written, not even to memory. Reads that
    /// hit many tables make the crate compact them; without the freeze each
    /// compaction would copy tables into memory, and a long read-only
    /// mount of a large world could end up holding much of it. Frozen, a
    /// compaction fails before its result reaches the manifest (as on
    /// disk, see [`Health`]), the tables stay as they are, and the crate
    /// does not try that file again.
    pub fn pin(dir: &Path, health: Rc<Health>) -> std::io::Result<SnapshotEnv> {
        let open = |name: &str| -> std::io::Result<Pinned> {
            let named = |e: std::io::Error| std::io::Error::new(e.kind(), format!("{name}: {e}"));
            let file = File::open(dir.join(name)).map_err(named)?;
            let size = file.metadata().map_err(named)?.len();
            Ok(Pinned { file: Rc::new(file), size })
        };
        let mut pinned = HashMap::new();
        let mem = RefCell::new(HashMap::new());
        let current = std::fs::read(dir.join("CURRENT"))?;
        let manifest = String::from_utf8_lossy(&current).trim().to_string();
        if !manifest.is_empty() && !manifest.contains('/') {
            let pin = open(&manifest).map_err(|e| {
                std::io::Error::new(e.kind(), format!("CURRENT names a manifest that cannot be read ({e})"))
            })?;
            pinned.insert(manifest.clone(), pin);
        }
        mem.borrow_mut().insert("CURRENT".to_string(), Rc::new(RefCell::new(current)));
        let mut names: Vec<String> =
            std::fs::read_dir(dir)?.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        // Logs first, then everything else.
        names.sort_by_key(|n| !n.ends_with(".log"));
        for name in names {
            let skip = name == "CURRENT" || name == "LOCK" || name.starts_with("LOG") || pinned.contains_key(&name);
            if skip || !dir.join(&name).is_file() {
                continue;
            }
            match open(&name) {
                Ok(p) => {
                    pinned.insert(shown_name(&name), p);
                }
                // Removed since the listing: it was obsolete.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(SnapshotEnv { pinned, hidden: RefCell::new(HashSet::new()), mem, health })
    }

    fn pinned(&self, name: &str) -> Option<&Pinned> {
        self.pinned.get(name).filter(|_| !self.hidden.borrow().contains(name))
    }

    /// The bytes of a file, wherever it is.
    fn bytes(&self, name: &str, p: &Path) -> Result<Vec<u8>> {
        if let Some(m) = self.mem.borrow().get(name) {
            return Ok(m.borrow().clone());
        }
        let pin = self.pinned(name).ok_or_else(|| not_found(p))?;
        let mut out = vec![0; pin.size as usize];
        pin.file.read_exact_at(&mut out, 0).map_err(|e| io(p, e))?;
        Ok(out)
    }

    fn refuse_if_frozen(&self) -> Result<()> {
        self.health.check().map_err(|e| Status::new(StatusCode::IOError, &e.to_string()))
    }

    fn put_mem(&self, name: String, data: Vec<u8>) -> MemFile {
        self.hidden.borrow_mut().insert(name.clone());
        let f = Rc::new(RefCell::new(data));
        self.mem.borrow_mut().insert(name, f.clone());
        f
    }
}

impl Env for SnapshotEnv {
    fn open_sequential_file(&self, p: &Path) -> Result<Box<dyn Read>> {
        let name = name_of(p);
        if let Some(m) = self.mem.borrow().get(&name) {
            return Ok(Box::new(MemReader { data: m.clone(), pos: 0 }));
        }
        let pinned = self.pinned(&name).ok_or_else(|| not_found(p))?.clone();
        Ok(Box::new(PinnedReader { pinned, pos: 0 }))
    }
    fn open_random_access_file(&self, p: &Path) -> Result<Box<dyn RandomAccess>> {
        let name = name_of(p);
        if let Some(m) = self.mem.borrow().get(&name) {
            return Ok(Box::new(MemReader { data: m.clone(), pos: 0 }));
        }
        let pinned = self.pinned(&name).ok_or_else(|| not_found(p))?.clone();
        Ok(Box::new(PinnedReader { pinned, pos: 0 }))
    }
    fn open_writable_file(&self, p: &Path) -> Result<Box<dyn Write>> {
        self.refuse_if_frozen()?;
        Ok(Box::new(MemWriter(self.put_mem(name_of(p), Vec::new()), self.health.clone())))
    }
    fn open_appendable_file(&self, p: &Path) -> Result<Box<dyn Write>> {
        self.refuse_if_frozen()?;
        let name = name_of(p);
        if let Some(m) = self.mem.borrow().get(&name) {
            return Ok(Box::new(MemWriter(m.clone(), self.health.clone())));
        }
        let old = if self.pinned(&name).is_some() { self.bytes(&name, p)? } else { Vec::new() };
        Ok(Box::new(MemWriter(self.put_mem(name, old), self.health.clone())))
    }
    fn exists(&self, p: &Path) -> Result<bool> {
        let name = name_of(p);
        Ok(self.mem.borrow().contains_key(&name) || self.pinned(&name).is_some())
    }
    fn children(&self, _: &Path) -> Result<Vec<PathBuf>> {
        let mut names: HashSet<String> = self.mem.borrow().keys().cloned().collect();
        names.extend(self.pinned.keys().filter(|n| self.pinned(n).is_some()).cloned());
        Ok(names.into_iter().map(PathBuf::from).collect())
    }
    fn size_of(&self, p: &Path) -> Result<usize> {
        let name = name_of(p);
        if let Some(m) = self.mem.borrow().get(&name) {
            return Ok(m.borrow().len());
        }
        Ok(self.pinned(&name).ok_or_else(|| not_found(p))?.size as usize)
    }
    fn delete(&self, p: &Path) -> Result<()> {
        self.refuse_if_frozen()?;
        let name = name_of(p);
        let was = self.mem.borrow_mut().remove(&name).is_some() || self.pinned(&name).is_some();
        self.hidden.borrow_mut().insert(name);
        if was { Ok(()) } else { Err(not_found(p)) }
    }
    fn mkdir(&self, _: &Path) -> Result<()> {
        Ok(())
    }
    fn rmdir(&self, _: &Path) -> Result<()> {
        Ok(())
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.refuse_if_frozen()?;
        let data = self.bytes(&name_of(from), from)?;
        self.delete(from)?;
        self.put_mem(name_of(to), data);
        Ok(())
    }
    fn lock(&self, p: &Path) -> Result<FileLock> {
        Ok(FileLock { id: name_of(p) })
    }
    fn unlock(&self, _: FileLock) -> Result<()> {
        Ok(())
    }
    fn new_logger(&self, _: &Path) -> Result<Logger> {
        Ok(Logger::new(Box::new(std::io::sink())))
    }
    fn micros(&self) -> u64 {
        micros_now()
    }
    fn sleep_for(&self, micros: u32) {
        std::thread::sleep(std::time::Duration::from_micros(micros as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_compaction_stops_every_change() {
        let d = tempfile::tempdir().unwrap();
        let health = Rc::new(Health::default());
        let env = SyncedEnv::new(health.clone());
        // A table recorded in a manifest may be deleted later.
        let mut t = env.open_writable_file(&d.path().join("000005.ldb")).unwrap();
        t.write_all(b"table").unwrap();
        drop(t);
        let mut m = env.open_writable_file(&d.path().join("MANIFEST-000002")).unwrap();
        m.write_all(b"edit").unwrap();
        m.flush().unwrap();
        env.delete(&d.path().join("000005.ldb")).unwrap();
        assert_eq!(health.failure(), None);
        // One removed before any manifest record is a failed compaction's
        // clean-up: from then on nothing changes, the manifest included.
        let mut t = env.open_writable_file(&d.path().join("000007.ldb")).unwrap();
        t.write_all(b"partial").unwrap();
        drop(t);
        assert!(env.delete(&d.path().join("000007.ldb")).is_err());
        assert!(health.failure().unwrap().contains("compaction or flush failed"));
        assert!(m.write_all(b"the failed compaction's edit").is_err());
        assert!(env.open_writable_file(&d.path().join("CURRENT.tmp")).is_err());
        assert!(d.path().join("000007.ldb").exists(), "nothing deleted once failed");
    }

    #[test]
    fn a_frozen_snapshot_writes_nothing_even_to_memory() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("CURRENT"), b"MANIFEST-000001\n").unwrap();
        std::fs::write(d.path().join("MANIFEST-000001"), b"m").unwrap();
        let health = Rc::new(Health::default());
        let snap = SnapshotEnv::pin(d.path(), health.clone()).unwrap();
        let mut w = snap.open_appendable_file(&d.path().join("MANIFEST-000001")).unwrap();
        w.write_all(b"+edit").unwrap();
        assert_eq!(snap.size_of(&d.path().join("MANIFEST-000001")).unwrap(), 6);
        health.freeze();
        assert!(w.write_all(b"+compaction").is_err());
        assert!(snap.open_writable_file(&d.path().join("000009.ldb")).is_err());
        assert!(snap.delete(&d.path().join("MANIFEST-000001")).is_err());
        assert_eq!(std::fs::read(d.path().join("MANIFEST-000001")).unwrap(), b"m", "the disk never changes");
    }

    #[test]
    fn old_sst_tables_are_shown_as_ldb() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("000009.sst"), b"old table").unwrap();
        let env = SyncedEnv::new(Rc::default());
        assert_eq!(env.children(d.path()).unwrap(), vec![PathBuf::from("000009.ldb")]);
        assert_eq!(env.size_of(&d.path().join("000009.ldb")).unwrap(), 9);
        std::fs::write(d.path().join("CURRENT"), b"MANIFEST-000001\n").unwrap();
        std::fs::write(d.path().join("MANIFEST-000001"), b"").unwrap();
        let snap = SnapshotEnv::pin(d.path(), Rc::default()).unwrap();
        assert!(snap.exists(&d.path().join("000009.ldb")).unwrap());
        let mut buf = [0u8; 9];
        assert_eq!(
            snap.open_random_access_file(&d.path().join("000009.ldb")).unwrap().read_at(0, &mut buf).unwrap(),
            9
        );
    }
}
