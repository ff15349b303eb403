//! `MNT/map/` of a Bedrock world: its overworld's chunks seen from above,
//! drawn as a Java world's are (`minecraft::top`), each block in the colour
//! of the Java block it maps to (`tables::colour_name`).

use super::chunk::ChunkDoc;
use super::db::Db;
use crate::fs::Result;
use crate::view::picture;
use crate::view::tiles::TILE;
use crate::worlds::map_tree::TopSource;
use crate::worlds::minecraft::top::{chunk_tops, pixel};
use std::sync::Arc;
use worldfs_codec::bedrock::key::ChunkPos;
use worldfs_codec::bedrock::key::OVERWORLD;

pub(crate) struct BedrockTops(pub(crate) Arc<Db>);

impl TopSource for BedrockTops {
    type Columns = Vec<(i64, i64)>;
    const SOUTH_Z: bool = true;

    fn read_columns(&self) -> Result<Vec<(i64, i64)>> {
        Ok(self.0.chunks_of(OVERWORLD)?.into_iter().map(|(x, z)| (x as i64, z as i64)).collect())
    }

    /// As a Java world's: chunks beyond x and z of -32768 to 32767 are not
    /// drawn.
    fn keys(cols: &Vec<(i64, i64)>) -> Vec<(i64, i64)> {
        let drawn = -2048..2048;
        cols.iter().map(|&(x, z)| (x, -1 - z)).filter(|(x, z)| drawn.contains(x) && drawn.contains(z)).collect()
    }

    fn draw_tile(&self, cols: &Vec<(i64, i64)>, west: i64, north: i64) -> Result<Vec<u8>> {
        let top_z = -1 - north;
        let span = TILE as i64 / 16;
        let (cx0, cz0) = (west.div_euclid(16), top_z.div_euclid(16));
        let mut px = vec![0u8; TILE * TILE * 4];
        for &(cx, cz) in cols.iter().filter(|(x, z)| (cx0..cx0 + span).contains(x) && (cz0..cz0 + span).contains(z)) {
            let pos = ChunkPos { dim: OVERWORLD, x: cx as i32, z: cz as i32 };
            let doc = ChunkDoc::new(pos, self.0.records(pos)?);
            let tops = chunk_tops(doc.java_sections(), picture::minecraft_colors());
            for (z, row) in tops.iter().enumerate() {
                let py = (cz * 16 + z as i64 - top_z) as usize;
                for (x, &top) in row.iter().enumerate() {
                    let at = (py * TILE + (cx * 16 + x as i64 - west) as usize) * 4;
                    px[at..at + 4].copy_from_slice(&pixel(top));
                }
            }
        }
        Ok(px)
    }
}

/// Blocks x1..=x2, z1..=z2 of a map: (x1, z1, x2, z2).
pub(crate) type Area = (i64, i64, i64, i64);

/// `worldfs map` of a Bedrock world: the overworld's blocks x1..=x2,
/// z1..=z2 (None: every chunk's) from above, north up, as RGBA pixels;
/// returns them with the area drawn. `scale` (pixels per block) only
/// bounds the picture's size: it is refused before anything is drawn.
pub(crate) fn draw(
    world: &std::path::Path,
    area: Option<Area>,
    scale: usize,
) -> std::result::Result<(Vec<u8>, Area), String> {
    let store = worldfs_store::leveldb::bedrock::BedrockDb::open(&world.join("db"), true)?;
    let db = Db::new(store, None);
    let chunks = db.chunks_of(OVERWORLD).map_err(|e| e.message)?;
    let (x1, z1, x2, z2) = match area {
        Some(a) => a,
        None => {
            let xs = chunks.iter().map(|c| c.0 as i64);
            let zs = chunks.iter().map(|c| c.1 as i64);
            match (xs.clone().min(), xs.max(), zs.clone().min(), zs.max()) {
                (Some(a), Some(b), Some(c), Some(d)) => (a * 16, c * 16, b * 16 + 15, d * 16 + 15),
                _ => return Err(format!("{}: the overworld has no chunks", world.display())),
            }
        }
    };
    let (w, h) = ((x2 - x1 + 1) as usize, (z2 - z1 + 1) as usize);
    let (pw, ph) = (w.saturating_mul(scale), h.saturating_mul(scale));
    if pw.saturating_mul(ph) > 1 << 28 {
        return Err(format!("{pw} x {ph} pixels is too large a picture; choose a smaller --area or --scale"));
    }
    let mut px = vec![0u8; w * h * 4];
    for &(cx, cz) in chunks.iter().filter(|(x, z)| {
        let (x, z) = (*x as i64 * 16, *z as i64 * 16);
        x + 15 >= x1 && x <= x2 && z + 15 >= z1 && z <= z2
    }) {
        let pos = ChunkPos { dim: OVERWORLD, x: cx, z: cz };
        let doc = ChunkDoc::new(pos, db.records(pos).map_err(|e| e.message)?);
        let tops = chunk_tops(doc.java_sections(), picture::minecraft_colors());
        for (z, row) in tops.iter().enumerate() {
            for (x, &top) in row.iter().enumerate() {
                let (bx, bz) = (cx as i64 * 16 + x as i64, cz as i64 * 16 + z as i64);
                if (x1..=x2).contains(&bx) && (z1..=z2).contains(&bz) {
                    let at = ((bz - z1) as usize * w + (bx - x1) as usize) * 4;
                    px[at..at + 4].copy_from_slice(&pixel(top));
                }
            }
        }
    }
    Ok((px, (x1, z1, x2, z2)))
}
