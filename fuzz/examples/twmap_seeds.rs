//! Seed corpora of the Teeworlds/DDNet map targets from real maps.
//!
//! `cargo run --example twmap_seeds -- <dir of .map files> <corpus root>`
//! (run by ../seed_corpus.sh). Writes, into `<corpus root>/<target>/`:
//! * twmap_datafile, twmap_map: every map as it is;
//! * twmap_map: every map in version 3 form too (raw data), so mutations
//!   reach the items and tiles behind zlib;
//! * twmap_view_files: every writable file of the example map (byte 0 picks
//!   the file, as the target reads it).

use std::path::Path;
use worldfs::documents::twmap::TwMap;
use worldfs_codec::twmap::datafile::Datafile;
use worldfs::documents::{Context, Document};

fn put(root: &Path, target: &str, name: &str, data: &[u8]) {
    let dir = root.join(target);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), data).unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (maps, root) = (Path::new(&args[1]), Path::new(&args[2]));
    let mut paths: Vec<_> = std::fs::read_dir(maps).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    for p in paths.iter().filter(|p| p.extension().is_some_and(|e| e == "map")) {
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(p).unwrap();
        put(root, "twmap_datafile", &name, &bytes);
        put(root, "twmap_map", &name, &bytes);
        let mut df = Datafile::decode(&bytes).unwrap();
        df.version = 3;
        put(root, "twmap_map", &format!("{name}-v3"), &df.encode().unwrap());
    }
    let example = worldfs_codec::twmap::example::example().encode().unwrap();
    let doc = TwMap::decode(&example, &Context::default()).unwrap();
    for (i, p) in worldfs_fuzz::twmap_writable().iter().enumerate() {
        put(root, "twmap_view_files", &format!("example-{i}"), &[&[i as u8][..], &doc.render(p).unwrap()].concat());
    }
    eprintln!("twmap seeds written to {}", root.display());
}
