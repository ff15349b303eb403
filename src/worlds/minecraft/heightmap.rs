//! A chunk's heightmaps as text (read-only; a block change leaves 1.13+
//! chunks' heightmaps for the game to compute and sets the changed columns
//! of a 1.12-or-older chunk's `HeightMap`, see chunk.rs).
//!
//! ```text
//! # heightmaps: per column, the world Y just above its highest block of each kind;
//! # rows z 0 (north) to 15, in each 16 columns x 0 (west) to 15
//! MOTION_BLOCKING
//! 64 64 64 ...
//! ```
//!
//! Where the game keeps them: 1.13+ `Heightmaps`, a compound of long
//! arrays, 256 heights of 9 bits each (spanning longs to 1.15, padded
//! after), counted from the bottom of the world (`yPos` sections down in
//! 1.18+); 1.12 and older `HeightMap`, 256 ints. Pure.

use super::legacy;
use super::section::{Packing, longs_needed, unpack};
use worldfs_codec::minecraft::nbt::{Compound, Tag};

const HEADER: &str = "# heightmaps: per column, the world Y just above its highest block of each kind;\n\
                      # rows z 0 (north) to 15, in each 16 columns x 0 (west) to 15\n";

/// Whether the chunk stores heightmaps.
pub(crate) fn present(level: &Compound) -> bool {
    level.compound("Heightmaps").is_some() || matches!(level.get("HeightMap"), Some(Tag::IntArray(_)))
}

/// The heightmaps as text; `spanning`: 1.13 to 1.15 packing.
pub(crate) fn render(level: &Compound, spanning: bool) -> Result<String, String> {
    let bottom = 16 * level.int("yPos").unwrap_or(0);
    let mut out = HEADER.to_string();
    if let Some(Tag::IntArray(v)) = level.get("HeightMap") {
        let heights: Vec<i64> = v.iter().map(|h| *h as i64).collect();
        out.push_str(&grid("HeightMap", &heights, 0)?);
    }
    let Some(maps) = level.compound("Heightmaps") else { return Ok(out) };
    let packing = if spanning { Packing::Spanning } else { Packing::Padded };
    for (name, tag) in &maps.0 {
        let Tag::LongArray(longs) = tag else {
            return Err(format!("heightmap {name} is not a long array"));
        };
        if longs.len() != longs_needed(256, 9, packing) {
            return Err(format!("heightmap {name}: {} longs, not 256 heights of 9 bits", longs.len()));
        }
        let heights: Vec<i64> = unpack(longs, 9, 256, packing).into_iter().map(i64::from).collect();
        out.push_str(&grid(name, &heights, bottom)?);
    }
    Ok(out)
}

/// One column of a 1.12-or-older chunk's `HeightMap`, as the game's
/// `Chunk.generateHeightMap` and `Chunk.relightBlock` (run for each block
/// change) give it: y + 1 of the column's highest block that stops light
/// ([`legacy::stops_light`]), 0 if none does. `sections`: each section's
/// Y and block ids (y*256 + z*16 + x); `column`: z*16 + x.
pub(crate) fn legacy_height(sections: &[(i64, Vec<u16>)], column: usize) -> i32 {
    let mut top: Option<i64> = None;
    for (sy, ids) in sections {
        if let Some(y) = (0..16).rev().find(|y| legacy::stops_light(ids[y * 256 + column])) {
            let h = 16 * sy + y as i64 + 1;
            top = Some(top.map_or(h, |t| t.max(h)));
        }
    }
    top.unwrap_or(0) as i32
}

fn grid(name: &str, heights: &[i64], bottom: i64) -> Result<String, String> {
    if heights.len() != 256 {
        return Err(format!("heightmap {name}: {} heights, not 256", heights.len()));
    }
    let mut s = format!("{name}\n");
    for row in heights.chunks(16) {
        let cells: Vec<String> = row.iter().map(|h| (h + bottom).to_string()).collect();
        s.push_str(&cells.join(" "));
        s.push('\n');
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worlds::minecraft::section::pack;

    #[test]
    fn heights_are_shown_from_the_bottom_of_the_world() {
        let values: Vec<u32> = (0..256).map(|i| 64 + i % 7).collect();
        let maps = Compound(vec![("WORLD_SURFACE".into(), Tag::LongArray(pack(&values, 9, Packing::Padded)))]);
        let level = Compound(vec![("yPos".into(), Tag::Int(-4)), ("Heightmaps".into(), Tag::Compound(maps))]);
        let text = render(&level, false).unwrap();
        let first: Vec<&str> = text.lines().nth(3).unwrap().split(' ').collect();
        assert_eq!(first[..3], ["0", "1", "2"]);
        assert_eq!(text.lines().count(), 2 + 1 + 16);
        assert!(render(&level, true).unwrap_err().contains("37 longs"));
    }

    #[test]
    fn a_1_12_column_is_as_high_as_its_highest_block_that_stops_light() {
        // Section 0: stone (1) at y 3 of column 5; section 4: glass (20,
        // light passes) at y 70 and leaves (18, opacity 1) at y 66.
        let mut low = vec![0u16; 4096];
        low[3 * 256 + 5] = 1;
        let mut high = vec![0u16; 4096];
        high[6 * 256 + 5] = 20;
        high[2 * 256 + 5] = 18;
        let sections = vec![(4, high), (0, low)];
        assert_eq!(legacy_height(&sections, 5), 67);
        assert_eq!(legacy_height(&sections[1..], 5), 4);
        assert_eq!(legacy_height(&sections, 6), 0, "no block that stops light");
        assert!(legacy::stops_light(44) && legacy::stops_light(9) && !legacy::stops_light(33), "slab, water; piston");
    }
}
