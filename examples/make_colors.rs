//! `make_colors NODES.txt MODS_DIR`: node colours for src/view/colors.txt.
//! NODES.txt has "name drawtype texture" lines (contrib/colors/dump_nodes.lua
//! run by the real server); each colour is the average of the texture's
//! opaque pixels (the texture's base name, before any `^` modifier), looked
//! up in MODS_DIR/*/textures/. Run by contrib/make-colors.sh.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a tool run by hand or by a bench script: a failure ends it with its message"
)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn textures(mods: &Path) -> HashMap<String, PathBuf> {
    let mut m = HashMap::new();
    for e in std::fs::read_dir(mods).expect("mods directory").flatten() {
        let dir = e.path().join("textures");
        for t in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            m.insert(t.file_name().to_string_lossy().into_owned(), t.path());
        }
    }
    m
}

/// Average RGB of the pixels with alpha >= 128 (None: none, or unreadable).
fn average(path: &Path) -> Option<[u8; 3]> {
    let mut dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).ok()?));
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut r = dec.read_info().ok()?;
    let mut buf = vec![0; r.output_buffer_size()?];
    let info = r.next_frame(&mut buf).ok()?;
    let px = &buf[..info.buffer_size()];
    let (mut sum, mut n) = ([0u64; 3], 0u64);
    let mut add = |rgb: [u8; 3], a: u8| {
        if a >= 128 {
            for i in 0..3 {
                sum[i] += rgb[i] as u64;
            }
            n += 1;
        }
    };
    match info.color_type {
        png::ColorType::Rgba => px.chunks_exact(4).for_each(|p| add([p[0], p[1], p[2]], p[3])),
        png::ColorType::Rgb => px.chunks_exact(3).for_each(|p| add([p[0], p[1], p[2]], 255)),
        png::ColorType::GrayscaleAlpha => px.chunks_exact(2).for_each(|p| add([p[0]; 3], p[1])),
        png::ColorType::Grayscale => px.iter().for_each(|&g| add([g; 3], 255)),
        png::ColorType::Indexed => return None,
    }
    (n > 0).then(|| sum.map(|s| (s / n) as u8))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    assert!(args.len() == 3, "usage: make_colors NODES.txt MODS_DIR");
    let tex = textures(Path::new(&args[2]));
    let nodes = std::fs::read_to_string(&args[1]).expect("nodes list");
    println!("# Node colours for top.png and MNT/map/ (name r g b), made by contrib/make-colors.sh:");
    println!("# the average opaque pixel of each minetest_game node's top texture, as the real server lists them.");
    for line in nodes.lines() {
        let mut it = line.splitn(3, ' ');
        let (Some(name), Some(_draw), Some(t)) = (it.next(), it.next(), it.next()) else { continue };
        let base = t.split('^').next().unwrap_or(t).trim_start_matches('(');
        let Some(path) = tex.get(base) else { continue };
        if let Some([r, g, b]) = average(path) {
            println!("{name} {r} {g} {b}");
        }
    }
}
