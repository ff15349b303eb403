//! The game's own names, from 1.13 on: which blocks (with which
//! properties and values) and which items each version knows, from
//! `registry.txt` (generated from minecraft-data by contrib/mc-registry.py).
//! The game turns a block state it does not know into air and drops an
//! item it does not know when it loads a chunk or a player, so a new
//! `minecraft:` name is checked against the registry of the DataVersion it
//! is written into (the last one at or below it) before it is stored.
//! Names of other namespaces (mods, data packs) are taken as they are;
//! callers take back what the chunk or file already holds as it is.

use std::collections::HashMap;
use std::sync::OnceLock;
use worldfs_codec::minecraft::nbt::Tag;

const TABLE: &str = include_str!("registry.txt");

/// The first DataVersion the table has a registry for (1.13).
pub const FIRST_DATA_VERSION: i64 = 1519;

/// A block's shape over some registries: (first, last, its property set).
type Shape = (usize, usize, Option<usize>);

struct Table {
    /// (game version, first DataVersion), oldest first.
    versions: Vec<(&'static str, i64)>,
    /// Property sets: each property and its values, in the game's order.
    prop_sets: Vec<Vec<(&'static str, Vec<&'static str>)>>,
    /// A block's shapes: (first registry, last, property set).
    blocks: HashMap<&'static str, Vec<Shape>>,
    /// An item's spans: (first registry, last).
    items: HashMap<&'static str, Vec<(usize, usize)>>,
}

fn span(s: &str) -> (usize, usize) {
    let (a, b) = s.split_once('-').expect("the generated table writes FIRST-LAST");
    (a.parse().expect("a registry index"), b.parse().expect("a registry index"))
}

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| {
        let mut t =
            Table { versions: Vec::new(), prop_sets: Vec::new(), blocks: HashMap::new(), items: HashMap::new() };
        for line in TABLE.lines().filter(|l| !l.starts_with('#')) {
            let f: Vec<&str> = line.split(' ').collect();
            match f[0] {
                "v" => t.versions.push((f[2], f[3].parse().expect("a DataVersion"))),
                "p" => t.prop_sets.push(
                    f[2..]
                        .iter()
                        .map(|p| {
                            let (k, vs) = p.split_once('=').expect("property=values");
                            (k, vs.split(',').collect())
                        })
                        .collect(),
                ),
                "b" => {
                    let (first, last) = span(f[1]);
                    let props = f.get(3).map(|p| p.parse().expect("a property set"));
                    t.blocks.entry(f[2]).or_default().push((first, last, props));
                }
                "i" => t.items.entry(f[2]).or_default().push(span(f[1])),
                other => panic!("registry.txt: a line of kind {other}"),
            }
        }
        t
    })
}

/// The registry a DataVersion is checked against: the last at or below
/// it (None: before 1.13, which the table does not cover).
fn registry_of(data_version: i64) -> Option<usize> {
    table().versions.iter().rposition(|(_, dv)| *dv <= data_version)
}

/// "1.18 (DataVersion 2865)", with a word when the DataVersion is past the
/// newest registry the table holds.
fn version_words(r: usize, data_version: i64) -> String {
    let t = table();
    let newest = if r + 1 == t.versions.len() && data_version > t.versions[r].1 {
        format!("; worldfs knows the names of versions up to {}", t.versions[r].0)
    } else {
        String::new()
    };
    format!("{} (DataVersion {data_version}){newest}", t.versions[r].0)
}

/// A name shown in an error: a long one cut (a 5,000-character name is
/// not repeated whole).
fn shown(name: &str) -> String {
    match name.char_indices().nth(64) {
        Some((at, _)) => format!("{}… ({} characters)", &name[..at], name.chars().count()),
        None => name.to_string(),
    }
}

/// The versions that do know a name the registry `r` lacks.
fn known_in(spans: &[(usize, usize)]) -> String {
    let t = table();
    let words: Vec<String> = spans
        .iter()
        .map(|&(a, b)| match b + 1 == t.versions.len() {
            true => format!("from {} on", t.versions[a].0),
            false => format!("from {} until {}", t.versions[a].0, t.versions[b + 1].0),
        })
        .collect();
    if words.is_empty() { String::new() } else { format!("; the game knows it {}", words.join(" and ")) }
}

/// The `minecraft:` path of a name (one without a namespace is the
/// game's); None: another namespace's.
fn vanilla_path(name: &str) -> Option<&str> {
    match name.split_once(':') {
        Some(("minecraft", path)) => Some(path),
        Some(_) => None,
        None => Some(name),
    }
}

