//! Drawing a part of a world from above, from its map store: which block
//! columns exist, and for each node column the highest visible node (the
//! highest block of a column first; lower ones only where it shows
//! nothing). Used by `MNT/map/` and `worldfs map`.

use crate::view::picture::{self, Colors};
use crate::view::tiles::Bounds;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use worldfs_codec::luanti::NodeIds;
use worldfs_store::{BlockPos, MapStore, Result};

/// Every block column of a world: (x, z) in blocks -> its ys, highest first.
pub(crate) struct Columns {
    pub(crate) ys: HashMap<(i16, i16), Vec<i16>>,
    pub(crate) bounds: Option<Bounds>,
}

impl Columns {
    /// Read every block position of the store (positions only: a few
    /// bytes a block).
    pub(crate) fn read(store: &dyn MapStore) -> Result<Columns> {
        let mut ys: HashMap<(i16, i16), Vec<i16>> = HashMap::new();
        let mut after = None;
        loop {
            let page = store.list_after(after, 4096)?;
            let Some(last) = page.last() else { break };
            after = Some(*last);
            for p in page {
                ys.entry((p.x, p.z)).or_default().push(p.y);
            }
        }
        let mut bounds: Option<Bounds> = None;
        for ((bx, bz), v) in ys.iter_mut() {
            v.sort_unstable_by(|a, b| b.cmp(a));
            let (x, z) = (*bx as i64 * 16, *bz as i64 * 16);
            let b = bounds.get_or_insert(Bounds { min_x: x, max_x: x + 15, min_z: z, max_z: z + 15 });
            b.min_x = b.min_x.min(x);
            b.max_x = b.max_x.max(x + 15);
            b.min_z = b.min_z.min(z);
            b.max_z = b.max_z.max(z + 15);
        }
        Ok(Columns { ys, bounds })
    }
}

/// The area to draw: `width` x `height` nodes, the pixel (0, 0) being node
/// column (`west`, `north`); x grows eastwards, rows go southwards.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Area {
    pub(crate) west: i64,
    pub(crate) north: i64,
    pub(crate) width: usize,
    pub(crate) height: usize,
}

