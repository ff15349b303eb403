//! Blobs in packs: consecutive blob ids share one row of `packs`, their
//! bytes one after the other compressed with zstd (blocks repeat much of
//! each other; one row a blob would also cost a row's overhead each).
//! Each pack row also holds its blobs' SHA-256s and lengths, so `verify`
//! checks every blob and a snapshot finds the blobs the store has without
//! an index on a hash column.
//!
//! A prune that leaves some of a pack's blobs unneeded writes the pack
//! again without their bytes (length 0, hash all zero): ids never move,
//! and are never given out again (`meta.next_blob`).

use super::Hash;
use super::varint;
use parking_lot::Mutex;
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::HashMap;
use std::sync::Arc;

/// Raw bytes after which a pack is closed (one blob bigger than this is a
/// pack of its own).
const PACK_BYTES: usize = 64 * 1024;
/// zstd's level for packs: their bytes are mostly zstd frames already;
/// a higher level gains little and costs time on a first snapshot.
const PACK_LEVEL: i32 = 3;
/// How many unpacked packs a reader keeps.
const CACHE_PACKS: usize = 16;
/// The hash of a blob a prune removed.
pub(super) const REMOVED: Hash = [0; 32];

/// A row of `packs`: first id, count, hashes, sizes, packed bytes.
pub(super) type PackRow = (i64, i64, Vec<u8>, Vec<u8>, Vec<u8>);

/// A pack, unpacked: blob `first + i` is `data[offsets[i]..offsets[i + 1]]`.
pub(super) struct Unpacked {
    pub first: i64,
    pub hashes: Vec<u8>,
    pub offsets: Vec<usize>,
    pub data: Vec<u8>,
}

impl Unpacked {
    pub fn count(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn bytes(&self, i: usize) -> &[u8] {
        &self.data[self.offsets[i]..self.offsets[i + 1]]
    }

    pub fn hash(&self, i: usize) -> &[u8] {
        &self.hashes[i * 32..i * 32 + 32]
    }

    pub fn removed(&self, i: usize) -> bool {
        self.hash(i) == REMOVED
    }

    /// Blob `id`'s bytes, if this pack holds it (and no prune removed it).
    pub fn blob(&self, id: i64) -> Option<&[u8]> {
        let i = usize::try_from(id - self.first).ok().filter(|&i| i < self.count())?;
        (!self.removed(i)).then(|| self.bytes(i))
    }
}

/// Unpack the pack whose first blob is `first` from its columns.
pub(super) fn unpack(first: i64, count: i64, hashes: Vec<u8>, sizes: &[u8], packed: &[u8]) -> Result<Unpacked, String> {
    let what = || format!("the pack of blobs {first}..{}", first + count - 1);
    let n = usize::try_from(count).map_err(|_| format!("{}: a count of {count}", what()))?;
    if hashes.len() != n * 32 {
        return Err(format!("{}: {} bytes of hashes for {n} blobs", what(), hashes.len()));
    }
    let mut offsets = Vec::with_capacity(n + 1);
    offsets.push(0usize);
    let mut at = 0;
    for _ in 0..n {
        let size = varint::read(sizes, &mut at).ok_or_else(|| format!("{}: its lengths are cut short", what()))?;
        let end = offsets[offsets.len() - 1] + size as usize;
        offsets.push(end);
    }
    let total = offsets[n];
    let data = zstd::bulk::decompress(packed, total).map_err(|e| format!("{}: {e}", what()))?;
    if data.len() != total || at != sizes.len() {
        return Err(format!("{}: {} bytes unpacked, its lengths say {total}", what(), data.len()));
    }
    Ok(Unpacked { first, hashes, offsets, data })
}

const PACK_OF: &str =
    "SELECT first, count, hashes, sizes, data FROM packs WHERE first <= ?1 ORDER BY first DESC LIMIT 1";

fn read_pack(conn: &Connection, id: i64) -> Result<Option<Unpacked>, String> {
    let row = conn
        .prepare_cached(PACK_OF)
        .and_then(|mut s| {
            s.query_row([id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, Vec<u8>>(2)?,
                    r.get::<_, Vec<u8>>(3)?,
                    r.get::<_, Vec<u8>>(4)?,
                ))
            })
            .optional()
        })
        .map_err(|e| e.to_string())?;
    match row {
        Some((first, count, hashes, sizes, data)) if id < first + count => {
            unpack(first, count, hashes, &sizes, &data).map(Some)
        }
        _ => Ok(None),
    }
}

/// The packs a reader unpacked last (a mount reads the blocks of a
/// snapshot in key order, and their blobs sit mostly in the same packs).
#[derive(Default)]
pub(super) struct PackCache(Mutex<Vec<Arc<Unpacked>>>);

