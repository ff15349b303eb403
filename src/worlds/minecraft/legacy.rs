//! Sections of 1.12 and older chunks: `Blocks` (4096 bytes, the low 8 bits
//! of each block's id), `Add` (optional, 2048 bytes: 4 more bits each) and
//! `Data` (2048 bytes: 4 bits of data each), in the order y*256 + z*16 + x,
//! the first of two blocks in the low half of a byte. Each (id, data) is
//! shown as the block state the game's 1.13 upgrade gives it, from
//! `legacy_blocks.txt` (generated from minecraft-data by
//! contrib/mc-legacy-blocks.py). Written back through the same table read
//! the other way ([`id_data`]): a block left as it was keeps its stored
//! (id, data), a changed one takes the first (id, data) the table lists
//! for its state.

use super::section::{Container, parse_state};
use std::collections::HashMap;
use std::sync::OnceLock;
use worldfs_codec::minecraft::nbt::{Compound, Tag};
use worldfs_codec::minecraft::packet::{nibble, set_nibble};

const TABLE: &str = include_str!("legacy_blocks.txt");
const OPACITY: &str = include_str!("legacy_opacity.txt");

struct Table {
    states: HashMap<(u16, u8), &'static str>,
    names: HashMap<u16, &'static str>,
    /// The other way: a state (properties sorted) to the first (id, data)
    /// the table lists for it (water[level=0] is both 8:0 and 9:0).
    ids_of_states: HashMap<String, IdData>,
    ids_of_names: HashMap<&'static str, u16>,
}

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = Table {
            states: HashMap::new(),
            names: HashMap::new(),
            ids_of_states: HashMap::new(),
            ids_of_names: HashMap::new(),
        };
        // The table is sorted by id, then data: the first entry wins.
        for line in TABLE.lines().filter(|l| !l.starts_with('#')) {
            let (key, label) = line.split_once(' ').expect("the generated table has two columns");
            match key.split_once(':') {
                Some((id, data)) => {
                    let key = (id.parse().expect("an id"), data.parse().expect("a data value"));
                    t.states.insert(key, label);
                    let state = parse_state(label).expect("table labels are states");
                    t.ids_of_states.entry(state_key(&state).expect("a compound")).or_insert(key);
                }
                None => {
                    let id = key.parse().expect("an id");
                    t.names.insert(id, label);
                    t.ids_of_names.entry(label).or_insert(id);
                }
            };
        }
        t
    })
}

/// Whether blocks of a 1.12 id stop light (their light opacity is not 0,
/// which 1.12 gives per block, not per data value), from
/// `legacy_opacity.txt` (generated from minecraft-data by
/// contrib/mc-legacy-blocks.py). An id the table lacks (a mod's) counts as
/// stopping light, as most blocks are whole opaque cubes.
pub fn stops_light(id: u16) -> bool {
    static T: OnceLock<HashMap<u16, bool>> = OnceLock::new();
    let t = T.get_or_init(|| {
        let rows = OPACITY.lines().filter(|l| !l.starts_with('#'));
        rows.map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f[0].parse().expect("an id"), f[2] == "1")
        })
        .collect()
    });
    t.get(&id).copied().unwrap_or(true)
}

/// The block state shown for a legacy (id, data).
pub fn label(id: u16, data: u8) -> String {
    let t = table();
    match (t.states.get(&(id, data)), t.names.get(&id)) {
        (Some(state), _) => state.to_string(),
        (None, Some(name)) => format!("{name}[data={data}]"),
        (None, None) => format!("minecraft:unknown_block[data={data},id={id}]"),
    }
}

/// A state's name and properties, read once for both [`state_key`] and
/// [`id_data`].
struct Parts<'a> {
    name: Option<&'a str>,
    props: Vec<(&'a str, &'a Tag)>,
}

/// None: the state is not a compound.
fn parts(state: &Tag) -> Option<Parts<'_>> {
    let Tag::Compound(c) = state else { return None };
    let props = c.compound("Properties").map(|p| p.0.iter().map(|(k, v)| (k.as_str(), v)).collect());
    Some(Parts { name: c.string("Name"), props: props.unwrap_or_default() })
}

/// A state as one string, its properties sorted (None: no name).
fn key_of(p: &Parts) -> Option<String> {
    let mut props: Vec<String> =
        p.props.iter().map(|(k, v)| format!("{k}={}", worldfs_codec::minecraft::snbt::tag_inline(v))).collect();
    props.sort();
    Some(format!("{}[{}]", p.name?, props.join(",")))
}

/// A state as one string, its properties sorted (None: not a compound).
fn state_key(state: &Tag) -> Option<String> {
    key_of(&parts(state)?)
}

