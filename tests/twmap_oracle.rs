//! Oracle test: the `twmap` Python package (bindings of the twmap crate, an
//! independent reader of Teeworlds/DDNet maps; only run here, never linked)
//! reads every real map as our document shows it (every layer's tiles,
//! every image's pixels and size, the info), and reads the maps we write
//! after edits made through the document's files (a tile changed in
//! `tiles`, a setting added in `info`, an embedded image replaced with a
//! PNG) as edited.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use worldfs::documents::twmap::TwMap;
use worldfs::documents::twmap::view;
use worldfs::documents::{Context, Document};
use worldfs_codec::jsonish;
use worldfs_codec::twmap::items::Layer;
use worldfs_codec::twmap::tiles::TileKind;

const DUMP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/twmap_dump.py");

/// What twmap read: `index` lines and the binary files beside them.
struct Oracle {
    dir: tempfile::TempDir,
    lines: Vec<Vec<String>>,
}

fn have_twmap(test: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import twmap, numpy"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        common::skip(test, "twmap", "python3 with the twmap and numpy packages is missing (pip install twmap numpy)");
    }
    ok
}

/// Split an index line: words, then one JSON string at the end.
fn split(line: &str) -> Vec<String> {
    let (head, quoted) = match line.find('"') {
        Some(q) => (&line[..q], Some(&line[q..])),
        None => (line, None),
    };
    let mut words: Vec<String> = head.split_whitespace().map(str::to_string).collect();
    if let Some(q) = quoted {
        let (s, used) = jsonish::unquote(q.as_bytes(), true).unwrap();
        assert_eq!(used, q.len(), "{line}");
        words.push(String::from_utf8(s).unwrap());
    }
    words
}

fn oracle(map: &Path) -> Oracle {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("python3").arg(DUMP).arg(map).arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "twmap could not read {}: {}", map.display(), String::from_utf8_lossy(&out.stderr));
    let index = std::fs::read_to_string(dir.path().join("index")).unwrap();
    Oracle { lines: index.lines().map(split).collect(), dir }
}

impl Oracle {
    fn with(&self, first: &str) -> Vec<&Vec<String>> {
        self.lines.iter().filter(|l| l[0] == first).collect()
    }
    fn bin(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.dir.path().join(name)).unwrap()
    }
}

/// Our layer directories, per group, in order.
fn layer_dirs(doc: &TwMap) -> Vec<Vec<String>> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for e in doc.entries().into_iter().filter(|e| e.dir) {
        let parts: Vec<&str> = e.path.split('/').collect();
        if parts.len() == 2 && parts[0] == "groups" {
            groups.push((e.path.clone(), Vec::new()));
        } else if parts.len() == 4 && parts[2] == "layers" {
            groups.last_mut().unwrap().1.push(e.path.clone());
        }
    }
    groups.into_iter().map(|(_, l)| l).collect()
}

fn kind_name(layer: &Layer) -> &'static str {
    match layer {
        Layer::Tiles(t) => match TileKind::of(t) {
            TileKind::Tiles => "Tiles",
            TileKind::Game => "Game",
            TileKind::Front => "Front",
            TileKind::Tele => "Tele",
            TileKind::Speedup => "Speedup",
            TileKind::Switch => "Switch",
            TileKind::Tune => "Tune",
        },
        Layer::Quads(_) => "Quads",
        Layer::Sounds(_) => "Sounds",
        Layer::Other(..) => "?",
    }
}

/// Our tiles.raw in twmap's array layout: tiles, game and front
/// [index, flags]; speedup [force, max_speed, type, angle] as i16; tele,
/// switch and tune as stored.
fn twmap_layout(kind: TileKind, raw: &[u8]) -> Vec<u8> {
    let size = kind.tile_size();
    raw.chunks_exact(size)
        .flat_map(|t| match kind {
            TileKind::Tiles | TileKind::Game | TileKind::Front => t[..2].to_vec(),
            TileKind::Speedup => [t[0] as i16, t[1] as i16, t[2] as i16, i16::from_le_bytes([t[4], t[5]])]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
            _ => t.to_vec(),
        })
        .collect()
}

