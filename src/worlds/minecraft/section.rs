//! Anvil paletted containers, pure: a palette of tags and indices into it,
//! packed in longs. 1.13 to 1.15 let an index span two longs; 1.16+ pad
//! each long (the top bits unused). Blocks are 4096 indices (at
//! y * 256 + z * 16 + x), at least 4 bits; 1.18+ biomes 64 (4x4x4), at
//! least 1 bit, and a container whose palette is one entry stores no data.

use worldfs_codec::minecraft::nbt::{Compound, List, Tag};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Packing {
    Spanning,
    Padded,
}

/// Bits an index needs for a palette of `len` (at least `min`).
pub(crate) fn bits_for(len: usize, min: u8) -> u8 {
    let need = (usize::BITS - len.saturating_sub(1).leading_zeros()) as u8;
    need.max(min)
}

pub(crate) fn longs_needed(n: usize, bits: u8, p: Packing) -> usize {
    match p {
        Packing::Spanning => (n * bits as usize).div_ceil(64),
        Packing::Padded => n.div_ceil(64 / bits as usize),
    }
}

pub(crate) fn unpack(longs: &[i64], bits: u8, n: usize, p: Packing) -> Vec<u32> {
    let (b, mask) = (bits as usize, (1u64 << bits) - 1);
    (0..n)
        .map(|i| match p {
            Packing::Spanning => {
                let (l, off) = (i * b / 64, i * b % 64);
                let mut v = longs[l] as u64 >> off;
                if off + b > 64 {
                    v |= (longs[l + 1] as u64) << (64 - off);
                }
                (v & mask) as u32
            }
            Packing::Padded => {
                let per = 64 / b;
                ((longs[i / per] as u64 >> ((i % per) * b)) & mask) as u32
            }
        })
        .collect()
}

pub(crate) fn pack(values: &[u32], bits: u8, p: Packing) -> Vec<i64> {
    let b = bits as usize;
    let mut longs = vec![0u64; longs_needed(values.len(), bits, p)];
    for (i, &v) in values.iter().enumerate() {
        let v = v as u64;
        match p {
            Packing::Spanning => {
                let (l, off) = (i * b / 64, i * b % 64);
                longs[l] |= v << off;
                if off + b > 64 {
                    longs[l + 1] |= v >> (64 - off);
                }
            }
            Packing::Padded => {
                let per = 64 / b;
                longs[i / per] |= v << ((i % per) * b);
            }
        }
    }
    longs.into_iter().map(|l| l as i64).collect()
}

/// A container: its palette and one index per entry.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Container {
    pub(crate) palette: Vec<Tag>,
    pub(crate) indices: Vec<u32>,
}

/// The shape of one kind of container.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    pub(crate) n: usize,
    pub(crate) min_bits: u8,
    pub(crate) packing: Packing,
    /// A one-entry palette stores no data (1.18+).
    pub(crate) single_without_data: bool,
}

impl Container {
    /// Decode `palette` and `data` (None: absent). The bits are those the
    /// data's length says (the game's), checked against the palette.
    pub(crate) fn decode(palette: &List, data: Option<&[i64]>, shape: Shape) -> Result<Container, String> {
        let pal = palette.items.clone();
        if pal.is_empty() {
            return Err("an empty palette".into());
        }
        let data = match data {
            None | Some([]) if pal.len() == 1 && shape.single_without_data => {
                return Ok(Container { palette: pal, indices: vec![0; shape.n] });
            }
            None => return Err(format!("a palette of {} entries and no data", pal.len())),
            Some(d) => d,
        };
        // The width the game writes for this palette; else (an old or odd
        // writer) the narrowest that the palette allows and the length
        // says. Several widths can make the same number of padded longs.
        let need = bits_for(pal.len(), 1);
        let bits = std::iter::once(bits_for(pal.len(), shape.min_bits))
            .chain(need..=32)
            .find(|b| longs_needed(shape.n, *b, shape.packing) == data.len())
            .ok_or_else(|| {
                format!(
                    "{} longs of data fit no width for {} entries of a {}-entry palette",
                    data.len(),
                    shape.n,
                    pal.len()
                )
            })?;
        let indices = unpack(data, bits, shape.n, shape.packing);
        if let Some((i, v)) = indices.iter().enumerate().find(|(_, v)| **v as usize >= pal.len()) {
            return Err(format!("entry {i} is palette index {v}, the palette has {}", pal.len()));
        }
        Ok(Container { palette: pal, indices })
    }

