//! A chunk's heightmaps as text (read-only; a block change leaves 1.14+
//! chunks' heightmaps for the game to compute, see chunk.rs).
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

use super::section::{Packing, longs_needed, unpack};
use crate::codec::nbt::{Compound, Tag};

const HEADER: &str = "# heightmaps: per column, the world Y just above its highest block of each kind;\n\
                      # rows z 0 (north) to 15, in each 16 columns x 0 (west) to 15\n";

/// Whether the chunk stores heightmaps.
pub fn present(level: &Compound) -> bool {
    level.compound("Heightmaps").is_some() || matches!(level.get("HeightMap"), Some(Tag::IntArray(_)))
}

/// The heightmaps as text; `spanning`: 1.13 to 1.15 packing.
pub fn render(level: &Compound, spanning: bool) -> Result<String, String> {
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
    use crate::kinds::minecraft::section::pack;

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
}
