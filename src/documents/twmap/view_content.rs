//! Tile grids, quads, sound sources, sounds, envelopes and other items.

use crate::documents::twmap::map::Map;
use crate::documents::twmap::text::{self, line, quote};
use crate::documents::{DocError, DocResult};
use worldfs_codec::twmap::items::{self, Layer, QuadsLayer, TileLayer};
use worldfs_codec::twmap::tiles::{self, TileKind};

// ---------------------------------------------------------------- tiles

fn tile_layer(map: &Map, g: usize, l: usize) -> TileLayer {
    match map.layer(g, l) {
        Layer::Tiles(t) => t,
        _ => panic!("not a tile layer"),
    }
}

pub(crate) fn render_tiles(map: &Map, g: usize, l: usize) -> Vec<u8> {
    let t = tile_layer(map, g, l);
    tiles::render(TileKind::of(&t), t.width as usize, &map.tiles(&t))
}

pub(crate) fn render_tiles_raw(map: &Map, g: usize, l: usize) -> Vec<u8> {
    map.tiles(&tile_layer(map, g, l))
}

/// How many bytes `tiles.raw` of tile layer `l` of group `g` holds.
pub(crate) fn tiles_raw_len(map: &Map, g: usize, l: usize) -> usize {
    let t = tile_layer(map, g, l);
    t.width as usize * t.height as usize * TileKind::of(&t).tile_size()
}

pub(crate) fn apply_tiles(map: &mut Map, g: usize, l: usize, content: &[u8]) -> DocResult<()> {
    let t = tile_layer(map, g, l);
    let kind = TileKind::of(&t);
    let grid = tiles::parse(kind, t.width as usize, t.height as usize, content)?;
    kind.check_changed(&map.tiles(&t), &grid).map_err(|(i, m)| {
        let w = t.width as usize;
        DocError::at_line(i / w + 1, format!("cell {} (x {}, y {}): {m}", i % w + 1, i % w, i / w))
    })?;
    set_tiles(map, g, l, grid)
}

pub(crate) fn apply_tiles_raw(map: &mut Map, g: usize, l: usize, content: &[u8]) -> DocResult<()> {
    let t = tile_layer(map, g, l);
    let kind = TileKind::of(&t);
    let size = kind.tile_size();
    let need = t.width as usize * t.height as usize * size;
    if content.len() != need {
        return Err(DocError::new(format!(
            "{} bytes, the layer needs {need} ({} x {} tiles of {size} bytes)",
            content.len(),
            t.width,
            t.height
        )));
    }
    kind.check(content).and_then(|()| kind.check_changed(&map.tiles(&t), content)).map_err(|(i, m)| {
        let w = t.width as usize;
        DocError::new(format!("tile {i} (x {}, y {}, byte {}): {m}", i % w, i / w, i * size))
    })?;
    set_tiles(map, g, l, content.to_vec())
}

fn set_tiles(map: &mut Map, g: usize, l: usize, grid: Vec<u8>) -> DocResult<()> {
    let mut t = tile_layer(map, g, l);
    let kind = TileKind::of(&t);
    let current = map.tiles(&t);
    if grid == current {
        return Ok(());
    }
    if let Err((i, m)) = kind.check(&grid) {
        return Err(DocError::new(format!("tile {i}: {m}")));
    }
    let index = kind.data_index(&t);
    let stored = if t.version >= 4 {
        tiles::pack(&grid)
    } else {
        // Keep what the data held past the layer's tiles.
        let mut s = grid;
        s.extend_from_slice(&map.data(index)[current.len()..]);
        s
    };
    let new_index = map.put_data(index, stored);
    if new_index != index {
        match kind {
            TileKind::Tiles | TileKind::Game => t.data = new_index,
            _ => t.set_ddnet_index(kind_flag(kind), new_index),
        }
        let li = map.index.groups[g].layers[l];
        map.df.items[li].data = t.to_ints();
    }
    Ok(())
}

fn kind_flag(kind: TileKind) -> i32 {
    use items::tile_flags::*;
    match kind {
        TileKind::Tiles => 0,
        TileKind::Game => GAME,
        TileKind::Front => FRONT,
        TileKind::Tele => TELE,
        TileKind::Speedup => SPEEDUP,
        TileKind::Switch => SWITCH,
        TileKind::Tune => TUNE,
    }
}
// ---------------------------------------------------------------- quads

fn quads_of(map: &Map, q: &QuadsLayer) -> Vec<items::Quad> {
    if q.num_quads <= 0 {
        return Vec::new();
    }
    map.data(q.data).chunks_exact(items::QUAD_SIZE).take(q.num_quads as usize).map(items::Quad::from_bytes).collect()
}

