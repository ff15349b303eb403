//! A bounded cache of loaded blocks: the blob, its decoding, and each file
//! rendered at most once, so that the dozen files of a block cost one
//! database read and one decode.
//!
//! Two budgets: decoded blocks (16 KiB and more each) get a quarter of the
//! cache; beyond that the least recently used ones are dropped and decoded
//! again from their blob when needed (a few microseconds). What stays is
//! small: the blob (tens of bytes for a block of one node type, a few KiB
//! for a built-up one) and the small files rendered from it, so the cache
//! keeps the `names` and sizes of tens of thousands of blocks, where it
//! would keep the decodings of three thousand.
//!
//! Entries older than the TTL are checked against the store before use:
//! by the store's data version when it has one (nothing was committed
//! since the entry was read: one `pread`), otherwise by fetching the blob
//! and comparing. So changes made by another process show up.
//!
//! On a database server each of those is a round trip, so two more rules:
//! a data version read is used again for a quarter of the TTL, and an
//! entry counts as checked from when its version was read, not from when
//! it was used (so an outside change still shows within the TTL); and a
//! block not cached is read with its neighbours (`MapStore::get_near`),
//! which wait undecoded in a small side buffer (an eighth of the budget)
//! for a TTL, so that a walk over `blocks/` costs one query per run of
//! blocks.

use super::scan::ByBlob;
use crate::fs::stats::{Phase, timed};
use crate::view::{self, BlockFile};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use worldfs_codec::DecodeError;
use worldfs_codec::luanti::Block;
use worldfs_store::{BlockPos, MapStore, StoreError};

/// The content of one file of a decodable block directory: the view
/// renders it, except `schematic.mts`, which is captured as a schematic
/// would be from the world (`crate::worlds::luanti::import_export`).
pub fn render_block_file(pos: BlockPos, block: &Block, blob: &[u8], file: BlockFile) -> Vec<u8> {
    timed(Phase::Render, || match view::render_block_file(pos, block, blob, file) {
        Some(content) => content,
        None => crate::transfer::capture::block_to_mts(block),
    })
}

/// Serials increase with time: a load whose serial is larger started after
/// one with a smaller serial was made.
fn next_serial() -> u64 {
    static SERIAL: AtomicU64 = AtomicU64::new(1);
    SERIAL.fetch_add(1, Ordering::SeqCst)
}

pub struct Loaded {
    pub(crate) pos: BlockPos,
    /// Unique per load: two loads of the same blob get different serials.
    /// Taken before the store was read (see `BlockCache::get`).
    pub(crate) serial: u64,
    pub(crate) blob: Vec<u8>,
    /// Why the blob does not decode, if it does not.
    error: Option<DecodeError>,
    /// The decoding, while the cache has room for it.
    block: Mutex<Option<Arc<Block>>>,
    files: [OnceLock<Arc<Vec<u8>>>; 13],
    nodes_size: OnceLock<usize>,
    layers_size: OnceLock<usize>,
    version: OnceLock<u32>,
    rendered_bytes: AtomicUsize,
    /// Where a decoding made after the block was cached is told (the
    /// cache's `late`), to be counted against the budget at its next use.
    late: Option<Arc<Mutex<Vec<BlockPos>>>>,
}

impl Loaded {
    pub(crate) fn new(pos: BlockPos, blob: Vec<u8>) -> Loaded {
        let block = Block::decode(&blob);
        Loaded::with_block(pos, blob, block)
    }

    pub(crate) fn with_block(pos: BlockPos, blob: Vec<u8>, block: Result<Block, DecodeError>) -> Loaded {
        Loaded::with_serial(next_serial(), pos, blob, block)
    }

    fn with_serial(serial: u64, pos: BlockPos, blob: Vec<u8>, block: Result<Block, DecodeError>) -> Loaded {
        match block {
            Ok(b) => Loaded::from_parts(serial, pos, blob, Some(Arc::new(b)), None),
            Err(e) => Loaded::from_parts(serial, pos, blob, None, Some(e)),
        }
    }

    /// The one constructor: a load with its decoding (`block`) or why it
    /// does not decode (`error`); neither when the decoding is left for later.
    fn from_parts(
        serial: u64,
        pos: BlockPos,
        blob: Vec<u8>,
        block: Option<Arc<Block>>,
        error: Option<DecodeError>,
    ) -> Loaded {
        Loaded {
            pos,
            serial,
            blob,
            error,
            block: Mutex::new(block),
            files: Default::default(),
            nodes_size: OnceLock::new(),
            layers_size: OnceLock::new(),
            version: OnceLock::new(),
            rendered_bytes: AtomicUsize::new(0),
            late: None,
        }
    }

