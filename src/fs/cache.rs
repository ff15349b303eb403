//! A bounded cache of loaded blocks: the blob, its decoding, and each file
//! rendered at most once, so that the dozen files of a block cost one
//! database read and one decode.
//!
//! Entries older than the TTL are checked against the store (one indexed
//! read) before use, so changes made by another process show up.

use crate::codec::{Block, DecodeError};
use crate::store::{BlockPos, MapStore, StoreError};
use crate::view::{self, BlockFile};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Serials increase with time: a load whose serial is larger started after
/// one with a smaller serial was made.
fn next_serial() -> u64 {
    static SERIAL: AtomicU64 = AtomicU64::new(1);
    SERIAL.fetch_add(1, Ordering::SeqCst)
}

pub struct Loaded {
    pub pos: BlockPos,
    /// Unique per load: two loads of the same blob get different serials.
    /// Taken before the store was read (see `BlockCache::get`).
    pub serial: u64,
    pub blob: Vec<u8>,
    pub block: Result<Block, DecodeError>,
    files: [OnceLock<Arc<Vec<u8>>>; 10],
    nodes_size: OnceLock<usize>,
    version: OnceLock<u32>,
    rendered_bytes: AtomicUsize,
}

impl Loaded {
    pub fn new(pos: BlockPos, blob: Vec<u8>) -> Loaded {
        let block = Block::decode(&blob);
        Loaded::with_block(pos, blob, block)
    }

    pub fn with_block(pos: BlockPos, blob: Vec<u8>, block: Result<Block, DecodeError>) -> Loaded {
        Loaded::with_serial(next_serial(), pos, blob, block)
    }

    fn with_serial(serial: u64, pos: BlockPos, blob: Vec<u8>, block: Result<Block, DecodeError>) -> Loaded {
        Loaded {
            pos,
            serial,
            blob,
            block,
            files: Default::default(),
            nodes_size: OnceLock::new(),
            version: OnceLock::new(),
            rendered_bytes: AtomicUsize::new(0),
        }
    }

    /// A number that changes when the blob changes (a hash of it), the
    /// same for every load of the same blob.
    pub fn version(&self) -> u32 {
        *self.version.get_or_init(|| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            self.blob.hash(&mut h);
            h.finish() as u32
        })
    }

    /// The files this block directory has, in listing order.
    pub fn files(&self) -> &'static [BlockFile] {
        match self.block {
            Ok(_) => &BlockFile::DECODED,
            Err(_) => &BlockFile::CORRUPT,
        }
    }

    /// The size of a block file, without rendering the big ones: the node
    /// arrays have fixed sizes, `raw` is the blob, and `nodes` is measured
    /// arithmetically.
    pub fn file_size(&self, f: BlockFile) -> Option<usize> {
        match (&self.block, f) {
            (Ok(b), BlockFile::Nodes) => Some(*self.nodes_size.get_or_init(|| view::nodes_size(self.pos, b))),
            (Ok(_), BlockFile::Param0) => Some(2 * crate::codec::block::NODE_COUNT),
            (Ok(_), BlockFile::Param1 | BlockFile::Param2) => Some(crate::codec::block::NODE_COUNT),
            (_, BlockFile::Raw) => Some(self.blob.len()),
            _ => self.file(f).map(|c| c.len()),
        }
    }

    /// A block file's content. The small text files are rendered once and
    /// kept; the large ones (`nodes`, the node arrays, `raw`) are made on
    /// each open, so that the cache holds mostly decoded blocks.
    /// None if this block does not have that file.
    pub fn file(&self, f: BlockFile) -> Option<Arc<Vec<u8>>> {
        if !self.files().contains(&f) {
            return None;
        }
        match (&self.block, f) {
            (Ok(b), BlockFile::Nodes | BlockFile::Param0 | BlockFile::Param1 | BlockFile::Param2) => {
                return Some(Arc::new(view::render_block_file(self.pos, b, &self.blob, f)));
            }
            (_, BlockFile::Raw) => return Some(Arc::new(self.blob.clone())),
            _ => {}
        }
        let slot = &self.files[f.id() as usize - 1];
        Some(
            slot.get_or_init(|| {
                let content = match (&self.block, f) {
                    (Err(e), BlockFile::Error) => format!("block {} cannot be decoded: {e}\n", self.pos).into_bytes(),
                    (Ok(b), _) => view::render_block_file(self.pos, b, &self.blob, f),
                    (Err(_), _) => self.blob.clone(),
                };
                self.rendered_bytes.fetch_add(content.len(), Ordering::Relaxed);
                Arc::new(content)
            })
            .clone(),
        )
    }

    pub fn decoded(&self) -> Option<&Block> {
        self.block.as_ref().ok()
    }

    /// Approximate memory held.
    fn cost(&self) -> usize {
        let decoded = match &self.block {
            Ok(b) => {
                4096 * 4
                    + b.metadata.entries.iter().map(|e| e.inventory.len() + 64 * e.vars.len()).sum::<usize>()
                    + b.objects.objects.iter().map(|o| o.data.len()).sum::<usize>()
            }
            Err(_) => 0,
        };
        256 + self.blob.len() + decoded + self.rendered_bytes.load(Ordering::Relaxed)
    }
}

