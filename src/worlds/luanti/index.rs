//! The world's index of node names: which names the world holds, in how
//! many blocks and nodes, and which blocks hold each name (`MNT/find/`,
//! `MNT/names`, world-wide renames, the warning about a name found nowhere).
//!
//! Built by one scan of every block on all cores, then kept in a file in
//! the user's cache directory (`worldfs_store::name_index`), so later mounts use it
//! at once. It describes one version of the map, told by the store's data
//! version (SQLite's change counter) and a fingerprint: the identity, size
//! and modification time of the map's files (the WAL included) and a
//! checksum of the first blocks. Both are compared on use; a change made by
//! another process (the counter moved by more than this mount's own
//! commits, or the fingerprint moved) makes it stale, and the next use
//! builds it again. A counter alone is not enough: another map put in the
//! place of this one can have the same small counter, and a WAL-mode map
//! has none. Blocks changed through the mount are kept as overrides on top
//! of the built index, in memory and in the file. Stores with neither a
//! data version nor files (Redis) are trusted for `index_ttl` after a
//! build. A write relies on the index only where the store proves it
//! complete (`blocks_for_write`: built by this process at the data version
//! the map still has); otherwise a world-wide rename builds it afresh
//! first. Builds decode each distinct small blob once (`scan::ByBlob`).
//!
//! On a live mount the server saves every few seconds, which would make
//! every use a build. There the index is brought up to date by the blocks
//! written since it was made instead (`refresh`): SQLite gives every row
//! written (the engine's REPLACE, our UPDATE) a row id above all others,
//! so the rows above the mark are what changed; each becomes an override,
//! its names then read from the block lists (which carry each block's node
//! counts for this). Deletions do not show as rows: the map's count must
//! match what the index holds, else it is built again, as it is when the
//! store cannot tell. A change in place by a tool that is neither the
//! server nor worldfs does not show either; while a server runs, such a
//! tool's change is lost at the server's next save of that block anyway.
//!
//! Memory: a build holds at most `BUILD_HELD` bytes of block lists (a
//! varint per block and name: about 2-3 bytes) and appends them to the
//! index file in pieces as it goes, whatever the world's size; serving holds the names and counts,
//! the overrides (one entry per block changed through the mount), and the
//! sorted positions of the two names listed most recently (8 bytes per
//! block).

use super::scan::ByBlob;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};
use worldfs_codec::luanti::{Block, NodeCounts};
use worldfs_store::name_index::{IndexFile, NameRow, Override, Stamp};
use worldfs_store::{BlockPos, MapStore, WriteMark};

/// The names of a block with how many of its nodes have each.
pub(crate) type Counts = Vec<(Vec<u8>, u32)>;

/// The name counts of a decoded block (names with no node left out).
pub fn counts_of(b: &Block) -> Counts {
    // Most blocks are of one node type (all air, all stone).
    if let Some(&first) = b.param0.first()
        && b.param0.iter().all(|&id| id == first)
    {
        return b.name_of(first).map(|n| vec![(n.to_vec(), b.param0.len() as u32)]).unwrap_or_default();
    }
    let max = b.param0.iter().copied().max().unwrap_or(0) as usize;
    let mut per_id = vec![0u32; max + 1];
    for &id in &b.param0 {
        per_id[id as usize] += 1;
    }
    let mut v: Counts = Vec::new();
    for m in &b.mapping {
        if let Some(n) = per_id.get_mut(m.id as usize).filter(|n| **n > 0) {
            v.push((m.name.clone(), std::mem::take(n)));
        }
    }
    v.sort();
    v
}

// ---------------------------------------------------------------- encodings

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(data: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *data.get(*at)?;
        *at += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

/// A block list as zigzag varint deltas of packed positions, in the order
/// given (scan order keeps neighbours close, so deltas are small), each
/// followed by the name's node count in that block (what a block held, for
/// a refresh that learns the block changed: `NameIndex::refresh`).
#[derive(Default)]
struct Postings {
    bytes: Vec<u8>,
    last: i64,
}

impl Postings {
    fn push(&mut self, pos: BlockPos, nodes: u32) {
        let p = pos.packed() as i64;
        let d = p - self.last;
        self.last = p;
        put_varint(&mut self.bytes, ((d << 1) ^ (d >> 63)) as u64);
        put_varint(&mut self.bytes, nodes as u64);
    }
}

/// Each block of a block list with the name's nodes there.
fn decode_postings(data: &[u8]) -> Vec<(BlockPos, u32)> {
    let (mut at, mut last, mut out) = (0usize, 0i64, Vec::new());
    while let Some(z) = get_varint(data, &mut at) {
        let Some(nodes) = get_varint(data, &mut at) else { break };
        last += ((z >> 1) as i64) ^ -((z & 1) as i64);
        out.push((BlockPos::unpack(last as u64), nodes as u32));
    }
    out
}

/// What was written since a mark (`NameIndex::refresh`): each block's
/// names now (by packed position), how many blocks the map holds, the mark
/// and the data version as of then.
struct Since {
    now: HashMap<u64, Counts>,
    count: u64,
    mark: WriteMark,
    version: Option<u64>,
}

/// The blocks written since `mark`, read again until the data version stood
/// still while they were read (at most three times): then the version
/// describes what was read exactly. Else the version from before the last
/// reading, which is older than what was read: the next use reads again.
/// None when the store cannot tell (`worldfs_store::each_written_since`).
fn written_since(store: &dyn MapStore, mut mark: WriteMark) -> Option<Since> {
    let mut now: HashMap<u64, Counts> = HashMap::new();
    let (mut count, mut version) = (0, None);
    for _ in 0..3 {
        let before = store.data_version();
        let most = REFRESH_MOST.saturating_sub(now.len());
        let end = worldfs_store::each_written_since(store, &mark, most, &mut |page| {
            for ((_, p, _), counts) in page.iter().zip(counts_in_parallel(page)) {
                now.insert(p.packed(), counts);
            }
        });
        (count, mark) = match end {
            Ok(Some(end)) => end,
            Ok(None) => return None,
            Err(e) => {
                log::info!("name index: the blocks written since it was made cannot be read ({e})");
                return None;
            }
        };
        version = before;
        if store.data_version() == before {
            break;
        }
    }
    Some(Since { now, count, mark, version })
}

/// `decode_postings` without a list: each block (packed) and its nodes to `f`.
fn each_posting(data: &[u8], mut f: impl FnMut(u64, u32)) {
    let (mut at, mut last) = (0usize, 0i64);
    while let Some(z) = get_varint(data, &mut at) {
        let Some(nodes) = get_varint(data, &mut at) else { break };
        last += ((z >> 1) as i64) ^ -((z & 1) as i64);
        f(last as u64, nodes as u32);
    }
}

fn encode_counts(c: &Counts) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, n) in c {
        put_varint(&mut out, name.len() as u64);
        out.extend_from_slice(name);
        put_varint(&mut out, *n as u64);
    }
    out
}

fn decode_counts(data: &[u8]) -> Counts {
    let (mut at, mut out) = (0usize, Vec::new());
    while let Some(len) = get_varint(data, &mut at) {
        let Some(name) = data.get(at..at + len as usize) else { break };
        at += len as usize;
        let Some(n) = get_varint(data, &mut at) else { break };
        out.push((name.to_vec(), n as u32));
    }
    out
}

