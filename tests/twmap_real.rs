//! The Teeworlds/DDNet map kind on every real map in
//! tests/data/formats/twmap: the container and the items round trip,
//! every file renders, and writing back what a file shows changes nothing.

use crate::common;

use std::path::PathBuf;

use worldfs::documents::twmap::TwMap;
use worldfs::documents::twmap::map::Map;
use worldfs::documents::{Context, Document};
use worldfs_codec::twmap::datafile::Datafile;
use worldfs_codec::twmap::items::{self, types};

/// The real maps (tests/data/formats/twmap), by file name.
fn real_maps() -> Vec<(String, Vec<u8>)> {
    let dir: PathBuf = common::real_formats("twmap");
    let mut maps: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "map"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    maps.sort();
    assert_eq!(maps.len(), 5, "the five sample maps of SOURCES.md");
    maps
}

#[test]
fn every_real_map_encodes_to_its_own_bytes() {
    let maps = real_maps();
    for (name, bytes) in maps {
        let df = Datafile::decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(df.data.iter().all(|d| d.bytes().is_ok()), "{name}: every data item inflates");
        let again = df.encode().unwrap();
        assert!(again == bytes, "{name}: the container re-encodes to other bytes");
        let map = TwMap::decode(&bytes, &Context::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(map.encode().unwrap() == bytes, "{name}: the document re-encodes to other bytes");
    }
}

#[test]
fn every_item_of_every_real_map_parses_and_writes_back_its_ints() {
    let maps = real_maps();
    for (name, bytes) in maps {
        let df = Datafile::decode(&bytes).unwrap();
        let mut counts = std::collections::BTreeMap::new();
        for (i, it) in df.items.iter().enumerate() {
            let d = &it.data;
            let back = match it.type_id {
                types::INFO => items::Info::parse(d).map(|x| x.to_ints()),
                types::IMAGE => items::Image::parse(d).map(|x| x.to_ints()),
                types::ENVELOPE => items::Envelope::parse(d).map(|x| x.to_ints()),
                types::GROUP => items::Group::parse(d).map(|x| x.to_ints()),
                types::LAYER => items::Layer::parse(d).map(|x| x.to_ints()),
                types::SOUND => items::Sound::parse(d).map(|x| x.to_ints()),
                _ => Ok(d.clone()),
            };
            let back = back.unwrap_or_else(|e| panic!("{name} item {i}: {e}"));
            assert_eq!(&back, d, "{name} item {i} (type {})", it.type_id);
            *counts.entry(it.type_id).or_insert(0) += 1;
        }
        // Every sample has groups, layers and images.
        for t in [types::VERSION, types::IMAGE, types::GROUP, types::LAYER] {
            assert!(counts.contains_key(&t), "{name}: no items of type {t}");
        }
    }
}

#[test]
fn every_file_of_every_real_map_renders_and_rewriting_it_changes_nothing() {
    let maps = real_maps();
    for (name, bytes) in maps {
        let mut doc = TwMap::decode(&bytes, &Context::default()).unwrap();
        let entries = doc.entries();
        let mut writable = 0;
        for e in entries.iter().filter(|e| !e.dir) {
            let content = doc.render(&e.path).unwrap_or_else(|err| panic!("{name} {}: {err}", e.path));
            if e.writable {
                writable += 1;
                doc.apply(&e.path, &content).unwrap_or_else(|err| panic!("{name} {}: {err}", e.path));
                assert!(doc.encode().unwrap() == bytes, "{name} {}: rewriting the file changed the map", e.path);
                assert_eq!(doc.entries(), entries, "{name} {}: the tree changed", e.path);
            }
        }
        assert!(writable > 0, "{name}");
        eprintln!("{name}: {} entries, {writable} writable files rewritten", entries.len());
    }
}

#[test]
fn the_real_maps_look_as_described_in_the_spec() {
    let maps = real_maps();
    let get = |n: &str| Map::decode(&maps.iter().find(|(m, _)| m == n).unwrap().1).unwrap();
    let tsunami = get("ddnet_Tsunami.map");
    assert_eq!(tsunami.index.images.len(), 10);
    assert_eq!((0..10).filter(|&i| tsunami.image(i).is_embedded()).count(), 9);
    let coverage =
        TwMap::decode(&maps.iter().find(|(m, _)| m == "ddnet_coverage.map").unwrap().1, &Context::default()).unwrap();
    let paths: Vec<String> = coverage.entries().into_iter().map(|e| e.path).collect();
    for kind in ["Game", "Switch", "Tele", "Speedup", "Front", "Tune"] {
        assert!(paths.iter().any(|p| p.ends_with(&format!("_{kind}/tiles"))), "coverage: no {kind} layer in {paths:?}");
    }
    let info = String::from_utf8(coverage.render("info").unwrap()).unwrap();
    assert!(info.contains("[settings]\ntune_zone 1 gravity 2\ntune_zone_enter 1 gravity 2\n"), "{info}");
    assert!(paths.iter().any(|p| p.starts_with("items/automapper-config_")), "{paths:?}");
    let tw07 =
        TwMap::decode(&maps.iter().find(|(m, _)| m == "teeworlds07_dm1.map").unwrap().1, &Context::default()).unwrap();
    let game = tw07.entries().into_iter().find(|e| e.path.ends_with("_Game/tiles")).unwrap();
    let grid = tw07.render(&game.path).unwrap();
    assert_eq!(grid.iter().filter(|&&c| c == b'\n').count(), 50, "60 x 50 tiles after unpacking");
}

#[test]
fn recompressed_real_maps_hold_the_same_items_and_data() {
    // Every data item compressed anew (as after an edit): zlib's bytes may
    // differ from the original writer's, what a reader gets may not.
    let maps = real_maps();
    for (name, bytes) in maps {
        let df = Datafile::decode(&bytes).unwrap();
        let mut fresh = df.clone();
        for i in 0..fresh.data.len() {
            let content = fresh.data[i].bytes().unwrap().to_vec();
            fresh.data[i] = worldfs_codec::twmap::datafile::DataItem::new(content);
        }
        let again = fresh.encode().unwrap();
        let back = Datafile::decode(&again).unwrap();
        assert_eq!(back.items, df.items, "{name}: items");
        assert!(back.data == df.data, "{name}: data");
        // The part before the data section (header, tables, items) differs
        // only in the sizes and offsets of the data.
        let map = Map::decode(&again).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(map.index, Map::decode(&bytes).unwrap().index, "{name}");
        eprintln!("{name}: {} bytes as read, {} recompressed", bytes.len(), again.len());
    }
}

#[test]
fn truncated_real_maps_are_refused() {
    let maps = real_maps();
    for (name, bytes) in maps {
        let step = (bytes.len() / 300).max(1);
        for n in (0..bytes.len()).step_by(step).chain([bytes.len() - 1]) {
            let e = TwMap::decode(&bytes[..n], &Context::default()).unwrap_err().to_string();
            assert!(e.contains("truncated"), "{name} cut at {n}: {e}");
        }
    }
}