struct Slot {
    loaded: Arc<Loaded>,
    tick: u64,
    checked: Instant,
    cost: usize,
}

#[derive(Default)]
struct Inner {
    map: HashMap<BlockPos, Slot>,
    /// Least recently used first.
    order: BTreeMap<u64, BlockPos>,
    tick: u64,
    bytes: usize,
    /// Counts `BlockCache::remove` calls (deleted blocks).
    removals: u64,
}

impl Inner {
    fn touch(&mut self, pos: BlockPos) {
        self.tick += 1;
        let tick = self.tick;
        if let Some(slot) = self.map.get_mut(&pos) {
            self.order.remove(&slot.tick);
            slot.tick = tick;
            self.order.insert(tick, pos);
            let cost = slot.loaded.cost();
            self.bytes = self.bytes + cost - slot.cost;
            slot.cost = cost;
        }
    }

    fn remove(&mut self, pos: BlockPos) {
        if let Some(slot) = self.map.remove(&pos) {
            self.order.remove(&slot.tick);
            self.bytes -= slot.cost;
        }
    }

    fn evict(&mut self, cap: usize) {
        while self.bytes > cap && self.map.len() > 1 {
            let Some((_, pos)) = self.order.pop_first() else {
                break;
            };
            if let Some(slot) = self.map.remove(&pos) {
                self.bytes -= slot.cost;
            }
        }
    }
}

pub struct BlockCache {
    inner: Mutex<Inner>,
    cap_bytes: usize,
    ttl: Duration,
}

impl BlockCache {
    pub fn new(cap_bytes: usize, ttl: Duration) -> BlockCache {
        BlockCache { inner: Mutex::new(Inner::default()), cap_bytes, ttl }
    }

