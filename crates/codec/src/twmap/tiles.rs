//! Tile grids: the tile structs of each kind of tile layer, Teeworlds 0.7's
//! run-length ("skip") packing, the checks DDNet makes on tile data, and
//! the text grid of the `tiles` file. Pure.
//!
//! The text grid has one line per row (top to bottom) and one cell per tile
//! (left to right), cells separated by spaces. A cell is the tile's fields
//! in stored order joined by `:`, trailing zero fields left out (an empty
//! tile is `0`):
//!
//! | layer | cell | bytes per tile |
//! |---|---|---|
//! | tiles, game, front | `index:flags` | 4 (skip and a reserved byte, both 0) |
//! | tele | `number:type` | 2 |
//! | speedup | `force:max_speed:type:angle` | 6 (a reserved byte, 0; angle i16) |
//! | switch | `number:type:flags:delay` | 4 |
//! | tune | `number:type` | 2 |
//!
//! Flags: 1 horizontal flip, 2 vertical flip, 4 opaque, 8 rotate 90°.

use super::items::{TileLayer, tile_flags};
use crate::error::{DocError, DocResult};

/// What the tiles of a tile layer are: which struct each tile is and what it means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TileKind {
    /// A design layer: drawn tiles, no physics.
    Tiles,
    /// The game layer: the physics tiles (solid, death, freeze, ...) and entities.
    Game,
    /// DDNet's front layer: a second layer of game tiles.
    Front,
    /// DDNet's teleporter layer: teleporter numbers and kinds.
    Tele,
    /// DDNet's speedup layer: force, maximum speed and angle.
    Speedup,
    /// DDNet's switch layer: switch numbers, kinds, flags and delays.
    Switch,
    /// DDNet's tune layer: tune zone numbers.
    Tune,
}

/// A field of a tile shown in the text grid.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// The field's name in `cell_syntax` and messages.
    pub name: &'static str,
    /// Its byte offset inside the tile.
    pub offset: usize,
    /// i16 little-endian (speedup angle) instead of u8.
    pub wide: bool,
}

const fn f(name: &'static str, offset: usize) -> Field {
    Field { name, offset, wide: false }
}

const TILE_FIELDS: [Field; 2] = [f("index", 0), f("flags", 1)];
const TELE_FIELDS: [Field; 2] = [f("number", 0), f("type", 1)];
const SPEEDUP_FIELDS: [Field; 4] =
    [f("force", 0), f("max_speed", 1), f("type", 2), Field { name: "angle", offset: 4, wide: true }];
const SWITCH_FIELDS: [Field; 4] = [f("number", 0), f("type", 1), f("flags", 2), f("delay", 3)];

impl TileKind {
    /// The kind of a tile layer: its physics flag (DDNet checks in this
    /// order; the map is refused when more than one is set).
    pub fn of(layer: &TileLayer) -> TileKind {
        let fl = layer.flags;
        if fl & tile_flags::GAME != 0 {
            TileKind::Game
        } else if fl & tile_flags::TELE != 0 {
            TileKind::Tele
        } else if fl & tile_flags::SPEEDUP != 0 {
            TileKind::Speedup
        } else if fl & tile_flags::FRONT != 0 {
            TileKind::Front
        } else if fl & tile_flags::SWITCH != 0 {
            TileKind::Switch
        } else if fl & tile_flags::TUNE != 0 {
            TileKind::Tune
        } else {
            TileKind::Tiles
        }
    }

    /// Bytes per tile in the layer's data.
    pub fn tile_size(self) -> usize {
        match self {
            TileKind::Tiles | TileKind::Game | TileKind::Front | TileKind::Switch => 4,
            TileKind::Tele | TileKind::Tune => 2,
            TileKind::Speedup => 6,
        }
    }

