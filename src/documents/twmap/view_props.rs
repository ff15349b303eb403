//! `info`, `group` and a layer's `info`: properties as `key = value` lines.

use crate::documents::twmap::map::Map;
use crate::documents::twmap::text::{self, line, quote};
use crate::documents::{DocError, DocResult};
use worldfs_codec::twmap::items::{self, Group, Layer, LayerHeader, QuadsLayer, TileLayer, name_to_ints, types};
use worldfs_codec::twmap::tiles::TileKind;

/// DDNet's editor keeps these many bytes of the info strings and of a
/// setting (its buffers, less the NUL).
const INFO_LIMITS: [(&str, usize); 4] = [("author", 31), ("version", 15), ("credits", 127), ("license", 31)];
const SETTING_LIMIT: usize = 255;
// ---------------------------------------------------------------- info

fn settings_of(map: &Map) -> Vec<Vec<u8>> {
    let Some(info) = map.info() else { return Vec::new() };
    let s = info.settings_index();
    if s < 0 {
        return Vec::new();
    }
    let data = map.data(s);
    let data = data.strip_suffix(&[0]).unwrap_or(data);
    data.split(|&c| c == 0).map(|c| c.to_vec()).collect()
}

fn info_strings(map: &Map) -> [Vec<u8>; 4] {
    match map.info() {
        Some(i) => [map.string(i.author), map.string(i.map_version), map.string(i.credits), map.string(i.license)],
        None => Default::default(),
    }
}

pub(crate) fn render_info(map: &Map) -> Vec<u8> {
    let mut out = Vec::new();
    for ((key, _), value) in INFO_LIMITS.iter().zip(info_strings(map)) {
        line(&mut out, key, quote(&value));
    }
    out.extend_from_slice(b"\n[settings]\n");
    for s in settings_of(map) {
        out.extend_from_slice(&quote_setting(&s));
        out.push(b'\n');
    }
    out
}

fn quote_setting(s: &[u8]) -> Vec<u8> {
    // A setting line is its text unless that would read back differently.
    if text::needs_quotes(s) || s.starts_with(b"[") { text::quote_always(s) } else { s.to_vec() }
}

pub(crate) fn apply_info(map: &mut Map, content: &[u8]) -> DocResult<()> {
    let keys: Vec<&str> = INFO_LIMITS.iter().map(|(k, _)| *k).collect();
    let p = text::parse(content, &keys, Some("settings"))?;
    let mut strings = info_strings(map);
    for (n, (key, limit)) in INFO_LIMITS.iter().enumerate() {
        if let Some(pair) = p.get(key) {
            let v = pair.text()?;
            if v != strings[n] {
                check_text(&v, *limit).map_err(|m| DocError::at(pair.line, pair.col, format!("{key}: {m}")))?;
                strings[n] = v;
            }
        }
    }
    let old_settings = settings_of(map);
    let mut settings = old_settings.clone();
    if let Some(lines) = &p.section {
        let mut new = Vec::new();
        for &(n, l) in lines {
            let t = l.trim_ascii();
            if t.is_empty() || t.starts_with(b"#") {
                continue;
            }
            let indent = l.len() - l.trim_ascii_start().len();
            let v = text::unquote_value(t).map_err(|(off, m)| DocError::at(n, indent + 1 + off, m))?;
            if !old_settings.contains(&v) {
                check_text(&v, SETTING_LIMIT).map_err(|m| DocError::at(n, indent + 1, format!("setting: {m}")))?;
            }
            new.push(v);
        }
        settings = new;
    }
    if strings == info_strings(map) && settings == settings_of(map) {
        return Ok(());
    }
    let ii = match map.index.info {
        Some(i) => i,
        None => {
            map.df.items.push(worldfs_codec::twmap::datafile::Item {
                type_id: types::INFO,
                id: 0,
                data: vec![1, -1, -1, -1, -1, -1],
            });
            map.df.items.len() - 1
        }
    };
    let mut info =
        items::Info::parse(&map.df.items[ii].data).map_err(|e| DocError::new(format!("the map's info item: {e}")))?;
    let old = [info.author, info.map_version, info.credits, info.license];
    let new: Vec<i32> = old.iter().zip(&strings).map(|(&cur, v)| map.put_string(cur, v)).collect();
    (info.author, info.map_version, info.credits, info.license) = (new[0], new[1], new[2], new[3]);
    if settings != settings_of(map) {
        if let Some(why) = map.teeworlds07() {
            let line = p.section.as_ref().and_then(|l| l.first()).map_or(1, |(n, _)| *n - 1);
            return Err(DocError::at_line(
                line,
                format!(
                    "settings are a DDNet feature, and this map is in Teeworlds 0.7's format ({why}), which has none"
                ),
            ));
        }
        if info.version != 1 {
            return Err(DocError::new(format!(
                "the map info item has version {}; DDNet reads settings only from version 1",
                info.version
            )));
        }
        let current = info.settings.unwrap_or(-1);
        if settings.is_empty() {
            map.release_data(current);
            info.settings = Some(-1);
        } else {
            let bytes: Vec<u8> = settings.iter().flat_map(|s| s.iter().copied().chain([0])).collect();
            info.settings = Some(map.put_data(current, bytes));
        }
    }
    map.df.items[ii].data = info.to_ints();
    Ok(())
}