    /// The block at `pos`, loading (or re-checking) it from the store when
    /// needed. None if the block does not exist.
    ///
    /// The store is read without the lock, so a commit can store and cache
    /// a newer version meanwhile; what was read is then returned (the read
    /// overlapped the commit) but not cached over the newer entry, which
    /// would otherwise hide the commit from later reads for the TTL.
    pub fn get(&self, pos: BlockPos, store: &dyn MapStore) -> Result<Option<Arc<Loaded>>, StoreError> {
        let (cached, removals) = {
            let mut inner = self.inner.lock().unwrap();
            inner.touch(pos);
            let cached = inner.map.get(&pos).map(|s| (s.loaded.clone(), s.checked.elapsed() <= self.ttl));
            (cached, inner.removals)
        };
        if let Some((loaded, true)) = &cached {
            return Ok(Some(loaded.clone()));
        }
        // Taken before reading: anything cached with a larger serial was
        // made after this read started.
        let serial = next_serial();
        // Read outside the lock; decoding can take a while.
        let Some(blob) = store.get(pos)? else {
            let mut inner = self.inner.lock().unwrap();
            if inner.map.get(&pos).is_some_and(|s| s.loaded.serial < serial) {
                inner.remove(pos);
            }
            return Ok(None);
        };
        if let Some((loaded, _)) = cached
            && loaded.blob == blob
        {
            if let Some(slot) = self.inner.lock().unwrap().map.get_mut(&pos)
                && Arc::ptr_eq(&slot.loaded, &loaded)
            {
                slot.checked = Instant::now();
            }
            return Ok(Some(loaded));
        }
        let loaded = Arc::new(Loaded::with_serial(serial, pos, blob.clone(), Block::decode(&blob)));
        let mut inner = self.inner.lock().unwrap();
        let newer = inner.map.get(&pos).map(|s| s.loaded.clone()).filter(|l| l.serial > serial);
        match newer {
            // Cached since this read started (by a commit or a later load).
            Some(l) if l.blob == loaded.blob => Ok(Some(l)),
            Some(_) => Ok(Some(loaded)),
            // A removal since (rmdir) may concern this block: do not cache.
            None if inner.removals != removals => Ok(Some(loaded)),
            None => {
                self.insert_locked(&mut inner, loaded.clone());
                Ok(Some(loaded))
            }
        }
    }

    /// Put a block in the cache (after loading it or committing it).
    pub fn insert(&self, loaded: Arc<Loaded>) {
        let mut inner = self.inner.lock().unwrap();
        self.insert_locked(&mut inner, loaded);
    }

    fn insert_locked(&self, inner: &mut Inner, loaded: Arc<Loaded>) {
        let pos = loaded.pos;
        inner.remove(pos);
        inner.tick += 1;
        let tick = inner.tick;
        let cost = loaded.cost();
        inner.order.insert(tick, pos);
        inner.bytes += cost;
        inner.map.insert(pos, Slot { loaded, tick, checked: Instant::now(), cost });
        inner.evict(self.cap_bytes);
    }

    /// Forget a block (it was deleted).
    pub fn remove(&self, pos: BlockPos) {
        let mut inner = self.inner.lock().unwrap();
        inner.remove(pos);
        inner.removals += 1;
    }

    /// Whether the block is cached (without touching it).
    pub fn peek(&self, pos: BlockPos) -> Option<Arc<Loaded>> {
        self.inner.lock().unwrap().map.get(&pos).map(|s| s.loaded.clone())
    }

    pub fn bytes(&self) -> usize {
        self.inner.lock().unwrap().bytes
    }

