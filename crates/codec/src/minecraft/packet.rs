//! The data of a Minecraft Java "Chunk Data" packet, pure: the present
//! sections in ascending Y, then the biomes when the chunk is ground-up
//! continuous. The format is wiki.vg's "Chunk Format" page, now
//! <https://minecraft.wiki/w/Java_Edition_protocol/Chunk_format> (it shows
//! the newest version; 1.9 to 1.16 are in its history), as prismarine-chunk
//! implements it (`src/pc/1.9/` of
//! <https://github.com/PrismarineJS/prismarine-chunk>).
//!
//! * 1.9 to 1.12 (`Layout::Spanning`): per section u8 bits, VarInt palette
//!   length and entries (length 0 in the 13-bit direct form), VarInt long
//!   count, the packed states (an entry that crosses a long boundary goes
//!   on in the next long), block light, and sky light where the dimension
//!   has a sky; biomes are 256 bytes.
//! * 1.16 (`Layout::Padded`): an i16 count of non-air blocks first, no
//!   light; entries never span (the top bits of each long are padding);
//!   biomes are not in the data. Only palette sections (4 to 8 bits).
//!
//! Entries and light go y*256 + z*16 + x.

/// How the bytes are laid out: which Minecraft versions wrote them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// 1.9 to 1.15 packing; 1.9 to 1.12 sections (light included).
    Spanning,
    /// 1.16: no spanning, a block count, no light.
    Padded,
}

/// What the packet's fields around the data say about it: the data alone
/// does not tell which sections, light and biomes it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Which versions' layout the data is in.
    pub layout: Layout,
    /// Bit n set: section n (y 16n to 16n+15) is present.
    pub bitmap: u32,
    /// Sections carry sky light (the overworld).
    pub sky_light: bool,
    /// Ground-up continuous: biomes follow (Spanning layout only).
    pub biomes: bool,
}

/// One 16×16×16 section of the chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// The section's place in the column: it holds y 16·`y` to 16·`y`+15.
    pub y: u8,
    /// Bits per block as stored (4 to 8: palette; 13: direct).
    pub bits: u8,
    /// The palette (empty in the direct form).
    pub palette: Vec<u32>,
    /// 4096 global block-state ids (id * 16 + meta before 1.13).
    pub states: Vec<u32>,
    /// Each block's palette index as stored, when known: a palette may
    /// hold a state twice (real servers' chunks do), and which copy a
    /// block points at is kept so that the chunk re-encodes to its bytes.
    /// Empty after an edit, or in the direct form: a state's first place.
    pub entries: Vec<u32>,
    /// 2048 bytes each (Spanning layout).
    pub block_light: Vec<u8>,
    /// 2048 bytes (Spanning layout, when the shape has sky light), else empty.
    pub sky_light: Vec<u8>,
    /// The stored non-air count (Padded layout).
    pub block_count: i16,
}

/// The data of one Chunk Data packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// The present sections, in ascending `y`.
    pub sections: Vec<Section>,
    /// 256 bytes, z*16 + x (when the shape has biomes).
    pub biomes: Vec<u8>,
}

