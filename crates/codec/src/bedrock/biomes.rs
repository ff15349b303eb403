//! A chunk's heights and biomes, read-only. Data3D (tag 43, 1.18+): 256
//! heights (little-endian i16, one per column, x * 16 + z... see
//! [`column`]) then one biome storage per subchunk from the bottom up, each
//! a header byte (bits per biome << 1, the low bit set: numeric ids), the
//! biomes packed as a subchunk's blocks are (x * 256 + z * 16 + y), and a
//! palette of i32 biome ids (0 bits: one id and no length); a header of
//! 0xFF repeats the storage below. Data2D (tag 45, before 1.18): the 256
//! heights, then 256 biome ids of one byte.

use super::subchunk::{BITS, unpack};

/// One subchunk's biomes: a palette of biome ids and each block's index.
#[derive(Clone, Debug, PartialEq)]
pub struct BiomeStorage {
    /// Its biome ids.
    pub palette: Vec<i32>,
    /// 4096 indices, x * 256 + z * 16 + y.
    pub indices: Vec<u16>,
}

impl BiomeStorage {
    /// The biome id of block `i` (x * 256 + z * 16 + y).
    pub fn at(&self, i: usize) -> i32 {
        self.palette[self.indices[i] as usize]
    }
}

/// A Data3D value: heights and the biomes of each subchunk from the
/// lowest (index 0 is the world's bottom: subchunk -4 in the overworld).
#[derive(Clone, Debug, PartialEq)]
pub struct Data3d {
    /// The height map: 256 heights, one per column.
    pub heights: Vec<i16>,
    /// Each subchunk's biomes, from the lowest.
    pub storages: Vec<BiomeStorage>,
}

/// A Data2D value.
#[derive(Clone, Debug, PartialEq)]
pub struct Data2d {
    /// The height map: 256 heights, one per column.
    pub heights: Vec<i16>,
    /// 256 biome ids, one per column.
    pub biomes: Vec<u8>,
}

/// Column (x, z)'s place in the 256 heights and 2D biomes: z * 16 + x.
pub fn column(x: usize, z: usize) -> usize {
    z * 16 + x
}

fn heights(b: &[u8]) -> Result<Vec<i16>, String> {
    let h = b.get(..512).ok_or_else(|| format!("{} bytes: the 256 heights take 512", b.len()))?;
    Ok(h.chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]])).collect())
}

fn i32_at(b: &[u8], at: usize, what: &str) -> Result<i32, String> {
    let s = b.get(at..at + 4).ok_or_else(|| format!("byte {at}: the value ends inside {what}"))?;
    Ok(i32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Decode a Data3D value.
pub fn decode_3d(b: &[u8]) -> Result<Data3d, String> {
    let heights = heights(b)?;
    let mut storages: Vec<BiomeStorage> = Vec::new();
    let mut at = 512;
    while at < b.len() {
        let head = b[at];
        let n = storages.len();
        if head == 0xff {
            let below = storages
                .last()
                .cloned()
                .ok_or_else(|| format!("byte {at}: storage 0 repeats the one below it, which there is not"))?;
            storages.push(below);
            at += 1;
            continue;
        }
        let bits = head >> 1;
        if head & 1 == 0 || !BITS.contains(&bits) {
            return Err(format!(
                "byte {at}: biome storage {n} has header {head:#04x}; the game writes bits << 1 | 1 (bits 0 to 6, 8 or 16) or 0xff"
            ));
        }
        at += 1;
        if bits == 0 {
            storages.push(BiomeStorage { palette: vec![i32_at(b, at, "a biome id")?], indices: vec![0; 4096] });
            at += 4;
            continue;
        }
        let len = 4096usize.div_ceil(32 / bits as usize) * 4;
        let words = b.get(at..at + len).ok_or_else(|| format!("byte {at}: the value ends inside biome storage {n}"))?;
        at += len;
        let count = i32_at(b, at, "a biome palette's length")?;
        at += 4;
        let count = usize::try_from(count).ok().filter(|c| *c >= 1 && c.saturating_mul(4) <= b.len() - at).ok_or_else(
            || format!("byte {}: biome storage {n}'s palette length {count} is not 1 to what the value holds", at - 4),
        )?;
        let palette = (0..count).map(|k| i32_at(b, at + 4 * k, "a biome id")).collect::<Result<Vec<_>, _>>()?;
        at += 4 * count;
        let indices = unpack(words, bits);
        if let Some((i, v)) = indices.iter().enumerate().find(|(_, v)| **v as usize >= count) {
            return Err(format!("biome storage {n}: entry {i} is palette index {v}, the palette has {count}"));
        }
        storages.push(BiomeStorage { palette, indices });
    }
    Ok(Data3d { heights, storages })
}

/// Decode a Data2D value.
pub fn decode_2d(b: &[u8]) -> Result<Data2d, String> {
    if b.len() != 768 {
        return Err(format!("{} bytes: Data2D is 512 bytes of heights and 256 of biomes", b.len()));
    }
    Ok(Data2d { heights: heights(b)?, biomes: b[512..].to_vec() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bedrock::subchunk::pack;

    #[test]
    fn storages_single_packed_and_repeated() {
        let mut b: Vec<u8> = (0..256i16).flat_map(|h| h.to_le_bytes()).collect();
        b.push(1); // 0 bits, one id
        b.extend(7i32.to_le_bytes());
        b.push(0xff); // the same again
        b.push(1 << 1 | 1); // 1 bit, two ids
        let idx: Vec<u16> = (0..4096).map(|i| (i % 2) as u16).collect();
        b.extend(pack(&idx, 1));
        b.extend(2i32.to_le_bytes());
        b.extend(1i32.to_le_bytes());
        b.extend(24i32.to_le_bytes());
        let d = decode_3d(&b).unwrap();
        assert_eq!(d.heights[255], 255);
        assert_eq!(d.storages.len(), 3);
        assert_eq!((d.storages[1].at(9), d.storages[2].at(0), d.storages[2].at(1)), (7, 1, 24));
        // Cut inside a storage (not between two, where the value may end).
        for cut in (513..517).chain(519..b.len()) {
            assert!(decode_3d(&b[..cut]).is_err(), "cut at {cut}");
        }
        assert!(
            decode_3d(&b[..512].iter().copied().chain([0xff]).collect::<Vec<_>>())
                .unwrap_err()
                .contains("which there is not")
        );
        assert!(decode_2d(&[0; 768]).is_ok() && decode_2d(&[0; 767]).is_err());
    }
}