fn quads_layer(map: &Map, g: usize, l: usize) -> QuadsLayer {
    match map.layer(g, l) {
        Layer::Quads(q) => q,
        _ => panic!("not a quads layer"),
    }
}

fn pairs<const N: usize>(v: &[[i32; N]]) -> String {
    v.iter().map(|p| p.map(|c| c.to_string()).join(",")).collect::<Vec<_>>().join(" ")
}

/// One line per quad:
/// `pos X,Y X,Y X,Y X,Y pivot X,Y color R,G,B,A ×4 uv U,V ×4 pos_env E,O color_env E,O`.
pub(crate) fn render_quads(map: &Map, g: usize, l: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for q in quads_of(map, &quads_layer(map, g, l)) {
        let s = format!(
            "pos {} pivot {} color {} uv {} pos_env {},{} color_env {},{}\n",
            pairs(&q.points[..4]),
            pairs(&q.points[4..]),
            pairs(&q.colors),
            pairs(&q.texcoords),
            q.pos_env,
            q.pos_env_offset,
            q.color_env,
            q.color_env_offset
        );
        out.extend_from_slice(s.as_bytes());
    }
    out
}

const QUAD_PARTS: [(&str, usize, usize); 6] =
    [("pos", 4, 2), ("pivot", 1, 2), ("color", 4, 4), ("uv", 4, 2), ("pos_env", 1, 2), ("color_env", 1, 2)];

