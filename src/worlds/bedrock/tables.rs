//! The game's names, from minecraft-data's Bedrock data (made by
//! `contrib/make-bedrock-tables.sh`): item names (what inventories may
//! hold), block names (what a block may become) with the Java block whose
//! colour a Bedrock block is drawn in, the numeric ids of before 1.2.13,
//! and biome ids.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

const ITEMS: &str = include_str!("tables/items.txt");
const BLOCKS: &str = include_str!("tables/blocks.txt");
const LEGACY_IDS: &str = include_str!("tables/legacy_ids.txt");
const BIOMES: &str = include_str!("tables/biomes.txt");

fn lines(t: &'static str) -> impl Iterator<Item = &'static str> {
    t.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty())
}

fn items() -> &'static HashSet<&'static str> {
    static T: OnceLock<HashSet<&'static str>> = OnceLock::new();
    T.get_or_init(|| lines(ITEMS).collect())
}

fn blocks() -> &'static HashMap<&'static str, &'static str> {
    static T: OnceLock<HashMap<&'static str, &'static str>> = OnceLock::new();
    T.get_or_init(|| lines(BLOCKS).filter_map(|l| l.split_once(' ')).collect())
}

fn legacy() -> &'static HashMap<u8, &'static str> {
    static T: OnceLock<HashMap<u8, &'static str>> = OnceLock::new();
    T.get_or_init(|| {
        lines(LEGACY_IDS).filter_map(|l| Some((l.split_once(' ')?.0.parse().ok()?, l.split_once(' ')?.1))).collect()
    })
}

fn biomes() -> &'static HashMap<i32, &'static str> {
    static T: OnceLock<HashMap<i32, &'static str>> = OnceLock::new();
    T.get_or_init(|| {
        lines(BIOMES).filter_map(|l| Some((l.split_once(' ')?.0.parse().ok()?, l.split_once(' ')?.1))).collect()
    })
}

/// Whether an item name is one the game has (of any version).
pub(crate) fn is_item(name: &str) -> bool {
    items().contains(name)
}

/// Refuse a block name the game does not have (it would turn the block
/// into an unknown one when it loads the chunk).
pub(crate) fn check_block_name(name: &str) -> Result<(), String> {
    if blocks().contains_key(name) {
        Ok(())
    } else {
        Err(format!("'{name}' is no block of the game (minecraft-data's Bedrock block names, tables/blocks.txt)"))
    }
}

/// The name whose colour a block is drawn in: its Java block's, else its own.
pub(crate) fn colour_name(name: &str) -> String {
    match blocks().get(name) {
        Some(j) if *j != "-" => j.to_string(),
        _ => name.to_string(),
    }
}

/// A numeric block id's name (before 1.2.13), or `minecraft:legacy_ID`.
pub(crate) fn legacy_name(id: u8) -> String {
    legacy().get(&id).map_or_else(|| format!("minecraft:legacy_{id}"), |n| n.to_string())
}

/// A biome id's name, or its number.
pub(crate) fn biome_name(id: i32) -> String {
    biomes().get(&id).map_or_else(|| format!("biome_{id}"), |n| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_load() {
        assert!(is_item("minecraft:diamond") && !is_item("minecraft:diamondz"));
        assert!(check_block_name("minecraft:stone").is_ok() && check_block_name("minecraft:nope").is_err());
        assert_eq!(colour_name("minecraft:grass"), "minecraft:grass_block");
        assert_eq!((legacy_name(1).as_str(), legacy_name(54).as_str()), ("minecraft:stone", "minecraft:chest"));
        assert_eq!(biome_name(1), "plains");
    }
}