    /// The palette list and the data (None: none stored).
    pub(crate) fn encode(&self, shape: Shape) -> (List, Option<Vec<i64>>) {
        let elem = self.palette.first().map_or(10, Tag::type_id);
        let list = List { elem, items: self.palette.clone() };
        if self.palette.len() == 1 && shape.single_without_data {
            return (list, None);
        }
        let bits = bits_for(self.palette.len(), shape.min_bits);
        (list, Some(pack(&self.indices, bits, shape.packing)))
    }

    /// The entry at index `i`.
    pub(crate) fn get(&self, i: usize) -> &Tag {
        &self.palette[self.indices[i] as usize]
    }

    /// Set entries to new values: the palette keeps its entries (as the
    /// game's does) and gains the new ones at its end.
    pub(crate) fn set_all(&mut self, values: &[Tag]) {
        for (i, v) in values.iter().enumerate() {
            let k = match self.palette.iter().position(|p| same_state(p, v)) {
                Some(k) => k,
                None => {
                    self.palette.push(v.clone());
                    self.palette.len() - 1
                }
            };
            self.indices[i] = k as u32;
        }
    }
}

/// A block state as text: `minecraft:chest[facing=north,type=single]`.
/// A name, key or value the line cannot carry as it is (a control
/// character, a blank, one of `"\\[],=`) is quoted as in SNBT, so that
/// every label is one line and reads back as the state it was made from.
pub(crate) fn state_label(t: &Tag) -> String {
    let Tag::Compound(c) = t else { return format!("?{}", worldfs_codec::minecraft::snbt::tag_inline(t)) };
    let name = c.string("Name").map_or_else(|| "?".to_string(), label_part);
    match c.compound("Properties") {
        Some(p) if !p.0.is_empty() => {
            let props: Vec<String> =
                p.0.iter()
                    .map(|(k, v)| match v {
                        Tag::String(s) => format!("{}={}", label_part(k), label_part(s)),
                        other => format!("{}={}", label_part(k), worldfs_codec::minecraft::snbt::tag_inline(other)),
                    })
                    .collect();
            format!("{name}[{}]", props.join(","))
        }
        _ => name,
    }
}

/// One part of a label: as it is when a legend or palette line carries it
/// unchanged and unambiguously, else quoted with SNBT's escapes.
pub(crate) fn label_part(s: &str) -> String {
    let plain = |c: char| !c.is_control() && !c.is_whitespace() && !"\"\\[],=".contains(c);
    if !s.is_empty() && s.chars().all(plain) { s.to_string() } else { worldfs_codec::minecraft::snbt::quote(s) }
}

/// Read a block state's text back; a name without a namespace gets
/// `minecraft:`.
pub fn parse_state(label: &str) -> Result<Tag, String> {
    let label = label.trim();
    let (name, props) = match label.split_once('[') {
        Some((n, rest)) => {
            let inner = rest.strip_suffix(']').ok_or_else(|| format!("'{label}': a '[' without its ']'"))?;
            (n, Some(inner))
        }
        None => (label, None),
    };
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-./:".contains(c);
    if name.is_empty() || !name.chars().all(ok) || name.matches(':').count() > 1 {
        return Err(format!("'{name}' is not a block id (like minecraft:stone)"));
    }
    let name = if name.contains(':') { name.to_string() } else { format!("minecraft:{name}") };
    let mut c = Compound(vec![("Name".into(), Tag::String(name))]);
    if let Some(inner) = props.filter(|p| !p.trim().is_empty()) {
        let mut p = Compound::default();
        for kv in inner.split(',') {
            let (k, v) = kv.split_once('=').ok_or_else(|| format!("'{kv}' is not property=value"))?;
            let (k, v) = (k.trim(), v.trim());
            if k.is_empty() || v.is_empty() || p.get(k).is_some() {
                return Err(format!("'{kv}': an empty or repeated property"));
            }
            p.0.push((k.to_string(), Tag::String(v.to_string())));
        }
        c.0.push(("Properties".into(), Tag::Compound(p)));
    }
    Ok(Tag::Compound(c))
}