fn check_text(v: &[u8], limit: usize) -> Result<(), String> {
    if v.contains(&0) {
        return Err("a NUL byte cannot be stored".into());
    }
    if std::str::from_utf8(v).is_err() {
        return Err("not valid UTF-8 (DDNet refuses such strings)".into());
    }
    if v.len() > limit {
        return Err(format!("{} bytes, DDNet's editor keeps at most {limit}", v.len()));
    }
    Ok(())
}
// ---------------------------------------------------------------- groups

const GROUP_KEYS: [&str; 10] =
    ["name", "offset_x", "offset_y", "parallax_x", "parallax_y", "clipping", "clip_x", "clip_y", "clip_w", "clip_h"];

/// Whether group `g` holds a game layer (DDNet's editor then names it
/// "Game" when it loads the map).
fn is_game_group(map: &Map, g: usize) -> bool {
    (0..map.index.groups[g].layers.len())
        .any(|l| matches!(map.layer(g, l), Layer::Tiles(t) if TileKind::of(&t) == TileKind::Game))
}

/// The name a group is shown with.
pub fn group_name(map: &Map, g: usize) -> Vec<u8> {
    if is_game_group(map, g) { b"Game".to_vec() } else { map.group(g).name() }
}

pub(crate) fn render_group(map: &Map, g: usize) -> Vec<u8> {
    let gr = map.group(g);
    let mut out = Vec::new();
    line(&mut out, "name", quote(&group_name(map, g)));
    let c = gr.clip();
    let values = [gr.offset_x, gr.offset_y, gr.parallax_x, gr.parallax_y, c[0], c[1], c[2], c[3], c[4]];
    for (k, v) in GROUP_KEYS[1..].iter().zip(values) {
        line(&mut out, k, v.to_string());
    }
    out
}

