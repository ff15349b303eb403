//! WorldEdit files (.we) on the real samples written by WorldEdit in a
//! real world (tests/data/luanti/minetest-mesecons-circuits/schems):
//! every one reads, and writing it as version 5 and reading that back
//! gives the same nodes and metadata.

use crate::common;

use worldfs_codec::we::codec;

/// The WorldEdit files of the mesecons world (tests/data/luanti), by name.
fn samples() -> Vec<(String, Vec<u8>)> {
    let dir = common::data_dir().join("luanti/minetest-mesecons-circuits/schems");
    common::real_data("tests/data/luanti/minetest-mesecons-circuits/schems");
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    v.sort();
    assert_eq!(v.len(), 8, "the 8 samples in {}", dir.display());
    v
}

#[test]
fn every_sample_reads_and_round_trips_through_version_5() {
    let samples = samples();
    for (name, bytes) in samples {
        let f = codec::decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = if name.ends_with(".we") { 3 } else { 2 };
        assert_eq!(f.version, want, "{name}");
        assert!(!f.nodes.is_empty(), "{name}");
        // Every node entry of the file was read: count them in the text.
        let text = String::from_utf8_lossy(&bytes);
        let entries = if want == 3 {
            text.lines().filter(|l| !l.trim().is_empty()).count()
        } else {
            text.matches("[\"name\"]=").count()
        };
        assert_eq!(f.nodes.len(), entries, "{name}");
        let again = codec::decode(&codec::encode(&f)).unwrap();
        assert_eq!(again.nodes, f.nodes, "{name}");
        eprintln!(
            "{name}: version {}, {} nodes, {} with metadata",
            f.version,
            f.nodes.len(),
            f.nodes.iter().filter(|n| n.meta.is_some()).count()
        );
    }
}

#[test]
fn metadata_of_the_samples_is_kept() {
    let samples = samples();
    let (_, bytes) = samples.iter().find(|(n, _)| n == "4bit-clock.wem").unwrap();
    let f = codec::decode(bytes).unwrap();
    // The signs of the clock carry their text.
    let sign = f.nodes.iter().find(|n| n.name == b"default:sign_wall").unwrap();
    assert_eq!((sign.pos, sign.param2, sign.param1), ([0, 0, 3], 2, 15));
    let m = sign.meta.as_ref().expect("a sign has metadata");
    assert!(m.fields.iter().any(|(k, _)| k == b"text"), "{m:?}");
    // A luacontroller keeps its program with escaped quotes.
    let code = f
        .nodes
        .iter()
        .filter_map(|n| n.meta.as_ref())
        .flat_map(|m| m.fields.iter())
        .filter(|(k, _)| k == b"code")
        .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
        .find(|c| c.contains("after(1,\"off(C)\")"));
    assert!(code.is_some(), "the program with escaped quotes");
}

#[test]
fn every_file_of_every_sample_applies_to_itself() {
    use worldfs::documents::we::WeDocument;
    use worldfs::documents::{Context, Document};
    let samples = samples();
    for (name, bytes) in samples {
        let mut d = WeDocument::decode(&bytes, &Context::default()).unwrap();
        assert_eq!(d.encode().unwrap(), bytes, "{name}: unchanged gives the bytes back");
        let mut files = 0;
        for e in d.entries().into_iter().filter(|e| e.writable && !e.dir) {
            let content = d.render(&e.path).unwrap();
            d.apply(&e.path, &content).unwrap_or_else(|err| panic!("{name}/{}: {err}", e.path));
            assert_eq!(d.encode().unwrap(), bytes, "{name}/{} changed the file", e.path);
            files += 1;
        }
        assert!(files >= 3, "{name}");
    }
}