/// RGBA pixels of `area`, drawn by `threads` threads (block rows shared
/// out among them, each drawn straight into its own strip of the picture:
/// no copy of the pixels is made). `shading`: darker low, lighter high.
/// `done(n, total)` is told every so often how many of the area's block
/// columns are drawn.
pub(crate) fn draw(
    store: &dyn MapStore,
    cols: &Columns,
    colors: &Colors,
    area: Area,
    shading: bool,
    threads: usize,
    done: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<u8>> {
    let south = area.north - area.height as i64 + 1;
    let east = area.west + area.width as i64 - 1;
    // The area's block columns by block row (bz).
    let mut rows: BTreeMap<i16, Vec<i16>> = BTreeMap::new();
    for &(bx, bz) in cols.ys.keys() {
        let (x, z) = (bx as i64 * 16, bz as i64 * 16);
        if x + 15 >= area.west && x <= east && z + 15 >= south && z <= area.north {
            rows.entry(bz).or_default().push(bx);
        }
    }
    let total: usize = rows.values().map(Vec::len).sum();
    let row_bytes = area.width * 4;
    let mut px = vec![0u8; row_bytes * area.height];
    {
        // Cut the picture into one strip per block row, north first.
        let mut work = Vec::with_capacity(rows.len());
        let mut rest: &mut [u8] = &mut px;
        let mut rest_top = area.north; // the z of `rest`'s first pixel row
        for (bz, mut bxs) in rows.into_iter().rev() {
            let top = (bz as i64 * 16 + 15).min(area.north);
            let bottom = (bz as i64 * 16).max(south);
            let skipped = std::mem::take(&mut rest).split_at_mut((rest_top - top) as usize * row_bytes).1;
            let (strip, r) = skipped.split_at_mut((top - bottom + 1) as usize * row_bytes);
            rest = r;
            rest_top = bottom - 1;
            bxs.sort_unstable();
            work.push((bz, top, strip, bxs));
        }
        let queue = Mutex::new(work.into_iter());
        let finished = AtomicUsize::new(0);
        done(0, total);
        let threads = threads.clamp(1, 64);
        let results: Vec<Result<()>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let (queue, finished) = (&queue, &finished);
                    s.spawn(move || {
                        loop {
                            let next = queue.lock().next();
                            let Some((bz, top, strip, bxs)) = next else { return Ok(()) };
                            for bx in bxs {
                                draw_column(store, cols, colors, area, shading, bx, bz, top, strip)?;
                                let n = finished.fetch_add(1, Ordering::Relaxed) + 1;
                                if n % 256 == 0 || n == total {
                                    done(n, total);
                                }
                            }
                        }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
        });
        results.into_iter().collect::<Result<()>>()?;
    }
    Ok(px)
}

#[allow(clippy::too_many_arguments)]
fn draw_column(
    store: &dyn MapStore,
    cols: &Columns,
    colors: &Colors,
    area: Area,
    shading: bool,
    bx: i16,
    bz: i16,
    strip_north: i64,
    strip: &mut [u8],
) -> Result<()> {
    let mut filled = [[false; 16]; 16];
    let mut missing = 0;
    // Node columns of this block column inside the area.
    for (lz, row) in filled.iter_mut().enumerate() {
        for (lx, f) in row.iter_mut().enumerate() {
            let (x, z) = (bx as i64 * 16 + lx as i64, bz as i64 * 16 + lz as i64);
            let inside = x >= area.west
                && x < area.west + area.width as i64
                && z <= area.north
                && z > area.north - area.height as i64;
            if inside {
                missing += 1;
            } else {
                *f = true;
            }
        }
    }
    for &y in &cols.ys[&(bx, bz)] {
        if missing == 0 {
            break;
        }
        let Some(blob) = store.get(BlockPos::new(bx, y, bz))? else { continue };
        // Only the mapping and the node ids are looked at.
        let Ok(ids) = NodeIds::of(&blob) else { continue };
        let tops = picture::block_tops(&ids.mapping, &ids.param0, colors);
        for (lz, row) in tops.iter().enumerate() {
            for (lx, top) in row.iter().enumerate() {
                let Some((c, ly)) = top else { continue };
                if filled[lz][lx] {
                    continue;
                }
                filled[lz][lx] = true;
                missing -= 1;
                let (x, z) = (bx as i64 * 16 + lx as i64, bz as i64 * 16 + lz as i64);
                let at = (((strip_north - z) as usize) * area.width + (x - area.west) as usize) * 4;
                let h = y as i32 * 16 + *ly as i32;
                strip[at..at + 4].copy_from_slice(&if shading { picture::shade(*c, h / 2) } else { *c });
            }
        }
    }
    Ok(())
}

/// A Luanti world's map (`MNT/map/`): its block columns, drawn from the
/// highest block down.
pub(crate) struct LuantiTops(pub(crate) std::sync::Arc<super::LuantiTree>);

impl crate::worlds::map_tree::TopSource for LuantiTops {
    type Columns = Columns;

    fn read_columns(&self) -> crate::fs::Result<Columns> {
        Ok(Columns::read(self.0.store())?)
    }

    fn keys(cols: &Columns) -> Vec<(i64, i64)> {
        cols.ys.keys().map(|&(x, z)| (x as i64, z as i64)).collect()
    }

    fn draw_tile(&self, cols: &Columns, west: i64, north: i64) -> crate::fs::Result<Vec<u8>> {
        let tile = crate::view::tiles::TILE;
        let area = Area { west, north, width: tile, height: tile };
        Ok(draw(self.0.store(), cols, picture::colors(), area, true, 1, &|_, _| {})?)
    }
}