#[allow(
    clippy::expect_used,
    reason = "names were checked to fit when the text was read, an empty name always fits, and a changed key was given"
)]
pub(crate) fn apply_group(map: &mut Map, g: usize, content: &[u8]) -> DocResult<()> {
    let p = text::parse(content, &GROUP_KEYS, None)?;
    let gi = map.index.groups[g].item;
    let mut gr = map.group(g);
    let mut name = gr.name();
    if let Some(pair) = p.get("name") {
        let v = pair.text()?;
        if is_game_group(map, g) {
            if v != b"Game" {
                return Err(DocError::at(
                    pair.line,
                    pair.col,
                    "the name of the game group cannot be changed (DDNet's editor names it Game)",
                ));
            }
        } else if v != name {
            name_to_ints(&v, 3).map_err(|m| DocError::at(pair.line, pair.col, format!("name: {m}")))?;
            name = v;
        }
    }
    let int = |k: &str, cur: i32| p.get(k).map(|pair| pair.int(i32::MIN as i64, i32::MAX as i64)).unwrap_or(Ok(cur));
    let c = gr.clip();
    let offset = [int("offset_x", gr.offset_x)?, int("offset_y", gr.offset_y)?];
    let parallax = [int("parallax_x", gr.parallax_x)?, int("parallax_y", gr.parallax_y)?];
    let clip = [
        int("clipping", c[0])?,
        int("clip_x", c[1])?,
        int("clip_y", c[2])?,
        int("clip_w", c[3])?,
        int("clip_h", c[4])?,
    ];
    if name == gr.name()
        && offset == [gr.offset_x, gr.offset_y]
        && parallax == [gr.parallax_x, gr.parallax_y]
        && clip == c
    {
        return Ok(());
    }
    // Fields a lower version lacks need the item upgraded (as DDNet's
    // editor writes every group: version 3).
    let need = if name != gr.name() {
        3
    } else if clip != c {
        2
    } else {
        0
    };
    if gr.version < need {
        let mut ints = gr.to_ints();
        if ints.len() < 12 {
            ints.resize(12, 0);
        }
        if need >= 3 && ints.len() < 15 {
            ints.extend(name_to_ints(b"", 3).expect("empty name"));
        }
        ints[0] = need;
        gr = Group::parse(&ints).expect("upgraded group");
    }
    [gr.offset_x, gr.offset_y] = offset;
    [gr.parallax_x, gr.parallax_y] = parallax;
    if gr.clipping.is_some() {
        gr.clipping = Some(clip);
    }
    if gr.name.is_some() && name != gr.name() {
        gr.name = Some(items::name3(&name).expect("checked"));
    }
    map.df.items[gi].data = gr.to_ints();
    Ok(())
}
// ---------------------------------------------------------------- layers

/// The name a layer is shown with (DDNet's for physics layers).
pub fn layer_name(layer: &Layer) -> Vec<u8> {
    match layer {
        Layer::Tiles(t) => match TileKind::of(t).ddnet_name() {
            Some(n) => n.as_bytes().to_vec(),
            None => t.name(),
        },
        Layer::Quads(q) | Layer::Sounds(q) => q.name(),
        Layer::Other(..) => Vec::new(),
    }
}

const TILE_KEYS: [&str; 9] =
    ["kind", "width", "height", "name", "detail", "image", "color", "color_env", "color_env_offset"];
const QUAD_KEYS: [&str; 5] = ["kind", "quads", "name", "detail", "image"];
const SOUND_KEYS: [&str; 5] = ["kind", "sources", "name", "detail", "sound"];

fn kind_name(layer: &Layer) -> String {
    match layer {
        Layer::Tiles(t) => TileKind::of(t).name().to_string(),
        Layer::Quads(_) => "quads".into(),
        Layer::Sounds(q) if q.header.kind == items::layer_types::SOUNDS_DEPRECATED => "sounds-deprecated".into(),
        Layer::Sounds(_) => "sounds".into(),
        Layer::Other(h, _) => h.kind.to_string(),
    }
}

pub(crate) fn render_layer_info(map: &Map, g: usize, l: usize) -> Vec<u8> {
    let layer = map.layer(g, l);
    let mut out = Vec::new();
    let detail = (layer.header().flags & items::LAYER_DETAIL).to_string();
    match &layer {
        Layer::Tiles(t) => {
            let kind = TileKind::of(t);
            out.extend_from_slice(
                format!("# the cells of `tiles` are {} (trailing zeros left out)\n", kind.cell_syntax()).as_bytes(),
            );
            line(&mut out, "kind", kind.name());
            line(&mut out, "width", t.width.to_string());
            line(&mut out, "height", t.height.to_string());
            line(&mut out, "name", quote(&layer_name(&layer)));
            line(&mut out, "detail", detail);
            line(&mut out, "image", t.image.to_string());
            line(&mut out, "color", t.color.map(|c| c.to_string()).join(" "));
            line(&mut out, "color_env", t.color_env.to_string());
            line(&mut out, "color_env_offset", t.color_env_offset.to_string());
        }
        Layer::Quads(q) => {
            line(&mut out, "kind", "quads");
            line(&mut out, "quads", q.num_quads.to_string());
            line(&mut out, "name", quote(&q.name()));
            line(&mut out, "detail", detail);
            line(&mut out, "image", q.image.to_string());
        }
        Layer::Sounds(q) => {
            line(&mut out, "kind", kind_name(&layer));
            line(&mut out, "sources", q.num_quads.to_string());
            line(&mut out, "name", quote(&q.name()));
            line(&mut out, "detail", detail);
            line(&mut out, "sound", q.image.to_string());
        }
        Layer::Other(h, _) => {
            out.extend_from_slice(b"# a layer of a kind this view does not know; its item is kept as it is\n");
            line(&mut out, "kind", h.kind.to_string());
        }
    }
    out
}