/// A quad line. With `check` (the number of envelopes), also the values
/// DDNet's editor keeps in range: colours 0..=255 and envelope indices;
/// they are checked only for new or changed quads, so that a map whose
/// quads are out of range still takes back what it shows.
fn parse_quad(line: &[u8], n: usize, check: Option<i64>) -> DocResult<items::Quad> {
    let mut words = Vec::new();
    let mut i = 0;
    while i < line.len() {
        if line[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        while i < line.len() && !line[i].is_ascii_whitespace() {
            i += 1;
        }
        words.push((start + 1, &line[start..i]));
    }
    let mut values: Vec<Vec<i32>> = Vec::new();
    let mut w = words.into_iter();
    for (key, count, width) in QUAD_PARTS {
        match w.next() {
            Some((_, k)) if k == key.as_bytes() => {}
            Some((col, k)) => {
                return Err(DocError::at(n, col, format!("expected {key}, found {:?}", String::from_utf8_lossy(k))));
            }
            None => return Err(DocError::at(n, line.len() + 1, format!("the line ends before {key}"))),
        }
        for _ in 0..count {
            let Some((col, word)) = w.next() else {
                return Err(DocError::at(n, line.len() + 1, format!("{key} needs {count} groups of {width} numbers")));
            };
            let nums: Vec<&[u8]> = word.split(|&c| c == b',').collect();
            if nums.len() != width {
                return Err(DocError::at(
                    n,
                    col,
                    format!("{key}: {:?} is not {width} numbers joined by commas", String::from_utf8_lossy(word)),
                ));
            }
            let (min, max) = match (key, check) {
                ("color", Some(_)) => (0, 255),
                _ => (i32::MIN as i64, i32::MAX as i64),
            };
            let mut v = Vec::new();
            for x in nums {
                v.push(text::parse_int(x, min, max).map_err(|m| DocError::at(n, col, format!("{key}: {m}")))?);
            }
            if let Some(num_envelopes) = check
                && (key == "pos_env" || key == "color_env")
                && !(-1..num_envelopes).contains(&(v[0] as i64))
            {
                return Err(DocError::at(
                    n,
                    col,
                    format!("{key}: envelope {} does not exist (-1 for none, the map has {num_envelopes})", v[0]),
                ));
            }
            values.push(v);
        }
    }
    if let Some((col, _)) = w.next() {
        return Err(DocError::at(n, col, "more than a quad on this line"));
    }
    let p = |i: usize| [values[i][0], values[i][1]];
    let c = |i: usize| [values[i][0], values[i][1], values[i][2], values[i][3]];
    Ok(items::Quad {
        points: [p(0), p(1), p(2), p(3), p(4)],
        colors: [c(5), c(6), c(7), c(8)],
        texcoords: [p(9), p(10), p(11), p(12)],
        pos_env: values[13][0],
        pos_env_offset: values[13][1],
        color_env: values[14][0],
        color_env_offset: values[14][1],
    })
}

pub(crate) fn apply_quads(map: &mut Map, g: usize, l: usize, content: &[u8]) -> DocResult<()> {
    let mut q = quads_layer(map, g, l);
    let num_envelopes = map.index.envelopes.len() as i64;
    let old = quads_of(map, &q);
    let mut quads = Vec::new();
    for (n, line) in content.split(|&c| c == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.trim_ascii().is_empty() || line.trim_ascii_start().starts_with(b"#") {
            continue;
        }
        let quad = parse_quad(line, n + 1, None)?;
        if old.get(quads.len()) != Some(&quad) {
            parse_quad(line, n + 1, Some(num_envelopes))?;
        }
        quads.push(quad);
    }
    if quads == old {
        return Ok(());
    }
    // No quads: DDNet's editor writes one zero quad as data and a count of 0.
    let bytes: Vec<u8> =
        if quads.is_empty() { vec![0; items::QUAD_SIZE] } else { quads.iter().flat_map(|q| q.to_bytes()).collect() };
    q.data = map.put_data(q.data, bytes);
    q.num_quads = quads.len() as i32;
    let li = map.index.groups[g].layers[l];
    map.df.items[li].data = Layer::Quads(q).to_ints();
    Ok(())
}
// ---------------------------------------------------------------- sounds

pub(crate) fn render_sources(map: &Map, g: usize, l: usize) -> Vec<u8> {
    let Layer::Sounds(q) = map.layer(g, l) else { panic!("not a sounds layer") };
    let (size, names): (usize, &[&str]) = if q.header.kind == items::layer_types::SOUNDS_DEPRECATED {
        (items::SOURCE_SIZE_DEPRECATED, &items::SOURCE_FIELDS_DEPRECATED)
    } else {
        (items::SOURCE_SIZE, &items::SOURCE_FIELDS)
    };
    let mut out = Vec::new();
    if q.num_quads > 0 {
        for s in map.data(q.data).chunks_exact(size).take(q.num_quads as usize) {
            let fields: Vec<String> = names.iter().zip(items::ints_of(s)).map(|(k, v)| format!("{k}={v}")).collect();
            out.extend_from_slice(fields.join(" ").as_bytes());
            out.push(b'\n');
        }
    }
    out
}

pub(crate) fn render_sound(map: &Map, i: usize) -> Vec<u8> {
    let s = map.sound(i);
    if s.external != 0 {
        let mut out = Vec::new();
        line(&mut out, "name", quote(&map.string(s.name)));
        out.extend_from_slice(b"# an external sound: the game loads it from mapres/<name>.opus\n");
        return out;
    }
    map.data(s.data).to_vec()
}
// ---------------------------------------------------------------- envelopes

pub(crate) fn render_envelope(map: &Map, i: usize) -> Vec<u8> {
    let env = map.envelope(i);
    let mut out = Vec::new();
    line(&mut out, "name", quote(&env.name()));
    let ch = env.channels;
    let what = match ch {
        1 => " (sound)",
        3 => " (position: x, y, rotation)",
        4 => " (colour: r, g, b, a)",
        _ => "",
    };
    line(&mut out, "channels", format!("{ch}{what}"));
    if let Some(s) = env.synchronized.filter(|_| env.version >= 2) {
        line(&mut out, "synchronized", s.to_string());
    }
    let shown = if (1..=4).contains(&ch) && ch != 2 { ch as usize } else { 4 };
    out.extend_from_slice(b"# time (ms), curve, values (22.10 fixed point: 1024 = 1.0; rotation in degrees x 1024)\n");
    out.extend_from_slice(b"# bezier tangents, when the map has them: in dx,dy per channel, out dx,dy per channel\n");
    let (points, missing) = map.env_points(i);
    for p in points {
        let curve =
            items::CURVE_NAMES.get(p.curve as usize).map(|c| c.to_string()).unwrap_or_else(|| p.curve.to_string());
        let mut s = format!("{} {curve}", p.time);
        for v in &p.values[..shown] {
            s.push_str(&format!(" {v}"));
        }
        if let Some(b) = p.bezier.filter(|b| b.iter().any(|&v| v != 0)) {
            let pair = |dx: usize, dy: usize| {
                (0..shown).map(|c| format!("{},{}", b[dx + c], b[dy + c])).collect::<Vec<_>>().join(" ")
            };
            s.push_str(&format!(" in {} out {}", pair(0, 4), pair(8, 12)));
        }
        s.push('\n');
        out.extend_from_slice(s.as_bytes());
    }
    if missing > 0 {
        out.extend_from_slice(
            format!("# {missing} more points are past the end of the envelope points item\n").as_bytes(),
        );
    }
    out
}
// ---------------------------------------------------------------- items

pub(crate) fn render_item(map: &Map, item: usize) -> Vec<u8> {
    map.df.items[item].data.iter().flat_map(|v| v.to_le_bytes()).collect()
}
