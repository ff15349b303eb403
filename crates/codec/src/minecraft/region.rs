//! Minecraft Java region files (`r.X.Z.mca`, the Anvil format): an 8 KiB
//! header (1024 big-endian locations, 3 bytes of 4 KiB sector offset and 1
//! byte of sector count, then 1024 timestamps), then each chunk in whole
//! sectors: a u32 length, a compression byte (1 gzip, 2 zlib, 3 none, 4
//! LZ4 in lz4-java's framing, `lz4block`; +128: the data is in the external
//! file `c.X.Z.mcc`), the data.
//! Chunk `i` of the header is chunk (x & 31, z & 31) with i = x + 32 z.
//! A header is read whole ([`locations`], refused at its first wrong
//! entry) or entry by entry ([`located`], each entry with its problem, so
//! that one wrong entry hides no other chunk). A file is written whole
//! ([`build`], chunks laid out one after another) or one chunk at a time
//! as the game writes ([`put`], every other byte kept).
//! Pure: the kind reads and writes the files.

use crate::compress::{MAX_INFLATED, deflate_zlib, inflate_zlib};
use std::io::Read;

/// Bytes per sector: the header's offsets and counts are in sectors.
pub const SECTOR: usize = 4096;
/// Most sectors a chunk may take in the file (its count is one byte);
/// longer chunks go to an external `.mcc` file.
pub const MAX_SECTORS: usize = 255;
/// The last sector a header entry can name (3 bytes).
const MAX_OFFSET: usize = 0xff_ffff;
/// How far [`put`] grows a file at most: wrong entries may claim sectors
/// past its end, which are skipped, but not without bound.
const MAX_GROWTH: usize = 16 << 20;

/// One chunk as stored: its compression and its compressed bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawChunk {
    /// 1 gzip, 2 zlib, 3 none, 4 LZ4 (without the external bit).
    pub compression: u8,
    /// The data lives in `c.X.Z.mcc` (`data` is then what that file holds).
    pub external: bool,
    /// The compressed bytes: what follows the length and compression byte,
    /// or the `.mcc` file's content when `external`.
    pub data: Vec<u8>,
    /// When the chunk was last saved (Unix seconds, from the header).
    pub timestamp: u32,
}

/// Where each present chunk is: (header index, first sector, sector count).
pub fn locations(file: &[u8]) -> Result<Vec<(usize, usize, usize)>, String> {
    locations_of(file, file.len())
}

/// [`locations`] from the first 8 KiB of a file of `len` bytes: refused
/// whole at the first entry that is wrong (see [`located`] for a reading
/// that keeps the others).
pub fn locations_of(file: &[u8], len: usize) -> Result<Vec<(usize, usize, usize)>, String> {
    if len != 0 && (len < 2 * SECTOR || file.len() < 2 * SECTOR) {
        return Err(format!("{len} bytes: shorter than the 8192-byte header"));
    }
    let all = located(file, len);
    if let Some(bad) = all.iter().find(|l| l.problem.is_some()) {
        let (x, z) = (bad.index % 32, bad.index / 32);
        return Err(format!("chunk {x},{z} of the region: {}", bad.problem.clone().unwrap_or_default()));
    }
    if let Some(l) = all.iter().find(|l| !l.shares_with.is_empty()) {
        let (a, b) = (l.index, l.shares_with[0]);
        return Err(format!("chunks {},{} and {},{} of the region share sectors", a % 32, a / 32, b % 32, b / 32));
    }
    Ok(all.into_iter().map(|l| (l.index, l.offset, l.count)).collect())
}

/// One chunk the header lists, and what is wrong with its place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    /// Its header index (x + 32 z within the region).
    pub index: usize,
    /// Its first sector and its number of sectors, as the header says.
    pub offset: usize,
    /// Its number of sectors.
    pub count: usize,
    /// Why its bytes are not where the header says: sectors in the header
    /// or past the end of the file, none at all, a header cut short.
    pub problem: Option<String>,
    /// The other chunks whose sectors overlap its own (header indices).
    pub shares_with: Vec<usize>,
}