    /// A number that changes when the blob changes (a hash of it), the
    /// same for every load of the same blob.
    pub(crate) fn version(&self) -> u32 {
        *self.version.get_or_init(|| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            self.blob.hash(&mut h);
            h.finish() as u32
        })
    }

    /// Whether the blob decodes (the block has decoded files and `meta/`).
    pub(crate) fn is_decodable(&self) -> bool {
        self.error.is_none()
    }

    /// The decoded block (decoded again from the blob if the cache dropped
    /// it); None if the blob does not decode.
    pub(crate) fn decoded(&self) -> Option<Arc<Block>> {
        if self.error.is_some() {
            return None;
        }
        let mut slot = self.block.lock();
        if let Some(b) = &*slot {
            return Some(b.clone());
        }
        // It decoded before, and decoding is deterministic.
        let b = Arc::new(timed(Phase::Decode, || Block::decode(&self.blob)).ok()?);
        *slot = Some(b.clone());
        if let Some(late) = &self.late {
            late.lock().push(self.pos);
        }
        Some(b)
    }

    /// A load of a blob byte for byte like one that decoded before, whose
    /// `names` was `names` then: not decoded now (`decoded` does it when
    /// another file is asked for).
    fn seen_before(serial: u64, pos: BlockPos, blob: Vec<u8>, names: Arc<Vec<u8>>) -> Loaded {
        let loaded = Loaded::from_parts(serial, pos, blob, None, None);
        loaded.keep_rendered(BlockFile::Names, names);
        loaded
    }

    /// Keep `content` as the rendering of small file `f`.
    fn keep_rendered(&self, f: BlockFile, content: Arc<Vec<u8>>) {
        let len = content.len();
        if self.files[f.id() as usize - 1].set(content).is_ok() {
            self.rendered_bytes.fetch_add(len, Ordering::Relaxed);
        }
    }

    /// Whether the decoding is held now (for tests).
    #[cfg(test)]
    fn holds_decoding(&self) -> bool {
        self.block.lock().is_some()
    }

    /// Let the decoding go (it is made again on demand).
    fn drop_decoded(&self) {
        *self.block.lock() = None;
    }

    /// The files this block directory has, in listing order.
    pub fn files(&self) -> &'static [BlockFile] {
        match self.error {
            None => &BlockFile::DECODED,
            Some(_) => &BlockFile::CORRUPT,
        }
    }

    /// The size of a block file, without rendering the big ones: the node
    /// arrays have fixed sizes, `raw` is the blob, and `nodes` is measured
    /// arithmetically.
    pub(crate) fn file_size(&self, f: BlockFile) -> Option<usize> {
        match (self.is_decodable(), f) {
            (true, BlockFile::Nodes) => {
                if let Some(n) = self.nodes_size.get() {
                    return Some(*n);
                }
                let b = self.decoded()?;
                Some(*self.nodes_size.get_or_init(|| view::nodes_size(self.pos, &b)))
            }
            (true, BlockFile::Layers) => {
                if let Some(n) = self.layers_size.get() {
                    return Some(*n);
                }
                let b = self.decoded()?;
                Some(*self.layers_size.get_or_init(|| view::layers_size(self.pos, &b)))
            }
            (true, BlockFile::Param0) => Some(2 * worldfs_codec::luanti::block::NODE_COUNT),
            (true, BlockFile::Param1 | BlockFile::Param2) => Some(worldfs_codec::luanti::block::NODE_COUNT),
            (_, BlockFile::Raw) => Some(self.blob.len()),
            _ => self.file(f).map(|c| c.len()),
        }
    }

    /// A block file's content. The small text files are rendered once and
    /// kept; the large ones (`nodes`, the node arrays, `raw`) are made on
    /// each open, so that the cache holds mostly small entries.
    /// None if this block does not have that file.
    pub fn file(&self, f: BlockFile) -> Option<Arc<Vec<u8>>> {
        if !self.files().contains(&f) {
            return None;
        }
        match f {
            BlockFile::Nodes | BlockFile::Layers | BlockFile::Param0 | BlockFile::Param1 | BlockFile::Param2 => {
                let b = self.decoded()?;
                return Some(Arc::new(render_block_file(self.pos, &b, &self.blob, f)));
            }
            BlockFile::Raw => return Some(Arc::new(self.blob.clone())),
            _ => {}
        }
        let slot = &self.files[f.id() as usize - 1];
        if let Some(c) = slot.get() {
            return Some(c.clone());
        }
        let content = match (&self.error, f) {
            (Some(e), BlockFile::Error) => format!("block {} cannot be decoded: {e}\n", self.pos).into_bytes(),
            (Some(_), _) => self.blob.clone(),
            (None, _) => render_block_file(self.pos, &*self.decoded()?, &self.blob, f),
        };
        Some(
            slot.get_or_init(|| {
                self.rendered_bytes.fetch_add(content.len(), Ordering::Relaxed);
                Arc::new(content)
            })
            .clone(),
        )
    }

    /// Approximate memory held without the decoding: this struct, the
    /// blob, the rendered files, and the cache's own bookkeeping.
    fn base_cost(&self) -> usize {
        std::mem::size_of::<Loaded>()
            + ENTRY_BOOKKEEPING
            + self.blob.len()
            + self.rendered_bytes.load(Ordering::Relaxed)
    }

    /// Approximate memory held by the decoding (0 when it was dropped).
    fn decoded_cost(&self) -> usize {
        match &*self.block.lock() {
            Some(b) => {
                4096 * 4
                    + b.metadata.entries.iter().map(|e| e.inventory.len() + 64 * e.vars.len()).sum::<usize>()
                    + b.objects.objects.iter().map(|o| o.data.len()).sum::<usize>()
            }
            None => 0,
        }
    }
}

/// A data version of the store and when it was read.
#[derive(Clone, Copy)]
struct Seen {
    version: Option<u64>,
    at: Instant,
}

/// A neighbour read with a block that was asked for, not decoded yet.
struct Ahead {
    blob: Vec<u8>,
    /// Taken before it was read, as for a block read alone.
    serial: u64,
    removals: u64,
    /// The data version read before it was.
    seen: Seen,
}

