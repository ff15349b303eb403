//! Pictures of Minecraft worlds: each chunk's `top.png` shows, for each of
//! its 16 x 16 columns, the highest block that is not see-through, as the
//! independent reader (anvil-parser2, tests/scripts/mc_oracle.py) reads the
//! chunk's sections, in that block's colour of src/view/mc_colors.txt
//! shaded by its height; columns with nothing visible are transparent.

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;
use worldfs::view::picture::{self, Rgba};

fn sample() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/minecraft/querz"))
}

/// The colour table as the file states it, read here without worldfs.
fn table() -> HashMap<String, Rgba> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/view/mc_colors.txt")).unwrap();
    let mut out = HashMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let f: Vec<&str> = line.split(' ').collect();
        let n = |i: usize| f[i].parse::<u8>().unwrap();
        out.insert(f[0].to_string(), [n(1), n(2), n(3), n(4)]);
    }
    out
}

/// The reader's sections of each chunk: `X,Z` -> (section Y -> 4096 labels).
fn oracle_sections(world: &Path) -> BTreeMap<String, BTreeMap<i64, Vec<String>>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/mc_oracle.py");
    let out = Command::new("python3").arg(script).arg(world).output().expect("python3 runs");
    assert!(out.status.success(), "mc_oracle.py: {}", String::from_utf8_lossy(&out.stderr));
    let mut chunks: BTreeMap<String, BTreeMap<i64, Vec<String>>> = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let Some(rest) = line.strip_prefix("section ") else { continue };
        let mut f = rest.split(' ');
        let (key, y) = (f.next().unwrap().to_string(), f.next().unwrap().parse().unwrap());
        chunks.entry(key).or_default().insert(y, f.map(String::from).collect());
    }
    chunks
}

#[test]
fn top_png_shows_each_columns_highest_visible_block_as_anvil_parser_reads_it() {
    require_fuse!("minecraft_pictures::top_png");
    let ok = Command::new("python3").args(["-c", "import anvil"]).output().map(|o| o.status.success());
    if !ok.unwrap_or(false) {
        common::skip(
            "minecraft_pictures::top_png",
            "python3",
            "python3 with anvil-parser2 (pip install anvil-parser2)",
        );
        return;
    }
    let colours = table();
    let chunks = oracle_sections(sample());
    assert!(chunks.len() >= 3, "the sample's chunks: {:?}", chunks.keys());
    let m = common::mount::Mounted::new(sample(), &["ro"]);
    let mut columns = 0;
    for (key, sections) in &chunks {
        let png = std::fs::read(m.path(&format!("chunks/{key}/top.png"))).unwrap();
        let (w, h, px) = picture::decode_png(&png).unwrap();
        assert_eq!((w, h), (16, 16), "chunk {key}");
        for z in 0..16 {
            for x in 0..16 {
                // The reader's highest block of this column that the table
                // does not make see-through (a block it lacks still shows).
                let top = sections.iter().rev().find_map(|(sy, labels)| {
                    (0..16).rev().find_map(|y| {
                        let name = labels[y * 256 + z * 16 + x].split('[').next().unwrap().to_string();
                        let colour = colours.get(&name).copied();
                        (colour.is_none_or(|c| c[3] > 0)).then(|| (name, colour, sy * 16 + y as i64))
                    })
                });
                let got = &px[(z * 16 + x) * 4..(z * 16 + x) * 4 + 4];
                match top {
                    None => assert_eq!(got[3], 0, "chunk {key} column {x},{z}: nothing visible, drawn {got:?}"),
                    Some((name, None, _)) => assert_eq!(got[3], 255, "chunk {key} column {x},{z}: {name} not drawn"),
                    Some((name, Some(c), y)) => {
                        let want = picture::shade(c, ((y - 63) / 2) as i32);
                        assert_eq!(got, want, "chunk {key} column {x},{z}: {name} at y {y}");
                        columns += 1;
                    }
                }
            }
        }
    }
    assert!(columns > 600, "only {columns} columns compared");
    // Drawn, not stored: it cannot be written.
    let (code, _, err) = m.sh("echo x > $MNT/chunks/$(ls $MNT/chunks | head -1)/top.png");
    assert_ne!(code, 0, "top.png was written: {err}");
}

#[test]
fn map_tiles_hold_each_chunks_top_png_where_the_chunk_lies() {
    use worldfs::view::tiles::{self, MAX_Z, TILE};
    require_fuse!("minecraft_pictures::map_tiles");
    let m = common::mount::Mounted::new(sample(), &["ro"]);
    let chunks: Vec<(i64, i64)> = m
        .ok("ls $MNT/chunks")
        .lines()
        .map(|l| {
            let (x, z) = l.split_once(',').unwrap();
            (x.parse().unwrap(), z.parse().unwrap())
        })
        .collect();
    assert!(chunks.len() >= 3, "{chunks:?}");
    let listed = m.ok(&format!("ls $MNT/map/{MAX_Z}"));
    let mut compared = 0;
    for (cx, cz) in chunks {
        let (_, _, top) =
            picture::decode_png(&std::fs::read(m.path(&format!("chunks/{cx},{cz}/top.png"))).unwrap()).unwrap();
        // The map's z grows northwards: world z is -1 - map z.
        let (tx, ty) = tiles::tile_of(MAX_Z, cx * 16, -1 - cz * 16);
        let name = format!("{tx},{ty}.png");
        assert!(listed.lines().any(|l| l == name), "chunk {cx},{cz}: no tile {name} in {listed}");
        let (w, h, tile) =
            picture::decode_png(&std::fs::read(m.path(&format!("map/{MAX_Z}/{name}"))).unwrap()).unwrap();
        assert_eq!((w as usize, h as usize), (TILE, TILE));
        let (west, north) = tiles::origin(MAX_Z, tx, ty);
        for z in 0..16i64 {
            for x in 0..16i64 {
                let (py, px) = (north - (-1 - (cz * 16 + z)), cx * 16 + x - west);
                let at = ((py * TILE as i64 + px) * 4) as usize;
                let want = &top[((z * 16 + x) * 4) as usize..][..4];
                assert_eq!(&tile[at..at + 4], want, "chunk {cx},{cz} column {x},{z} in tile {name}");
                compared += (want[3] > 0) as usize;
            }
        }
    }
    assert!(compared > 600, "only {compared} drawn columns compared");
    // The page shows z as the world has it.
    assert!(m.ok("cat $MNT/map/index.html").contains("const worldZ = z => -1 - z;"));
    assert!(m.ok("ls $MNT/map/0").trim().ends_with(".png"));
}