/// The direct width of 1.9 to 1.12.
pub const DIRECT_BITS: u8 = 13;

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], String> {
        let s = self
            .b
            .get(self.pos..self.pos + n)
            .ok_or_else(|| format!("byte {}: the data ends inside {what}", self.pos))?;
        self.pos += n;
        Ok(s)
    }
    fn varint(&mut self, what: &str) -> Result<u32, String> {
        let mut v: u32 = 0;
        let start = self.pos;
        for i in 0..5 {
            let b = self.take(1, what)?[0];
            // Only the shortest form re-encodes to the same bytes (and the
            // fifth byte has room for 4 bits of a u32).
            if (i > 0 && b == 0) || (i == 4 && b > 0x0f) {
                return Err(format!("byte {start}: {what} is not a VarInt in its shortest form"));
            }
            v |= ((b & 0x7f) as u32) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!("byte {}: {what} is a VarInt longer than 5 bytes", self.pos))
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// Longs needed for 4096 entries of `bits`.
pub fn long_count(layout: Layout, bits: u8) -> usize {
    match layout {
        Layout::Spanning => (4096 * bits as usize).div_ceil(64),
        Layout::Padded => 4096usize.div_ceil(64 / bits as usize),
    }
}

fn unpack(longs: &[u64], bits: u8, layout: Layout) -> Vec<u32> {
    let mask = (1u64 << bits) - 1;
    let b = bits as usize;
    (0..4096)
        .map(|i| match layout {
            Layout::Spanning => {
                let bit = i * b;
                let (l, off) = (bit / 64, bit % 64);
                let mut v = longs[l] >> off;
                if off + b > 64 {
                    v |= longs[l + 1] << (64 - off);
                }
                (v & mask) as u32
            }
            Layout::Padded => {
                let per = 64 / b;
                ((longs[i / per] >> ((i % per) * b)) & mask) as u32
            }
        })
        .collect()
}

fn pack(entries: &[u32], bits: u8, layout: Layout) -> Vec<u64> {
    let b = bits as usize;
    let mut longs = vec![0u64; long_count(layout, bits)];
    for (i, &e) in entries.iter().enumerate() {
        let v = e as u64;
        match layout {
            Layout::Spanning => {
                let bit = i * b;
                let (l, off) = (bit / 64, bit % 64);
                longs[l] |= v << off;
                if off + b > 64 {
                    longs[l + 1] |= v >> (64 - off);
                }
            }
            Layout::Padded => {
                let per = 64 / b;
                longs[i / per] |= v << ((i % per) * b);
            }
        }
    }
    longs
}

impl Chunk {
    /// Reads the data of a packet of `shape`; an error says which section and
    /// field is wrong, or that bytes are left over.
    pub fn decode(data: &[u8], shape: Shape) -> Result<Chunk, String> {
        let mut r = Reader { b: data, pos: 0 };
        let mut sections = Vec::new();
        for y in 0..32u8 {
            if shape.bitmap & (1 << y) == 0 {
                continue;
            }
            let what = |w: &str| format!("section {y}'s {w}");
            let block_count = match shape.layout {
                Layout::Padded => {
                    let b = r.take(2, &what("block count"))?;
                    i16::from_be_bytes([b[0], b[1]])
                }
                Layout::Spanning => 0,
            };
            let bits = r.take(1, &what("bits per block"))?[0];
            let direct = bits > 8;
            if bits == 0 || (direct && (shape.layout == Layout::Padded || bits != DIRECT_BITS)) {
                return Err(format!(
                    "section {y}: {bits} bits per block (this reads 1 to 8, or {DIRECT_BITS} before 1.13){}",
                    if shape.layout == Layout::Spanning { "; a 1.16 chunk? mount with -o version=1.16" } else { "" }
                ));
            }
            // The client reads fewer than 4 bits as 4; `bits` keeps what was stored.
            let eff = bits.max(4);
            let n = r.varint(&what("palette length"))? as usize;
            if n > 4096 || (direct && n != 0) || (!direct && n > 1 << eff) {
                return Err(format!(
                    "section {y}: a palette of {n} entries{}",
                    if direct { " in the direct form" } else { "" }
                ));
            }
            let mut palette = Vec::with_capacity(n);
            for _ in 0..n {
                palette.push(r.varint(&what("palette"))?);
            }
            let longs_n = r.varint(&what("long count"))? as usize;
            let want = long_count(shape.layout, eff);
            if longs_n != want {
                return Err(format!(
                    "section {y}: {longs_n} longs for {eff}-bit entries, {want} expected{}",
                    if shape.layout == Layout::Spanning { " (a 1.16 chunk? mount with -o version=1.16)" } else { "" }
                ));
            }
            let raw = r.take(longs_n * 8, &what("packed blocks"))?;
            let longs: Vec<u64> =
                raw.chunks_exact(8).filter_map(|c| c.first_chunk::<8>()).map(|c| u64::from_be_bytes(*c)).collect();
            let entries = unpack(&longs, eff, shape.layout);
            let (states, entries) = if direct {
                (entries, Vec::new())
            } else {
                let states = entries
                    .iter()
                    .map(|&e| {
                        palette
                            .get(e as usize)
                            .copied()
                            .ok_or_else(|| format!("section {y}: entry {e} is past its palette of {n}"))
                    })
                    .collect::<Result<_, _>>()?;
                (states, entries)
            };
            let (mut block_light, mut sky_light) = (Vec::new(), Vec::new());
            if shape.layout == Layout::Spanning {
                block_light = r.take(2048, &what("block light"))?.to_vec();
                if shape.sky_light {
                    sky_light = r.take(2048, &what("sky light"))?.to_vec();
                }
            }
            sections.push(Section { y, bits, palette, states, entries, block_light, sky_light, block_count });
        }
        let biomes = if shape.biomes && shape.layout == Layout::Spanning {
            r.take(256, "the biomes")?.to_vec()
        } else {
            Vec::new()
        };
        if r.pos != data.len() {
            return Err(format!(
                "{} bytes after the last section{} (is the bit mask or the sky light option right?)",
                data.len() - r.pos,
                if shape.biomes { " and the biomes" } else { "" }
            ));
        }
        Ok(Chunk { sections, biomes })
    }

    /// The data for `shape`; an error when a palette section holds a state
    /// its palette lacks.
    pub fn encode(&self, shape: Shape) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        for s in &self.sections {
            if shape.layout == Layout::Padded {
                out.extend_from_slice(&s.block_count.to_be_bytes());
            }
            out.push(s.bits);
            let direct = s.bits > 8;
            if direct {
                put_varint(&mut out, 0);
            } else {
                put_varint(&mut out, s.palette.len() as u32);
                for &p in &s.palette {
                    put_varint(&mut out, p);
                }
            }
            let entries: Vec<u32> = if direct {
                s.states.clone()
            } else {
                s.states
                    .iter()
                    .enumerate()
                    .map(|(i, st)| match s.entries.get(i) {
                        Some(&e) if s.palette.get(e as usize) == Some(st) => Some(e),
                        _ => s.palette.iter().position(|p| p == st).map(|i| i as u32),
                    })
                    .collect::<Option<_>>()
                    .ok_or_else(|| format!("section {}: a state missing from its palette", s.y))?
            };
            let longs = pack(&entries, s.bits.max(4), shape.layout);
            put_varint(&mut out, longs.len() as u32);
            for l in longs {
                out.extend_from_slice(&l.to_be_bytes());
            }
            if shape.layout == Layout::Spanning {
                out.extend_from_slice(&s.block_light);
                if shape.sky_light {
                    out.extend_from_slice(&s.sky_light);
                }
            }
        }
        if shape.biomes && shape.layout == Layout::Spanning {
            out.extend_from_slice(&self.biomes);
        }
        Ok(out)
    }
}