impl Ahead {
    fn cost(&self) -> usize {
        self.blob.len() + AHEAD_BOOKKEEPING
    }
}

/// Blocks asked for around a block that is not cached.
const NEAR_BLOCKS: usize = 64;

/// The most a hash table's place costs per live entry: after doubling, a
/// table is 7/16 full.
const fn table_place_cost(entry: usize) -> usize {
    (entry + 1) * 16 / 7 + 1
}

/// What the cache keeps for an entry besides the `Loaded`: its slot, its
/// place in `Slots`' table, in the free list, and in the LRU order (a
/// B-tree entry at about half fill), and the `Arc`'s counts. Counted in
/// the budget, so that the tables are bounded by it too.
const ENTRY_BOOKKEEPING: usize = std::mem::size_of::<Option<Slot>>()
    + table_place_cost(std::mem::size_of::<(BlockPos, u32)>())
    + 4
    + 2 * std::mem::size_of::<(u64, BlockPos)>()
    + 16;

/// What a block read ahead costs besides its blob: its place in the
/// table (many tiny blobs would otherwise grow the table past the cap).
const AHEAD_BOOKKEEPING: usize = table_place_cost(std::mem::size_of::<(BlockPos, Ahead)>());

struct Slot {
    loaded: Arc<Loaded>,
    tick: u64,
    /// When it was last known current: its data version's reading (or the
    /// commit that stored it).
    checked: Instant,
    /// The store's data version read before the blob was (see `get`).
    data_version: Option<u64>,
    /// Bytes counted for this entry, of which for its decoding.
    cost: usize,
    decoded_cost: usize,
    /// Its key in `Inner::decoded`, while it holds a decoding.
    decoded_tick: Option<u64>,
}

/// The cached entries: a table from position to a place in a list of
/// slots. A hash table's memory never shrinks and doubles when an LRU's
/// churn leaves it more than half full of live and deleted entries, so its
/// entries are kept small (10 bytes and a control byte: 3.4 MB at 2^18
/// places, where entries of the slots' size took 23 MB); the slots list
/// grows only to the most entries held at once, and a freed slot is used
/// again. Both are counted in an entry's bookkeeping (`Loaded::base_cost`).
#[derive(Default)]
struct Slots {
    index: HashMap<BlockPos, u32>,
    slots: Vec<Option<Slot>>,
    free: Vec<u32>,
}

impl Slots {
    fn get(&self, pos: &BlockPos) -> Option<&Slot> {
        self.index.get(pos).and_then(|&i| self.slots[i as usize].as_ref())
    }

    fn get_mut(&mut self, pos: &BlockPos) -> Option<&mut Slot> {
        self.index.get(pos).and_then(|&i| self.slots[i as usize].as_mut())
    }

    fn contains_key(&self, pos: &BlockPos) -> bool {
        self.index.contains_key(pos)
    }

    fn len(&self) -> usize {
        self.index.len()
    }

    fn remove(&mut self, pos: &BlockPos) -> Option<Slot> {
        let i = self.index.remove(pos)?;
        self.free.push(i);
        self.slots[i as usize].take()
    }

    fn insert(&mut self, pos: BlockPos, slot: Slot) {
        if let Some(&i) = self.index.get(&pos) {
            self.slots[i as usize] = Some(slot);
            return;
        }
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(slot);
                i
            }
            None => {
                self.slots.push(Some(slot));
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(pos, i);
    }
}

#[derive(Default)]
struct Inner {
    map: Slots,
    /// Least recently used first.
    order: BTreeMap<u64, BlockPos>,
    /// The entries holding a decoding, least recently used first (by the
    /// same ticks as `order`).
    decoded: BTreeMap<u64, BlockPos>,
    tick: u64,
    bytes: usize,
    decoded_bytes: usize,
    /// Counts `BlockCache::remove` calls (deleted blocks).
    removals: u64,
    /// Counts `BlockCache::insert` calls (commits).
    inserts: u64,
    /// Blocks read ahead (`get_near`), none of them in `map`.
    ahead: HashMap<BlockPos, Ahead>,
    ahead_bytes: usize,
}

impl Inner {
    fn touch(&mut self, pos: BlockPos) {
        self.tick += 1;
        let tick = self.tick;
        if let Some(slot) = self.map.get_mut(&pos) {
            self.order.remove(&slot.tick);
            slot.tick = tick;
            self.order.insert(tick, pos);
            self.account(pos);
        }
    }

    /// Count an entry's memory again (its decoding may have been made
    /// again, files rendered since) and file it by its tick.
    fn account(&mut self, pos: BlockPos) {
        let Some(slot) = self.map.get_mut(&pos) else { return };
        let decoded = slot.loaded.decoded_cost();
        let cost = slot.loaded.base_cost() + decoded;
        self.bytes = self.bytes + cost - slot.cost;
        self.decoded_bytes = self.decoded_bytes + decoded - slot.decoded_cost;
        slot.cost = cost;
        slot.decoded_cost = decoded;
        if let Some(t) = slot.decoded_tick.take() {
            self.decoded.remove(&t);
        }
        if decoded > 0 {
            self.decoded.insert(slot.tick, pos);
            slot.decoded_tick = Some(slot.tick);
        }
    }