/// The same value, or an error saying the key cannot be changed.
fn fixed(p: &text::Parsed, key: &str, current: &str, why: &str) -> DocResult<()> {
    if let Some(pair) = p.get(key) {
        let v = String::from_utf8_lossy(pair.value);
        if v != current {
            return Err(DocError::at(pair.line, pair.col, format!("{key} cannot be changed ({why})")));
        }
    }
    Ok(())
}

pub(crate) fn apply_layer_info(map: &mut Map, g: usize, l: usize, content: &[u8]) -> DocResult<()> {
    let li = map.index.groups[g].layers[l];
    let layer = map.layer(g, l);
    let keys: &[&str] = match &layer {
        Layer::Tiles(_) => &TILE_KEYS,
        Layer::Quads(_) => &QUAD_KEYS,
        Layer::Sounds(_) => &SOUND_KEYS,
        Layer::Other(..) => &["kind"],
    };
    let p = text::parse(content, keys, None)?;
    fixed(&p, "kind", &kind_name(&layer), "a layer's kind is fixed")?;
    let header = layer.header();
    let detail = match p.get("detail") {
        Some(pair) => pair.int(0, 1)?,
        None => header.flags & items::LAYER_DETAIL,
    };
    let edit = LayerEdit {
        p: &p,
        header,
        new_header: LayerHeader { flags: (header.flags & !items::LAYER_DETAIL) | detail, ..header },
        detail,
        name: new_layer_name(&p, &layer)?,
        num_images: map.index.images.len() as i64,
        num_envelopes: map.index.envelopes.len() as i64,
        num_sounds: map.index.sounds.len() as i64,
    };
    let new = match (layer.clone(), &layer) {
        (Layer::Tiles(t), Layer::Tiles(old)) => Layer::Tiles(edit.tiles(t, old)?),
        (Layer::Quads(q), _) => Layer::Quads(edit.quads(q, true)?),
        (Layer::Sounds(q), _) => Layer::Sounds(edit.quads(q, false)?),
        (other, _) => other,
    };
    if new != layer {
        map.df.items[li].data = new.to_ints();
    }
    Ok(())
}

/// The `name` given in a layer's info, checked if it changes.
fn new_layer_name(p: &text::Parsed, layer: &Layer) -> DocResult<Option<Vec<u8>>> {
    let Some(pair) = p.get("name") else {
        return Ok(None);
    };
    let v = pair.text()?;
    if v != layer_name(layer) {
        name_to_ints(&v, 3).map_err(|m| DocError::at(pair.line, pair.col, format!("name: {m}")))?;
        if std::str::from_utf8(&v).is_err() {
            return Err(DocError::at(pair.line, pair.col, "name: not valid UTF-8 (DDNet refuses such layer names)"));
        }
    }
    Ok(Some(v))
}

/// A layer's info as written, with what the checks need to know of the map.
struct LayerEdit<'a, 'b> {
    p: &'a text::Parsed<'b>,
    /// The layer's header before and after the edit.
    header: LayerHeader,
    new_header: LayerHeader,
    /// The detail flag written.
    detail: i32,
    name: Option<Vec<u8>>,
    num_images: i64,
    num_envelopes: i64,
    num_sounds: i64,
}