impl PackCache {
    /// Blob `id`'s bytes.
    pub fn blob(&self, conn: &Connection, id: i64) -> Result<Vec<u8>, String> {
        let missing = || format!("blob {id} is not in the store");
        {
            let mut cache = self.0.lock();
            if let Some(i) = cache.iter().position(|p| p.blob(id).is_some()) {
                let p = cache.remove(i);
                let out = p.blob(id).map(<[u8]>::to_vec);
                cache.insert(0, p);
                return out.ok_or_else(missing);
            }
        }
        let pack = Arc::new(read_pack(conn, id)?.ok_or_else(missing)?);
        let out = pack.blob(id).map(<[u8]>::to_vec).ok_or_else(missing)?;
        let mut cache = self.0.lock();
        cache.insert(0, pack);
        cache.truncate(CACHE_PACKS);
        Ok(out)
    }
}

/// Every blob's hash in the store: hash -> id.
pub(super) fn known_hashes(conn: &Connection) -> rusqlite::Result<HashMap<Hash, i64>> {
    let mut out = HashMap::new();
    let mut stmt = conn.prepare("SELECT first, hashes FROM packs")?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let first: i64 = r.get(0)?;
        let hashes = r.get_ref(1)?.as_blob()?;
        for (i, h) in hashes.chunks_exact(32).enumerate() {
            if h != REMOVED {
                let mut key = [0; 32];
                key.copy_from_slice(h);
                out.insert(key, first + i as i64);
            }
        }
    }
    Ok(out)
}

/// The next blob id to give out (ids are never given out twice).
pub(super) fn next_id(conn: &Connection) -> rusqlite::Result<i64> {
    let stored: Option<i64> =
        conn.query_row("SELECT value FROM meta WHERE key = 'next_blob'", [], |r| r.get(0)).optional()?;
    let packed: i64 = conn.query_row("SELECT coalesce(max(first + count), 1) FROM packs", [], |r| r.get(0))?;
    Ok(stored.unwrap_or(1).max(packed))
}

/// Write one pack row.
pub(super) fn write_pack(
    conn: &Connection,
    first: i64,
    hashes: &[u8],
    sizes: &[u8],
    raw: &[u8],
) -> rusqlite::Result<()> {
    let packed =
        zstd::bulk::compress(raw, PACK_LEVEL).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    conn.prepare_cached(
        "INSERT OR REPLACE INTO packs (first, count, hashes, sizes, data) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![first, (hashes.len() / 32) as i64, hashes, sizes, packed])?;
    Ok(())
}

/// New blobs, gathered into packs as they come.
pub(super) struct PackWriter {
    known: HashMap<Hash, i64>,
    next: i64,
    first: i64,
    hashes: Vec<u8>,
    sizes: Vec<u8>,
    raw: Vec<u8>,
    /// New blobs and their bytes so far.
    pub new_blobs: u64,
    pub new_bytes: u64,
}

impl PackWriter {
    /// A writer adding to the blobs of the store `conn`.
    pub fn new(conn: &Connection) -> rusqlite::Result<PackWriter> {
        let next = next_id(conn)?;
        Ok(PackWriter {
            known: known_hashes(conn)?,
            next,
            first: next,
            hashes: Vec::new(),
            sizes: Vec::new(),
            raw: Vec::new(),
            new_blobs: 0,
            new_bytes: 0,
        })
    }

    /// The id of the blob of `bytes`: the store's, or a new one.
    pub fn intern(&mut self, conn: &Connection, bytes: &[u8]) -> rusqlite::Result<i64> {
        let h = super::hash_of(bytes);
        if let Some(id) = self.known.get(&h) {
            return Ok(*id);
        }
        let id = self.next;
        self.next += 1;
        self.known.insert(h, id);
        self.hashes.extend_from_slice(&h);
        varint::write(bytes.len() as u64, &mut self.sizes);
        self.raw.extend_from_slice(bytes);
        self.new_blobs += 1;
        self.new_bytes += bytes.len() as u64;
        if self.raw.len() >= PACK_BYTES {
            self.flush(conn)?;
        }
        Ok(id)
    }

    /// Write the pack begun, if any, and the next id.
    pub fn flush(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        if !self.hashes.is_empty() {
            write_pack(conn, self.first, &self.hashes, &self.sizes, &self.raw)?;
            self.hashes.clear();
            self.sizes.clear();
            self.raw.clear();
        }
        self.first = self.next;
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('next_blob', ?1)", [self.next])?;
        Ok(())
    }
}
