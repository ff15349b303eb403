//! The core without FUSE: the one place that builds a core for a test
//! (`open_core`), the demo world kept in memory, and a store that fails
//! when told.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use worldfs::fs::{Options, Services, WorldFs};
use worldfs_store::memory::MemoryStore;
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, Change, MapStore, Note, StoreError};

/// What a core serves.
pub enum Source<'a> {
    /// A Luanti world directory (world.mt, the record databases) whose map
    /// is `store`.
    World { dir: &'a Path, store: Arc<dyn MapStore> },
    /// A one-file document of kind `kind` ("mts", "we", ...).
    Document { file: &'a Path, kind: &'a str },
    /// A Luanti world directory with the map store its world.mt names.
    Directory(&'a Path),
}

/// A core over `source`, as a mount makes it (without the `map/`
/// pictures). The only function here that knows how the core is put
/// together: adapt it, not the tests, when that changes.
pub fn open_core(source: Source, opts: Options) -> WorldFs {
    match source {
        Source::World { dir, store } => {
            let world = worldfs_store::world::World::open(dir).unwrap();
            let services = Services::new();
            let map = worldfs::worlds::luanti::LuantiTree::new(world, Box::new(store), opts.clone(), services.clone());
            let world = worldfs_store::world::World::open(dir).unwrap();
            let tree = worldfs::worlds::luanti::records::world_tree(
                Arc::new(map.with_index()),
                &world,
                &opts,
                &services,
                Vec::new(),
            );
            WorldFs::new(tree, services, opts)
        }
        Source::Document { file, kind } => worldfs::open::open_path(file, Some(kind), Vec::new(), opts).unwrap(),
        Source::Directory(dir) => worldfs::open::open_world(dir, opts).unwrap(),
    }
}

/// The demo world's files (map.sqlite included) and its blocks, made once:
/// its map is written with fsyncs, which on a busy disk takes most of a
/// test case's time.
pub struct DemoFiles {
    pub files: Vec<(PathBuf, Vec<u8>)>,
    pub blocks: Vec<(BlockPos, Vec<u8>)>,
}

pub fn demo_files() -> &'static DemoFiles {
    static DEMO: OnceLock<DemoFiles> = OnceLock::new();
    DEMO.get_or_init(|| {
        let world = super::demo_world();
        let sqlite = SqliteStore::open(&world.path().join("map.sqlite"), true).unwrap();
        let blocks = sqlite.scan_after(None, 100_000).unwrap();
        let mut files = Vec::new();
        let mut dirs = vec![world.path().to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let path = e.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    let rel = path.strip_prefix(world.path()).unwrap().to_path_buf();
                    files.push((rel, std::fs::read(&path).unwrap()));
                }
            }
        }
        DemoFiles { files, blocks }
    })
}

/// A fresh copy of the demo world's directory, and a memory store holding
/// its blocks.
pub fn demo_copy() -> (tempfile::TempDir, MemoryStore) {
    let demo = demo_files();
    let world = memory_dir();
    for (rel, bytes) in &demo.files {
        let path = world.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    (world, MemoryStore::with_blocks(demo.blocks.clone()))
}

/// A temporary directory in memory (/dev/shm) when there is one: the
/// record databases, the journal and the name index fsync what they
/// write, which on a busy disk took most of a model test's time.
pub fn memory_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(d) = tempfile::Builder::new().prefix("worldfs-test").tempdir_in(shm)
    {
        return d;
    }
    tempfile::tempdir().unwrap()
}

/// A real in-memory store with failures injected by count: the Nth read
/// (get, contains, list or scan) or the Nth transaction from when it is
/// armed fails once, with nothing applied.
pub struct FlakyStore {
    pub inner: MemoryStore,
    reads_left: Mutex<Option<usize>>,
    applies_left: Mutex<Option<usize>>,
    read_failures: AtomicUsize,
}

impl FlakyStore {
    pub fn new(inner: MemoryStore) -> FlakyStore {
        FlakyStore {
            inner,
            reads_left: Mutex::new(None),
            applies_left: Mutex::new(None),
            read_failures: AtomicUsize::new(0),
        }
    }