    pub fn len(&self) -> usize {
        self.inner.lock().unwrap().map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Change;
    use crate::store::sqlite::{Schema, SqliteStore};

    #[test]
    fn bounded_and_sees_outside_changes() {
        let d = tempfile::tempdir().unwrap();
        let store = SqliteStore::create(&d.path().join("map.sqlite"), Schema::Legacy).unwrap();
        let blob = Block::new_air(29).encode().unwrap();
        let changes: Vec<Change> = (0..50).map(|i| Change::Put(BlockPos::new(i, 0, 0), blob.clone())).collect();
        store.apply(&changes, &crate::store::Note::default()).unwrap();
        let cache = BlockCache::new(200_000, Duration::ZERO);
        for i in 0..50 {
            let l = cache.get(BlockPos::new(i, 0, 0), &store).unwrap().unwrap();
            l.file(BlockFile::Nodes).unwrap();
        }
        assert!(cache.bytes() <= 200_000 + 200_000, "{}", cache.bytes());
        assert!(cache.len() < 50);
        // A change behind our back shows up (TTL zero: always re-checked).
        let p = BlockPos::new(49, 0, 0);
        let before = cache.get(p, &store).unwrap().unwrap();
        let mut b = Block::new_air(29);
        b.flags = 1;
        store.apply(&[Change::Put(p, b.encode().unwrap())], &crate::store::Note::default()).unwrap();
        let after = cache.get(p, &store).unwrap().unwrap();
        assert!(!Arc::ptr_eq(&before, &after));
        assert!(after.decoded().unwrap().is_underground());
        store.apply(&[Change::Delete(p)], &crate::store::Note::default()).unwrap();
        assert!(cache.get(p, &store).unwrap().is_none());
    }

    /// A store whose `get` returns an old blob, after waiting for a signal.
    struct Slow {
        blob: Vec<u8>,
        entered: std::sync::mpsc::SyncSender<()>,
        go: Mutex<std::sync::mpsc::Receiver<()>>,
    }

    impl MapStore for Slow {
        fn describe(&self) -> String {
            "slow".into()
        }
        fn get(&self, _: BlockPos) -> Result<Option<Vec<u8>>, StoreError> {
            self.entered.send(()).unwrap();
            self.go.lock().unwrap().recv().unwrap();
            Ok(Some(self.blob.clone()))
        }
        fn list_after(&self, _: Option<BlockPos>, _: usize) -> Result<Vec<BlockPos>, StoreError> {
            Ok(Vec::new())
        }
        fn scan_after(&self, _: Option<BlockPos>, _: usize) -> Result<Vec<(BlockPos, Vec<u8>)>, StoreError> {
            Ok(Vec::new())
        }
        fn apply(&self, _: &[Change], _: &crate::store::Note) -> Result<(), StoreError> {
            Ok(())
        }
        fn count(&self) -> Result<u64, StoreError> {
            Ok(1)
        }
        fn is_read_only(&self) -> bool {
            true
        }
    }

    #[test]
    fn a_load_that_overlaps_a_commit_does_not_hide_it() {
        let p = BlockPos::new(0, 0, 0);
        let old = Block::new_air(29).encode().unwrap();
        let mut b = Block::new_air(29);
        b.flags = 1;
        let new = b.encode().unwrap();
        let (entered, entered_rx) = std::sync::mpsc::sync_channel(1);
        let (go, go_rx) = std::sync::mpsc::channel();
        let store = Slow { blob: old.clone(), entered, go: Mutex::new(go_rx) };
        let cache = Arc::new(BlockCache::new(1 << 20, Duration::from_secs(60)));
        std::thread::scope(|s| {
            // A reader reads the old blob from the store...
            let reader = s.spawn(|| cache.get(p, &store).unwrap().unwrap());
            entered_rx.recv().unwrap();
            // ...while a commit stores and caches the new one.
            cache.insert(Arc::new(Loaded::new(p, new.clone())));
            go.send(()).unwrap();
            assert_eq!(reader.join().unwrap().blob, old, "the overlapping read may see the old blob");
        });
        assert_eq!(cache.peek(p).unwrap().blob, new, "but the cache keeps the commit");
        // A removal (rmdir) during a load: what the load read is not cached.
        let cache = Arc::new(BlockCache::new(1 << 20, Duration::from_secs(60)));
        std::thread::scope(|s| {
            let reader = s.spawn(|| cache.get(p, &store).unwrap().unwrap());
            entered_rx.recv().unwrap();
            cache.remove(p);
            go.send(()).unwrap();
            reader.join().unwrap();
        });
        assert!(cache.peek(p).is_none());
    }

    #[test]
    fn corrupt_blocks_have_raw_and_error() {
        let l = Loaded::new(BlockPos::new(1, 2, 3), vec![29, 1, 2, 3]);
        assert_eq!(l.files(), &BlockFile::CORRUPT);
        let err = String::from_utf8(l.file(BlockFile::Error).unwrap().to_vec()).unwrap();
        assert!(err.starts_with("block 1,2,3 cannot be decoded: bad zstd"), "{err}");
        assert_eq!(*l.file(BlockFile::Raw).unwrap(), vec![29, 1, 2, 3]);
        assert!(l.file(BlockFile::Nodes).is_none());
    }
}