/// Whether two block states are the same state (properties in any order).
pub(crate) fn same_state(a: &Tag, b: &Tag) -> bool {
    let props = |t: &Tag| -> Option<(String, Vec<(String, Tag)>)> {
        let Tag::Compound(c) = t else { return None };
        let mut p = c.compound("Properties").map(|p| p.0.clone()).unwrap_or_default();
        p.sort_by(|x, y| x.0.cmp(&y.0));
        Some((c.string("Name")?.to_string(), p))
    };
    a == b || (props(a).is_some() && props(a) == props(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_round_trips_both_ways() {
        let values: Vec<u32> = (0..4096).map(|i| (i * 7 % 37) as u32).collect();
        for p in [Packing::Spanning, Packing::Padded] {
            let longs = pack(&values, 6, p);
            assert_eq!(longs.len(), if p == Packing::Spanning { 384 } else { 410 });
            assert_eq!(unpack(&longs, 6, 4096, p), values);
        }
        assert_eq!((bits_for(1, 4), bits_for(17, 4), bits_for(2, 1), bits_for(5, 1)), (4, 5, 1, 3));
    }

    #[test]
    fn the_width_is_the_palettes_where_lengths_are_ambiguous() {
        // 64 biomes: 3 and 4 bits both take 4 padded longs.
        let shape = Shape { n: 64, min_bits: 1, packing: Packing::Padded, single_without_data: true };
        let values: Vec<u32> = (0..64).map(|i| i % 9).collect();
        let palette = List { elem: 8, items: (0..9).map(|i| Tag::String(format!("b{i}"))).collect() };
        let c = Container::decode(&palette, Some(&pack(&values, 4, Packing::Padded)), shape).unwrap();
        assert_eq!(c.indices, values);
        let short = List { elem: 8, items: palette.items[..3].to_vec() };
        assert!(
            Container::decode(&short, Some(&pack(&values, 4, Packing::Padded)), shape).unwrap_err().contains("index")
        );
        assert!(Container::decode(&palette, Some(&[0; 3]), shape).unwrap_err().contains("fit no width"));
    }

    #[test]
    fn states_read_back_and_bad_ones_are_refused() {
        let t = parse_state("chest[facing=north,waterlogged=false]").unwrap();
        assert_eq!(state_label(&t), "minecraft:chest[facing=north,waterlogged=false]");
        assert!(same_state(&t, &parse_state("minecraft:chest[waterlogged=false,facing=north]").unwrap()));
        for bad in ["", "Stone", "a:b:c", "chest[facing=north", "chest[facing]", "chest[a=1,a=2]"] {
            assert!(parse_state(bad).is_err(), "{bad}");
        }
        // Parts a line cannot carry as they are are quoted.
        let odd = Tag::Compound(Compound(vec![("Name".into(), Tag::String("minecraft:diamond_\nre".into()))]));
        assert_eq!(state_label(&odd), r#""minecraft:diamond_\nre""#);
        let props = Compound(vec![("a".into(), Tag::String("1,b=2".into())), ("c d".into(), Tag::String(" ".into()))]);
        let t = Tag::Compound(Compound(vec![
            ("Name".into(), Tag::String("x".into())),
            ("Properties".into(), Tag::Compound(props)),
        ]));
        assert_eq!(state_label(&t), r#"x[a="1,b=2","c d"=" "]"#);
    }
}