// ---------------------------------------------------------------- the index

/// Names by number and numbers by name.
type Numbers = (HashMap<Vec<u8>, u32>, Vec<Vec<u8>>);

/// One name as the index shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NameInfo {
    pub(crate) name: Vec<u8>,
    pub(crate) blocks: u64,
    pub(crate) nodes: u64,
}

struct State {
    /// Whether `base` and `overrides` describe the map as of `version`.
    valid: bool,
    /// Whether `base` was made by a scan of this process (not loaded from
    /// the file, which another map may have been put under).
    scanned_here: bool,
    version: Option<u64>,
    /// The map's fingerprint when the index was last known current.
    fingerprint: String,
    /// The blocks the fingerprint samples.
    sample: Vec<BlockPos>,
    built: Instant,
    /// When the data version was last compared.
    checked: Option<Instant>,
    base: Vec<NameInfo>,
    overrides: HashMap<u64, (Counts, Counts)>,
    /// Bumped on every change, for the listing cache.
    generation: u64,
    /// The positions of recently listed names: (name, generation, list).
    listed: Vec<(Vec<u8>, u64, Arc<Vec<BlockPos>>)>,
    /// Where the map's writes stood when the index was built (or last
    /// refreshed), for `NameIndex::refresh`; None: not known.
    mark: Option<WriteMark>,
    /// How many blocks the build read: with the overrides, how many the
    /// index knows to be there.
    rows: u64,
}

pub(crate) struct NameIndex {
    file: IndexFile,
    /// Which map this is, as the file's stamp says it.
    map: String,
    /// How long a check of the data version is trusted (the mount's TTL),
    /// and how long an index of a store without data version is.
    ttl: Duration,
    index_ttl: Duration,
    /// The map's files, for the fingerprint (none: only blocks are sampled).
    files: Vec<std::path::PathBuf>,
    state: Mutex<State>,
    /// Stable numbers for names (inodes of find/NAME), for the mount's life.
    numbers: Mutex<Numbers>,
    /// How many scans built it (for tests).
    builds: std::sync::atomic::AtomicU64,
    /// Whether a map changed by others is brought up to date by the blocks
    /// written since (`refresh`) rather than built again: on a live mount,
    /// whose other writer is the server.
    by_rows: bool,
    /// How many refreshes took blocks in (for tests).
    refreshes: std::sync::atomic::AtomicU64,
}

/// Where index files live: $XDG_CACHE_HOME/worldfs, else ~/.cache/worldfs,
/// else the system's temporary directory.
pub(crate) fn default_dir() -> std::path::PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| std::path::PathBuf::from(h).join(".cache"))
        })
        .unwrap_or_else(std::env::temp_dir);
    base.join("worldfs")
}

/// The index file name for a world: its path and map identity hashed.
pub(crate) fn file_name(map: &str) -> String {
    let mut crc = flate2::Crc::new();
    crc.update(map.as_bytes());
    let a = crc.sum();
    crc.update(b"worldfs-index");
    format!("index-{a:08x}{:08x}.sqlite", crc.sum())
}