impl Section {
    /// New states for this section, with the palette and bits the game's
    /// container would have after setting each changed block in turn
    /// (`palette_after`); `is_air` says which states the block count
    /// (1.16) leaves out.
    pub fn set_states(&mut self, states: Vec<u32>, layout: Layout, is_air: impl Fn(u32) -> bool) -> Result<(), String> {
        let direct = self.palette.is_empty() && self.bits > 8;
        // Checked before the form is chosen: a state past the direct width
        // would spill into its neighbours when packed.
        let too_wide = states.iter().find(|&&s| s >> DIRECT_BITS != 0);
        let fits_direct = |y: u8| match too_wide {
            Some(&s) => Err(format!(
                "section {y}: block {}:{} does not fit the 13-bit direct form this section needs (ids 0 to 511)",
                s >> 4,
                s & 15
            )),
            None => Ok(()),
        };
        if direct {
            fits_direct(self.y)?;
        } else {
            match palette_after(&self.palette, self.bits, &self.states, &states) {
                Some((palette, bits)) => {
                    // Unchanged blocks keep their entries while the palette
                    // only grew at its end; made again, every block takes
                    // its state's first place, as in the game.
                    if !palette.starts_with(&self.palette) {
                        self.entries.clear();
                    }
                    (self.palette, self.bits) = (palette, bits)
                }
                None if layout == Layout::Padded => {
                    return Err(format!(
                        "section {}: {} different blocks need the direct form, which this does not write for 1.16",
                        self.y,
                        distinct(&states)
                    ));
                }
                None => {
                    fits_direct(self.y)?;
                    self.entries.clear();
                    (self.palette, self.bits) = (Vec::new(), DIRECT_BITS)
                }
            }
        }
        self.block_count = states.iter().filter(|&&s| !is_air(s)).count() as i16;
        self.states = states;
        Ok(())
    }
}

fn distinct(states: &[u32]) -> usize {
    let mut v = states.to_vec();
    v.sort_unstable();
    v.dedup();
    v.len()
}

/// The palette and bits after setting the blocks of `new` that differ
/// from `old`, in index order, as the game's container does (1.9 to 1.16,
/// `BlockStateContainer`/`PalettedContainer`): the palette is kept, unused
/// entries and order included; a new state is appended while the palette
/// has room for it (2^bits entries); when full, the bits grow by one and
/// the palette is made again: air (the container's default) first, then
/// the states of the blocks in index order. None: past 8 bits, the direct
/// form.
fn palette_after(palette: &[u32], bits: u8, old: &[u32], new: &[u32]) -> Option<(Vec<u32>, u8)> {
    let mut palette = palette.to_vec();
    let mut eff = bits.max(4);
    let mut resized = false;
    let mut data = old.to_vec();
    for (i, &state) in new.iter().enumerate() {
        if data[i] == state {
            continue;
        }
        if !palette.contains(&state) {
            if palette.len() >= 1 << eff {
                eff += 1;
                if eff > 8 {
                    return None;
                }
                resized = true;
                palette = vec![0];
                for &s in &data {
                    if !palette.contains(&s) {
                        palette.push(s);
                    }
                }
            }
            if !palette.contains(&state) {
                palette.push(state);
            }
        }
        data[i] = state;
    }
    // The stored width stays unless the palette outgrew it (fewer than 4
    // bits are read as 4).
    let bits = if resized || palette.len() > 1 << bits { eff } else { bits };
    Some((palette, bits))
}