impl Located {
    /// Its place in the file as bytes (what lies past the end is not).
    pub fn bytes<'f>(&self, file: &'f [u8]) -> &'f [u8] {
        let start = (self.offset * SECTOR).min(file.len());
        let end = ((self.offset + self.count) * SECTOR).min(file.len());
        &file[start..end]
    }
}

/// Every chunk the header of a region file of `len` bytes lists (`head`:
/// its first bytes, up to 8 KiB), each with what is wrong with its place:
/// one wrong entry leaves the others readable. A header cut short lists
/// the entries it holds, each with the problem (the game's sectors start
/// after the header, so none of them is in the file).
pub fn located(head: &[u8], len: usize) -> Vec<Located> {
    let sectors = len.div_ceil(SECTOR);
    let entries = (head.len().min(len).min(SECTOR)) / 4;
    let mut out: Vec<Located> = Vec::new();
    for i in 0..entries {
        let e = &head[4 * i..4 * i + 4];
        let (offset, count) = (u32::from_be_bytes([0, e[0], e[1], e[2]]) as usize, e[3] as usize);
        if offset == 0 && count == 0 {
            continue;
        }
        let problem = if len < 2 * SECTOR {
            Some(format!("the region file is {len} bytes, shorter than its 8192-byte header"))
        } else if offset < 2 || count == 0 || offset + count > sectors {
            Some(format!("sectors {offset} to {} are not in the file's sectors 2 to {sectors}", offset + count))
        } else {
            None
        };
        out.push(Located { index: i, offset, count, problem, shares_with: Vec::new() });
    }
    mark_shared(&mut out);
    out
}

/// Note in each entry the others whose sectors overlap its own (entries
/// whose sectors are not in the file take part too: they claim them).
fn mark_shared(all: &mut [Located]) {
    let mut by_start: Vec<usize> = (0..all.len()).filter(|&k| all[k].count > 0).collect();
    by_start.sort_by_key(|&k| all[k].offset);
    for (n, &a) in by_start.iter().enumerate() {
        let end = all[a].offset + all[a].count;
        let overlapping: Vec<usize> = by_start[n + 1..].iter().copied().take_while(|&b| all[b].offset < end).collect();
        for b in overlapping {
            let (ia, ib) = (all[a].index, all[b].index);
            all[a].shares_with.push(ib);
            all[b].shares_with.push(ia);
        }
    }
}

/// The stored chunk at header index `i` (None: not present).
pub fn raw_chunk(file: &[u8], i: usize) -> Result<Option<RawChunk>, String> {
    let Some(&(_, offset, count)) = locations(file)?.iter().find(|l| l.0 == i) else {
        return Ok(None);
    };
    let at = Located { index: i, offset, count, problem: None, shares_with: Vec::new() };
    let (x, z) = (i % 32, i / 32);
    read_chunk(at.bytes(file), timestamp_of(file, i)).map(Some).map_err(|e| format!("chunk {x},{z}: {e}"))
}

/// The timestamp the header gives chunk `i` (0 if the header is cut short).
pub fn timestamp_of(file: &[u8], i: usize) -> u32 {
    file.get(SECTOR + 4 * i..SECTOR + 4 * i + 4).map_or(0, |t| u32::from_be_bytes([t[0], t[1], t[2], t[3]]))
}

/// The chunk at header index `i` from its sectors' bytes (`sectors`: from
/// its first sector to the end of its last one, or of the file). An error
/// says what is wrong, not which chunk (the caller knows it).
pub fn read_chunk(sectors: &[u8], timestamp: u32) -> Result<RawChunk, String> {
    let head = sectors.get(..5).ok_or("its sector is cut short")?;
    let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    if len == 0 || len + 4 > sectors.len() {
        let count = sectors.len().div_ceil(SECTOR);
        return Err(format!("length {len} does not fit its {count} sector(s)"));
    }
    let kind = head[4];
    let (compression, external) = (kind & 0x7f, kind & 0x80 != 0);
    if !(1..=4).contains(&compression) {
        return Err(format!("unknown compression {kind}"));
    }
    let data = if external { Vec::new() } else { sectors[5..4 + len].to_vec() };
    Ok(RawChunk { compression, external, data, timestamp })
}