/// The (id, data) a 1.12 chunk stores `state` as: the first the table
/// lists for it; `NAME[data=N]` (the 1.12 name of an id) and
/// `minecraft:unknown_block[data=N,id=I]`, as [`label`] shows what the
/// table lacks, are that id and N. A state no (id, data) reads as is
/// refused, naming it and the states of its name the table knows.
pub fn id_data(state: &Tag) -> Result<IdData, String> {
    let t = table();
    let Some(p) = parts(state) else { return Err("a block state is a compound".into()) };
    if let Some(k) = key_of(&p).and_then(|k| t.ids_of_states.get(&k).copied()) {
        return Ok(k);
    }
    let name = p.name.unwrap_or("?");
    let props: Vec<(&str, &str)> = p
        .props
        .iter()
        .filter_map(|(k, v)| if let Tag::String(s) = v { Some((*k, s.as_str())) } else { None })
        .collect();
    let prop = |key: &str| props.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    let number = |key: &str, below: u32| prop(key).and_then(|v| v.parse::<u32>().ok()).filter(|n| *n < below);
    let numbered = match (name, props.len()) {
        ("minecraft:unknown_block", 2) => number("id", 4096).zip(number("data", 16)),
        (_, 1) => t.ids_of_names.get(name).map(|id| *id as u32).zip(number("data", 16)),
        _ => None,
    };
    if let Some((id, data)) = numbered {
        return Ok((id as u16, data as u8));
    }
    Err(cannot_store(state, name))
}

fn cannot_store(state: &Tag, name: &str) -> String {
    let mut known: Vec<&str> = table().states.values().copied().filter(|l| l.split('[').next() == Some(name)).collect();
    known.sort();
    known.dedup();
    let hint = match known.len() {
        0 => String::new(),
        n if n <= 6 => format!("; it knows {}", known.join(", ")),
        n => format!("; it knows {n} states of {name}, e.g. {}", known[..4].join(", ")),
    };
    format!(
        "{} cannot be stored in a 1.12 or older chunk: no id and data of its table (legacy_blocks.txt) reads as it{hint}",
        super::section::state_label(state)
    )
}

fn array<'a>(s: &'a Compound, key: &str, len: usize) -> Result<Option<&'a [i8]>, String> {
    match s.get(key) {
        None => Ok(None),
        Some(Tag::ByteArray(b)) if b.len() == len => Ok(Some(b)),
        Some(Tag::ByteArray(b)) => Err(format!("{key} holds {} bytes, not {len}", b.len())),
        Some(_) => Err(format!("{key} is not a byte array")),
    }
}

/// A legacy block: its numeric id and its data.
pub type IdData = (u16, u8);

/// A legacy section's blocks as a container (each distinct (id, data) one
/// palette entry), with the (id, data) of each entry; None: no `Blocks`.
pub fn decode(s: &Compound) -> Result<Option<(Container, Vec<IdData>)>, String> {
    let Some(blocks) = array(s, "Blocks", 4096)? else { return Ok(None) };
    let data = array(s, "Data", 2048)?.ok_or("Blocks without Data")?;
    let add = array(s, "Add", 2048)?;
    let mut ids: Vec<(u16, u8)> = Vec::new();
    let mut seen: HashMap<(u16, u8), u32> = HashMap::new();
    let mut indices = Vec::with_capacity(4096);
    for (i, low) in blocks.iter().enumerate() {
        let id = *low as u8 as u16 | add.map_or(0, |a| (nibble(a, i) as u16) << 8);
        let key = (id, nibble(data, i));
        let next = ids.len() as u32;
        let k = *seen.entry(key).or_insert_with(|| {
            ids.push(key);
            next
        });
        indices.push(k);
    }
    let palette = ids.iter().map(|&(id, d)| parse_state(&label(id, d)).expect("table labels are states")).collect();
    Ok(Some((Container { palette, indices }, ids)))
}

