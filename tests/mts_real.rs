//! Schematics (.mts) on every real sample in tests/data/formats/mts:
//! codec round trip, and every file of the mounted view applied to itself.

use crate::common;

use worldfs::documents::mts::MtsDocument;
use worldfs::documents::{Context, Document};
use worldfs_codec::mts::{self as codec, Schematic};

/// The real schematics (tests/data/formats/mts), by file name.
fn samples() -> Vec<(String, Vec<u8>)> {
    let dir = common::real_formats("mts");
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mts"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    v.sort();
    assert!(v.len() >= 5, "expected the 5 samples in {}", dir.display());
    v
}

#[test]
fn every_sample_round_trips() {
    let samples = samples();
    for (name, bytes) in samples {
        let s = Schematic::decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(s.version, 4, "{name}");
        // Same header and names byte for byte, same inflated node data.
        assert_eq!(codec::uncompressed(&bytes).unwrap(), s.encode_uncompressed().unwrap(), "{name}");
        let again = s.encode().unwrap();
        assert_eq!(Schematic::decode(&again).unwrap(), s, "{name}");
        // The document gives back the very bytes while unchanged.
        let d = MtsDocument::decode(&bytes, &Context::default()).unwrap();
        assert_eq!(d.encode().unwrap(), bytes, "{name}");
    }
}

#[test]
fn every_file_of_every_sample_applies_to_itself() {
    let samples = samples();
    for (name, bytes) in samples {
        let mut d = MtsDocument::decode(&bytes, &Context::default()).unwrap();
        for e in d.entries().into_iter().filter(|e| e.writable) {
            let content = d.render(&e.path).unwrap();
            d.apply(&e.path, &content).unwrap_or_else(|err| panic!("{name}/{}: {err}", e.path));
            assert_eq!(d.encode().unwrap(), bytes, "{name}/{} changed the schematic", e.path);
        }
    }
}

/// Facts found in the real samples (their sizes, names and counts),
/// checked through the views.
#[test]
fn samples_show_what_the_spec_found() {
    let samples = samples();
    let get = |n: &str| samples.iter().find(|(name, _)| name == n).unwrap().1.clone();
    let apple = Schematic::decode(&get("mtg_apple_tree.mts")).unwrap();
    assert_eq!(apple.size, [7, 8, 7]);
    assert_eq!(apple.names.len(), 4);
    assert_eq!(apple.slices[2], 63);
    let forced_trunk = (0..apple.volume())
        .filter(|&i| apple.param1[i] & codec::FORCE_PLACE != 0 && apple.name_at(i) == b"default:tree")
        .count();
    assert_eq!(forced_trunk, 9);
    let d = MtsDocument::new(apple);
    let layers = String::from_utf8(d.render("layers").unwrap()).unwrap();
    assert!(layers.contains("- air prob=0\n"), "{layers}");
    let smith = Schematic::decode(&get("mcl5_blacksmith.mts")).unwrap();
    assert_eq!((smith.size, smith.names.len()), ([7, 6, 9], 28));
}