/// Check that twmap reads `map_file` as `doc` shows it; returns how many
/// tile layers and embedded images were compared.
fn agree(name: &str, doc: &TwMap, map_file: &Path) -> (usize, usize) {
    let o = oracle(map_file);
    let m = doc.map();
    // Info.
    let info = String::from_utf8(doc.render("info").unwrap()).unwrap();
    let (head, settings) = info.split_once("[settings]\n").unwrap();
    for line in o.with("info") {
        let ours = head.lines().find_map(|l| l.strip_prefix(&format!("{} = ", line[1]))).unwrap();
        let ours = jsonish::unquote(ours.as_bytes(), true).map(|(s, _)| s).unwrap_or(ours.as_bytes().to_vec());
        assert_eq!(String::from_utf8(ours).unwrap(), line[2], "{name}: info {}", line[1]);
    }
    let theirs: Vec<&str> = o.with("setting").iter().map(|l| l[1].as_str()).collect();
    assert_eq!(settings.lines().collect::<Vec<_>>(), theirs, "{name}: settings");
    // Groups and layers.
    let dirs = layer_dirs(doc);
    assert_eq!(o.with("group").len(), dirs.len(), "{name}: groups");
    for g in o.with("group") {
        let gi: usize = g[1].parse().unwrap();
        assert_eq!(String::from_utf8_lossy(&view::group_name(m, gi)), g[2], "{name}: group {gi} name");
    }
    let mut layers = 0;
    let mut tiles = 0;
    for l in o.lines.iter().filter(|l| l[0] == "tiles" || l[0] == "layer") {
        let (g, li): (usize, usize) = (l[1].parse().unwrap(), l[2].parse().unwrap());
        let layer = m.layer(g, li);
        let what = format!("{name}: layer {li} of group {g}");
        assert_eq!(kind_name(&layer), l[3], "{what}: kind");
        assert_eq!(String::from_utf8_lossy(&view::layer_name(&layer)), *l.last().unwrap(), "{what}: name");
        layers += 1;
        if l[0] == "tiles" {
            let Layer::Tiles(t) = &layer else { panic!("{what}: twmap sees tiles") };
            assert_eq!((t.width.to_string(), t.height.to_string()), (l[4].clone(), l[5].clone()), "{what}: size");
            let raw = doc.render(&format!("{}/tiles.raw", dirs[g][li])).unwrap();
            let ours = twmap_layout(TileKind::of(t), &raw);
            assert!(ours == o.bin(&format!("tiles_{g}_{li}.bin")), "{what}: tiles differ from twmap's");
            tiles += 1;
        }
    }
    assert_eq!(layers, dirs.iter().map(Vec::len).sum::<usize>(), "{name}: layers");
    // Images.
    let mut images = 0;
    let files: Vec<String> =
        doc.entries().into_iter().filter(|e| e.path.starts_with("images/")).map(|e| e.path).collect();
    assert_eq!(files.len(), o.with("image").len(), "{name}: images");
    for line in o.with("image") {
        let i: usize = line[1].parse().unwrap();
        let im = m.image(i);
        let what = format!("{name}: image {i}");
        assert_eq!(String::from_utf8_lossy(&m.string(im.name)), line[5], "{what}: name");
        assert_eq!((im.width.to_string(), im.height.to_string()), (line[3].clone(), line[4].clone()), "{what}: size");
        let embedded = line[2] == "1";
        assert_eq!(im.is_embedded(), embedded, "{what}: embedded");
        assert_eq!(files[i].ends_with(".png"), embedded, "{what}: {}", files[i]);
        if embedded {
            let png = doc.render(&files[i]).unwrap();
            let px = view::decode_png(&png, im.width as u32, im.height as u32, 4).unwrap();
            assert!(px == o.bin(&format!("image_{i}.bin")), "{what}: pixels differ from twmap's");
            images += 1;
        }
    }
    (tiles, images)
}

/// The real maps (tests/data/formats/twmap).
fn real_maps() -> Vec<PathBuf> {
    let mut maps: Vec<PathBuf> = std::fs::read_dir(common::real_formats("twmap"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "map"))
        .collect();
    maps.sort();
    assert_eq!(maps.len(), 5);
    maps
}

