//! `top.png` of a chunk: the highest visible block of each of its 16 x 16
//! columns in the block's colour (`view::picture::minecraft_colors`),
//! lighter high and darker low; north (-Z) up, west left, columns with
//! nothing visible transparent. Read-only: it is drawn from the sections.

use super::chunk::ChunkDoc;
use crate::codec::nbt::Tag;
use crate::kinds::DocResult;
use crate::view::picture::{self, Colors, NOTHING, Rgba};

/// Each column's top `[z][x]` (z = 0 the north row): its colour and world Y.
pub type Tops = [[Option<(Rgba, i64)>; 16]; 16];

/// The tops of a chunk's columns, its highest section first.
pub fn chunk_tops(doc: &ChunkDoc, colors: &Colors) -> DocResult<Tops> {
    let mut out: Tops = [[None; 16]; 16];
    let mut left = 256;
    let mut sections = doc.section_blocks()?;
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
                return Ok(out);
            }
        }
    }
    Ok(out)
}

fn name(t: &Tag) -> &[u8] {
    match t {
        Tag::Compound(c) => c.string("Name").unwrap_or("").as_bytes(),
        _ => b"",
    }
}

/// Pixels of tops: each shaded by its height against sea level (Y 63).
pub fn tops_pixels(tops: &Tops) -> Vec<u8> {
    let mut px = Vec::with_capacity(16 * 16 * 4);
    for row in tops {
        for top in row {
            px.extend_from_slice(&match *top {
                Some((c, y)) => picture::shade(c, ((y - 63) / 2) as i32),
                None => NOTHING,
            });
        }
    }
    px
}

/// The chunk's `top.png`, 16 x 16 pixels.
pub fn top_png(doc: &ChunkDoc) -> DocResult<Vec<u8>> {
    let tops = chunk_tops(doc, picture::minecraft_colors())?;
    Ok(picture::encode_png(16, 16, &tops_pixels(&tops)))
}