/// The chunk's NBT bytes. At most 64 MiB are inflated.
pub fn decompress(c: &RawChunk) -> Result<Vec<u8>, String> {
    match c.compression {
        1 => {
            let mut out = Vec::new();
            let d = flate2::read::GzDecoder::new(&c.data[..]);
            d.take(MAX_INFLATED as u64 + 1).read_to_end(&mut out).map_err(|e| format!("bad gzip data: {e}"))?;
            if out.len() > MAX_INFLATED {
                return Err(format!("the chunk inflates to more than {MAX_INFLATED} bytes"));
            }
            Ok(out)
        }
        2 => {
            let (out, used) = inflate_zlib(&c.data, 0, "the chunk", c.data.len() * 4).map_err(|e| e.message)?;
            match used == c.data.len() {
                true => Ok(out),
                false => Err(format!("{} bytes after the chunk's zlib stream", c.data.len() - used)),
            }
        }
        3 => Ok(c.data.clone()),
        4 => super::lz4block::decode(&c.data, MAX_INFLATED),
        n => Err(format!("unknown compression {n}")),
    }
}

/// A chunk's NBT bytes compressed as `compression` says (1 gzip, 2 zlib,
/// 3 none, 4 LZ4; anything else: zlib, the game's default).
#[allow(clippy::expect_used, reason = "compressing into memory fails only when memory does, which aborts anyway")]
pub fn compress_as(nbt: &[u8], compression: u8) -> (u8, Vec<u8>) {
    match compression {
        1 => {
            use std::io::Write;
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(nbt).expect("writing to memory");
            (1, e.finish().expect("writing to memory"))
        }
        3 => (3, nbt.to_vec()),
        4 => (4, super::lz4block::encode(nbt)),
        _ => (2, deflate_zlib(nbt)),
    }
}

/// A chunk's NBT bytes stored as the game stores new chunks (zlib).
pub fn compress(nbt: &[u8], timestamp: u32) -> RawChunk {
    RawChunk { compression: 2, external: false, data: deflate_zlib(nbt), timestamp }
}

/// A region file holding `chunks` (header index, chunk), laid out one after
/// another from sector 2, each padded to whole sectors. A chunk too long
/// for 255 sectors is marked external: its data is returned beside the
/// file, for `c.X.Z.mcc`.
pub fn build(chunks: &[(usize, RawChunk)]) -> (Vec<u8>, Vec<(usize, Vec<u8>)>) {
    let mut file = vec![0u8; 2 * SECTOR];
    let mut external = Vec::new();
    for (i, c) in chunks {
        let outside = c.external || c.data.len() + 5 > MAX_SECTORS * SECTOR;
        let body: &[u8] = if outside { &[] } else { &c.data };
        let offset = file.len() / SECTOR;
        file.extend(((body.len() + 1) as u32).to_be_bytes());
        file.push(c.compression | if outside { 0x80 } else { 0 });
        file.extend(body);
        file.resize(file.len().div_ceil(SECTOR) * SECTOR, 0);
        let count = file.len() / SECTOR - offset;
        let loc = (offset as u32) << 8 | count as u32;
        file[4 * i..4 * i + 4].copy_from_slice(&loc.to_be_bytes());
        file[SECTOR + 4 * i..SECTOR + 4 * i + 4].copy_from_slice(&c.timestamp.to_be_bytes());
        if outside {
            external.push((*i, c.data.clone()));
        }
    }
    (file, external)
}

