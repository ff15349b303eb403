//! A subchunk of a Bedrock world (key tag 47): 16 x 16 x 16 blocks. The
//! value starts with its version:
//!
//! * 8 (1.3 to 1.17) and 9 (1.18+): a count of storage layers (9: then the
//!   subchunk's index, a signed byte), then each layer; 1 (1.2.13 to 1.3):
//!   one layer without a count. The second layer, where there is one, holds
//!   what shares a place with the first (the water of waterlogged blocks).
//! * a layer: one byte, bits per block << 1 (the low bit, "runtime ids",
//!   is never set on disk), the blocks packed in little-endian u32 words
//!   (32 / bits blocks a word, from the low bits, the rest of each word
//!   unused; no words for 0 bits), the palette's length (i32) and that many
//!   little-endian NBT compounds (`name`, `states`, `version`; `name` and
//!   `val` before 1.13). Blocks are in x, z, y order: x * 256 + z * 16 + y.
//! * 0 and 2 to 7 (1.0 to 1.2): 4096 block ids, then 2048 bytes of 4-bit
//!   data values (light after them is not read), read-only here.
//!
//! Before 1.0 a chunk kept all its blocks in one value, LegacyTerrain (tag
//! 48): 32768 ids (x * 2048 + z * 128 + y, y 0 to 127), 16384 bytes of data
//! values, then light, heights and biome colours; [`legacy_terrain`] cuts
//! it into eight subchunks of numeric ids.

use crate::minecraft::nbt::{self, Compound, Flavor};

/// The bits per block the game reads.
pub const BITS: [u8; 9] = [0, 1, 2, 3, 4, 5, 6, 8, 16];

/// One palette entry: the compound and the name of its root (the game's
/// is empty; kept so that a rewrite changes nothing).
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The name of its NBT root.
    pub root: String,
    /// The block state: `name`, `states`, `version`.
    pub state: Compound,
}

/// One storage layer: a palette and each block's index into it.
#[derive(Clone, Debug, PartialEq)]
pub struct Storage {
    /// Bits per index in the packed words.
    pub bits: u8,
    /// Its block states.
    pub palette: Vec<Entry>,
    /// 4096 indices, x * 256 + z * 16 + y.
    pub indices: Vec<u16>,
}

/// A subchunk of palettes (versions 1, 8, 9).
#[derive(Clone, Debug, PartialEq)]
pub struct SubChunk {
    /// The subchunk format version.
    pub version: u8,
    /// Version 9 stores its own index.
    pub index: Option<i8>,
    /// Its storage layers (the second, where there is one, holds water in blocks).
    pub layers: Vec<Storage>,
}

/// A subchunk of numeric ids (versions 0 and 2 to 7, and the sections of
/// legacy terrain), read-only.
#[derive(Clone, Debug, PartialEq)]
pub struct Numeric {
    /// The subchunk format version (0 for legacy terrain).
    pub version: u8,
    /// 4096 ids and 4-bit data values, x * 256 + z * 16 + y.
    pub ids: Vec<u8>,
    /// 4096 data values (4 bits each).
    pub data: Vec<u8>,
}

/// The eight subchunks (y 0 to 7) of a LegacyTerrain value.
pub fn legacy_terrain(b: &[u8]) -> Result<Vec<Numeric>, String> {
    if b.len() < 32768 + 16384 {
        return Err(format!("{} bytes: legacy terrain holds 32768 block ids and 16384 bytes of data", b.len()));
    }
    let data = expand_nibbles(&b[32768..32768 + 16384]);
    Ok((0..8)
        .map(|s| {
            let at = |i: usize| {
                let (x, y, z) = xyz(i);
                x * 2048 + z * 128 + s * 16 + y
            };
            Numeric {
                version: 0,
                ids: (0..4096).map(|i| b[at(i)]).collect(),
                data: (0..4096).map(|i| data[at(i)]).collect(),
            }
        })
        .collect())
}

#[derive(Clone, Debug, PartialEq)]
/// A subchunk as stored: with palettes or numeric ids.
pub enum Decoded {
    /// Versions 1, 8, 9.
    Paletted(SubChunk),
    /// Versions 0 and 2 to 7 (read-only).
    Numeric(Numeric),
}

/// Where block `i` (x * 256 + z * 16 + y) is.
pub fn xyz(i: usize) -> (usize, usize, usize) {
    (i >> 8, i & 15, (i >> 4) & 15)
}

/// Block (x, y, z)'s place in a layer.
pub fn index(x: usize, y: usize, z: usize) -> usize {
    (x << 8) | (z << 4) | y
}