impl NameIndex {
    /// An index for the map described by `map` (path, backend, file
    /// identity), kept in `dir`.
    pub(crate) fn open(
        dir: &std::path::Path,
        map: String,
        ttl: Duration,
        index_ttl: Duration,
    ) -> Result<NameIndex, String> {
        let path = dir.join(file_name(&map));
        let file = IndexFile::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(NameIndex {
            file,
            map,
            ttl,
            index_ttl,
            files: Vec::new(),
            state: Mutex::new(State {
                valid: false,
                scanned_here: false,
                version: None,
                fingerprint: String::new(),
                sample: Vec::new(),
                built: Instant::now(),
                checked: None,
                base: Vec::new(),
                overrides: HashMap::new(),
                generation: 0,
                listed: Vec::new(),
                mark: None,
                rows: 0,
            }),
            numbers: Mutex::new((HashMap::new(), Vec::new())),
            builds: std::sync::atomic::AtomicU64::new(0),
            by_rows: false,
            refreshes: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The map's files (a directory: each file in it), whose identity,
    /// size and modification time are part of the map's fingerprint.
    pub(crate) fn with_files(mut self, files: Vec<std::path::PathBuf>) -> NameIndex {
        self.files = files;
        self
    }

    /// Bring the index up to date by the blocks written since it was made
    /// (`refresh`) when others changed the map: for a live mount, where the
    /// other writer is the server, which gives every block it saves a new
    /// row.
    pub(crate) fn refreshed_by_rows(mut self) -> NameIndex {
        self.by_rows = true;
        self
    }

    pub(crate) fn path(&self) -> &std::path::Path {
        self.file.path()
    }

    /// What tells this version of the map from another: its files as
    /// `stat` sees them and a checksum of its first blocks (one page of
    /// `FINGERPRINT_BLOCKS`, whose positions are returned for rechecks).
    fn fingerprint(&self, store: &dyn MapStore) -> (String, Vec<BlockPos>) {
        match store.scan_after(None, FINGERPRINT_BLOCKS) {
            Ok(blocks) => {
                let sample = blocks.iter().map(|(p, _)| *p).collect();
                (self.print_of(blocks.into_iter().map(|(p, b)| (p, Ok(Some(b))))), sample)
            }
            Err(e) => (self.print_of(std::iter::once((BlockPos::new(0, 0, 0), Err(e)))), Vec::new()),
        }
    }

    /// The fingerprint again with the blocks sampled before read together
    /// (equal to `fingerprint` while they are unchanged): a recheck or a
    /// commit of this mount reads those few blocks, never a page of the
    /// map (on Redis a page means every key).
    fn fingerprint_of_sample(&self, store: &dyn MapStore, sample: &[BlockPos]) -> String {
        match store.get_many(sample) {
            Ok(blobs) => self.print_of(sample.iter().copied().zip(blobs.into_iter().map(Ok))),
            Err(e) => self.print_of(sample.iter().map(|p| (*p, Err(e.clone())))),
        }
    }

    fn print_of(&self, blocks: impl Iterator<Item = (BlockPos, worldfs_store::Result<Option<Vec<u8>>>)>) -> String {
        let mut crc = flate2::Crc::new();
        for f in &self.files {
            crc.update(file_stat(f).as_bytes());
            if f.is_dir() {
                let mut entries: Vec<_> =
                    std::fs::read_dir(f).into_iter().flatten().flatten().map(|e| e.path()).collect();
                entries.sort();
                entries.iter().for_each(|e| crc.update(file_stat(e).as_bytes()));
            }
        }
        let files = crc.sum();
        for (p, b) in blocks {
            match b {
                Ok(Some(b)) => {
                    crc.update(&p.packed().to_le_bytes());
                    crc.update(&b);
                }
                Ok(None) => {}
                Err(e) => crc.update(e.to_string().as_bytes()),
            }
        }
        format!("{files:08x}{:08x}", crc.sum())
    }

    /// The stamp's `map`: the map's identity and its fingerprint.
    fn stamped(&self, fingerprint: &str) -> String {
        format!("{}#{fingerprint}", self.map)
    }

    /// Whether an index of the map at `version`, made `age` ago, still
    /// describes it, now at `now` (`same_print`: the fingerprints match).
    fn still_current(&self, (now, version): (Option<u64>, Option<u64>), same_print: bool, age: Duration) -> bool {
        same_print
            && match (now, version) {
                (Some(n), Some(v)) => n == v,
                // Without files the fingerprint is a sample only.
                (None, None) => !self.files.is_empty() || age < self.index_ttl,
                _ => false,
            }
    }

    /// Make sure the index describes the map as it is now (loading it from
    /// the file or building it), and run `f` on its state.
    fn current<T>(&self, store: &dyn MapStore, f: impl FnOnce(&mut State) -> T) -> Result<T, String> {
        let mut st = self.state.lock();
        let due = st.checked.is_none_or(|t| t.elapsed() >= self.ttl);
        if st.valid && due {
            st.checked = Some(Instant::now());
            let same_print = self.fingerprint_of_sample(store, &st.sample) == st.fingerprint;
            if !self.still_current((store.data_version(), st.version), same_print, st.built.elapsed())
                && !self.refresh(store, &mut st)
            {
                log::info!("name index: the map changed outside this mount; it will be built again");
                st.valid = false;
            }
        }
        if !st.valid {
            self.load_or_build(store, &mut st, false)?;
        }
        Ok(f(&mut st))
    }

    /// Load the index from its file if it describes the map as it is now,
    /// else (or if `rebuild`) build it by a scan of every block.
    fn load_or_build(&self, store: &dyn MapStore, st: &mut State, rebuild: bool) -> Result<(), String> {
        let now = store.data_version();
        let (print, sample) = self.fingerprint(store);
        let stamp = self.file.stamp().map_err(|e| e.to_string())?;
        let usable = !rebuild
            && stamp.as_ref().is_some_and(|s| {
                let age = crate::sys::time::now_secs() * 1000 - s.built_ms;
                let age = Duration::from_millis(age.max(0) as u64);
                self.still_current((now, s.version), s.map == self.stamped(&print), age)
            });
        if usable {
            st.base = self.file.names().map_err(|e| e.to_string())?.into_iter().map(info).collect();
            st.overrides = self
                .file
                .overrides()
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|o| (o.packed, (decode_counts(&o.base), decode_counts(&o.now))))
                .collect();
            st.mark = None;
        } else {
            let t = Instant::now();
            let built_ms = crate::sys::time::now_secs() * 1000;
            let stamp = Stamp { map: self.stamped(&print), version: now, built_ms };
            // Read before the scan: what is written while it runs is above it.
            st.mark = if self.by_rows { store.write_mark().ok().flatten() } else { None };
            let (rows, scanned) = build(store, &self.file, &stamp)?;
            st.rows = scanned;
            self.builds.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            log::info!(
                "name index: {} names built in {:.1} s ({})",
                rows.len(),
                t.elapsed().as_secs_f64(),
                self.path().display()
            );
            st.base = rows;
            st.overrides.clear();
        }
        st.scanned_here = !usable;
        st.valid = true;
        st.version = now;
        st.fingerprint = print;
        st.sample = sample;
        st.built = Instant::now();
        st.checked = Some(Instant::now());
        st.generation += 1;
        st.listed.clear();
        Ok(())
    }

    /// The blocks holding `name`, for writes, which must reach every block
    /// whatever a kept index says: from the index only while the store
    /// proves it current (`proven`), else by a scan of every block made
    /// now (the index is built afresh).
    pub(crate) fn blocks_for_write(&self, store: &dyn MapStore, name: &[u8]) -> Result<Arc<Vec<BlockPos>>, String> {
        let mut st = self.state.lock();
        // Made current by the blocks written since (a live mount) where it can.
        let current = self.proven(store, &st) || (st.scanned_here && self.refresh(store, &mut st));
        if !current {
            self.load_or_build(store, &mut st, true)?;
        }
        drop(st);
        self.blocks_with(store, name)
    }

    /// Whether the store proves that the index describes the map as it is
    /// now: this process built it by a scan, the map's data version is the
    /// one it was built at (moved since only by this mount's own commits,
    /// which the index took in: `wrote`), and the blocks and files the
    /// fingerprint samples are as they were. A map without a data version
    /// (WAL mode, Redis) proves nothing, nor does an index loaded from its
    /// file (another map with an equal counter may have been put there
    /// while nothing was mounted).
    fn proven(&self, store: &dyn MapStore, st: &State) -> bool {
        st.valid
            && st.scanned_here
            && st.version.is_some()
            && store.data_version() == st.version
            && self.fingerprint_of_sample(store, &st.sample) == st.fingerprint
    }

    /// Bring the index up to the map as it is now by the blocks written
    /// since it was made (`worldfs_store::each_written_since`), without a
    /// scan: each becomes an override (its names when the index was made,
    /// from the block lists, and now). Deleted blocks are not among them:
    /// the map's count must then be what the index holds, else (and when
    /// the store cannot tell, or nothing was written although the map
    /// moved: a change in place) false, and the caller builds it again.
    fn refresh(&self, store: &dyn MapStore, st: &mut State) -> bool {
        if !self.by_rows || !st.valid {
            return false;
        }
        let Some(mark) = st.mark else { return false };
        let t = Instant::now();
        let Some(Since { now, count, mark: mark_now, version }) = written_since(store, mark) else { return false };
        let Some(mut then) = self.counts_then(&now) else { return false };
        let mut overrides = st.overrides.clone();
        for (packed, counts) in now {
            overrides.remove(&packed);
            let base = then.remove(&packed).unwrap_or_default();
            // A block written with the names the lists give it needs no override.
            if base != counts {
                overrides.insert(packed, (base, counts));
            }
        }
        let exists = |c: &Counts| i64::from(!c.is_empty());
        let held = st.rows as i64 + overrides.values().map(|(b, n)| exists(n) - exists(b)).sum::<i64>();
        if held != count as i64 || overrides.len() > OVERRIDES_MOST {
            log::info!(
                "name index: the map holds {count} blocks, the index {held} (some were deleted), or too many changed"
            );
            return false;
        }
        let written = overrides.len();
        self.take_in(store, st, overrides, version, mark_now);
        self.refreshes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        log::info!(
            "name index: blocks written by others taken in ({written} overrides) in {:.2} s",
            t.elapsed().as_secs_f64()
        );
        st.valid
    }

    /// The names the block lists give each block of `blocks` (by packed
    /// position): one pass over every name's list. What an override's base
    /// must be, also where this mount's own change made it from the block
    /// it read, which others may have written since the lists were made.
    fn counts_then(&self, blocks: &HashMap<u64, Counts>) -> Option<HashMap<u64, Counts>> {
        let mut then: HashMap<u64, Counts> = HashMap::new();
        if blocks.is_empty() {
            return Some(then);
        }
        let r = self.file.each_postings(&mut |name, postings| {
            each_posting(postings, |p, n| {
                if blocks.contains_key(&p) {
                    then.entry(p).or_default().push((name.to_vec(), n));
                }
            })
        });
        if let Err(e) = r {
            log::warn!("name index: {e}");
            return None;
        }
        then.values_mut().for_each(|c| c.sort());
        Some(then)
    }

    /// A refresh's overrides become the index's, here and in its file.
    fn take_in(
        &self,
        store: &dyn MapStore,
        st: &mut State,
        overrides: HashMap<u64, (Counts, Counts)>,
        version: Option<u64>,
        mark: WriteMark,
    ) {
        let gone: Vec<u64> = st.overrides.keys().filter(|p| !overrides.contains_key(p)).copied().collect();
        let rows: Vec<Override> = overrides
            .iter()
            .filter(|(p, o)| st.overrides.get(p) != Some(o))
            .map(|(p, (b, n))| Override { packed: *p, base: encode_counts(b), now: encode_counts(n) })
            .collect();
        st.overrides = overrides;
        st.version = version;
        st.mark = Some(mark);
        st.fingerprint = self.fingerprint_of_sample(store, &st.sample);
        st.checked = Some(Instant::now());
        st.generation += 1;
        st.listed.clear();
        let saved = self
            .file
            .drop_overrides(&gone)
            .and_then(|()| self.file.put_overrides(&rows, version))
            .and_then(|()| self.file.restamp(&self.stamped(&st.fingerprint), version));
        if let Err(e) = saved {
            log::warn!("name index: {e}; it will be built again");
            st.valid = false;
        }
    }

    /// Whether a write would trust the index now (for tests).
    #[cfg(test)]
    pub(crate) fn is_proven(&self, store: &dyn MapStore) -> bool {
        self.proven(store, &self.state.lock())
    }

    /// A number that changes whenever what the index says changes (checked
    /// against the map as every use is): the `find/` directories' mtime.
    /// Not made yet: 0, without making it (a listing of the root must not
    /// build it).
    pub(crate) fn generation(&self, store: &dyn MapStore) -> Result<u64, String> {
        if !self.is_made() {
            return Ok(0);
        }
        self.current(store, |st| st.generation)
    }

    /// Whether the index was made (built or loaded) in this process: until
    /// then a listing gives the `names` file a provisional size.
    pub(crate) fn is_made(&self) -> bool {
        self.state.lock().valid
    }

    /// How many scans of every block built the index so far.
    #[cfg(test)]
    pub(crate) fn builds(&self) -> u64 {
        self.builds.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Every name with its counts (overrides applied), sorted by name.
    pub(crate) fn names(&self, store: &dyn MapStore) -> Result<Vec<NameInfo>, String> {
        self.current(store, |st| {
            let mut m: BTreeMap<Vec<u8>, (i64, i64)> =
                st.base.iter().map(|n| (n.name.clone(), (n.blocks as i64, n.nodes as i64))).collect();
            for (base, now) in st.overrides.values() {
                for (name, n) in base {
                    let e = m.entry(name.clone()).or_insert((0, 0));
                    e.0 -= 1;
                    e.1 -= *n as i64;
                }
                for (name, n) in now {
                    let e = m.entry(name.clone()).or_insert((0, 0));
                    e.0 += 1;
                    e.1 += *n as i64;
                }
            }
            m.into_iter()
                .filter(|(_, (b, _))| *b > 0)
                .map(|(name, (b, n))| NameInfo { name, blocks: b as u64, nodes: n.max(0) as u64 })
                .collect()
        })
    }

    /// Whether any block of the world holds `name`.
    pub(crate) fn has(&self, store: &dyn MapStore, name: &[u8]) -> Result<bool, String> {
        Ok(self.names(store)?.iter().any(|n| n.name == name))
    }

    /// The blocks holding `name`, sorted by packed position.
    pub(crate) fn blocks_with(&self, store: &dyn MapStore, name: &[u8]) -> Result<Arc<Vec<BlockPos>>, String> {
        let cached = self.current(store, |st| {
            st.listed.iter().find(|(n, g, _)| n == name && *g == st.generation).map(|(_, _, l)| l.clone())
        })?;
        if let Some(l) = cached {
            return Ok(l);
        }
        let postings = self.file.postings(name).map_err(|e| e.to_string())?.unwrap_or_default();
        let mut list: Vec<BlockPos> = decode_postings(&postings).into_iter().map(|(p, _)| p).collect();
        self.current(store, |st| {
            list.retain(|p| !st.overrides.contains_key(&p.packed()));
            for (&packed, (_, now)) in &st.overrides {
                if now.iter().any(|(n, _)| n == name) {
                    list.push(BlockPos::unpack(packed));
                }
            }
            list.sort_by_key(BlockPos::packed);
            let list = Arc::new(list);
            st.listed.retain(|(n, _, _)| n != name);
            st.listed.insert(0, (name.to_vec(), st.generation, list.clone()));
            st.listed.truncate(2);
            list
        })
    }

    /// A block changed through this mount (`None`: absent). Kept as an
    /// override; nothing to do while the index is not built.
    pub(crate) fn changed(&self, pos: BlockPos, old: Option<&Block>, new: Option<&Block>) {
        let mut st = self.state.lock();
        if !st.valid {
            return;
        }
        let now = new.map(counts_of).unwrap_or_default();
        let base = match st.overrides.get(&pos.packed()) {
            Some((b, _)) => b.clone(),
            None => old.map(counts_of).unwrap_or_default(),
        };
        let row = Override { packed: pos.packed(), base: encode_counts(&base), now: encode_counts(&now) };
        st.overrides.insert(pos.packed(), (base, now));
        st.generation += 1;
        let version = st.version;
        drop(st);
        if let Err(e) = self.file.put_overrides(&[row], version) {
            log::warn!("name index: {e}; it will be built again");
            self.state.lock().valid = false;
        }
    }

    /// This mount wrote one transaction: the map's data version went from
    /// `before` to `after`. If that is all that happened since the index
    /// was current, it stays current. A commit moves SQLite's and LevelDB's
    /// version by one; PostgreSQL's (a hash of its snapshot) unforeseeably,
    /// so there the store says where its own commit began and ended.
    pub(crate) fn wrote(&self, store: &dyn MapStore, before: Option<u64>, after: Option<u64>) {
        let mut st = self.state.lock();
        if !st.valid {
            return;
        }
        match (before, after, store.last_commit_versions()) {
            (Some(b), Some(a), None) if st.version == Some(b) && a == b + 1 => st.version = Some(a),
            (Some(b), Some(_), Some((start, end))) if st.version == Some(b) && start == b => {
                // Anything after our commit is not ours: the next check sees it.
                st.version = Some(end)
            }
            (None, None, _) => {}
            // Others wrote too: the next use takes in what was written since
            // the index was last current, ours and theirs (`refresh`).
            _ if self.by_rows && st.mark.is_some() => {
                st.checked = None;
                return;
            }
            _ => {
                log::info!("name index: the map changed outside this mount meanwhile; it will be built again");
                st.valid = false;
                return;
            }
        }
        // Our own commit moved the files' size and time (and maybe the
        // sampled blocks): that is the map the index now describes.
        st.fingerprint = self.fingerprint_of_sample(store, &st.sample);
        let (version, map) = (st.version, self.stamped(&st.fingerprint));
        drop(st);
        if let Err(e) = self.file.restamp(&map, version) {
            log::warn!("name index: {e}; it will be built again");
            self.state.lock().valid = false;
        }
    }

    /// Node type `from` was renamed to `to` in every block that held it
    /// (by this mount, with the map otherwise as the index describes it):
    /// the two names' rows are merged, without a scan.
    pub(crate) fn renamed(&self, from: &[u8], to: &[u8]) {
        let mut st = self.state.lock();
        if !st.valid {
            return;
        }
        let r = (|| -> Result<(), String> {
            let list = |n: &[u8]| -> Result<Vec<(BlockPos, u32)>, String> {
                Ok(decode_postings(&self.file.postings(n).map_err(|e| e.to_string())?.unwrap_or_default()))
            };
            // A block holding both names holds the new one with both counts.
            let mut merged: BTreeMap<u64, u32> = BTreeMap::new();
            for (p, n) in list(from)?.into_iter().chain(list(to)?) {
                *merged.entry(p.packed()).or_default() += n;
            }
            let mut postings = Postings::default();
            merged.iter().for_each(|(&p, &n)| postings.push(BlockPos::unpack(p), n));
            let count = |n: &[u8]| st.base.iter().find(|i| i.name == n).map_or(0, |i| i.nodes);
            let row = NameRow {
                name: to.to_vec(),
                blocks: merged.len() as u64,
                nodes: count(from) + count(to),
                postings: postings.bytes,
            };
            self.file.update_names(&[from.to_vec()], std::slice::from_ref(&row)).map_err(|e| e.to_string())?;
            st.base.retain(|i| i.name != from && i.name != to);
            st.base.push(NameInfo { name: row.name, blocks: row.blocks, nodes: row.nodes });
            st.base.sort_by(|a, b| a.name.cmp(&b.name));
            let rename = |c: &mut Counts| {
                let moved: u32 = c.iter().filter(|(n, _)| n == from).map(|(_, k)| *k).sum();
                if moved > 0 {
                    c.retain(|(n, _)| n != from);
                    match c.iter_mut().find(|(n, _)| n == to) {
                        Some((_, k)) => *k += moved,
                        None => c.push((to.to_vec(), moved)),
                    }
                    c.sort();
                }
            };
            let mut rows = Vec::new();
            for (packed, (base, now)) in st.overrides.iter_mut() {
                rename(base);
                rename(now);
                rows.push(Override { packed: *packed, base: encode_counts(base), now: encode_counts(now) });
            }
            self.file.put_overrides(&rows, st.version).map_err(|e| e.to_string())
        })();
        if let Err(e) = r {
            log::warn!("name index: {e}; it will be built again");
            st.valid = false;
        }
        st.generation += 1;
        st.listed.clear();
    }

    /// Forget the index (the next use builds it again).
    pub(crate) fn invalidate(&self) {
        self.state.lock().valid = false;
    }

    /// A stable number for a name (for inodes), and back.
    pub(crate) fn number(&self, name: &[u8]) -> u32 {
        let mut n = self.numbers.lock();
        if let Some(&i) = n.0.get(name) {
            return i;
        }
        let i = n.1.len() as u32;
        n.0.insert(name.to_vec(), i);
        n.1.push(name.to_vec());
        i
    }

    pub(crate) fn name_of(&self, number: u32) -> Option<Vec<u8>> {
        self.numbers.lock().1.get(number as usize).cloned()
    }
}

fn info(r: NameRow) -> NameInfo {
    NameInfo { name: r.name, blocks: r.blocks, nodes: r.nodes }
}

/// How many blocks written by others one refresh takes in; more, and the
/// index is built again (as fast, and its memory bounded).
const REFRESH_MOST: usize = 200_000;

/// How many overrides the index keeps before a refresh builds it again
/// instead (each holds two blocks' names in memory).
const OVERRIDES_MOST: usize = 200_000;

/// The names of each block of a page, decoded on every core (a block that
/// does not decode: none).
fn counts_in_parallel(page: &[worldfs_store::WrittenBlock]) -> Vec<Counts> {
    let of = |blob: &[u8]| -> Counts {
        let mut c: Counts = Vec::new();
        for (name, n) in named_counts(blob).unwrap_or_default() {
            match c.iter_mut().find(|(m, _)| *m == name) {
                Some((_, k)) => *k += n,
                None => c.push((name, n)),
            }
        }
        c.sort();
        c
    };
    let chunk = page.len().div_ceil(super::scan::threads()).max(1);
    std::thread::scope(|s| {
        let parts: Vec<_> = page
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().map(|(_, _, b)| of(b)).collect::<Vec<_>>()))
            .collect();
        parts.into_iter().flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    })
}

/// How many blocks (the first by key) the fingerprint reads.
const FINGERPRINT_BLOCKS: usize = 8;

/// A file's identity, size and modification time, or that it is absent.
fn file_stat(path: &std::path::Path) -> String {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(path) {
        Ok(m) => format!("{}|{}:{}:{}:{}.{};", path.display(), m.dev(), m.ino(), m.len(), m.mtime(), m.mtime_nsec()),
        Err(_) => format!("{}|-;", path.display()),
    }
}

/// How many bytes of block lists a build holds before it appends them to
/// the index file: with the vectors' spare room (at most as much again)
/// the build's memory, whatever the size of the world.
const BUILD_HELD: usize = 8 << 20;

/// One scan of every block: each name's counts and block list, appended to
/// `file` in pieces as the scan goes, the index replaced at the end.
/// Gives each name's counts and how many blocks were read.
fn build(store: &dyn MapStore, file: &IndexFile, stamp: &Stamp) -> Result<(Vec<NameInfo>, u64), String> {
    build_holding(store, file, stamp, BUILD_HELD)
}

/// `build`, appending whenever more than `most` bytes are held.
fn build_holding(
    store: &dyn MapStore,
    file: &IndexFile,
    stamp: &Stamp,
    most: usize,
) -> Result<(Vec<NameInfo>, u64), String> {
    #[derive(Default)]
    struct Acc {
        blocks: u64,
        nodes: u64,
        postings: Postings,
    }
    // By name number (`BuildNames`): no name hashed or copied per block.
    let mut acc: Vec<Acc> = Vec::new();
    let seen = ByBlob::default();
    let names = BuildNames::default();
    let mut out = file.begin_build().map_err(|e| e.to_string())?;
    let mut held = 0usize;
    // Appends what every name holds; each keeps its last position, so its
    // deltas run on across pieces and the pieces join into one list.
    let mut append = |acc: &mut Vec<Acc>| -> Result<(), String> {
        let all = names.all();
        let pieces: Vec<(&[u8], Vec<u8>)> = acc
            .iter_mut()
            .zip(&all)
            .filter(|(a, _)| !a.postings.bytes.is_empty())
            .map(|(a, n)| (n.as_slice(), std::mem::take(&mut a.postings.bytes)))
            .collect();
        let refs: Vec<(&[u8], &[u8])> = pieces.iter().map(|(n, b)| (*n, b.as_slice())).collect();
        out.append(&refs).map_err(|e| e.to_string())
    };
    let mut scanned = 0u64;
    crate::worlds::luanti::scan::scan(
        store,
        |blocks| (blocks.len() as u64, names_in_slice(blocks, &seen, &names)),
        |(read, part)| {
            scanned += read;
            for (id, nodes, pos) in part {
                let id = id as usize;
                if id >= acc.len() {
                    acc.resize_with(id + 1, Acc::default);
                }
                let a = &mut acc[id];
                a.blocks += 1;
                a.nodes += nodes as u64;
                let before = a.postings.bytes.len();
                a.postings.push(pos, nodes);
                held += a.postings.bytes.len() - before;
            }
            if held > most {
                held = 0;
                append(&mut acc)?;
            }
            Ok(())
        },
        &mut |_| {},
    )?;
    // What is still held goes to `finish` as each name's last piece.
    let mut rows: Vec<NameRow> = acc
        .into_iter()
        .zip(names.all())
        .filter(|(a, _)| a.blocks > 0)
        .map(|(a, name)| NameRow { name, blocks: a.blocks, nodes: a.nodes, postings: a.postings.bytes })
        .collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    out.finish(stamp, &rows).map_err(|e| e.to_string())?;
    Ok((rows.into_iter().map(info).collect(), scanned))
}

/// A table hashed fast: the build hashes the names of every distinct blob
/// (`BuildNames`) and every blob (the memo), where SipHash took 5 to 7 %
/// of a profile of the build (perf, 2.8M-block world).
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The names a build met, numbered in the order first met. Names are
/// looked up here once per distinct blob decoded, never per block.
#[derive(Default)]
struct BuildNames(Mutex<NumbersMet>);

/// Numbers by name and names by number, of one build.
type NumbersMet = (FastMap<Vec<u8>, u32>, Vec<Vec<u8>>);

impl BuildNames {
    /// The numbers of `names` (with their node counts; a name the block's
    /// mapping holds twice is counted once, with both counts).
    fn numbered(&self, names: Vec<(Vec<u8>, u32)>) -> Vec<(u32, u32)> {
        let mut t = self.0.lock();
        let mut out: Vec<(u32, u32)> = Vec::with_capacity(names.len());
        for (name, n) in names {
            let id = match t.0.get(name.as_slice()) {
                Some(&id) => id,
                None => {
                    let id = t.1.len() as u32;
                    t.1.push(name.clone());
                    t.0.insert(name, id);
                    id
                }
            };
            match out.iter_mut().find(|(i, _)| *i == id) {
                Some((_, k)) => *k += n,
                None => out.push((id, n)),
            }
        }
        out
    }