/// A byte of a nibble array: u8 (light arrays of the network format) or
/// i8 (NBT byte arrays: 1.12 sections' `Data` and `Add`, light), the
/// same layout either way.
pub trait NibbleByte: Copy {
    /// The byte's 8 bits.
    fn bits(self) -> u8;
    /// The byte with these 8 bits.
    fn from_bits(bits: u8) -> Self;
}

impl NibbleByte for u8 {
    fn bits(self) -> u8 {
        self
    }
    fn from_bits(bits: u8) -> Self {
        bits
    }
}

impl NibbleByte for i8 {
    fn bits(self) -> u8 {
        self as u8
    }
    fn from_bits(bits: u8) -> Self {
        bits as i8
    }
}

/// The nibble of entry `i` of a nibble array (the first of two entries in
/// the low half of a byte).
pub fn nibble<B: NibbleByte>(bytes: &[B], i: usize) -> u8 {
    (bytes[i / 2].bits() >> ((i % 2) * 4)) & 15
}

/// Sets the nibble of entry `i` to the low 4 bits of `v`.
pub fn set_nibble<B: NibbleByte>(bytes: &mut [B], i: usize, v: u8) {
    let shift = (i % 2) * 4;
    bytes[i / 2] = B::from_bits((bytes[i / 2].bits() & !(15 << shift)) | ((v & 15) << shift));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A direct section cannot hold ids past 511 (13 bits): refused, not
    /// packed over its neighbours.
    #[test]
    fn a_direct_section_refuses_ids_past_its_13_bits() {
        let section = air_section(2);
        let mut wide = many_ids();
        wide[7] = 4095 * 16;
        // Into the direct form: refused.
        let e = section.clone().set_states(wide.clone(), Layout::Spanning, |st| st == 0).unwrap_err();
        assert!(e.contains("section 2: block 4095:0") && e.contains("13-bit direct"), "{e}");
        // Already direct: refused, and the section as it was.
        let mut s = section;
        s.set_states(many_ids(), Layout::Spanning, |st| st == 0).unwrap();
        assert_eq!(s.bits, DIRECT_BITS);
        let before = s.clone();
        assert!(s.set_states(wide, Layout::Spanning, |st| st == 0).is_err());
        assert_eq!(s, before, "a refused edit changed the section");
    }

    /// Section `y` all air, in a palette of 4 bits, without light.
    fn air_section(y: u8) -> Section {
        Section {
            y,
            bits: 4,
            palette: vec![0],
            states: vec![0; 4096],
            entries: vec![],
            block_light: vec![],
            sky_light: vec![],
            block_count: 0,
        }
    }

    fn many_ids() -> Vec<u32> {
        (0..4096).map(|i| (i % 300) as u32 * 16).collect()
    }

    #[test]
    fn packing_spans_or_pads() {
        let entries: Vec<u32> = (0..4096).map(|i| (i * 7 % 31) as u32).collect();
        for layout in [Layout::Spanning, Layout::Padded] {
            let longs = pack(&entries, 5, layout);
            assert_eq!(longs.len(), if layout == Layout::Spanning { 320 } else { 342 });
            assert_eq!(unpack(&longs, 5, layout), entries);
        }
        let mut v = Vec::new();
        put_varint(&mut v, 300);
        assert_eq!(v, [0xac, 0x02]);
        let section = air_section(0);
        let mut s = section.clone();
        let many = many_ids();
        s.set_states(many.clone(), Layout::Spanning, |st| st == 0).unwrap();
        assert_eq!((s.bits, s.palette.len()), (DIRECT_BITS, 0));
        assert!(section.clone().set_states(many, Layout::Padded, |st| st == 0).is_err());
        // The game never shrinks a container back from the direct form.
        s.set_states(vec![16; 4096], Layout::Spanning, |st| st == 0).unwrap();
        assert_eq!((s.bits, s.palette.len()), (DIRECT_BITS, 0));
        let mut s = section.clone();
        s.set_states(vec![16; 4096], Layout::Spanning, |st| st == 0).unwrap();
        assert_eq!((s.bits, s.palette.clone()), (4, vec![0, 16]));
    }
}