fn words(bits: u8) -> usize {
    if bits == 0 { 0 } else { 4096usize.div_ceil(32 / bits as usize) }
}

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.b.len());
        let end = end.ok_or_else(|| format!("byte {}: the value ends inside {what} ({n} bytes needed)", self.pos))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.take(1, what)?[0])
    }
    fn i32(&mut self, what: &str) -> Result<i32, String> {
        let s = self.take(4, what)?;
        Ok(i32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
}

/// Unpack 4096 indices of `bits` from little-endian u32 words.
pub fn unpack(words: &[u8], bits: u8) -> Vec<u16> {
    if bits == 0 {
        return vec![0; 4096];
    }
    let per = 32 / bits as usize;
    let mask = (1u32 << bits) - 1;
    (0..4096)
        .map(|i| {
            let w = &words[(i / per) * 4..(i / per) * 4 + 4];
            let word = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            ((word >> ((i % per) * bits as usize)) & mask) as u16
        })
        .collect()
}

/// Pack 4096 indices into little-endian u32 words of `bits`.
pub fn pack(indices: &[u16], bits: u8) -> Vec<u8> {
    if bits == 0 {
        return Vec::new();
    }
    let per = 32 / bits as usize;
    let mut out = vec![0u32; words(bits)];
    for (i, &v) in indices.iter().enumerate() {
        out[i / per] |= (v as u32) << ((i % per) * bits as usize);
    }
    out.into_iter().flat_map(u32::to_le_bytes).collect()
}

/// The fewest bits per block the game reads for a palette of `len`
/// entries; 0 bits (no words) only in version 9, whose game reads it.
pub fn bits_for(len: usize, version: u8) -> u8 {
    let min = if version >= 9 { 0 } else { 1 };
    BITS.into_iter().filter(|b| *b >= min).find(|&b| len <= 1usize << b).unwrap_or(16)
}

fn storage(c: &mut Cursor<'_>, layer: usize) -> Result<Storage, String> {
    let at = c.pos;
    let head = c.u8("a layer's header")?;
    if head & 1 == 1 {
        return Err(format!(
            "byte {at}: layer {layer} says runtime ids (header {head:#04x}), which only the network uses"
        ));
    }
    let bits = head >> 1;
    if !BITS.contains(&bits) {
        return Err(format!("byte {at}: layer {layer} has {bits} bits per block; the game reads 0 to 6, 8 or 16"));
    }
    let packed = c.take(words(bits) * 4, "a layer's blocks")?;
    let at = c.pos;
    let n = c.i32("a palette's length")?;
    // Each entry takes at least 4 bytes (a compound's type, an empty
    // name, its end): a length past the data is refused before any
    // allocation.
    let n = usize::try_from(n)
        .ok()
        .filter(|n| *n >= 1 && n.saturating_mul(4) <= c.b.len() - c.pos)
        .ok_or_else(|| format!("byte {at}: layer {layer}'s palette length {n} is not 1 to what the value holds"))?;
    let mut palette = Vec::with_capacity(n);
    for i in 0..n {
        let start = c.pos;
        let (root, state, used) = nbt::decode_prefix(&c.b[start..], Flavor::Bedrock)
            .map_err(|e| format!("layer {layer} palette entry {i}: {}", nbt::shift_offset(&e, start)))?;
        c.pos += used;
        palette.push(Entry { root, state });
    }
    let indices = unpack(packed, bits);
    if let Some((i, v)) = indices.iter().enumerate().find(|(_, v)| **v as usize >= n) {
        let (x, y, z) = xyz(i);
        return Err(format!("layer {layer}: block {x},{y},{z} is palette index {v}, the palette has {n}"));
    }
    Ok(Storage { bits, palette, indices })
}

/// Decode a subchunk value.
pub fn decode(bytes: &[u8]) -> Result<Decoded, String> {
    let mut c = Cursor { b: bytes, pos: 0 };
    let version = c.u8("the version")?;
    let (count, index) = match version {
        1 => (1, None),
        8 => (c.u8("the count of layers")? as usize, None),
        9 => (c.u8("the count of layers")? as usize, Some(c.u8("the subchunk's index")? as i8)),
        0 | 2..=7 => {
            let ids = c.take(4096, "the block ids")?.to_vec();
            let nibbles = c.take(2048, "the data values")?;
            return Ok(Decoded::Numeric(Numeric { version, ids, data: expand_nibbles(nibbles) }));
        }
        v => {
            return Err(format!(
                "byte 0: subchunk version {v}; the game writes 1, 8 and 9 (palettes) and, before 1.2.13, 0 and 2 to 7 (ids)"
            ));
        }
    };
    let mut layers = Vec::with_capacity(count.min(8));
    for layer in 0..count {
        layers.push(storage(&mut c, layer)?);
    }
    if c.pos != bytes.len() {
        return Err(format!("byte {}: {} bytes after the last layer", c.pos, bytes.len() - c.pos));
    }
    Ok(Decoded::Paletted(SubChunk { version, index, layers }))
}

/// 4-bit values, two a byte (the low half first), one a byte.
pub fn expand_nibbles(b: &[u8]) -> Vec<u8> {
    b.iter().flat_map(|v| [v & 15, v >> 4]).collect()
}

/// The bytes of a subchunk of palettes. Each layer is written with the
/// bits it has (see [`SubChunk::repack`]); fails on a layer whose
/// indices do not fit them, a version 1 subchunk of more than one layer,
/// or NBT that cannot be written.
pub fn encode(s: &SubChunk) -> Result<Vec<u8>, String> {
    let mut out = vec![s.version];
    match s.version {
        1 if s.layers.len() == 1 => {}
        1 => return Err(format!("a version 1 subchunk holds one layer, not {}", s.layers.len())),
        8 | 9 => {
            out.push(u8::try_from(s.layers.len()).map_err(|_| "more than 255 layers".to_string())?);
            if s.version == 9 {
                out.push(s.index.unwrap_or(0) as u8);
            }
        }
        v => return Err(format!("subchunk version {v} is not written here (only 1, 8 and 9)")),
    }
    for (n, l) in s.layers.iter().enumerate() {
        if !BITS.contains(&l.bits) || l.palette.is_empty() || l.indices.len() != 4096 {
            return Err(format!(
                "layer {n}: {} bits, {} palette entries, {} blocks",
                l.bits,
                l.palette.len(),
                l.indices.len()
            ));
        }
        if let Some(v) =
            l.indices.iter().find(|v| **v as usize >= l.palette.len() || (l.bits < 16 && **v >= 1 << l.bits))
        {
            return Err(format!(
                "layer {n}: index {v} does not fit {} bits or a palette of {}",
                l.bits,
                l.palette.len()
            ));
        }
        out.push(l.bits << 1);
        out.extend(pack(&l.indices, l.bits));
        out.extend((l.palette.len() as i32).to_le_bytes());
        for e in &l.palette {
            out.extend(nbt::encode_as(&e.root, &e.state, Flavor::Bedrock)?);
        }
    }
    Ok(out)
}

impl Storage {
    /// The palette entry of block (x, y, z).
    pub fn at(&self, x: usize, y: usize, z: usize) -> &Compound {
        &self.palette[self.indices[index(x, y, z)] as usize].state
    }

    /// Set every block (x * 256 + z * 16 + y) to a state: the palette keeps
    /// its entries in their order (as the game's does) and gains new ones
    /// at its end; when it would outgrow 4096 entries, those no block uses
    /// are dropped first.
    pub fn set_all(&mut self, states: &[Compound]) {
        if self.palette.len() + states.len() > 4096 {
            self.compact();
        }
        for (i, s) in states.iter().enumerate() {
            let k = match self.palette.iter().position(|e| &e.state == s) {
                Some(k) => k,
                None => {
                    self.palette.push(Entry { root: String::new(), state: s.clone() });
                    self.palette.len() - 1
                }
            };
            self.indices[i] = k as u16;
        }
    }

    /// Drop palette entries no block uses.
    fn compact(&mut self) {
        let mut used = vec![false; self.palette.len()];
        for &i in &self.indices {
            used[i as usize] = true;
        }
        let mut map = vec![0u16; self.palette.len()];
        let mut kept = Vec::new();
        for (i, e) in self.palette.drain(..).enumerate() {
            if used[i] {
                map[i] = kept.len() as u16;
                kept.push(e);
            }
        }
        self.palette = kept;
        for i in self.indices.iter_mut() {
            *i = map[*i as usize];
        }
    }
}

impl SubChunk {
    /// Give each layer the fewest bits the game reads for its palette.
    pub fn repack(&mut self) {
        for l in &mut self.layers {
            l.bits = bits_for(l.palette.len(), self.version);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::minecraft::nbt::Tag;

    fn state(name: &str) -> Compound {
        Compound(vec![
            ("name".into(), Tag::String(name.into())),
            ("states".into(), Tag::Compound(Compound::default())),
            ("version".into(), Tag::Int(17959425)),
        ])
    }

    fn sample(version: u8, bits: u8, n: usize) -> SubChunk {
        let palette = (0..n).map(|i| Entry { root: String::new(), state: state(&format!("minecraft:b{i}")) }).collect();
        let indices = (0..4096).map(|i| (i * 7 % n) as u16).collect();
        let index = (version == 9).then_some(-4);
        SubChunk { version, index, layers: vec![Storage { bits, palette, indices }] }
    }

    #[test]
    fn every_width_round_trips() {
        for bits in BITS.into_iter().filter(|b| *b > 0) {
            let n = (1usize << bits).min(300);
            for version in [1, 8, 9] {
                let s = sample(version, bits, n);
                let bytes = encode(&s).unwrap();
                assert_eq!(decode(&bytes).unwrap(), Decoded::Paletted(s), "bits {bits} version {version}");
            }
        }
        let words = |b: u8| words(b);
        assert_eq!((words(3), words(5), words(6), words(16)), (410, 683, 820, 2048));
        let one = sample(9, 0, 1);
        let bytes = encode(&one).unwrap();
        assert_eq!(&bytes[..4], &[9, 1, 0xfc, 0]);
        assert_eq!(decode(&bytes).unwrap(), Decoded::Paletted(one));
    }

    #[test]
    fn the_fewest_bits_the_game_reads() {
        assert_eq!([1, 2, 3, 5, 9, 17, 33, 65, 257].map(|n| bits_for(n, 9)), [0, 1, 2, 3, 4, 5, 6, 8, 16]);
        assert_eq!(bits_for(1, 8), 1);
        let mut s = sample(9, 16, 3);
        s.repack();
        assert_eq!(s.layers[0].bits, 2);
    }

    #[test]
    fn bad_subchunks_are_refused_saying_where() {
        let bytes = encode(&sample(8, 4, 9)).unwrap();
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(decode(&extra).unwrap_err().contains("after the last layer"));
        let mut runtime = bytes.clone();
        runtime[2] |= 1;
        assert!(decode(&runtime).unwrap_err().contains("runtime ids"));
        let mut seven = bytes.clone();
        seven[2] = 7 << 1;
        assert!(decode(&seven).unwrap_err().contains("7 bits"));
        // A palette of 9 entries shrunk to 2: indices point past it.
        let mut s = sample(8, 4, 9);
        s.layers[0].palette.truncate(2);
        let e = decode(&encode(&s).unwrap_or_default()).err();
        assert!(encode(&s).is_err() && e.is_some());
        let mut lying = bytes.clone();
        let at = 3 + words(4) * 4;
        lying[at..at + 4].copy_from_slice(&i32::MAX.to_le_bytes());
        assert!(decode(&lying).unwrap_err().contains("palette length"));
        assert!(decode(&[10]).unwrap_err().contains("version 10"));
    }

    #[test]
    fn numeric_subchunks_read_ids_and_data() {
        let mut bytes = vec![0u8];
        bytes.extend((0..4096).map(|i| (i % 251) as u8));
        bytes.extend(std::iter::repeat_n(0x21, 2048));
        let Decoded::Numeric(n) = decode(&bytes).unwrap() else { panic!() };
        assert_eq!((n.ids[300], n.data[0], n.data[1]), (49, 1, 2));
        assert!(decode(&bytes[..5000]).is_err());
    }

    #[test]
    fn legacy_terrain_is_eight_subchunks() {
        let mut b = vec![0u8; 83200];
        // Block x=1, z=2, y=17: subchunk 1, y 1.
        let i = 2048 + 2 * 128 + 17;
        b[i] = 54;
        b[32768 + i / 2] = 0x50; // odd index: the high half
        let subs = legacy_terrain(&b).unwrap();
        assert_eq!(subs.len(), 8);
        assert_eq!((subs[1].ids[index(1, 1, 2)], subs[1].data[index(1, 1, 2)]), (54, 5));
        assert!(legacy_terrain(&b[..1000]).is_err());
    }

    #[test]
    fn set_all_keeps_the_palette_and_appends() {
        let mut s = sample(9, 2, 3);
        let mut states: Vec<Compound> =
            (0..4096).map(|i| s.layers[0].at(i >> 8, i & 15, (i >> 4) & 15).clone()).collect();
        states[5] = state("minecraft:new");
        s.layers[0].set_all(&states);
        assert_eq!(s.layers[0].palette.len(), 4);
        assert_eq!(s.layers[0].palette[3].state, state("minecraft:new"));
        s.repack();
        assert_eq!(s.layers[0].bits, 2);
        assert!(decode(&encode(&s).unwrap()).is_ok());
    }
}