    /// Lower-case name used in files (`kind = tele`).
    pub fn name(self) -> &'static str {
        match self {
            TileKind::Tiles => "tiles",
            TileKind::Game => "game",
            TileKind::Front => "front",
            TileKind::Tele => "tele",
            TileKind::Speedup => "speedup",
            TileKind::Switch => "switch",
            TileKind::Tune => "tune",
        }
    }

    /// The name DDNet gives a physics layer when loading.
    pub fn ddnet_name(self) -> Option<&'static str> {
        match self {
            TileKind::Tiles => None,
            TileKind::Game => Some("Game"),
            TileKind::Front => Some("Front"),
            TileKind::Tele => Some("Tele"),
            TileKind::Speedup => Some("Speedup"),
            TileKind::Switch => Some("Switch"),
            TileKind::Tune => Some("Tune"),
        }
    }

    /// The fields of a tile, in stored order.
    pub fn fields(self) -> &'static [Field] {
        match self {
            TileKind::Tiles | TileKind::Game | TileKind::Front => &TILE_FIELDS,
            TileKind::Tele | TileKind::Tune => &TELE_FIELDS,
            TileKind::Speedup => &SPEEDUP_FIELDS,
            TileKind::Switch => &SWITCH_FIELDS,
        }
    }

    /// `index:flags`, ... as documented.
    pub fn cell_syntax(self) -> String {
        self.fields().iter().map(|f| f.name).collect::<Vec<_>>().join(":")
    }

    /// The data index holding this layer's tiles.
    pub fn data_index(self, layer: &TileLayer) -> i32 {
        match self {
            TileKind::Tiles | TileKind::Game => layer.data,
            TileKind::Front => layer.ddnet_index(tile_flags::FRONT),
            TileKind::Tele => layer.ddnet_index(tile_flags::TELE),
            TileKind::Speedup => layer.ddnet_index(tile_flags::SPEEDUP),
            TileKind::Switch => layer.ddnet_index(tile_flags::SWITCH),
            TileKind::Tune => layer.ddnet_index(tile_flags::TUNE),
        }
    }

    /// Whether the layer is one of the game's physics layers (any kind but [`TileKind::Tiles`]).
    pub fn is_physics(self) -> bool {
        self != TileKind::Tiles
    }

    /// Check the tiles DDNet checks (`ValidateAndUnpackTilesLayerData`):
    /// padding bytes must be 0, and the skip byte of plain tiles (not
    /// packed). Returns the first bad tile's index and why.
    pub fn check(self, grid: &[u8]) -> Result<(), (usize, String)> {
        let size = self.tile_size();
        for (i, t) in grid.chunks_exact(size).enumerate() {
            match self {
                TileKind::Tiles | TileKind::Game | TileKind::Front => {
                    if t[2] != 0 {
                        return Err((i, format!("skip byte {} (must be 0 in unpacked tiles)", t[2])));
                    }
                    if t[3] != 0 {
                        return Err((i, format!("padding byte {} (must be 0)", t[3])));
                    }
                }
                TileKind::Speedup if t[3] != 0 => {
                    return Err((i, format!("padding byte {} (must be 0)", t[3])));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

impl TileKind {
    /// Check the values twmap bounds (and DDNet's editor never writes) in
    /// the tiles an edit changes: a speedup's angle is 0 to 359 degrees,
    /// tile flags (tiles, game, front, switch) only the four defined bits,
    /// and not opaque (4) in a physics layer.
    /// twmap refuses a whole map holding one such tile; DDNet loads them,
    /// so tiles already in the map are left alone. Returns the first bad
    /// tile's index and why.
    pub fn check_changed(self, before: &[u8], grid: &[u8]) -> Result<(), (usize, String)> {
        let size = self.tile_size();
        let old = before.chunks_exact(size).map(Some).chain(std::iter::repeat(None));
        for (i, (t, was)) in grid.chunks_exact(size).zip(old).enumerate() {
            if was == Some(t) {
                continue;
            }
            let flags = match self {
                TileKind::Tiles | TileKind::Game | TileKind::Front => Some(t[1]),
                TileKind::Switch => Some(t[2]),
                _ => None,
            };
            if let Some(f) = flags.filter(|f| f & !15 != 0) {
                return Err((
                    i,
                    format!(
                        "flags {f}: the flags are 1 (flip horizontally), 2 (flip vertically), 4 (opaque) and 8 (rotate), 0 to 15 in all"
                    ),
                ));
            }
            if let Some(f) = flags.filter(|f| f & 4 != 0 && self.is_physics()) {
                return Err((i, format!("flags {f}: the opaque flag (4) is for tiles layers, not physics layers")));
            }
            if self == TileKind::Speedup {
                let angle = i16::from_le_bytes([t[4], t[5]]);
                if !(0..360).contains(&angle) {
                    return Err((i, format!("angle {angle}: a speedup's angle is 0 to 359 degrees")));
                }
            }
        }
        Ok(())
    }
}

/// Expand Teeworlds 0.7 packed tiles (each 4-byte tile repeated skip + 1
/// times), as DDNet's `ExtractTiles`: into exactly `count` tiles, using
/// every stored tile.
pub fn unpack(stored: &[u8], count: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(count.min(stored.len() / 4 * 256) * 4);
    let tiles = stored.chunks_exact(4);
    let num_stored = tiles.len();
    for (i, t) in tiles.enumerate() {
        if out.len() / 4 == count {
            return Err(format!("too much tile data: {count} tiles are reached at stored tile {i} of {num_stored}"));
        }
        if t[3] != 0 {
            return Err(format!("stored tile {i} has padding byte {} (must be 0)", t[3]));
        }
        let run = (t[2] as usize + 1).min(count - out.len() / 4);
        for _ in 0..run {
            out.extend_from_slice(&[t[0], t[1], 0, 0]);
        }
    }
    if out.len() / 4 != count {
        return Err(format!("the packed tiles expand to {} tiles, the layer has {count}", out.len() / 4));
    }
    Ok(out)
}

/// Pack tiles the way Teeworlds 0.7's editor does: runs of equal index and
/// flags, at most 256 tiles per stored tile.
pub fn pack(grid: &[u8]) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::new();
    for t in grid.chunks_exact(4) {
        let n = out.len();
        if n >= 4 && out[n - 4] == t[0] && out[n - 3] == t[1] && out[n - 2] < 255 {
            out[n - 2] += 1;
        } else {
            out.extend_from_slice(&[t[0], t[1], 0, 0]);
        }
    }
    out
}

/// The text grid of `grid` (unpacked tiles of `kind`, `width` per row).
pub fn render(kind: TileKind, width: usize, grid: &[u8]) -> Vec<u8> {
    let size = kind.tile_size();
    let fields = kind.fields();
    let mut out = Vec::with_capacity(grid.len() / size * 3);
    for row in grid.chunks(width * size) {
        for (x, t) in row.chunks_exact(size).enumerate() {
            if x > 0 {
                out.push(b' ');
            }
            let values: Vec<i32> = fields.iter().map(|f| field_value(f, t)).collect();
            let shown = values.iter().rposition(|&v| v != 0).map_or(1, |p| p + 1);
            for (i, v) in values[..shown].iter().enumerate() {
                if i > 0 {
                    out.push(b':');
                }
                out.extend_from_slice(v.to_string().as_bytes());
            }
        }
        out.push(b'\n');
    }
    out
}

fn field_value(f: &Field, t: &[u8]) -> i32 {
    if f.wide { i16::from_le_bytes([t[f.offset], t[f.offset + 1]]) as i32 } else { t[f.offset] as i32 }
}

/// Parse a text grid into unpacked tiles (the bytes the text does not show,
/// skip and padding, are 0).
pub fn parse(kind: TileKind, width: usize, height: usize, text: &[u8]) -> DocResult<Vec<u8>> {
    let size = kind.tile_size();
    let fields = kind.fields();
    let syntax = kind.cell_syntax();
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    let lines: Vec<&[u8]> =
        if text.is_empty() && height == 0 { Vec::new() } else { text.split(|&c| c == b'\n').collect() };
    if lines.len() != height {
        let line = lines.len().min(height + 1);
        return Err(DocError::at_line(line, format!("{} lines, the layer has {height} rows", lines.len())));
    }
    let mut grid = vec![0u8; width * height * size];
    for (y, line) in lines.iter().enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let mut x = 0;
        let mut i = 0;
        while i < line.len() {
            if line[i] == b' ' || line[i] == b'\t' {
                i += 1;
                continue;
            }
            let start = i;
            while i < line.len() && line[i] != b' ' && line[i] != b'\t' {
                i += 1;
            }
            let cell = &line[start..i];
            if x == width {
                return Err(DocError::at(
                    y + 1,
                    start + 1,
                    format!("more than {width} cells, the layer is {width} wide"),
                ));
            }
            let tile = &mut grid[(y * width + x) * size..][..size];
            parse_cell(cell, fields, tile).map_err(|(off, m)| {
                DocError::at(
                    y + 1,
                    start + 1 + off,
                    format!("cell {}: {m} ({} cells are {syntax})", x + 1, kind.name()),
                )
            })?;
            x += 1;
        }
        if x < width {
            return Err(DocError::at(
                y + 1,
                line.len() + 1,
                format!("the line ends after {x} cells, the layer is {width} wide"),
            ));
        }
    }
    Ok(grid)
}

fn parse_cell(cell: &[u8], fields: &[Field], tile: &mut [u8]) -> Result<(), (usize, String)> {
    let mut off = 0;
    for (n, part) in cell.split(|&c| c == b':').enumerate() {
        let Some(field) = fields.get(n) else {
            return Err((off, format!("more than {} numbers", fields.len())));
        };
        let s = std::str::from_utf8(part).unwrap_or("");
        let v: i64 =
            if !part.is_empty() && s.bytes().enumerate().all(|(i, c)| c.is_ascii_digit() || (i == 0 && c == b'-')) {
                s.parse().map_err(|_| (off, format!("{} {s:?} is not a number", field.name)))?
            } else {
                return Err((off, format!("{} {:?} is not a number", field.name, String::from_utf8_lossy(part))));
            };
        if field.wide {
            let v = i16::try_from(v).map_err(|_| (off, format!("{} {v} is outside -32768..=32767", field.name)))?;
            tile[field.offset..field.offset + 2].copy_from_slice(&v.to_le_bytes());
        } else {
            tile[field.offset] =
                u8::try_from(v).map_err(|_| (off, format!("{} {v} is outside 0..=255", field.name)))?;
        }
        off += part.len() + 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_grid_round_trip_and_compact_cells() {
        let grid = [1u8, 0, 0, 0, 2, 8, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0];
        let text = render(TileKind::Tiles, 2, &grid);
        assert_eq!(text, b"1 2:8\n0 0:4\n");
        assert_eq!(parse(TileKind::Tiles, 2, 2, &text).unwrap(), grid);
        assert_eq!(parse(TileKind::Tiles, 2, 2, b"1:0 2:8\n0:0 0:4").unwrap(), grid);
        let sp = [10u8, 20, 28, 0, 0x5a, 0x00, 0, 0, 0, 0, 0xff, 0xff];
        let text = render(TileKind::Speedup, 2, &sp);
        assert_eq!(text, b"10:20:28:90 0:0:0:-1\n");
        assert_eq!(parse(TileKind::Speedup, 2, 1, &text).unwrap(), sp);
    }

    #[test]
    fn bad_grids_name_line_and_column() {
        let e = |t: &[u8]| parse(TileKind::Tele, 3, 2, t).unwrap_err().to_string();
        assert_eq!(e(b"0 0 0\n0 0\n"), "line 2, column 4: the line ends after 2 cells, the layer is 3 wide");
        assert_eq!(
            e(b"0 0 0\n0 x 0\n"),
            "line 2, column 3: cell 2: number \"x\" is not a number (tele cells are number:type)"
        );
        assert_eq!(
            e(b"0 0 0\n0 1:y 0\n"),
            "line 2, column 5: cell 2: type \"y\" is not a number (tele cells are number:type)"
        );
        assert_eq!(
            e(b"0 0 0\n0 1:256 0\n"),
            "line 2, column 5: cell 2: type 256 is outside 0..=255 (tele cells are number:type)"
        );
        assert_eq!(
            e(b"0 0 0\n0 1:2:3 0\n"),
            "line 2, column 7: cell 2: more than 2 numbers (tele cells are number:type)"
        );
        assert_eq!(e(b"0 0 0 0\n0 0 0\n"), "line 1, column 7: more than 3 cells, the layer is 3 wide");
        assert_eq!(e(b"0 0 0\n"), "line 1: 1 lines, the layer has 2 rows");
        assert_eq!(e(b"0 0 0\n0 0 0\n0 0 0\n"), "line 3: 3 lines, the layer has 2 rows");
    }

    #[test]
    fn packing_matches_teeworlds() {
        // 300 equal tiles: one run of 256 and one of 44.
        let grid: Vec<u8> = [5u8, 1, 0, 0].repeat(300);
        let packed = pack(&grid);
        assert_eq!(packed, [5, 1, 255, 0, 5, 1, 43, 0]);
        assert_eq!(unpack(&packed, 300).unwrap(), grid);
        assert_eq!(unpack(&packed, 301).unwrap_err(), "the packed tiles expand to 300 tiles, the layer has 301");
        assert_eq!(
            unpack(&packed, 200).unwrap_err(),
            "too much tile data: 200 tiles are reached at stored tile 1 of 2"
        );
        assert_eq!(unpack(&[1, 0, 0, 7], 1).unwrap_err(), "stored tile 0 has padding byte 7 (must be 0)");
    }

    proptest::proptest! {
        #[test]
        fn pack_unpack_and_text_round_trip(cells in proptest::collection::vec((0u8..4, 0u8..3), 1..600), width in 1usize..40) {
            let width = width.min(cells.len());
            let height = cells.len() / width;
            let grid: Vec<u8> = cells[..width * height].iter().flat_map(|&(i, f)| [i, f, 0, 0]).collect();
            proptest::prop_assert_eq!(unpack(&pack(&grid), width * height).unwrap(), grid.clone());
            let text = render(TileKind::Game, width, &grid);
            proptest::prop_assert_eq!(parse(TileKind::Game, width, height, &text).unwrap(), grid);
        }
    }
}