/// Store one (id, data) per block (y*256 + z*16 + x) in section `s`:
/// `Blocks` and `Data` in place, `Add` where it is already (kept, even if
/// no id needs it now) or where an id above 255 needs it (added then).
pub fn encode(s: &mut Compound, ids: &[IdData]) {
    assert_eq!(ids.len(), 4096, "a section holds 4096 blocks");
    let blocks: Vec<i8> = ids.iter().map(|(id, _)| *id as u8 as i8).collect();
    let mut data = vec![0i8; 2048];
    for (i, (_, d)) in ids.iter().enumerate() {
        set_nibble(&mut data, i, *d);
    }
    let wide = ids.iter().any(|(id, _)| *id > 255);
    if wide || s.get("Add").is_some() {
        let mut add = vec![0i8; 2048];
        for (i, (id, _)) in ids.iter().enumerate() {
            set_nibble(&mut add, i, (id >> 8) as u8);
        }
        s.insert("Add", Tag::ByteArray(add));
    }
    s.insert("Blocks", Tag::ByteArray(blocks));
    s.insert("Data", Tag::ByteArray(data));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_label_is_a_block_state() {
        for line in TABLE.lines().filter(|l| !l.starts_with('#')) {
            let (_, label) = line.split_once(' ').unwrap();
            parse_state(label).unwrap_or_else(|e| panic!("{line}: {e}"));
        }
        assert_eq!(label(1, 1), "minecraft:granite");
        assert_eq!(label(17, 4), "minecraft:oak_log[axis=x]");
        assert_eq!(label(1, 15), "minecraft:stone[data=15]");
        assert_eq!(label(4000, 2), "minecraft:unknown_block[data=2,id=4000]");
    }

    #[test]
    fn ids_take_add_and_data_nibbles_low_half_first() {
        let mut blocks = vec![0i8; 4096];
        let (mut add, mut data) = (vec![0i8; 2048], vec![0i8; 2048]);
        blocks[0] = 1; // block 0: 1 + (0x2 << 8), data 0x3
        blocks[1] = 17; // block 1: 17 + (0x1 << 8), data 0x4
        add[0] = 0x12;
        data[0] = 0x43;
        let s = Compound(vec![
            ("Blocks".into(), Tag::ByteArray(blocks)),
            ("Add".into(), Tag::ByteArray(add)),
            ("Data".into(), Tag::ByteArray(data)),
        ]);
        let (c, ids) = decode(&s).unwrap().unwrap();
        assert_eq!(ids[c.indices[0] as usize], (0x201, 3));
        assert_eq!(ids[c.indices[1] as usize], (0x111, 4));
        assert_eq!(ids[c.indices[2] as usize], (0, 0));
        let short = Compound(vec![("Blocks".into(), Tag::ByteArray(vec![0; 10]))]);
        assert!(decode(&short).unwrap_err().contains("not 4096"));
    }

    #[test]
    fn states_map_back_to_the_first_id_and_data_the_table_lists() {
        let back = |l: &str| id_data(&parse_state(l).unwrap());
        assert_eq!(back("minecraft:granite"), Ok((1, 1)));
        // Properties in any order; a state two ids read as: the first.
        assert_eq!(back("minecraft:water[level=0]"), Ok((8, 0)));
        assert_eq!(label(9, 0), label(8, 0));
        assert_eq!(back(&label(17, 4)), Ok((17, 4)));
        assert_eq!(back("minecraft:stone[data=15]"), Ok((1, 15)));
        assert_eq!(back("minecraft:unknown_block[id=4000,data=2]"), Ok((4000, 2)));
        // Every (id, data) the table lists reads back as one that shows the same.
        for line in TABLE.lines().filter(|l| !l.starts_with('#')) {
            let (key, shown) = line.split_once(' ').unwrap();
            let Some((id, data)) = key.split_once(':') else { continue };
            let (id, data) = back(&label(id.parse().unwrap(), data.parse().unwrap())).unwrap();
            assert_eq!(label(id, data), shown, "{line}");
        }
        let err = back("minecraft:deepslate").unwrap_err();
        assert!(err.contains("minecraft:deepslate cannot be stored in a 1.12"), "{err}");
        let err = back("minecraft:grass_block").unwrap_err();
        assert!(err.contains("it knows minecraft:grass_block[snowy=false]"), "{err}");
        for bad in ["minecraft:stone[data=16]", "minecraft:stone[data=x]", "minecraft:unknown_block[id=4096,data=0]"] {
            assert!(back(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn add_is_written_when_an_id_needs_it_and_kept_when_it_was_there() {
        let mut ids = vec![(1u16, 0u8); 4096];
        ids[1] = (17, 4);
        let mut s = Compound(vec![
            ("Blocks".into(), Tag::ByteArray(vec![0; 4096])),
            ("Data".into(), Tag::ByteArray(vec![0; 2048])),
        ]);
        encode(&mut s, &ids);
        assert!(s.get("Add").is_none(), "no id above 255");
        let (c, got) = decode(&s).unwrap().unwrap();
        assert_eq!((0..4096).map(|i| got[c.indices[i] as usize]).collect::<Vec<_>>(), ids);
        ids[4095] = (0x201, 15);
        encode(&mut s, &ids);
        let (c, got) = decode(&s).unwrap().unwrap();
        assert_eq!(got[c.indices[4095] as usize], (0x201, 15));
        assert_eq!(got[c.indices[1] as usize], (17, 4));
        ids[4095] = (3, 0);
        encode(&mut s, &ids);
        assert_eq!(s.get("Add"), Some(&Tag::ByteArray(vec![0; 2048])), "kept, now all zero");
    }
}
