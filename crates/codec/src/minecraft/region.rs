//! Minecraft Java region files (`r.X.Z.mca`, the Anvil format): an 8 KiB
//! header (1024 big-endian locations, 3 bytes of 4 KiB sector offset and 1
//! byte of sector count, then 1024 timestamps), then each chunk in whole
//! sectors: a u32 length, a compression byte (1 gzip, 2 zlib, 3 none, 4
//! LZ4 in lz4-java's framing, `lz4block`; +128: the data is in the external
//! file `c.X.Z.mcc`), the data.
//! Chunk `i` of the header is chunk (x & 31, z & 31) with i = x + 32 z.
//! Pure: the kind reads and writes the files.

use crate::compress::{MAX_INFLATED, deflate_zlib, inflate_zlib};
use std::io::Read;

/// Bytes per sector: the header's offsets and counts are in sectors.
pub const SECTOR: usize = 4096;
/// Most sectors a chunk may take in the file (its count is one byte);
/// longer chunks go to an external `.mcc` file.
pub const MAX_SECTORS: usize = 255;

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

/// [`locations`] from the first 8 KiB of a file of `len` bytes.
pub fn locations_of(file: &[u8], len: usize) -> Result<Vec<(usize, usize, usize)>, String> {
    if len == 0 {
        return Ok(Vec::new()); // the game leaves empty region files
    }
    if len < 2 * SECTOR || file.len() < 2 * SECTOR {
        return Err(format!("{len} bytes: shorter than the 8192-byte header"));
    }
    let sectors = len.div_ceil(SECTOR);
    let mut used: Vec<(usize, usize, usize)> = Vec::new();
    for i in 0..1024 {
        let e = &file[4 * i..4 * i + 4];
        let (offset, count) = (u32::from_be_bytes([0, e[0], e[1], e[2]]) as usize, e[3] as usize);
        if offset == 0 && count == 0 {
            continue;
        }
        let (x, z) = (i % 32, i / 32);
        if offset < 2 || count == 0 || offset + count > sectors {
            return Err(format!(
                "chunk {x},{z} of the region: sectors {offset} to {} are not in the file's sectors 2 to {}",
                offset + count,
                sectors
            ));
        }
        used.push((i, offset, count));
    }
    let mut by_start = used.clone();
    by_start.sort_by_key(|u| u.1);
    for w in by_start.windows(2) {
        if w[0].1 + w[0].2 > w[1].1 {
            let (a, b) = (w[0].0, w[1].0);
            return Err(format!("chunks {},{} and {},{} of the region share sectors", a % 32, a / 32, b % 32, b / 32));
        }
    }
    Ok(used)
}

/// The stored chunk at header index `i` (None: not present).
pub fn raw_chunk(file: &[u8], i: usize) -> Result<Option<RawChunk>, String> {
    let Some(&(_, offset, count)) = locations(file)?.iter().find(|l| l.0 == i) else {
        return Ok(None);
    };
    let (x, z) = (i % 32, i / 32);
    let start = offset * SECTOR;
    let room = (count * SECTOR).min(file.len() - start);
    let head = file.get(start..start + 5).ok_or_else(|| format!("chunk {x},{z}: its sector is cut short"))?;
    let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    if len == 0 || len + 4 > room {
        return Err(format!("chunk {x},{z}: length {len} does not fit its {count} sector(s)"));
    }
    let kind = head[4];
    let (compression, external) = (kind & 0x7f, kind & 0x80 != 0);
    if !(1..=4).contains(&compression) {
        return Err(format!("chunk {x},{z}: unknown compression {kind}"));
    }
    let timestamp = file[4096 + 4 * i..].first_chunk::<4>().map_or(0, |b| u32::from_be_bytes(*b));
    let data = if external { Vec::new() } else { file[start + 5..start + 4 + len].to_vec() };
    Ok(Some(RawChunk { compression, external, data, timestamp }))
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
}