/// `file` with chunk `i` stored as `chunk` and every byte that does not
/// hold it kept as it was, as the game stores a chunk: in its own sectors
/// when it fits them and no other entry claims them, else in the first run
/// of sectors no entry claims (the file grows at its end if need be; the
/// chunk's old sectors are left as they were, unclaimed); the rest of its
/// last sector is zeros; its header entry and timestamp set. A chunk too
/// long for 255 sectors is marked external: its data is returned, for
/// `c.X.Z.mcc`. Entries that are wrong keep claiming their sectors, so a
/// chunk that cannot be read keeps its bytes.
pub fn put(file: &[u8], i: usize, chunk: &RawChunk) -> Result<(Vec<u8>, Option<Vec<u8>>), String> {
    if file.len() < 2 * SECTOR || i >= 1024 {
        return Err(format!("{} bytes: shorter than the 8192-byte header", file.len()));
    }
    let outside = chunk.external || chunk.data.len() + 5 > MAX_SECTORS * SECTOR;
    let body: &[u8] = if outside { &[] } else { &chunk.data };
    let need = (body.len() + 5).div_ceil(SECTOR);
    let all = located(file, file.len());
    let claimed: Vec<(usize, usize)> =
        all.iter().filter(|l| l.index != i).map(|l| (l.offset, l.offset + l.count)).chain([(0, 2)]).collect();
    let free = |start: usize| claimed.iter().all(|&(a, b)| start + need <= a || b <= start);
    let own = all.iter().find(|l| l.index == i && l.problem.is_none() && l.count >= need).map(|l| l.offset);
    let mut starts: Vec<usize> = own.into_iter().chain(claimed.iter().map(|c| c.1)).collect();
    starts[usize::from(own.is_some())..].sort_unstable();
    // The end of the last claimed sectors is always free, so one is found.
    let last = claimed.iter().map(|c| c.1).max().unwrap_or(2);
    let start = starts.into_iter().find(|&s| free(s)).unwrap_or(last);
    let end = (start + need) * SECTOR;
    if start > MAX_OFFSET - need || end > file.len() + MAX_GROWTH {
        return Err(format!(
            "no room for the chunk: the header claims the sectors up to {start}, far past the file's end"
        ));
    }
    let mut out = file.to_vec();
    if out.len() < end {
        out.resize(end, 0);
    }
    let at = start * SECTOR;
    out[at..at + 4].copy_from_slice(&((body.len() + 1) as u32).to_be_bytes());
    out[at + 4] = chunk.compression | if outside { 0x80 } else { 0 };
    out[at + 5..at + 5 + body.len()].copy_from_slice(body);
    out[at + 5 + body.len()..end].fill(0);
    let loc = (start as u32) << 8 | need as u32;
    out[4 * i..4 * i + 4].copy_from_slice(&loc.to_be_bytes());
    out[SECTOR + 4 * i..SECTOR + 4 * i + 4].copy_from_slice(&chunk.timestamp.to_be_bytes());
    Ok((out, outside.then(|| chunk.data.clone())))
}

