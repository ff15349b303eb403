//! `MNT/map/` of a Java world: its chunks seen from above (`top.rs`'s
//! pixels), put together by `worlds::map_tree` as a Luanti world's map is.

use super::chunk::ChunkDoc;
use super::regions::Regions;
use super::top::{chunk_tops, pixel};
use crate::documents::{Context, Document};
use crate::fs::{FsError, Result};
use crate::view::picture;
use crate::view::tiles::TILE;
use crate::worlds::map_tree::TopSource;
use std::collections::BTreeSet;
use std::sync::Arc;

/// A Java world's map (`MNT/map/`): its chunks seen from above. The map's z
/// grows northwards, so a chunk's rows are turned: map z = -1 - world z.
pub(crate) struct MinecraftTops(pub(crate) Arc<Regions>);

impl TopSource for MinecraftTops {
    type Columns = Vec<(i64, i64)>;
    const SOUTH_Z: bool = true;

    fn read_columns(&self) -> Result<Vec<(i64, i64)>> {
        let names = self.0.chunk_names().map_err(FsError::io)?;
        Ok(names.iter().filter_map(|n| super::regions::parse_name(n)).collect())
    }

    /// The map's tiles span x and z from -32768 to 32767 (Luanti's world):
    /// chunks beyond are not drawn.
    fn keys(cols: &Vec<(i64, i64)>) -> Vec<(i64, i64)> {
        let drawn = -2048..2048;
        cols.iter().map(|&(x, z)| (x, -1 - z)).filter(|(x, z)| drawn.contains(x) && drawn.contains(z)).collect()
    }

    fn draw_tile(&self, _cols: &Vec<(i64, i64)>, west: i64, north: i64) -> Result<Vec<u8>> {
        let top_z = -1 - north; // the world z of the tile's first row
        let span = TILE as i64 / 16;
        let (cx0, cz0) = (west.div_euclid(16), top_z.div_euclid(16));
        let inside = |x: i64, z: i64| (cx0..cx0 + span).contains(&x) && (cz0..cz0 + span).contains(&z);
        let regions: BTreeSet<(i64, i64)> = (0..span)
            .flat_map(|i| (0..span).map(move |j| ((cx0 + i).div_euclid(32), (cz0 + j).div_euclid(32))))
            .collect();
        let mut px = vec![0u8; TILE * TILE * 4];
        for (rx, rz) in regions {
            for (cx, cz, bytes) in self.0.region_chunks(rx * 32, rz * 32, inside).map_err(FsError::io)? {
                let tops = ChunkDoc::decode(&bytes, &Context::default())
                    .and_then(|doc| doc.section_blocks())
                    .map(|sections| chunk_tops(sections, picture::minecraft_colors()));
                let tops = match tops {
                    Ok(t) => t,
                    Err(e) => {
                        log::warn!("map: chunk {cx},{cz} is not drawn: {e}");
                        continue;
                    }
                };
                for (z, row) in tops.iter().enumerate() {
                    let py = (cz * 16 + z as i64 - top_z) as usize;
                    for (x, &top) in row.iter().enumerate() {
                        let at = (py * TILE + (cx * 16 + x as i64 - west) as usize) * 4;
                        px[at..at + 4].copy_from_slice(&pixel(top));
                    }
                }
            }
        }
        Ok(px)
    }
}