    /// Every name met so far, by number.
    fn all(&self) -> Vec<Vec<u8>> {
        self.0.lock().1.clone()
    }
}

/// How many names of a blob are kept in place (`BlobNames::Few`).
const FEW: usize = 4;

/// The names of one blob as (name number, node count). Up to `FEW` are
/// kept in place: the memo hands a copy to every block whose blob repeats
/// it, and an `Arc`'s shared counter, bumped by every thread for every
/// block of air, cost more than the copy.
#[derive(Clone)]
enum BlobNames {
    /// The blob does not decode.
    Bad,
    Few(u8, [(u32, u32); FEW]),
    Many(Arc<[(u32, u32)]>),
}

impl BlobNames {
    fn of(numbered: Vec<(u32, u32)>) -> BlobNames {
        if numbered.len() <= FEW {
            let mut few = [(0, 0); FEW];
            few[..numbered.len()].copy_from_slice(&numbered);
            BlobNames::Few(numbered.len() as u8, few)
        } else {
            BlobNames::Many(numbered.into())
        }
    }

    fn as_slice(&self) -> &[(u32, u32)] {
        match self {
            BlobNames::Bad => &[],
            BlobNames::Few(n, few) => &few[..*n as usize],
            BlobNames::Many(many) => many,
        }
    }