impl LayerEdit<'_, '_> {
    /// A tile layer (`old` as it was) with the edit applied.
    #[allow(
        clippy::expect_used,
        reason = "names were checked to fit when the text was read, an empty name always fits, and a changed key was given"
    )]
    fn tiles(&self, mut t: TileLayer, old: &TileLayer) -> DocResult<TileLayer> {
        let p = self.p;
        let kind = TileKind::of(&t);
        fixed(p, "width", &t.width.to_string(), "resizing a layer is not supported")?;
        fixed(p, "height", &t.height.to_string(), "resizing a layer is not supported")?;
        t.header = self.new_header;
        if let Some(pair) = p.get("image") {
            t.image = changed_int(pair, t.image, -1, self.num_images - 1)?;
        }
        if let Some(pair) = p.get("color") {
            let c = pair.ints(4, i32::MIN as i64, i32::MAX as i64)?;
            let c = [c[0], c[1], c[2], c[3]];
            if c != t.color {
                pair.ints(4, 0, 255)?;
            }
            t.color = c;
        }
        if let Some(pair) = p.get("color_env") {
            t.color_env = changed_int(pair, t.color_env, -1, self.num_envelopes - 1)?;
        }
        if let Some(pair) = p.get("color_env_offset") {
            t.color_env_offset = pair.int(i32::MIN as i64, i32::MAX as i64)?;
        }
        if let Some(ddnet) = kind.ddnet_name() {
            // DDNet resets these on physics layers when it loads them.
            let refuse = |key: &str, what: &str| {
                let pair = p.get(key).expect("changed, so given");
                DocError::at(
                    pair.line,
                    pair.col,
                    format!("{what} of a {} layer cannot be changed (DDNet resets it)", kind.name()),
                )
            };
            if matches!(&self.name, Some(v) if v != ddnet.as_bytes()) {
                return Err(refuse("name", "the name"));
            }
            if self.detail != self.header.flags & items::LAYER_DETAIL {
                return Err(refuse("detail", "detail"));
            }
            if t.color != old.color {
                return Err(refuse("color", "the colour"));
            }
        } else if let Some(v) = &self.name
            && *v != t.name()
        {
            if t.name.is_none() {
                // Version 2 items have no name: write version 3 (as
                // DDNet's editor does), the DDNet tail after the name.
                t.version = 3;
            }
            t.name = Some(items::name3(v).expect("checked"));
        }
        Ok(t)
    }

    /// A quads layer (or a sounds layer: `is_quads` false) with the edit
    /// applied.
    #[allow(
        clippy::expect_used,
        reason = "names were checked to fit when the text was read, an empty name always fits, and a changed key was given"
    )]
    fn quads(&self, mut q: QuadsLayer, is_quads: bool) -> DocResult<QuadsLayer> {
        let (count_key, index_key, limit) =
            if is_quads { ("quads", "image", self.num_images) } else { ("sources", "sound", self.num_sounds) };
        fixed(self.p, count_key, &q.num_quads.to_string(), &format!("write the `{count_key}` file to change them"))?;
        q.header = self.new_header;
        if let Some(pair) = self.p.get(index_key) {
            q.image = changed_int(pair, q.image, -1, limit - 1)?;
        }
        if let Some(v) = &self.name
            && *v != q.name()
        {
            q = upgrade_named(q);
            q.name = Some(items::name3(v).expect("checked"));
        }
        Ok(q)
    }
}

/// An integer that must be in `min..=max` when it is not `current` (an
/// index the map already holds is taken back as it is: DDNet's editor
/// resets an invalid one when it loads the map).
fn changed_int(pair: &text::Pair, current: i32, min: i64, max: i64) -> DocResult<i32> {
    let v = pair.int(i32::MIN as i64, i32::MAX as i64)?;
    if v != current {
        pair.int(min, max)?;
    }
    Ok(v)
}

/// A quads or sounds layer item of version 2 (the one with a name).
#[allow(
    clippy::expect_used,
    reason = "names were checked to fit when the text was read, an empty name always fits, and a changed key was given"
)]
fn upgrade_named(q: QuadsLayer) -> QuadsLayer {
    if q.version >= 2 && q.name.is_some() {
        return q;
    }
    let mut ints = q.to_ints();
    if ints.len() < 10 {
        ints.truncate(7);
        ints.extend(name_to_ints(b"", 3).expect("empty name"));
    }
    ints[3] = ints[3].max(2);
    QuadsLayer::parse(q.header, &ints).expect("upgraded layer")
}