    /// The read after the next `n` fails.
    pub fn fail_read_after(&self, n: usize) {
        *self.reads_left.lock().unwrap() = Some(n);
    }

    /// The transaction after the next `n` fails.
    pub fn fail_apply_after(&self, n: usize) {
        *self.applies_left.lock().unwrap() = Some(n);
    }

    /// No failure armed any more.
    pub fn heal(&self) {
        *self.reads_left.lock().unwrap() = None;
        *self.applies_left.lock().unwrap() = None;
    }

    /// How many read failures were injected so far.
    pub fn read_failures(&self) -> usize {
        self.read_failures.load(Ordering::SeqCst)
    }

    /// Transactions left before the armed failure, if one is armed.
    pub fn applies_left(&self) -> Option<usize> {
        *self.applies_left.lock().unwrap()
    }

    /// Whether a read failure is still waiting to happen.
    pub fn read_failure_armed(&self) -> bool {
        self.reads_left.lock().unwrap().is_some()
    }

    /// Count down `left`; the call that finds it at zero fails.
    fn countdown(&self, left: &Mutex<Option<usize>>, what: &str) -> worldfs_store::Result<()> {
        let mut left = left.lock().unwrap();
        match *left {
            Some(0) => {
                *left = None;
                if what == "read" {
                    self.read_failures.fetch_add(1, Ordering::SeqCst);
                }
                Err(StoreError::Backend(format!("injected {what} failure")))
            }
            Some(n) => {
                *left = Some(n - 1);
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn read(&self) -> worldfs_store::Result<()> {
        self.countdown(&self.reads_left, "read")
    }
}

impl MapStore for FlakyStore {
    fn describe(&self) -> String {
        format!("flaky {}", self.inner.describe())
    }
    fn get(&self, pos: BlockPos) -> worldfs_store::Result<Option<Vec<u8>>> {
        self.read()?;
        self.inner.get(pos)
    }
    fn contains(&self, pos: BlockPos) -> worldfs_store::Result<bool> {
        self.read()?;
        self.inner.contains(pos)
    }
    fn list_after(&self, after: Option<BlockPos>, limit: usize) -> worldfs_store::Result<Vec<BlockPos>> {
        self.read()?;
        self.inner.list_after(after, limit)
    }
    fn scan_after(&self, a: Option<BlockPos>, limit: usize) -> worldfs_store::Result<Vec<(BlockPos, Vec<u8>)>> {
        self.read()?;
        self.inner.scan_after(a, limit)
    }
    fn apply(&self, changes: &[Change], note: &Note) -> worldfs_store::Result<()> {
        self.countdown(&self.applies_left, "transaction")?;
        self.inner.apply(changes, note)
    }
    fn count(&self) -> worldfs_store::Result<u64> {
        self.read()?;
        self.inner.count()
    }
    fn is_read_only(&self) -> bool {
        false
    }
    fn data_version(&self) -> Option<u64> {
        self.inner.data_version()
    }
}

/// The models' own copy of the core's commit rule for a handle
/// (`worldfs::fs::handles::Pending`), written again here so that a model
/// never checks the core against the core's own code.
#[derive(Clone, Debug)]
pub struct ModelPending {
    pub dirty: bool,
    pub truncated: bool,
    pub flushes: u32,
}

impl ModelPending {
    pub fn new(truncated: bool) -> ModelPending {
        ModelPending { dirty: false, truncated, flushes: 0 }
    }

    /// Whether this flush (or fsync or release, `flush` false) commits:
    /// a write always does; a truncation alone only from the second flush
    /// on, since bash may still write after closing a duplicate.
    pub fn commits_now(&mut self, flush: bool) -> bool {
        let now = if flush {
            self.flushes += 1;
            self.dirty || (self.truncated && self.flushes > 1)
        } else {
            self.dirty || self.truncated
        };
        if now {
            self.dirty = false;
            self.truncated = false;
        }
        now
    }

    /// Whether the handle was truncated, never written and not flushed yet.
    pub fn only_truncated(&self) -> bool {
        self.truncated && !self.dirty && self.flushes == 0
    }
}