    fn remove(&mut self, pos: BlockPos) {
        if let Some(slot) = self.map.remove(&pos) {
            self.order.remove(&slot.tick);
            if let Some(t) = slot.decoded_tick {
                self.decoded.remove(&t);
            }
            self.bytes -= slot.cost;
            self.decoded_bytes -= slot.decoded_cost;
        }
    }

    /// A block read ahead, if it is still within the TTL of its reading.
    fn take_ahead(&mut self, pos: BlockPos, ttl: Duration) -> Option<Ahead> {
        let a = self.ahead.remove(&pos)?;
        self.ahead_bytes -= a.cost();
        (a.seen.at.elapsed() <= ttl).then_some(a)
    }

    fn put_ahead(&mut self, pos: BlockPos, a: Ahead, cap: usize, ttl: Duration) {
        if self.map.contains_key(&pos) {
            return; // cached entries are checked by their own version
        }
        self.ahead_bytes += a.cost();
        if let Some(old) = self.ahead.insert(pos, a) {
            self.ahead_bytes -= old.cost();
        }
        if self.ahead_bytes > cap {
            self.ahead.retain(|_, a| a.seen.at.elapsed() <= ttl);
            self.ahead_bytes = self.ahead.values().map(Ahead::cost).sum();
        }
        if self.ahead_bytes > cap {
            self.ahead.clear();
            self.ahead_bytes = 0;
        }
    }

    fn drop_ahead(&mut self, pos: BlockPos) {
        if let Some(a) = self.ahead.remove(&pos) {
            self.ahead_bytes -= a.cost();
        }
    }

    fn evict(&mut self, cap: usize, decoded_cap: usize) {
        while self.decoded_bytes > decoded_cap && self.decoded.len() > 1 {
            let Some((_, pos)) = self.decoded.pop_first() else { break };
            if let Some(slot) = self.map.get_mut(&pos) {
                slot.loaded.drop_decoded();
                self.bytes -= slot.decoded_cost;
                self.decoded_bytes -= slot.decoded_cost;
                slot.cost -= slot.decoded_cost;
                slot.decoded_cost = 0;
                slot.decoded_tick = None;
            }
        }
        while self.bytes > cap && self.map.len() > 1 {
            let Some((_, pos)) = self.order.first_key_value().map(|(t, p)| (*t, *p)) else { break };
            self.remove(pos);
        }
    }
}

pub struct BlockCache {
    inner: Mutex<Inner>,
    /// The `names` of small blobs decoded before, by their bytes (None for
    /// a blob that does not decode): a walk over a world that repeats
    /// blobs (air, stone) decodes each once (`load`). Bounded on its own
    /// (`ByBlob::MAX_BYTES`), besides the budget.
    names_by_blob: ByBlob<Option<Arc<Vec<u8>>>>,
    /// Blocks decoded (again) since they were cached: their decodings are
    /// counted at the next `get`, so that many blocks decoded
    /// after their load (seen before, or dropped) stay within the budget.
    late: Arc<Mutex<Vec<BlockPos>>>,
    cap_bytes: usize,
    ttl: Duration,
    /// The last data version read (used again for `ttl / 4`).
    seen: Mutex<Option<Seen>>,
}

impl BlockCache {
    pub fn new(cap_bytes: usize, ttl: Duration) -> BlockCache {
        BlockCache {
            inner: Mutex::new(Inner::default()),
            names_by_blob: ByBlob::default(),
            late: Arc::default(),
            cap_bytes,
            ttl,
            seen: Mutex::new(None),
        }
    }

    /// What blocks read ahead may take, besides the budget.
    fn ahead_cap(&self) -> usize {
        self.cap_bytes / 8
    }

    /// The store's data version, read at most every quarter TTL: an entry
    /// tagged with it counts as checked from when it was read, so reusing
    /// it keeps outside changes within the TTL.
    fn data_version(&self, store: &dyn MapStore) -> Seen {
        let reuse = self.ttl / 4;
        if let Some(seen) = *self.seen.lock()
            && seen.at.elapsed() < reuse
        {
            return seen;
        }
        let at = Instant::now();
        let seen = Seen { version: store.data_version(), at };
        *self.seen.lock() = Some(seen);
        seen
    }

    /// What decodings may take of the budget.
    fn decoded_cap(&self) -> usize {
        self.cap_bytes / 4
    }