/// Whether the game of `data_version` knows block state `state` (a
/// compound with `Name` and optional `Properties`): its name, each
/// property and each value. A property left out is the game's default,
/// as when it loads it. Err: what is wrong, naming the version.
pub fn check_block(state: &Tag, data_version: i64) -> Result<(), String> {
    let Some(r) = registry_of(data_version) else { return Ok(()) };
    let Tag::Compound(c) = state else { return Err("a block state is a compound".into()) };
    let name = c.string("Name").ok_or("a block state without a Name")?;
    let Some(path) = vanilla_path(name) else { return Ok(()) };
    let t = table();
    let shapes = t.blocks.get(path).map(Vec::as_slice).unwrap_or_default();
    let Some(&(_, _, props)) = shapes.iter().find(|(a, b, _)| (*a..=*b).contains(&r)) else {
        let spans: Vec<(usize, usize)> = shapes.iter().map(|(a, b, _)| (*a, *b)).collect();
        return Err(format!(
            "{} is no block in {}{}",
            shown(name),
            version_words(r, data_version),
            known_in(&merge(spans))
        ));
    };
    let known = props.map(|p| t.prop_sets[p].as_slice()).unwrap_or_default();
    for (key, value) in c.compound("Properties").map(|p| p.0.as_slice()).unwrap_or_default() {
        let Some((_, values)) = known.iter().find(|(k, _)| k == key) else {
            let has = match known.len() {
                0 => "it has no properties".to_string(),
                _ => format!("its properties are {}", known.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")),
            };
            return Err(format!("{name} has no property {} in {}; {has}", shown(key), version_words(r, data_version)));
        };
        let ok = matches!(value, Tag::String(v) if values.contains(&v.as_str()));
        if !ok {
            let v = match value {
                Tag::String(v) => shown(v),
                other => worldfs_codec::minecraft::snbt::tag_inline(other),
            };
            return Err(format!(
                "{name} has no {key}={v} in {}; {key} is one of {}",
                version_words(r, data_version),
                values.join(", ")
            ));
        }
    }
    Ok(())
}

/// Whether the game of `data_version` knows item `id`. Err: why not.
pub fn check_item(id: &str, data_version: i64) -> Result<(), String> {
    let Some(r) = registry_of(data_version) else { return Ok(()) };
    let Some(path) = vanilla_path(id) else { return Ok(()) };
    let spans = table().items.get(path).map(Vec::as_slice).unwrap_or_default();
    if spans.iter().any(|(a, b)| (*a..=*b).contains(&r)) {
        return Ok(());
    }
    Err(format!(
        "{} is no item in {}{}; the game would drop it when it loads",
        shown(id),
        version_words(r, data_version),
        known_in(spans)
    ))
}

/// Spans of registries joined where one ends just before the next begins
/// (a block whose properties changed is one name throughout).
fn merge(mut spans: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    spans.sort();
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (a, b) in spans {
        match out.last_mut() {
            Some(last) if last.1 + 1 == a => last.1 = b,
            _ => out.push((a, b)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worlds::minecraft::section::parse_state;

    fn block(label: &str, dv: i64) -> Result<(), String> {
        check_block(&parse_state(label).unwrap(), dv)
    }

    #[test]
    fn the_table_reads_and_its_versions_are_in_order() {
        let t = table();
        assert_eq!(t.versions[0], ("1.13", FIRST_DATA_VERSION));
        assert!(t.versions.windows(2).all(|w| w[0].1 < w[1].1));
        for shapes in t.blocks.values() {
            for (a, b, p) in shapes {
                assert!(a <= b && *b < t.versions.len() && p.is_none_or(|p| p < t.prop_sets.len()));
            }
        }
        assert!(t.items.len() > 1000 && t.blocks.len() > 1000);
    }

    #[test]
    fn names_properties_and_values_are_the_versions() {
        assert_eq!(block("minecraft:oak_stairs[facing=east,half=top]", 2865), Ok(()));
        assert_eq!(block("stone", 2865), Ok(()));
        assert_eq!(
            block("minecraft:oak_stairs[facing=up]", 2865).unwrap_err(),
            "minecraft:oak_stairs has no facing=up in 1.18 (DataVersion 2865); \
             facing is one of north, south, west, east"
        );
        let err = block("minecraft:stone[foo=bar]", 2865).unwrap_err();
        assert_eq!(err, "minecraft:stone has no property foo in 1.18 (DataVersion 2865); it has no properties");
        let err = block("minecraft:not_a_block", 1631).unwrap_err();
        assert_eq!(err, "minecraft:not_a_block is no block in 1.13.2 (DataVersion 1631)");
        // Renamed in 1.20.3: each name in its own versions.
        assert_eq!(block("minecraft:short_grass", 3700), Ok(()));
        let err = block("minecraft:short_grass", 3465).unwrap_err();
        assert!(err.contains("is no block in 1.20 (DataVersion 3465); the game knows it from 1.20.3 on"), "{err}");
        assert!(block("minecraft:grass", 3700).unwrap_err().contains("the game knows it from 1.13 until 1.20.3"));
        // Not starting at 0: snow layers 1 to 8.
        assert_eq!(block("minecraft:snow[layers=8]", 1519), Ok(()));
        assert!(block("minecraft:snow[layers=0]", 1519).is_err());
        // Other namespaces, and chunks before the flattening, are not judged.
        assert_eq!(block("mymod:thing[any=thing]", 2865), Ok(()));
        assert_eq!(block("minecraft:not_a_block", 1343), Ok(()));
        let long = format!("minecraft:{}", "a".repeat(4990));
        let err = block(&long, 2865).unwrap_err();
        assert!(err.len() < 200 && err.contains("(5000 characters) is no block"), "{err}");
        let err = block("minecraft:not_a_block", 9999).unwrap_err();
        assert!(err.ends_with("worldfs knows the names of versions up to 26.1"), "{err}");
    }

    #[test]
    fn items_are_the_versions() {
        assert_eq!(check_item("minecraft:diamond_sword", 2865), Ok(()));
        assert_eq!(check_item("diamond_sword", 2865), Ok(()));
        assert_eq!(check_item("mymod:wand", 2865), Ok(()));
        let err = check_item("minecraft:not_an_item", 2865).unwrap_err();
        assert_eq!(
            err,
            "minecraft:not_an_item is no item in 1.18 (DataVersion 2865); the game would drop it when it loads"
        );
        assert!(check_item("minecraft:mace", 3837).is_ok());
        assert!(check_item("minecraft:mace", 3700).unwrap_err().contains("the game knows it from 1.20.5 on"));
    }
}
