//! LZ4 as Minecraft (1.20.5+, `region-file-compression=lz4`, a chunk's
//! compression type 4) stores it: the framing of lz4-java's
//! `LZ4BlockOutputStream` with its defaults. A stream is blocks of at most
//! 64 KiB of data, each with a 21-byte header:
//!
//! * the magic `LZ4Block` (8 bytes);
//! * a token: the method in the high nibble (0x10 stored as it is, 0x20 an
//!   LZ4 block) and in the low nibble the block size's log2 less 10 (6 for
//!   64 KiB);
//! * the stored length, the original length and the checksum, each a
//!   little-endian 32-bit integer; the checksum is XXH32 of the original
//!   bytes with seed 0x9747b28c, its top 4 bits cleared;
//!
//! then the stored bytes. A block whose LZ4 form is not shorter is stored
//! as it is. The stream ends with an empty block (method 0x10, lengths and
//! checksum 0). Facts from lz4-java's source; blocks are `lz4_flex`'s,
//! XXH32 is `twox-hash`'s.

/// Every block's first bytes.
pub const MAGIC: &[u8; 8] = b"LZ4Block";
const HEADER: usize = 21;
const LEVEL_BASE: u32 = 10;
const METHOD_RAW: u8 = 0x10;
const METHOD_LZ4: u8 = 0x20;
const SEED: u32 = 0x9747_b28c;
/// The block size of the game's streams (lz4-java's default).
const BLOCK: usize = 1 << 16;
/// The token's low nibble for [`BLOCK`].
const BLOCK_LEVEL: u8 = 6;

/// The checksum lz4-java's stream keeps of a block's original bytes.
pub fn checksum(data: &[u8]) -> u32 {
    twox_hash::XxHash32::oneshot(SEED, data) & 0x0fff_ffff
}

/// The little-endian u32 the first 4 bytes of `b` hold (0 past the end:
/// callers take 4 bytes first).
fn le32(b: &[u8]) -> u32 {
    b.first_chunk::<4>().map_or(0, |a| u32::from_le_bytes(*a))
}

/// Decode a whole stream (all of `data`: bytes after the end mark are
/// refused); at most `max` bytes of output.
pub fn decode(data: &[u8], max: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let head = data.get(at..at + HEADER).ok_or_else(|| match at == data.len() {
            true => format!("the LZ4 stream ends at byte {at} without its end mark"),
            false => format!("the LZ4 stream is cut short at byte {at} inside a block header"),
        })?;
        let header_at = at;
        let block = move |m: String| format!("LZ4 block at byte {header_at}: {m}");
        if &head[..8] != MAGIC {
            return Err(block("no LZ4Block magic".into()));
        }
        let (method, level) = (head[8] & 0xf0, LEVEL_BASE + (head[8] & 0x0f) as u32);
        let (stored, original, check) = (le32(&head[9..13]), le32(&head[13..17]), le32(&head[17..21]));
        let bad_lengths = original > 1 << level
            || stored > i32::MAX as u32
            || (original == 0) != (stored == 0)
            || (method == METHOD_RAW && original != stored);
        if bad_lengths || !matches!(method, METHOD_RAW | METHOD_LZ4) {
            return Err(block(format!(
                "a corrupt header (token {:#04x}, stored length {stored}, original length {original})",
                head[8]
            )));
        }
        at += HEADER;
        if original == 0 {
            if check != 0 {
                return Err(block(format!("an end mark with checksum {check:#x}, not 0")));
            }
            if at != data.len() {
                return Err(format!("{} bytes after the LZ4 stream's end mark", data.len() - at));
            }
            return Ok(out);
        }
        let body = data
            .get(at..at + stored as usize)
            .ok_or_else(|| block(format!("{stored} stored bytes, {} left", data.len() - at)))?;
        if out.len() + original as usize > max {
            return Err(format!("the LZ4 stream holds more than {max} bytes"));
        }
        let start = out.len();
        if method == METHOD_RAW {
            out.extend_from_slice(body);
        } else {
            out.resize(start + original as usize, 0);
            let n = lz4_flex::block::decompress_into(body, &mut out[start..]).map_err(|e| block(e.to_string()))?;
            if n != original as usize {
                return Err(block(format!("{n} bytes decompressed, the header says {original}")));
            }
        }
        let sum = checksum(&out[start..]);
        if sum != check {
            return Err(block(format!("checksum {check:#09x} stored, the data's is {sum:#09x}")));
        }
        at += stored as usize;
    }
}

/// Encode `data` as the game's stream does (64 KiB blocks, each stored as
/// LZ4 unless that is not shorter, then the end mark).
pub fn encode(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / 2 + HEADER);
    for piece in data.chunks(BLOCK) {
        let packed = lz4_flex::block::compress(piece);
        let (method, body) = match packed.len() < piece.len() {
            true => (METHOD_LZ4, &packed[..]),
            false => (METHOD_RAW, piece),
        };
        put_header(&mut out, method, body.len() as u32, piece.len() as u32, checksum(piece));
        out.extend_from_slice(body);
    }
    put_header(&mut out, METHOD_RAW, 0, 0, 0);
    out
}

fn put_header(out: &mut Vec<u8>, method: u8, stored: u32, original: u32, check: u32) {
    out.extend_from_slice(MAGIC);
    out.push(method | BLOCK_LEVEL);
    for v in [stored, original, check] {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_of_empty_small_and_many_blocks() {
        let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8 ^ (i / 7000) as u8).collect();
        for data in [&b""[..], b"hello hello hello hello", &big[..]] {
            let enc = encode(data);
            assert_eq!(&enc[..8], MAGIC);
            assert_eq!(decode(&enc, usize::MAX).unwrap(), data);
        }
        assert_eq!(encode(b"").len(), HEADER, "an empty stream is the end mark alone");
    }

    #[test]
    fn incompressible_blocks_are_stored_raw() {
        let mut x = 1u32;
        let noise: Vec<u8> = (0..1000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let enc = encode(&noise);
        assert_eq!(enc[8], METHOD_RAW | BLOCK_LEVEL);
        assert_eq!(decode(&enc, usize::MAX).unwrap(), noise);
    }

    #[test]
    fn damaged_streams_are_refused() {
        let enc = encode(b"minecraft:stone minecraft:stone minecraft:stone");
        let mut bad = enc.clone();
        bad[17] ^= 1; // the checksum
        assert!(decode(&bad, usize::MAX).unwrap_err().contains("checksum"));
        let mut bad = enc.clone();
        bad[0] = b'X';
        assert!(decode(&bad, usize::MAX).unwrap_err().contains("magic"));
        assert!(decode(&enc[..enc.len() - HEADER], usize::MAX).unwrap_err().contains("without its end mark"));
        assert!(decode(&enc[..30], usize::MAX).is_err());
        let mut more = enc.clone();
        more.push(0);
        assert!(decode(&more, usize::MAX).unwrap_err().contains("after the LZ4 stream's end mark"));
        assert!(decode(&enc, 10).unwrap_err().contains("more than 10 bytes"));
        let mut bad = enc.clone();
        bad[8] = 0x30 | BLOCK_LEVEL;
        assert!(decode(&bad, usize::MAX).unwrap_err().contains("corrupt header"));
    }
}