    /// The block at `pos`, loading (or re-checking) it from the store when
    /// needed. None if the block does not exist.
    ///
    /// The store is read without the lock, so a commit can store and cache
    /// a newer version meanwhile; what was read is then returned (the read
    /// overlapped the commit) but not cached over the newer entry, which
    /// would otherwise hide the commit from later reads for the TTL.
    pub fn get(&self, pos: BlockPos, store: &dyn MapStore) -> Result<Option<Arc<Loaded>>, StoreError> {
        let (cached, removals, inserts, ahead) = {
            let late = std::mem::take(&mut *self.late.lock());
            let mut inner = self.inner.lock();
            for p in late {
                inner.account(p);
            }
            inner.touch(pos);
            let cached =
                inner.map.get(&pos).map(|s| (s.loaded.clone(), s.checked.elapsed() <= self.ttl, s.data_version));
            self.evict(&mut inner);
            let ahead = if cached.is_none() { inner.take_ahead(pos, self.ttl) } else { None };
            (cached, inner.removals, inner.inserts, ahead)
        };
        if let Some((loaded, true, _)) = &cached {
            return Ok(Some(loaded.clone()));
        }
        if let Some(a) = ahead {
            return Ok(Some(self.keep(pos, a.blob, a.serial, a.removals, a.seen)));
        }
        // Read before the blob: a commit that ends after this read changes
        // the version, so an entry tagged with it is current for as long as
        // the version stays the same.
        let seen = self.data_version(store);
        if let Some((loaded, _, Some(tag))) = &cached
            && seen.version == Some(*tag)
        {
            self.mark_checked(loaded, seen);
            return Ok(Some(loaded.clone()));
        }
        // Taken before reading: anything cached with a larger serial was
        // made after this read started.
        let serial = next_serial();
        // Read outside the lock; decoding can take a while.
        let blob = timed(Phase::Fetch, || match &cached {
            Some(_) => store.get(pos),
            None => self.get_near(pos, store, (serial, removals, inserts), seen),
        })?;
        let Some(blob) = blob else {
            let mut inner = self.inner.lock();
            if inner.map.get(&pos).is_some_and(|s| s.loaded.serial < serial) {
                inner.remove(pos);
            }
            return Ok(None);
        };
        if let Some((loaded, _, _)) = cached
            && loaded.blob == blob
        {
            self.mark_checked(&loaded, seen);
            return Ok(Some(loaded));
        }
        Ok(Some(self.keep(pos, blob, serial, removals, seen)))
    }

    /// Read `pos` with its neighbours; these wait in the side buffer,
    /// unless a commit or a removal ran meanwhile (`since`: the serial and
    /// the counts taken before the read), which they might predate.
    fn get_near(
        &self,
        pos: BlockPos,
        store: &dyn MapStore,
        since: (u64, u64, u64),
        seen: Seen,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let (serial, removals, inserts) = since;
        let mut near = store.get_near(pos, NEAR_BLOCKS)?;
        let own = near.iter().position(|(p, _)| *p == pos).map(|i| near.swap_remove(i).1);
        let mut inner = self.inner.lock();
        if inner.removals == removals && inner.inserts == inserts {
            for (p, blob) in near {
                inner.put_ahead(p, Ahead { blob, serial, removals, seen }, self.ahead_cap(), self.ttl);
            }
        }
        Ok(own)
    }

    /// Decode and cache a blob read from the store (unless a commit or a
    /// removal since the read began makes it unsafe to).
    fn keep(&self, pos: BlockPos, blob: Vec<u8>, serial: u64, removals: u64, seen: Seen) -> Arc<Loaded> {
        let loaded = Arc::new(self.load(pos, blob, serial));
        let mut inner = self.inner.lock();
        let newer = inner.map.get(&pos).map(|s| s.loaded.clone()).filter(|l| l.serial > serial);
        match newer {
            // Cached since this read started (by a commit or a later load).
            Some(l) if l.blob == loaded.blob => l,
            Some(_) => loaded,
            // A removal since (rmdir) may concern this block: do not cache.
            None if inner.removals != removals => loaded,
            None => {
                self.insert_locked(&mut inner, loaded.clone(), seen);
                loaded
            }
        }
    }

    /// A blob read from the store, decoded with its `names` rendered; or,
    /// when a blob byte for byte like it decoded before, with the `names`
    /// it had then and no decoding (names are a function of the blob).
    fn load(&self, pos: BlockPos, blob: Vec<u8>, serial: u64) -> Loaded {
        Loaded { late: Some(self.late.clone()), ..self.load_alone(pos, blob, serial) }
    }

    fn load_alone(&self, pos: BlockPos, blob: Vec<u8>, serial: u64) -> Loaded {
        let mut decoded = None;
        let names = self.names_by_blob.of(
            &blob,
            |b| {
                let block = timed(Phase::Decode, || Block::decode(b));
                let names = block.as_ref().ok().map(|k| Arc::new(render_block_file(pos, k, b, BlockFile::Names)));
                decoded = Some(block);
                names
            },
            |n| n.as_ref().map_or(0, |n| n.len()),
        );
        match (decoded, names) {
            (Some(block), names) => {
                let loaded = Loaded::with_serial(serial, pos, blob, block);
                if let Some(n) = names {
                    loaded.keep_rendered(BlockFile::Names, n);
                }
                loaded
            }
            (None, Some(names)) => Loaded::seen_before(serial, pos, blob, names),
            // Seen before and did not decode: again, for its error.
            (None, None) => {
                let block = timed(Phase::Decode, || Block::decode(&blob));
                Loaded::with_serial(serial, pos, blob, block)
            }
        }
    }

    /// A cached entry was found current at `seen`.
    fn mark_checked(&self, loaded: &Arc<Loaded>, seen: Seen) {
        if let Some(slot) = self.inner.lock().map.get_mut(&loaded.pos)
            && Arc::ptr_eq(&slot.loaded, loaded)
        {
            slot.checked = seen.at;
            slot.data_version = seen.version;
        }
    }

    /// Put a block in the cache (after loading it or committing it).
    pub(crate) fn insert(&self, loaded: Arc<Loaded>) {
        let mut inner = self.inner.lock();
        inner.inserts += 1;
        self.insert_locked(&mut inner, loaded, Seen { version: None, at: Instant::now() });
    }

