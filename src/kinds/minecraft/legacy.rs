//! Sections of 1.12 and older chunks: `Blocks` (4096 bytes, the low 8 bits
//! of each block's id), `Add` (optional, 2048 bytes: 4 more bits each) and
//! `Data` (2048 bytes: 4 bits of data each), in the order y*256 + z*16 + x,
//! the first of two blocks in the low half of a byte. Each (id, data) is
//! shown as the block state the game's 1.13 upgrade gives it, from
//! `legacy_blocks.txt` (generated from minecraft-data by
//! contrib/mc-legacy-blocks.py); read only.

use super::section::{Container, parse_state};
use crate::codec::nbt::{Compound, Tag};
use std::collections::HashMap;
use std::sync::OnceLock;

const TABLE: &str = include_str!("legacy_blocks.txt");

struct Table {
    states: HashMap<(u16, u8), &'static str>,
    names: HashMap<u16, &'static str>,
}

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = Table { states: HashMap::new(), names: HashMap::new() };
        for line in TABLE.lines().filter(|l| !l.starts_with('#')) {
            let (key, label) = line.split_once(' ').expect("the generated table has two columns");
            match key.split_once(':') {
                Some((id, data)) => {
                    t.states.insert((id.parse().expect("an id"), data.parse().expect("a data value")), label)
                }
                None => t.names.insert(key.parse().expect("an id"), label),
            };
        }
        t
    })
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

fn nibble(bytes: &[i8], i: usize) -> u8 {
    let b = bytes[i / 2] as u8;
    if i.is_multiple_of(2) { b & 0x0f } else { b >> 4 }
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
}
