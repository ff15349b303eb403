//! `top.png` of a chunk: the highest visible block of each of its 16 x 16
//! columns in the block's colour (`view::picture::minecraft_colors`),
//! lighter high and darker low; north (-Z) up, west left, columns with
//! nothing visible transparent. Read-only: it is drawn from the sections.
//! The same pixels make the world's `map/` tiles (`map.rs`).

use super::section::Container;
use crate::view::picture::{self, Colors, NOTHING, Rgba};
use worldfs_codec::minecraft::nbt::Tag;

/// Each column's top `[z][x]` (z = 0 the north row): its colour and world Y.
pub(crate) type Tops = [[Option<(Rgba, i64)>; 16]; 16];

/// The tops of a chunk's columns from its sections' blocks (by section Y).
pub(crate) fn chunk_tops(mut sections: Vec<(i64, Container)>, colors: &Colors) -> Tops {
    let mut out: Tops = [[None; 16]; 16];
    let mut left = 256;
    sections.sort_by_key(|(y, _)| std::cmp::Reverse(*y));
    for (sy, c) in sections {
        let by_entry: Vec<Rgba> = c.palette.iter().map(|t| colors.of(name(t))).collect();
        if by_entry.iter().all(|c| c[3] == 0) {
            continue; // all air: most sections above the ground
        }
        for y in (0..16).rev() {
            for (z, row) in out.iter_mut().enumerate() {
                for (x, top) in row.iter_mut().enumerate().filter(|(_, t)| t.is_none()) {
                    let colour = by_entry[c.indices[y * 256 + z * 16 + x] as usize];
                    if colour[3] > 0 {
                        *top = Some((colour, sy * 16 + y as i64));
                        left -= 1;
                    }
                }
            }
            if left == 0 {
                return out;
            }
        }
    }
    out
}

fn name(t: &Tag) -> &[u8] {
    match t {
        Tag::Compound(c) => c.string("Name").unwrap_or("").as_bytes(),
        _ => b"",
    }
}

/// A column's pixel: its top's colour shaded by its height against sea
/// level (Y 63).
pub(crate) fn pixel(top: Option<(Rgba, i64)>) -> Rgba {
    match top {
        Some((c, y)) => picture::shade(c, ((y - 63) / 2) as i32),
        None => NOTHING,
    }
}

/// Pixels of tops, a row of 16 a z.
pub(crate) fn tops_pixels(tops: &Tops) -> Vec<u8> {
    tops.iter().flatten().flat_map(|&top| pixel(top)).collect()
}

/// A chunk's `top.png`, 16 x 16 pixels, from its sections' blocks.
pub(crate) fn top_png(sections: Vec<(i64, Container)>) -> Vec<u8> {
    let tops = chunk_tops(sections, picture::minecraft_colors());
    picture::encode_png(16, 16, &tops_pixels(&tops))
}