#[test]
fn twmap_reads_every_real_map_as_we_show_it() {
    let test = "twmap_reads_every_real_map_as_we_show_it";
    if !have_twmap(test) {
        return;
    }
    let maps = real_maps();
    let (mut tiles, mut images) = (0, 0);
    for path in maps {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let doc = TwMap::decode(&std::fs::read(&path).unwrap(), &Context::default()).unwrap();
        let (t, i) = agree(&name, &doc, &path);
        tiles += t;
        images += i;
    }
    eprintln!("twmap agrees on {tiles} tile layers and {images} embedded images");
    assert!(tiles >= 40 && images >= 9, "{tiles} tile layers, {images} images");
}

/// Change the cell at (1, 1) of a `tiles` text to another index.
fn change_cell(text: &[u8]) -> (Vec<u8>, u8) {
    let text = String::from_utf8(text.to_vec()).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut cells: Vec<String> = lines[1].split(' ').map(str::to_string).collect();
    let index: u8 = cells[1].split(':').next().unwrap().parse().unwrap();
    let new = if index == 1 { 0 } else { 1 };
    cells[1] = new.to_string();
    lines[1] = cells.join(" ");
    ((lines.join("\n") + "\n").into_bytes(), new)
}

#[test]
fn twmap_reads_our_edits() {
    let test = "twmap_reads_our_edits";
    if !have_twmap(test) {
        return;
    }
    let maps = real_maps();
    let mut replaced_images = 0;
    for path in maps {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let mut doc = TwMap::decode(&std::fs::read(&path).unwrap(), &Context::default()).unwrap();
        let entries = doc.entries();
        // A tile of the game layer.
        let game = entries.iter().find(|e| e.path.ends_with("_Game/tiles")).unwrap().path.clone();
        let (text, new_index) = change_cell(&doc.render(&game).unwrap());
        doc.apply(&game, &text).unwrap();
        // A setting (Teeworlds 0.7 maps have none: twmap refuses them, and
        // so do we).
        let mut info = doc.render("info").unwrap();
        info.extend_from_slice(b"sv_worldfs_oracle 1\n");
        let teeworlds07 = doc.map().teeworlds07().is_some();
        match doc.apply("info", &info) {
            Ok(()) => assert!(!teeworlds07, "{name}"),
            Err(e) => assert!(teeworlds07 && e.to_string().contains("settings are a DDNet feature"), "{name}: {e}"),
        }
        // The first embedded image, colours inverted.
        let png_path = entries.iter().find(|e| e.path.ends_with(".png")).map(|e| e.path.clone());
        let mut new_pixels = None;
        if let Some(p) = &png_path {
            let i: usize = p["images/".len()..][..2].parse().unwrap();
            let im = doc.map().image(i);
            let (w, h) = (im.width as u32, im.height as u32);
            let mut px = view::decode_png(&doc.render(p).unwrap(), w, h, 4).unwrap();
            px.chunks_exact_mut(4).for_each(|c| c[..3].iter_mut().for_each(|v| *v = 255 - *v));
            let mut png = Vec::new();
            let mut enc = png::Encoder::new(&mut png, w, h);
            enc.set_color(png::ColorType::Rgba);
            enc.write_header().unwrap().write_image_data(&px).unwrap();
            doc.apply(p, &png).unwrap();
            new_pixels = Some((i, px));
            replaced_images += 1;
        }
        let dir = tempfile::tempdir().unwrap();
        let written = dir.path().join(&name);
        std::fs::write(&written, doc.encode().unwrap()).unwrap();

        // twmap reads what we meant, and everything else as before.
        let o = oracle(&written);
        let again = TwMap::decode(&std::fs::read(&written).unwrap(), &Context::default()).unwrap();
        agree(&name, &again, &written);
        let g = layer_dirs(&again).iter().position(|ls| ls.iter().any(|l| game.starts_with(l.as_str()))).unwrap();
        let l = layer_dirs(&again)[g].iter().position(|l| game.starts_with(l.as_str())).unwrap();
        let Layer::Tiles(t) = again.map().layer(g, l) else { panic!() };
        let theirs = o.bin(&format!("tiles_{g}_{l}.bin"));
        assert_eq!(theirs[(t.width as usize + 1) * 2], new_index, "{name}: twmap does not see the changed tile");
        let settings: Vec<&str> = o.with("setting").iter().map(|l| l[1].as_str()).collect();
        if !teeworlds07 {
            assert_eq!(settings.last(), Some(&"sv_worldfs_oracle 1"), "{name}: twmap does not see the new setting");
        }
        if let Some((i, px)) = new_pixels {
            assert!(o.bin(&format!("image_{i}.bin")) == px, "{name}: twmap does not see the new image");
        }
        eprintln!("{name}: twmap reads the edited map as edited");
    }
    assert!(replaced_images >= 1, "some sample has an embedded image");
}