/// Every present chunk of a region file, in header order (external ones
/// with empty data: the caller reads their `.mcc`).
pub fn all_chunks(file: &[u8]) -> Result<Vec<(usize, RawChunk)>, String> {
    let mut out = Vec::new();
    for (i, _, _) in locations(file)? {
        let chunk = raw_chunk(file, i)?.ok_or_else(|| format!("chunk {i} of the header is not in the file"))?;
        out.push((i, chunk));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_then_read_gives_the_chunks_back() {
        let small = compress(b"\x0a\x00\x00\x00", 7);
        let big = RawChunk { compression: 3, external: false, data: vec![1; 300 * SECTOR], timestamp: 9 };
        let (file, ext) = build(&[(0, small.clone()), (33, big.clone())]);
        assert_eq!(raw_chunk(&file, 0).unwrap(), Some(small.clone()));
        let stub = raw_chunk(&file, 33).unwrap().unwrap();
        assert!(stub.external && stub.data.is_empty() && stub.compression == 3);
        assert_eq!(ext, vec![(33, big.data)]);
        assert_eq!(raw_chunk(&file, 5).unwrap(), None);
        assert_eq!(decompress(&small).unwrap(), b"\x0a\x00\x00\x00");
    }

    #[test]
    fn bad_headers_are_refused() {
        let (mut file, _) = build(&[(0, compress(b"x", 0)), (1, compress(b"y", 0))]);
        assert!(locations(&file[..100]).unwrap_err().contains("header"));
        file[4..8].copy_from_slice(&[0, 0, 2, 1]); // chunk 1 on chunk 0's sector
        assert!(locations(&file).unwrap_err().contains("share"));
        file[4..8].copy_from_slice(&[0, 0, 9, 1]);
        assert!(locations(&file).unwrap_err().contains("not in the file"));
        file[4..8].copy_from_slice(&[0, 0, 3, 1]);
        file[3 * SECTOR + 4] = 9;
        assert!(raw_chunk(&file, 1).unwrap_err().contains("compression"));
        file[3 * SECTOR..3 * SECTOR + 4].copy_from_slice(&5000u32.to_be_bytes());
        assert!(raw_chunk(&file, 1).unwrap_err().contains("does not fit"));
    }

    #[test]
    fn one_wrong_entry_leaves_the_others_readable() {
        let chunks: Vec<(usize, RawChunk)> = (0..3).map(|i| (i * 40, compress(&[i as u8; 100], 5))).collect();
        let (mut file, _) = build(&chunks);
        file[40 * 4..40 * 4 + 4].copy_from_slice(&(99u32 << 8 | 1).to_be_bytes());
        let second = <[u8; 4]>::try_from(&file[80 * 4..80 * 4 + 4]).unwrap();
        file[0..4].copy_from_slice(&second);
        let all = located(&file, file.len());
        assert_eq!(all.iter().map(|l| l.index).collect::<Vec<_>>(), [0, 40, 80]);
        assert!(all[1].problem.as_deref().unwrap().contains("not in the file"), "{:?}", all[1]);
        assert_eq!((all[0].shares_with.clone(), all[2].shares_with.clone()), (vec![80], vec![0]));
        assert!(all[1].bytes(&file).is_empty());
        assert_eq!(read_chunk(all[2].bytes(&file), 0).unwrap().data, chunks[2].1.data);
        assert!(locations(&file).is_err(), "the strict reading still refuses the file");
        // A header cut short lists what it holds, each entry wrong.
        let cut = located(&file[..3000], 3000);
        assert!(cut.len() == 3 && cut.iter().all(|l| l.problem.as_deref().unwrap().contains("3000 bytes")));
    }

    #[test]
    fn put_changes_only_the_chunk_it_stores() {
        let chunks: Vec<(usize, RawChunk)> = (0..3).map(|i| (i, compress(&[i as u8; 3000], 5))).collect();
        let (mut file, _) = build(&chunks);
        file.extend([0xEE; SECTOR]); // a free sector holding old bytes
        let fits = RawChunk { compression: 3, external: false, data: vec![7; 100], timestamp: 9 };
        let (same, ext) = put(&file, 1, &fits).unwrap();
        assert!(ext.is_none());
        assert_eq!(same.len(), file.len());
        assert_eq!(raw_chunk(&same, 1).unwrap().unwrap(), fits);
        let differing: Vec<usize> = (0..file.len()).filter(|&k| file[k] != same[k]).collect();
        let own = 3 * SECTOR..4 * SECTOR;
        assert!(
            differing.iter().all(|k| own.contains(k) || (4..8).contains(k) || (SECTOR + 4..SECTOR + 8).contains(k))
        );
        // Too big for its sector: the first free run (the spare one and
        // past the end), its old sector left as it was.
        let big = RawChunk { compression: 3, external: false, data: vec![8; 5000], timestamp: 9 };
        let (moved, _) = put(&file, 1, &big).unwrap();
        assert_eq!(&moved[3 * SECTOR..4 * SECTOR], &file[3 * SECTOR..4 * SECTOR]);
        assert_eq!(moved[4..8], (5u32 << 8 | 2).to_be_bytes());
        assert_eq!(raw_chunk(&moved, 1).unwrap().unwrap(), big);
        assert_eq!(raw_chunk(&moved, 2).unwrap(), raw_chunk(&file, 2).unwrap());
        // Sectors a wrong entry claims past the end are not used.
        let mut claimed = file.clone();
        claimed[40..44].copy_from_slice(&(6u32 << 8 | 3).to_be_bytes());
        let (skipped, _) = put(&claimed, 1, &big).unwrap();
        assert_eq!(skipped[4..8], (9u32 << 8 | 2).to_be_bytes());
        let huge = RawChunk { compression: 3, external: false, data: vec![1; 256 * SECTOR], timestamp: 1 };
        let (_, outside) = put(&file, 0, &huge).unwrap();
        assert_eq!(outside, Some(huge.data));
    }
}