    fn insert_locked(&self, inner: &mut Inner, loaded: Arc<Loaded>, seen: Seen) {
        let pos = loaded.pos;
        inner.remove(pos);
        inner.drop_ahead(pos);
        inner.tick += 1;
        let tick = inner.tick;
        inner.order.insert(tick, pos);
        let (checked, data_version) = (seen.at, seen.version);
        inner
            .map
            .insert(pos, Slot { loaded, tick, checked, data_version, cost: 0, decoded_cost: 0, decoded_tick: None });
        inner.account(pos);
        self.evict(inner);
    }

    fn evict(&self, inner: &mut Inner) {
        inner.evict(self.cap_bytes, self.decoded_cap());
    }

    /// Forget a block (it was deleted).
    pub(crate) fn remove(&self, pos: BlockPos) {
        let mut inner = self.inner.lock();
        inner.remove(pos);
        inner.drop_ahead(pos);
        inner.removals += 1;
    }

    /// Whether the block is cached (without touching it).
    pub(crate) fn peek(&self, pos: BlockPos) -> Option<Arc<Loaded>> {
        self.inner.lock().map.get(&pos).map(|s| s.loaded.clone())
    }

    pub fn bytes(&self) -> usize {
        self.inner.lock().bytes
    }

    /// Bytes counted for decodings.
    #[cfg(test)]
    fn decoded_bytes(&self) -> usize {
        self.inner.lock().decoded_bytes
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner.lock().map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldfs_store::Change;
    use worldfs_store::sqlite::{Schema, SqliteStore};

    #[test]
    fn bounded_and_sees_outside_changes() {
        let d = tempfile::tempdir().unwrap();
        let store = SqliteStore::create(&d.path().join("map.sqlite"), Schema::Legacy).unwrap();
        let blob = Block::new_air(29).encode().unwrap();
        let changes: Vec<Change> = (0..50).map(|i| Change::Put(BlockPos::new(i, 0, 0), blob.clone())).collect();
        store.apply(&changes, &worldfs_store::Note::default()).unwrap();
        // Room for one decoding and a few entries.
        let cache = BlockCache::new(24_000, Duration::ZERO);
        for i in 0..50 {
            let l = cache.get(BlockPos::new(i, 0, 0), &store).unwrap().unwrap();
            l.file(BlockFile::Nodes).unwrap();
            l.file(BlockFile::Names).unwrap();
        }
        assert!(cache.bytes() <= 24_000, "{}", cache.bytes());
        assert!(cache.len() < 50);
        // A change behind our back shows up (TTL zero: always re-checked).
        let p = BlockPos::new(49, 0, 0);
        let before = cache.get(p, &store).unwrap().unwrap();
        let mut b = Block::new_air(29);
        b.flags = 1;
        store.apply(&[Change::Put(p, b.encode().unwrap())], &worldfs_store::Note::default()).unwrap();
        let after = cache.get(p, &store).unwrap().unwrap();
        assert!(!Arc::ptr_eq(&before, &after));
        assert!(after.decoded().unwrap().is_underground());
        store.apply(&[Change::Delete(p)], &worldfs_store::Note::default()).unwrap();
        assert!(cache.get(p, &store).unwrap().is_none());
    }

    /// A blob byte for byte like one decoded before gets that one's `names`
    /// without a decoding; a changed blob (another writer) is decoded, and
    /// its own names show.
    #[test]
    fn a_blob_seen_before_is_not_decoded_again() {
        let d = tempfile::tempdir().unwrap();
        let store = SqliteStore::create(&d.path().join("map.sqlite"), Schema::Legacy).unwrap();
        let mut stone = Block::new_air(29);
        stone.mapping.push(worldfs_codec::luanti::MappingEntry { id: 1, name: b"default:stone".to_vec() });
        stone.param0.iter_mut().for_each(|n| *n = 1);
        let blob = stone.encode().unwrap();
        let (a, b) = (BlockPos::new(0, 0, 0), BlockPos::new(7, 0, 0));
        let put = |p, blob: &Vec<u8>| store.apply(&[Change::Put(p, blob.clone())], &worldfs_store::Note::default());
        put(a, &blob).unwrap();
        put(b, &blob).unwrap();
        let cache = BlockCache::new(1 << 20, Duration::ZERO);
        let first = cache.get(a, &store).unwrap().unwrap();
        let second = cache.get(b, &store).unwrap().unwrap();
        assert!(first.holds_decoding(), "the first of a blob is decoded");
        assert!(!second.holds_decoding(), "the same bytes again: not decoded");
        let names = second.file(BlockFile::Names).unwrap();
        assert_eq!(names, first.file(BlockFile::Names).unwrap());
        assert!(String::from_utf8_lossy(&names).contains("default:stone"), "{names:?}");
        // Any other file decodes it then, to the same block.
        assert_eq!(second.file(BlockFile::Param0).unwrap(), first.file(BlockFile::Param0).unwrap());
        assert!(second.holds_decoding());
        // Another writer changes b: its new names show (TTL zero).
        stone.mapping[1].name = b"default:goldblock".to_vec();
        put(b, &stone.encode().unwrap()).unwrap();
        let changed = cache.get(b, &store).unwrap().unwrap().file(BlockFile::Names).unwrap();
        assert!(String::from_utf8_lossy(&changed).contains("default:goldblock"), "{changed:?}");
        assert_eq!(cache.get(a, &store).unwrap().unwrap().file(BlockFile::Names).unwrap(), names);
        // A blob that does not decode, twice: its error both times.
        put(a, &vec![29, 0, 1]).unwrap();
        for _ in 0..2 {
            let broken = cache.get(a, &store).unwrap().unwrap();
            assert!(!broken.is_decodable() && broken.file(BlockFile::Names).is_none());
        }
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
            self.go.lock().recv().unwrap();
            Ok(Some(self.blob.clone()))
        }
        fn list_after(&self, _: Option<BlockPos>, _: usize) -> Result<Vec<BlockPos>, StoreError> {
            Ok(Vec::new())
        }
        fn scan_after(&self, _: Option<BlockPos>, _: usize) -> Result<Vec<(BlockPos, Vec<u8>)>, StoreError> {
            Ok(Vec::new())
        }
        fn apply(&self, _: &[Change], _: &worldfs_store::Note) -> Result<(), StoreError> {
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

    /// A store over SQLite that counts its calls: block reads (`gets`: each
    /// `get`, and each `get_near`) and data versions asked (`versions_read`).
    /// It can hide its data version (`versions`), and answer `get_near`
    /// with a page of neighbours in one call as a database server does
    /// (`near`).
    struct Counting {
        inner: SqliteStore,
        gets: AtomicUsize,
        versions_read: AtomicUsize,
        versions: bool,
        near: bool,
    }

    impl MapStore for Counting {
        fn describe(&self) -> String {
            "counting".into()
        }
        fn get(&self, pos: BlockPos) -> Result<Option<Vec<u8>>, StoreError> {
            self.gets.fetch_add(1, Ordering::SeqCst);
            self.inner.get(pos)
        }
        fn get_near(&self, pos: BlockPos, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>, StoreError> {
            if !self.near {
                return Ok(self.get(pos)?.map(|blob| vec![(pos, blob)]).unwrap_or_default());
            }
            self.gets.fetch_add(1, Ordering::SeqCst);
            let before = self.inner.list_after(None, usize::MAX)?.into_iter().rfind(|p| *p < pos);
            self.inner.scan_after(before, limit)
        }
        fn list_after(&self, a: Option<BlockPos>, n: usize) -> Result<Vec<BlockPos>, StoreError> {
            self.inner.list_after(a, n)
        }
        fn scan_after(&self, a: Option<BlockPos>, n: usize) -> Result<Vec<(BlockPos, Vec<u8>)>, StoreError> {
            self.inner.scan_after(a, n)
        }
        fn apply(&self, c: &[Change], n: &worldfs_store::Note) -> Result<(), StoreError> {
            self.inner.apply(c, n)
        }
        fn count(&self) -> Result<u64, StoreError> {
            self.inner.count()
        }
        fn is_read_only(&self) -> bool {
            false
        }
        fn data_version(&self) -> Option<u64> {
            self.versions_read.fetch_add(1, Ordering::SeqCst);
            if self.versions { self.inner.data_version() } else { None }
        }
    }

    /// A `Counting` store of `blocks` air blocks along x.
    fn counting(d: &tempfile::TempDir, blocks: i16, versions: bool) -> Counting {
        let store = SqliteStore::create(&d.path().join("map.sqlite"), Schema::Legacy).unwrap();
        let blob = Block::new_air(29).encode().unwrap();
        let changes: Vec<Change> = (0..blocks).map(|i| Change::Put(BlockPos::new(i, 0, 0), blob.clone())).collect();
        store.apply(&changes, &worldfs_store::Note::default()).unwrap();
        Counting { inner: store, gets: AtomicUsize::new(0), versions_read: AtomicUsize::new(0), versions, near: false }
    }

    /// Decodings take a quarter of the budget; the blobs and small files
    /// of many more blocks stay, and a dropped decoding comes back equal.
    #[test]
    fn keeps_many_blocks_with_few_decodings() {
        let d = tempfile::tempdir().unwrap();
        let store = counting(&d, 2000, true);
        let cache = BlockCache::new(2 << 20, Duration::from_secs(60));
        for i in 0..2000 {
            let l = cache.get(BlockPos::new(i, 0, 0), &store).unwrap().unwrap();
            l.file(BlockFile::Names).unwrap();
            l.file_size(BlockFile::Nodes).unwrap();
        }
        assert_eq!(cache.len(), 2000, "every block's entry is kept");
        assert!(cache.bytes() <= 2 << 20, "{}", cache.bytes());
        assert!(cache.decoded_bytes() <= (2 << 20) / 4, "{}", cache.decoded_bytes());
        let first = cache.peek(BlockPos::new(0, 0, 0)).unwrap();
        assert!(first.block.lock().is_none(), "the oldest decoding was dropped");
        assert_eq!(*first.decoded().unwrap(), Block::decode(&first.blob).unwrap());
        assert_eq!(first.file_size(BlockFile::Nodes), Some(first.file(BlockFile::Nodes).unwrap().len()));
        // Read again (within the TTL): from the cache, no store read.
        let before = store.gets.load(Ordering::SeqCst);
        for i in 0..2000 {
            cache.get(BlockPos::new(i, 0, 0), &store).unwrap().unwrap();
        }
        assert_eq!(store.gets.load(Ordering::SeqCst), before);
    }

    /// After the TTL an entry is trusted while the store's data version has
    /// not moved, and read again (compared) once it has.
    #[test]
    fn stale_entries_are_checked_by_data_version() {
        let d = tempfile::tempdir().unwrap();
        let store = counting(&d, 3, true);
        let cache = BlockCache::new(1 << 20, Duration::ZERO);
        let p = BlockPos::new(1, 0, 0);
        let first = cache.get(p, &store).unwrap().unwrap();
        assert_eq!(store.gets.load(Ordering::SeqCst), 1);
        for _ in 0..5 {
            assert!(Arc::ptr_eq(&first, &cache.get(p, &store).unwrap().unwrap()));
        }
        assert_eq!(store.gets.load(Ordering::SeqCst), 1, "nothing changed: no read");
        // Another process changes another block: one read to compare, the
        // same entry kept (same blob).
        let other = rusqlite::Connection::open(d.path().join("map.sqlite")).unwrap();
        other.execute("DELETE FROM blocks WHERE pos = ?1", [BlockPos::new(2, 0, 0).legacy_key()]).unwrap();
        assert!(Arc::ptr_eq(&first, &cache.get(p, &store).unwrap().unwrap()));
        assert_eq!(store.gets.load(Ordering::SeqCst), 2);
        cache.get(p, &store).unwrap().unwrap();
        assert_eq!(store.gets.load(Ordering::SeqCst), 2, "checked at the new version");
        // ...and this block: the change shows.
        let mut b = Block::new_air(29);
        b.flags = 1;
        other.execute("UPDATE blocks SET data = ?1 WHERE pos = ?2", (b.encode().unwrap(), p.legacy_key())).unwrap();
        assert!(cache.get(p, &store).unwrap().unwrap().decoded().unwrap().is_underground());
        // Without a data version every use after the TTL reads the store.
        let d = tempfile::tempdir().unwrap();
        let store = counting(&d, 1, false);
        let p = BlockPos::new(0, 0, 0);
        for _ in 0..3 {
            cache.get(p, &store).unwrap().unwrap();
        }
        assert_eq!(store.gets.load(Ordering::SeqCst), 3);
    }

    /// A walk reads runs of neighbours in one call each and the data
    /// version once for many blocks; a commit or a removal of a block read
    /// ahead is never hidden by the copy read ahead.
    #[test]
    fn a_walk_reads_neighbours_together_and_commits_win_over_them() {
        let d = tempfile::tempdir().unwrap();
        let store = Counting { near: true, ..counting(&d, 300, true) };
        let cache = BlockCache::new(8 << 20, Duration::from_secs(60));
        for i in 0..200 {
            cache.get(BlockPos::new(i, 0, 0), &store).unwrap().unwrap();
        }
        let calls = store.gets.load(Ordering::SeqCst);
        assert!(calls <= 200 / (NEAR_BLOCKS / 2) + 1, "{calls} store calls for 200 blocks");
        assert!(store.versions_read.load(Ordering::SeqCst) <= calls, "a data version per call at most");
        // Block 250 waits read ahead; a commit of it wins over that copy.
        cache.get(BlockPos::new(230, 0, 0), &store).unwrap().unwrap();
        let p = BlockPos::new(250, 0, 0);
        let mut b = Block::new_air(29);
        b.flags = 1;
        let new = b.encode().unwrap();
        store.apply(&[Change::Put(p, new.clone())], &worldfs_store::Note::default()).unwrap();
        cache.insert(Arc::new(Loaded::new(p, new.clone())));
        assert_eq!(cache.get(p, &store).unwrap().unwrap().blob, new);
        // So does a removal: block 251 is read again, and found gone.
        let q = BlockPos::new(251, 0, 0);
        store.apply(&[Change::Delete(q)], &worldfs_store::Note::default()).unwrap();
        cache.remove(q);
        assert!(cache.get(q, &store).unwrap().is_none());
        // Without a TTL nothing read ahead is used.
        let cache = BlockCache::new(8 << 20, Duration::ZERO);
        let before = store.gets.load(Ordering::SeqCst);
        for i in 0..10 {
            cache.get(BlockPos::new(i, 0, 0), &store).unwrap().unwrap();
        }
        assert_eq!(store.gets.load(Ordering::SeqCst) - before, 10);
    }

    /// A walk over many more tiny blocks than fit: the budget bounds the
    /// entries, and the tables holding them stay a small part of it (a
    /// table of whole slots doubled under the churn to twice the budget's
    /// share on the 2.8M-block walk).
    #[test]
    fn the_tables_stay_within_the_budget() {
        let d = tempfile::tempdir().unwrap();
        let store = counting(&d, 12_000, true);
        let cap = 1 << 20;
        let cache = BlockCache::new(cap, Duration::from_secs(60));
        for i in 0..12_000 {
            let l = cache.get(BlockPos::new(i, 0, 0), &store).unwrap().unwrap();
            l.file(BlockFile::Names).unwrap();
        }
        let inner = cache.inner.lock();
        assert!(inner.bytes <= cap, "{}", inner.bytes);
        assert!(inner.map.len() < 12_000, "{} entries kept", inner.map.len());
        let slots = inner.map.slots.capacity() * std::mem::size_of::<Option<Slot>>();
        let index = inner.map.index.capacity() * 8 / 7 * (std::mem::size_of::<(BlockPos, u32)>() + 1);
        assert!(slots + index <= cap / 4, "slots {slots} and index {index} bytes for {} entries", inner.map.len());
        assert_eq!(inner.map.slots.iter().filter(|s| s.is_some()).count(), inner.map.len());
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