/// `tiles` text with the cell at (x, y) replaced.
fn with_cell(text: &[u8], x: usize, y: usize, cell: &str) -> Vec<u8> {
    let text = String::from_utf8(text.to_vec()).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut cells: Vec<&str> = lines[y].split(' ').collect();
    cells[x] = cell;
    lines[y] = cells.join(" ");
    (lines.join("\n") + "\n").into_bytes()
}

#[test]
fn speedup_angles_and_tile_flags_twmap_refuses_are_refused() {
    let test = "speedup_angles_and_tile_flags_twmap_refuses_are_refused";
    if !have_twmap(test) {
        return;
    }
    let maps = real_maps();
    let path = maps.iter().find(|p| p.ends_with("ddnet_coverage.map")).unwrap();
    let bytes = std::fs::read(path).unwrap();
    let mut doc = TwMap::decode(&bytes, &Context::default()).unwrap();
    let entries = doc.entries();
    let file = |suffix: &str| entries.iter().find(|e| e.path.ends_with(suffix)).unwrap().path.clone();
    let (speedup, game) = (file("_Speedup/tiles"), file("_Game/tiles"));
    let speedup_text = doc.render(&speedup).unwrap();
    let game_text = doc.render(&game).unwrap();
    // Refused, with the line and cell, and nothing changed.
    for (path, text, cell, why) in [
        (&speedup, &speedup_text, "30:10:28:-90", "angle -90: a speedup's angle is 0 to 359"),
        (&speedup, &speedup_text, "30:10:28:360", "angle 360"),
        (&game, &game_text, "1:16", "flags 16"),
        (&game, &game_text, "1:255", "flags 255"),
        (&game, &game_text, "1:4", "flags 4: the opaque flag (4) is for tiles layers"),
    ] {
        let e = doc.apply(path, &with_cell(text, 1, 1, cell)).unwrap_err().to_string();
        assert!(e.contains(why) && e.contains("line 2") && e.contains("cell 2"), "{cell}: {e}");
        assert!(doc.encode().unwrap() == bytes, "{cell}: the refused edit changed the map");
    }
    let raw = file("_Game/tiles.raw");
    let mut r = doc.render(&raw).unwrap();
    r[1] = 16;
    assert!(doc.apply(&raw, &r).unwrap_err().to_string().contains("flags 16"));
    // The bounds themselves are accepted, and twmap reads them.
    doc.apply(&speedup, &with_cell(&speedup_text, 1, 1, "30:10:28:359")).unwrap();
    doc.apply(&game, &with_cell(&game_text, 1, 1, "1:11")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let written = dir.path().join("bounds.map");
    std::fs::write(&written, doc.encode().unwrap()).unwrap();
    let o = oracle(&written);
    agree("bounds.map", &TwMap::decode(&std::fs::read(&written).unwrap(), &Context::default()).unwrap(), &written);
    let width: usize = o.with("tiles").iter().find(|l| l[3] == "Speedup").unwrap()[4].parse().unwrap();
    let line = o.with("tiles").into_iter().find(|l| l[3] == "Speedup").unwrap();
    let sp = o.bin(&format!("tiles_{}_{}.bin", line[1], line[2]));
    let at = ((width + 1) * 4 + 3) * 2;
    assert_eq!(i16::from_le_bytes([sp[at], sp[at + 1]]), 359, "twmap reads the angle");
}