    /// Bytes held besides the blob, for the memo's bound: its own size
    /// (kept in the memo's table) and what it points to.
    fn held(&self) -> usize {
        std::mem::size_of::<BlobNames>()
            + match self {
                BlobNames::Many(many) => many.len() * 8 + 16,
                _ => 0,
            }
    }
}

fn blob_names(blob: &[u8], names: &BuildNames) -> BlobNames {
    match named_counts(blob) {
        Some(counted) => BlobNames::of(names.numbered(counted)),
        None => BlobNames::Bad,
    }
}

/// The names of a blob with their node counts, in its mapping's order (a
/// name mapped twice listed twice); None when it does not decode.
fn named_counts(blob: &[u8]) -> Option<Vec<(Vec<u8>, u32)>> {
    let NodeCounts { mapping, by_id: mut per_id } = NodeCounts::of(blob).ok()?;
    Some(
        mapping
            .into_iter()
            .filter_map(|m| {
                let n = per_id.get_mut(m.id as usize).filter(|n| **n > 0)?;
                Some((m.name, std::mem::take(n)))
            })
            .collect(),
    )
}

/// One block holding one name: (name number, its nodes there, the block).
type Hit = (u32, u32, BlockPos);

/// The names of a slice of blocks (run on every core), one `Hit` per
/// block and name, in the blocks' order. A blob seen before (`seen`) is
/// not read again: its names are a function of its bytes.
fn names_in_slice(blocks: &[(BlockPos, Vec<u8>)], seen: &ByBlob<BlobNames>, names: &BuildNames) -> Vec<Hit> {
    let mut hits = Vec::with_capacity(blocks.len() * 2);
    for (pos, blob) in blocks {
        let of_blob = seen.of(blob, |b| blob_names(b, names), BlobNames::held);
        hits.extend(of_blob.as_slice().iter().map(|&(id, n)| (id, n, *pos)));
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldfs_codec::luanti::MappingEntry;
    use worldfs_store::memory::MemoryStore;
    use worldfs_store::{Change, Note};

    fn block(names: &[&str]) -> Block {
        let mut b = Block::new_air(29);
        for (i, n) in names.iter().enumerate() {
            b.mapping.push(MappingEntry { id: i as u16 + 1, name: n.as_bytes().to_vec() });
            b.param0[i] = i as u16 + 1;
        }
        b
    }

    #[test]
    fn postings_and_counts_encode_and_decode() {
        let ps =
            [(BlockPos::new(0, 0, 0), 4096), (BlockPos::new(-2048, 2047, 5), 1), (BlockPos::new(3, -1, -2048), 77)];
        let mut p = Postings::default();
        ps.iter().for_each(|&(x, n)| p.push(x, n));
        assert_eq!(decode_postings(&p.bytes), ps);
        let c: Counts = vec![(b"air".to_vec(), 4000), (b"x:y".to_vec(), 96)];
        assert_eq!(decode_counts(&encode_counts(&c)), c);
    }

    #[test]
    fn a_build_in_pieces_writes_the_same_index_as_one_held_whole() {
        // Three pages of the scan, names spread unevenly across them.
        let blocks: Vec<(BlockPos, Vec<u8>)> = (0..2600i16)
            .map(|i| {
                let names: &[&str] = if i % 7 == 0 { &["default:stone", "default:chest"] } else { &["default:stone"] };
                (BlockPos::new(i % 50, i / 50 - 20, -i % 3), block(names).encode().unwrap())
            })
            .collect();
        let store = MemoryStore::with_blocks(blocks.clone());
        let stamp = Stamp { map: "m".into(), version: Some(1), built_ms: 1 };
        let d = tempfile::tempdir().unwrap();
        let (whole, pieces) =
            (IndexFile::open(&d.path().join("a")).unwrap(), IndexFile::open(&d.path().join("b")).unwrap());
        let (names, scanned) = build_holding(&store, &whole, &stamp, usize::MAX).unwrap();
        assert_eq!(scanned, 2600);
        assert_eq!(build_holding(&store, &pieces, &stamp, 0).unwrap(), (names.clone(), 2600));
        assert_eq!(names.iter().find(|n| n.name == b"default:chest").unwrap().blocks, 372);
        for n in ["air", "default:stone", "default:chest"] {
            let got = pieces.postings(n.as_bytes()).unwrap().unwrap();
            assert_eq!(got, whole.postings(n.as_bytes()).unwrap().unwrap(), "{n}");
            let mut want: Vec<u64> = blocks
                .iter()
                .filter(|(p, _)| n != "default:chest" || (p.x + 50 * (p.y + 20)) % 7 == 0)
                .map(|(p, _)| p.packed())
                .collect();
            let mut listed: Vec<u64> = decode_postings(&got).iter().map(|(p, _)| p.packed()).collect();
            want.sort();
            listed.sort();
            assert_eq!(listed, want, "{n}");
        }
    }

    /// A write uses the index without a scan only while the store proves
    /// it current: built by this process, the data version unmoved.
    #[test]
    fn writes_trust_an_index_built_here_until_the_map_changes() {
        let d = tempfile::tempdir().unwrap();
        let (a, b, c) = (BlockPos::new(1, 0, 0), BlockPos::new(2, 0, 0), BlockPos::new(900, 3, 9));
        let store = MemoryStore::with_blocks([
            (a, block(&["default:stone"]).encode().unwrap()),
            (b, block(&["default:stone", "default:chest"]).encode().unwrap()),
        ]);
        // Checks of the version an hour apart: only `proven` can see a change.
        let hour = Duration::from_secs(3600);
        let idx = NameIndex::open(d.path(), "world".into(), hour, hour).unwrap();
        assert_eq!(*idx.blocks_with(&store, b"default:chest").unwrap(), vec![b]);
        assert_eq!(idx.builds(), 1);
        assert!(idx.is_proven(&store));
        assert_eq!(*idx.blocks_for_write(&store, b"default:chest").unwrap(), vec![b]);
        assert_eq!(idx.builds(), 1, "no scan: the store proves the index current");
        // Another process puts a chest in a block past the fingerprint's sample.
        store.apply(&[Change::Put(c, block(&["default:chest"]).encode().unwrap())], &Note::default()).unwrap();
        assert!(!idx.is_proven(&store));
        let mut want = vec![b, c];
        want.sort_by_key(BlockPos::packed);
        assert_eq!(*idx.blocks_for_write(&store, b"default:chest").unwrap(), want, "scanned again");
        assert_eq!(idx.builds(), 2);
        // An index loaded from its file proves nothing (another map may have
        // been put under it); a write scans.
        let again = NameIndex::open(d.path(), "world".into(), hour, hour).unwrap();
        assert_eq!(*again.blocks_with(&store, b"default:chest").unwrap(), want);
        assert_eq!(again.builds(), 0, "loaded from the file");
        assert!(!again.is_proven(&store));
        again.blocks_for_write(&store, b"default:chest").unwrap();
        assert_eq!(again.builds(), 1);
    }

    /// A build decodes each distinct small blob once and gives every block
    /// holding it its names.
    #[test]
    fn repeated_blobs_are_indexed_at_every_position() {
        let stone = block(&["default:stone"]).encode().unwrap();
        let chest = block(&["default:stone", "default:chest"]).encode().unwrap();
        let blocks: Vec<(BlockPos, Vec<u8>)> = (0..3000i16)
            .map(|i| (BlockPos::new(i % 60, i / 60, 0), if i % 100 == 7 { chest.clone() } else { stone.clone() }))
            .collect();
        let (seen, names) = (ByBlob::default(), BuildNames::default());
        let got = names_in_slice(&blocks, &seen, &names);
        let all = names.all();
        let id = |n: &str| all.iter().position(|m| m == n.as_bytes()).unwrap() as u32;
        let with = |n: &str| got.iter().filter(|h| h.0 == id(n)).collect::<Vec<_>>();
        let chests: Vec<BlockPos> = with("default:chest").iter().map(|h| h.2).collect();
        let want: Vec<BlockPos> = blocks.iter().filter(|(_, b)| *b == chest).map(|(p, _)| *p).collect();
        assert_eq!(chests, want, "every block with the repeated blob, in order");
        assert_eq!(with("default:stone").len(), 3000);
        assert_eq!(with("default:stone").iter().map(|h| h.1 as u64).sum::<u64>(), 3000);
        assert_eq!(all.len(), 3, "air, stone, chest: {all:?}");
        assert!(seen.held() > 0 && seen.held() < 4096, "two blobs kept: {}", seen.held());
    }

    /// A name a block's mapping lists under two ids is one hit of that
    /// block, with the nodes of both ids (it was listed twice).
    #[test]
    fn a_name_mapped_twice_in_a_block_is_one_hit_with_both_counts() {
        let mut b = block(&["default:stone", "default:chest"]);
        b.mapping.push(MappingEntry { id: 3, name: b"default:stone".to_vec() });
        b.param0[2] = 3;
        b.param0[3] = 3;
        let pos = BlockPos::new(4, 5, 6);
        let (seen, names) = (ByBlob::default(), BuildNames::default());
        let hits = names_in_slice(&[(pos, b.encode().unwrap())], &seen, &names);
        let all = names.all();
        let stone = all.iter().position(|n| n == b"default:stone").unwrap() as u32;
        let stones: Vec<&Hit> = hits.iter().filter(|h| h.0 == stone).collect();
        assert_eq!(stones, vec![&(stone, 3, pos)], "one hit, nodes of ids 1 and 3");
        assert_eq!(hits.len(), 3, "air, stone, chest: {hits:?}");
    }

    /// What an index built afresh over `store` says: every name's counts
    /// and blocks.
    fn fresh(store: &MemoryStore) -> Vec<(NameInfo, Vec<BlockPos>)> {
        let d = tempfile::tempdir().unwrap();
        shown(&NameIndex::open(d.path(), "fresh".into(), Duration::ZERO, Duration::ZERO).unwrap(), store)
    }

    fn shown(idx: &NameIndex, store: &MemoryStore) -> Vec<(NameInfo, Vec<BlockPos>)> {
        let names = idx.names(store).unwrap();
        names.into_iter().map(|n| (n.clone(), idx.blocks_with(store, &n.name).unwrap().to_vec())).collect()
    }

    fn refreshes(idx: &NameIndex) -> u64 {
        idx.refreshes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A live mount's index takes in what the server wrote (each block a
    /// new row) without a scan, and says what one built afresh says; a
    /// write trusts it after that.
    #[test]
    fn a_live_index_takes_in_blocks_written_by_others_without_a_scan() {
        let d = tempfile::tempdir().unwrap();
        let at = |x: i16| BlockPos::new(x, 0, 0);
        let store = MemoryStore::with_blocks((0..40).map(|x| {
            let names: &[&str] = if x % 4 == 0 { &["default:stone", "default:chest"] } else { &["default:stone"] };
            (at(x), block(names).encode().unwrap())
        }));
        let idx = NameIndex::open(d.path(), "live".into(), Duration::ZERO, Duration::ZERO).unwrap().refreshed_by_rows();
        assert_eq!(shown(&idx, &store), fresh(&store));
        assert_eq!(idx.builds(), 1);
        // The server saves: a chest taken out, one put in, a new block, a
        // block saved again as it was.
        store.put_behind_the_back(at(0), block(&["default:stone"]).encode().unwrap());
        store.put_behind_the_back(at(1), block(&["default:stone", "default:chest", "default:mese"]).encode().unwrap());
        store.put_behind_the_back(at(99), block(&["default:chest"]).encode().unwrap());
        store.put_behind_the_back(at(2), block(&["default:stone"]).encode().unwrap());
        assert_eq!(shown(&idx, &store), fresh(&store));
        assert_eq!((idx.builds(), refreshes(&idx)), (1, 1));
        assert!(idx.is_proven(&store), "refreshed here: a write may trust it");
        // This mount's own change, then the server's save of more: the
        // refresh sees ours among them and stays right.
        let v0 = store.data_version();
        let mine = block(&["default:dirt"]);
        let old = Block::decode(&store.get(at(5)).unwrap().unwrap()).unwrap();
        store.apply(&[Change::Put(at(5), mine.encode().unwrap())], &Note::default()).unwrap();
        idx.wrote(&store, v0, store.data_version());
        idx.changed(at(5), Some(&old), Some(&mine));
        store.put_behind_the_back(at(6), block(&["default:dirt", "default:stone"]).encode().unwrap());
        assert_eq!(shown(&idx, &store), fresh(&store));
        // A world-wide rename by this mount (the lists merged), then saves.
        for x in [8, 12] {
            let renamed = block(&["default:stone", "default:gold"]);
            store.apply(&[Change::Put(at(x), renamed.encode().unwrap())], &Note::default()).unwrap();
        }
        store.put_behind_the_back(at(16), block(&["default:stone", "default:gold"]).encode().unwrap());
        store.put_behind_the_back(at(20), block(&["default:stone", "default:gold"]).encode().unwrap());
        let rest: Vec<BlockPos> = idx.blocks_with(&store, b"default:chest").unwrap().to_vec();
        for p in rest {
            let mut b = Block::decode(&store.get(p).unwrap().unwrap()).unwrap();
            b.mapping.iter_mut().filter(|m| m.name == b"default:chest").for_each(|m| m.name = b"default:gold".to_vec());
            store.apply(&[Change::Put(p, b.encode().unwrap())], &Note::default()).unwrap();
        }
        idx.renamed(b"default:chest", b"default:gold");
        store.put_behind_the_back(at(3), block(&["default:stone", "default:gold"]).encode().unwrap());
        assert_eq!(shown(&idx, &store), fresh(&store));
        assert_eq!(idx.builds(), 1, "never a scan");
        // More than a page of the store's writes at once.
        for x in 100..2600 {
            store.put_behind_the_back(at(x % 2000), block(&["default:stone", "default:cobble"]).encode().unwrap());
        }
        assert_eq!(shown(&idx, &store), fresh(&store));
        assert_eq!(idx.builds(), 1, "never a scan");
    }

    /// A deletion by others, which the blocks written since cannot show,
    /// makes the index built again (the count tells); a version moved with
    /// nothing written (a live mount's overlay dropped once the server saved
    /// it) is no change.
    #[test]
    fn a_live_index_is_built_again_after_what_the_rows_cannot_show() {
        let d = tempfile::tempdir().unwrap();
        let at = |x: i16| BlockPos::new(x, 0, 0);
        let store = MemoryStore::with_blocks(
            (0..10).map(|x| (at(x), block(&["default:stone", "default:chest"]).encode().unwrap())),
        );
        let idx = NameIndex::open(d.path(), "live".into(), Duration::ZERO, Duration::ZERO).unwrap().refreshed_by_rows();
        assert_eq!(shown(&idx, &store), fresh(&store));
        store.delete_behind_the_back(at(3));
        store.put_behind_the_back(at(4), block(&["default:stone"]).encode().unwrap());
        assert_eq!(shown(&idx, &store), fresh(&store));
        assert_eq!((idx.builds(), refreshes(&idx)), (2, 0), "the count told of the deletion");
        store.update_in_place_behind_the_back(at(5), store.get(at(5)).unwrap().unwrap());
        assert_eq!(shown(&idx, &store), fresh(&store));
        assert_eq!((idx.builds(), refreshes(&idx)), (2, 1), "nothing written: taken in, no scan");
        // An index that is not a live mount's is built again whatever changed.
        let other = tempfile::tempdir().unwrap();
        let idx = NameIndex::open(other.path(), "offline".into(), Duration::ZERO, Duration::ZERO).unwrap();
        idx.names(&store).unwrap();
        store.put_behind_the_back(at(6), block(&["default:stone"]).encode().unwrap());
        assert_eq!(shown(&idx, &store), fresh(&store));
        assert_eq!((idx.builds(), refreshes(&idx)), (2, 0));
    }

    #[test]
    fn built_loaded_kept_current_and_rebuilt_after_outside_changes() {
        let d = tempfile::tempdir().unwrap();
        let (a, b, c) = (BlockPos::new(1, 0, 0), BlockPos::new(2, 0, 0), BlockPos::new(-5, 3, 9));
        let store = MemoryStore::with_blocks([
            (a, block(&["default:stone"]).encode().unwrap()),
            (b, block(&["default:stone", "default:chest"]).encode().unwrap()),
        ]);
        let ttl = Duration::ZERO;
        let idx = NameIndex::open(d.path(), "world".into(), ttl, Duration::from_secs(600)).unwrap();
        let names = idx.names(&store).unwrap();
        let get = |names: &[NameInfo], n: &str| names.iter().find(|i| i.name == n.as_bytes()).cloned();
        assert_eq!(get(&names, "default:stone").unwrap().blocks, 2);
        assert_eq!(get(&names, "air").unwrap().nodes, 4096 * 2 - 3);
        assert_eq!(*idx.blocks_with(&store, b"default:chest").unwrap(), vec![b]);
        // A commit through the mount: an override, still current.
        let v0 = store.data_version();
        let newc = block(&["default:chest"]);
        store.apply(&[Change::Put(c, newc.encode().unwrap())], &Note::default()).unwrap();
        idx.changed(c, None, Some(&newc));
        idx.wrote(&store, v0, store.data_version());
        assert_eq!(*idx.blocks_with(&store, b"default:chest").unwrap(), vec![c, b], "by packed position");
        // A second index on the same file loads it without a scan.
        let again = NameIndex::open(d.path(), "world".into(), ttl, Duration::from_secs(600)).unwrap();
        assert_eq!(*again.blocks_with(&store, b"default:chest").unwrap(), vec![c, b]);
        assert_eq!(again.names(&store).unwrap(), idx.names(&store).unwrap());
        // Another process deletes block b: the index is built again.
        store.apply(&[Change::Delete(b)], &Note::default()).unwrap();
        assert_eq!(*idx.blocks_with(&store, b"default:chest").unwrap(), vec![c]);
        assert!(!idx.has(&store, b"nothing:here").unwrap());
    }
}
