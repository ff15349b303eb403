//! A Teeworlds/DDNet map: the datafile plus what its items mean, the
//! checks DDNet's map loader (`CMap::Load`) makes and the ones its editor
//! needs to read the map, and the edits the view makes. Pure.
//!
//! The datafile stays the one source of truth: the typed items of
//! [`worldfs_codec::twmap::items`] are read from it when needed, and edits write them
//! back, so everything an edit does not touch keeps its exact bytes.

use std::collections::{HashMap, HashSet};

use crate::documents::{DocError, DocResult};
use worldfs_codec::twmap::datafile::{Datafile, Offsets};
use worldfs_codec::twmap::items::{self, Envelope, Group, Image, Info, Layer, TileLayer, types};
use worldfs_codec::twmap::tiles::{self, TileKind};

/// A group and the item indices of its layers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupEntry {
    pub(crate) item: usize,
    pub layers: Vec<usize>,
}

/// Where the parts of the map are (item indices into `df.items`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Index {
    pub(crate) info: Option<usize>,
    pub images: Vec<usize>,
    pub(crate) envelopes: Vec<usize>,
    pub groups: Vec<GroupEntry>,
    /// Every layer item, in type order (groups refer to positions here).
    pub(crate) layers: Vec<usize>,
    pub(crate) sounds: Vec<usize>,
    pub(crate) env_points: Option<usize>,
    pub(crate) bezier: Option<usize>,
    /// Items shown only in `items/`, with the name of their kind.
    pub(crate) others: Vec<(usize, String)>,
}

#[derive(Clone, Debug)]
pub struct Map {
    pub df: Datafile,
    pub index: Index,
}

/// The payload of a data item, for the checks below.
fn data<'a>(df: &'a Datafile, index: i32, what: &dyn Fn() -> String) -> DocResult<&'a [u8]> {
    if index < 0 || index as usize >= df.data.len() {
        return Err(DocError::new(format!(
            "{}: data index {index} does not exist (the map has {} data items)",
            what(),
            df.data.len()
        )));
    }
    df.data[index as usize]
        .bytes()
        .map_err(|e| DocError::new(format!("{}: data item {index} cannot be read: {e}", what())))
}

/// A NUL-terminated string of a data item (-1: empty), as DDNet's editor
/// reads it: the bytes before the first NUL.
pub(crate) fn string_of(df: &Datafile, index: i32) -> Vec<u8> {
    if index < 0 {
        return Vec::new();
    }
    match df.data.get(index as usize).and_then(|d| d.bytes().ok()) {
        Some(b) => b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())].to_vec(),
        None => Vec::new(),
    }
}

impl Map {
    /// Decode and check a map file.
    pub fn decode(bytes: &[u8]) -> DocResult<Map> {
        let (df, offsets) =
            Datafile::decode_with_offsets(bytes).map_err(|e| DocError::new(format!("datafile: {e}")))?;
        Map::from_datafile(df, Some(&offsets))
    }

    /// Index and check a datafile; `offsets` (from decoding) make messages
    /// name byte offsets.
    pub(crate) fn from_datafile(df: Datafile, offsets: Option<&Offsets>) -> DocResult<Map> {
        let index = check(&df, offsets)?;
        Ok(Map { df, index })
    }

    pub(crate) fn encode(&self) -> DocResult<Vec<u8>> {
        self.df.encode().map_err(|e| DocError::new(format!("cannot write the map: {e}")))
    }
}

// The accessors of items: the map's items are parsed and checked when it
// is read (`Map::check`, again after every edit), and these read only
// checked items.
#[allow(clippy::expect_used, reason = "they read only items that Map::check parsed")]
impl Map {
    pub(crate) fn info(&self) -> Option<Info> {
        self.index.info.and_then(|i| Info::parse(&self.df.items[i].data).ok())
    }
    pub fn image(&self, i: usize) -> Image {
        Image::parse(&self.df.items[self.index.images[i]].data).expect("checked")
    }
    pub(crate) fn envelope(&self, i: usize) -> Envelope {
        Envelope::parse(&self.df.items[self.index.envelopes[i]].data).expect("checked")
    }
    pub(crate) fn group(&self, g: usize) -> Group {
        Group::parse(&self.df.items[self.index.groups[g].item].data).expect("checked")
    }
    pub fn layer(&self, g: usize, l: usize) -> Layer {
        Layer::parse(&self.df.items[self.index.groups[g].layers[l]].data).expect("checked")
    }
    pub(crate) fn sound(&self, i: usize) -> items::Sound {
        items::Sound::parse(&self.df.items[self.index.sounds[i]].data).expect("checked")
    }
    pub fn string(&self, index: i32) -> Vec<u8> {
        string_of(&self.df, index)
    }
    pub(crate) fn data(&self, index: i32) -> &[u8] {
        self.df.data[index as usize].bytes().expect("checked")
    }

    /// The unpacked tiles of a tile layer (width x height tiles).
    pub(crate) fn tiles(&self, layer: &TileLayer) -> Vec<u8> {
        let kind = TileKind::of(layer);
        let count = layer.width as usize * layer.height as usize;
        let stored = self.data(kind.data_index(layer));
        if layer.version >= 4 {
            tiles::unpack(stored, count).expect("checked")
        } else {
            stored[..count * kind.tile_size()].to_vec()
        }
    }

    /// The envelope points of envelope `i`, with bezier tangents where the
    /// map has them; and how many of its points the points item lacks.
    pub(crate) fn env_points(&self, i: usize) -> (Vec<items::EnvPoint>, usize) {
        let env = self.envelope(i);
        let teeworlds_bezier =
            (0..self.index.envelopes.len()).any(|e| self.envelope(e).version >= Envelope::VERSION_TEEWORLDS_BEZIER);
        let all = self
            .index
            .env_points
            .map(|p| items::parse_env_points(&self.df.items[p].data, teeworlds_bezier))
            .unwrap_or_default();
        let bezier = match (teeworlds_bezier, self.index.bezier) {
            (false, Some(b)) => {
                let b = items::parse_bezier_points(&self.df.items[b].data);
                if b.len() == all.len() { Some(b) } else { None }
            }
            _ => None,
        };
        let start = (env.start_point.max(0) as usize).min(all.len());
        let want = env.num_points.max(0) as usize;
        let end = start.saturating_add(want).min(all.len());
        let mut points: Vec<items::EnvPoint> = all[start..end].to_vec();
        if let Some(b) = bezier {
            for (k, p) in points.iter_mut().enumerate() {
                p.bezier = Some(b[start + k]);
            }
        }
        let missing = want - (end - start);
        (points, missing)
    }

    /// Why the map is in Teeworlds 0.7's format (which has no settings, and
    /// which twmap then reads by 0.7's rules), if it is.
    pub fn teeworlds07(&self) -> Option<String> {
        if let Some(i) = (0..self.index.images.len()).find(|&i| self.image(i).version >= 2) {
            return Some(format!("image {i} is an item of version 2"));
        }
        if let Some(e) =
            (0..self.index.envelopes.len()).find(|&e| self.envelope(e).version >= Envelope::VERSION_TEEWORLDS_BEZIER)
        {
            return Some(format!("envelope {e} is an item of version 3"));
        }
        for &l in &self.index.layers {
            if let Ok(Layer::Tiles(t)) = Layer::parse(&self.df.items[l].data)
                && t.version >= 4
            {
                return Some("a tile layer is an item of version 4".into());
            }
        }
        None
    }

    /// Every data index a field we know refers to, with how many fields do.
    pub(crate) fn data_refs(&self) -> HashMap<i32, usize> {
        let mut refs: HashMap<i32, usize> = HashMap::new();
        let mut add = |i: i32| {
            if i >= 0 {
                *refs.entry(i).or_default() += 1;
            }
        };
        if let Some(info) = self.info() {
            for i in [info.author, info.map_version, info.credits, info.license, info.settings_index()] {
                add(i);
            }
        }
        for i in 0..self.index.images.len() {
            let im = self.image(i);
            add(im.name);
            add(im.data);
        }
        for i in 0..self.index.sounds.len() {
            let s = self.sound(i);
            add(s.name);
            add(s.data);
        }
        for &l in &self.index.layers {
            match Layer::parse(&self.df.items[l].data) {
                Ok(Layer::Tiles(t)) => {
                    // Only the entry of its own physics flag: the others
                    // are unused (and junk in some real maps).
                    add(t.data);
                    let kind = TileKind::of(&t);
                    if !matches!(kind, TileKind::Tiles | TileKind::Game) {
                        add(kind.data_index(&t));
                    }
                }
                Ok(Layer::Quads(q)) | Ok(Layer::Sounds(q)) => add(q.data),
                _ => {}
            }
        }
        refs
    }

    /// Put `bytes` where field value `current` points, or in a new data item
    /// when `current` is -1 or shared with another field; returns the index
    /// the field must hold.
    pub(crate) fn put_data(&mut self, current: i32, bytes: Vec<u8>) -> i32 {
        let refs = self.data_refs();
        if current >= 0 && (current as usize) < self.df.data.len() && refs.get(&current) == Some(&1) {
            self.df.set_data(current as usize, bytes);
            current
        } else {
            self.df.add_data(bytes) as i32
        }
    }

    /// A string field's new data index: an empty string stays -1 or becomes
    /// the 1-byte "\0" in place (DDNet reads both as empty).
    pub(crate) fn put_string(&mut self, current: i32, value: &[u8]) -> i32 {
        if value == self.string(current).as_slice() {
            return current;
        }
        if value.is_empty() && current < 0 {
            return -1;
        }
        let mut bytes = value.to_vec();
        bytes.push(0);
        self.put_data(current, bytes)
    }

    /// Give up a data item that field value `current` alone points to (it
    /// stays in the file, 1 byte long, pointed to by nothing we know).
    pub(crate) fn release_data(&mut self, current: i32) {
        if current >= 0 && (current as usize) < self.df.data.len() && self.data_refs().get(&current) == Some(&1) {
            self.df.set_data(current as usize, vec![0]);
        }
    }

    /// Check the map again after an edit and index it anew.
    pub(crate) fn recheck(&mut self) -> DocResult<()> {
        self.index = check(&self.df, None)?;
        Ok(())
    }
}

/// "item 12 (at byte 345)".
fn where_item(offsets: Option<&Offsets>, item: usize) -> String {
    match offsets.and_then(|o| o.items.get(item)) {
        Some(at) => format!("item {item} at byte {at}"),
        None => format!("item {item}"),
    }
}

fn where_data(offsets: Option<&Offsets>, data: i32) -> String {
    match offsets.and_then(|o| o.data.get(data as usize)) {
        Some(at) => format!("data item {data} at byte {at}"),
        None => format!("data item {data}"),
    }
}

/// Index the map and make the checks (see the module documentation).
fn check(df: &Datafile, offsets: Option<&Offsets>) -> DocResult<Index> {
    let mut ix = Index::default();
    let mut shown: HashSet<usize> = HashSet::new();
    let uuid_of = uuid_types(df);

    shown.insert(check_version(df, offsets)?);
    ix.info = check_info(df, offsets)?;
    shown.extend(ix.info);

    ix.images = items_of_type(df, types::IMAGE);
    for (n, &ii) in ix.images.iter().enumerate() {
        check_image(df, offsets, n, ii)?;
        shown.insert(ii);
    }

    // Envelopes and their points.
    ix.envelopes = items_of_type(df, types::ENVELOPE);
    for (n, &ei) in ix.envelopes.iter().enumerate() {
        Envelope::parse(&df.items[ei].data)
            .map_err(|e| DocError::new(format!("envelope {n} ({}): {e}", where_item(offsets, ei))))?;
        shown.insert(ei);
    }
    ix.env_points = df.items_of(types::ENVPOINTS).map(|(i, _)| i).next();
    shown.extend(ix.env_points);
    ix.bezier =
        type_with_uuid(&uuid_of, items::uuids::ENVPOINTS_BEZIER).and_then(|t| df.items_of(t).map(|(i, _)| i).next());

    ix.sounds = items_of_type(df, types::SOUND);
    for (n, &si) in ix.sounds.iter().enumerate() {
        check_sound(df, offsets, n, si)?;
        shown.insert(si);
    }

    ix.layers = items_of_type(df, types::LAYER);
    let (tile_layers, game) = check_groups(df, offsets, &mut ix, &mut shown)?;
    let Some(game) = game else {
        return Err(DocError::new("the map has no game layer (a tile layer with the game flag)"));
    };
    check_tile_data(df, offsets, &tile_layers, &game)?;

    ix.others = other_items(df, &shown, &uuid_of);
    Ok(ix)
}

/// The item indices of one type, in order.
fn items_of_type(df: &Datafile, type_id: u16) -> Vec<usize> {
    df.items_of(type_id).map(|(i, _)| i).collect()
}

/// UUID types: internal type -> UUID, from the index items.
fn uuid_types(df: &Datafile) -> HashMap<u16, [u8; 16]> {
    let mut uuid_of: HashMap<u16, [u8; 16]> = HashMap::new();
    for (_, it) in df.items_of(types::EX) {
        if let Some(u) = items::uuid_of_index_item(&it.data) {
            uuid_of.entry(it.id).or_insert(u);
        }
    }
    uuid_of
}

/// The internal type a UUID was given, if the map has one.
fn type_with_uuid(uuid_of: &HashMap<u16, [u8; 16]>, u: [u8; 16]) -> Option<u16> {
    uuid_of.iter().find(|(t, v)| **v == u && **t > types::UUID_OFFSET).map(|(t, _)| *t)
}

/// The version item: there, and version 1. Its item index.
fn check_version(df: &Datafile, offsets: Option<&Offsets>) -> DocResult<usize> {
    let Some(vi) = df.find(types::VERSION, 0) else {
        return Err(DocError::new("the map version item (type 0, id 0) is missing"));
    };
    match items::map_version(&df.items[vi].data) {
        Some(1) => Ok(vi),
        Some(v) => Err(DocError::new(format!(
            "map version ({}): version {v} is not supported (only 1 is)",
            where_item(offsets, vi)
        ))),
        None => Err(DocError::new(format!("map version ({}): the item is empty", where_item(offsets, vi)))),
    }
}

/// The info item, if any: readable, and its strings' data items there.
fn check_info(df: &Datafile, offsets: Option<&Offsets>) -> DocResult<Option<usize>> {
    let Some(ii) = df.find(types::INFO, 0) else {
        return Ok(None);
    };
    let info = Info::parse(&df.items[ii].data)
        .map_err(|e| DocError::new(format!("map info ({}): {e}", where_item(offsets, ii))))?;
    let fields = [
        ("author", info.author),
        ("version", info.map_version),
        ("credits", info.credits),
        ("license", info.license),
        ("settings", info.settings_index()),
    ];
    for (name, d) in fields {
        if d != -1 {
            data(df, d, &|| format!("map info ({}): {name}", where_item(offsets, ii)))?;
        }
    }
    Ok(Some(ii))
}

/// Image `n` (item `ii`): its name, and the pixels of an embedded one.
fn check_image(df: &Datafile, offsets: Option<&Offsets>, n: usize, ii: usize) -> DocResult<()> {
    let what = || format!("image {n} ({})", where_item(offsets, ii));
    let im = Image::parse(&df.items[ii].data).map_err(|e| DocError::new(format!("{}: {e}", what())))?;
    if im.name != -1 {
        data(df, im.name, &|| format!("{}: name", what()))?;
    }
    if !im.is_embedded() {
        return Ok(());
    }
    let name = String::from_utf8_lossy(&string_of(df, im.name)).into_owned();
    let what = || format!("image {n} {name:?} ({})", where_item(offsets, ii));
    if im.width <= 0 || im.height <= 0 {
        return Err(DocError::new(format!("{}: an embedded image of {} x {} pixels", what(), im.width, im.height)));
    }
    let need = im.width as u64 * im.height as u64 * im.bytes_per_pixel() as u64;
    let pixels = data(df, im.data, &|| format!("{}: pixels", what()))?;
    if (pixels.len() as u64) < need {
        let fmt = if im.bytes_per_pixel() == 3 { "RGB" } else { "RGBA" };
        return Err(DocError::new(format!(
            "{}: {} x {} {fmt} needs {need} bytes, {} has {}",
            what(),
            im.width,
            im.height,
            where_data(offsets, im.data),
            pixels.len()
        )));
    }
    Ok(())
}

/// Sound `n` (item `si`): its name, and its data unless external.
fn check_sound(df: &Datafile, offsets: Option<&Offsets>, n: usize, si: usize) -> DocResult<()> {
    let what = || format!("sound {n} ({})", where_item(offsets, si));
    let s = items::Sound::parse(&df.items[si].data).map_err(|e| DocError::new(format!("{}: {e}", what())))?;
    if s.name != -1 {
        data(df, s.name, &|| format!("{}: name", what()))?;
    }
    if s.external == 0 {
        data(df, s.data, &|| format!("{}: data", what()))?;
    }
    Ok(())
}

/// A tile layer found in a group: group number, layer number in the
/// group, item index, the layer.
type TileLayerAt = (usize, usize, usize, TileLayer);

/// Groups and layers (CMap::Load): each group's layers exist and belong to
/// it alone, each layer is readable. Fills `ix.groups`; gives the tile
/// layers and the game layer (the last one with the game flag).
fn check_groups(
    df: &Datafile,
    offsets: Option<&Offsets>,
    ix: &mut Index,
    shown: &mut HashSet<usize>,
) -> DocResult<(Vec<TileLayerAt>, Option<TileLayer>)> {
    let mut used_layers = HashSet::new();
    let mut tile_layers: Vec<TileLayerAt> = Vec::new();
    let mut game: Option<TileLayer> = None;
    for (g, gi) in items_of_type(df, types::GROUP).into_iter().enumerate() {
        let gwhat = || format!("group {g} ({})", where_item(offsets, gi));
        let group = Group::parse(&df.items[gi].data).map_err(|e| DocError::new(format!("{}: {e}", gwhat())))?;
        let (start, num) = (group.start_layer, group.num_layers);
        if start < 0 || num < 0 || start as i64 + num as i64 > ix.layers.len() as i64 {
            return Err(DocError::new(format!(
                "{}: uses layers {start} to {} (the map has {} layers)",
                gwhat(),
                start as i64 + num as i64 - 1,
                ix.layers.len()
            )));
        }
        let mut entry = GroupEntry { item: gi, layers: Vec::new() };
        for l in 0..num as usize {
            let li = ix.layers[start as usize + l];
            let lwhat = || format!("layer {l} of group {g} ({})", where_item(offsets, li));
            if !used_layers.insert(li) {
                return Err(DocError::new(format!("{}: is also used by another group", lwhat())));
            }
            let layer = Layer::parse(&df.items[li].data).map_err(|e| DocError::new(format!("{}: {e}", lwhat())))?;
            match &layer {
                Layer::Tiles(t) => {
                    check_tile_layer(t).map_err(|e| DocError::new(format!("{}: {e}", lwhat())))?;
                    if t.flags & items::tile_flags::GAME != 0 {
                        game = Some(t.clone());
                    }
                    tile_layers.push((g, l, li, t.clone()));
                }
                Layer::Quads(_) | Layer::Sounds(_) => check_quads_layer(df, offsets, &layer, &lwhat)?,
                Layer::Other(..) => {}
            }
            entry.layers.push(li);
            shown.insert(li);
        }
        ix.groups.push(entry);
        shown.insert(gi);
    }
    Ok((tile_layers, game))
}

/// A quads or sound-sources layer: its data holds as many as it says.
fn check_quads_layer(
    df: &Datafile,
    offsets: Option<&Offsets>,
    layer: &Layer,
    lwhat: &dyn Fn() -> String,
) -> DocResult<()> {
    let (Layer::Quads(q) | Layer::Sounds(q)) = layer else {
        return Ok(());
    };
    let (size, what) = match layer.header().kind {
        items::layer_types::QUADS => (items::QUAD_SIZE, "quads"),
        items::layer_types::SOUNDS => (items::SOURCE_SIZE, "sound sources"),
        _ => (items::SOURCE_SIZE_DEPRECATED, "sound sources"),
    };
    if q.num_quads < 0 {
        return Err(DocError::new(format!("{}: {} {what}", lwhat(), q.num_quads)));
    }
    if q.num_quads > 0 {
        let d = data(df, q.data, &|| format!("{}: {what}", lwhat()))?;
        let need = q.num_quads as u64 * size as u64;
        if (d.len() as u64) < need {
            return Err(DocError::new(format!(
                "{}: {} {what} need {need} bytes, {} has {}",
                lwhat(),
                q.num_quads,
                where_data(offsets, q.data),
                d.len()
            )));
        }
    }
    Ok(())
}

/// Tile data (ValidateAndUnpackTilesLayerData, and the unpacking): each
/// tile layer has its own data item, within the cap, at least as big as the
/// game layer for physics layers, unpacking to valid tiles.
fn check_tile_data(
    df: &Datafile,
    offsets: Option<&Offsets>,
    tile_layers: &[TileLayerAt],
    game: &TileLayer,
) -> DocResult<()> {
    let game_count = game.width as u64 * game.height as u64;
    let mut used_data = HashSet::new();
    for (g, l, li, t) in tile_layers {
        let lwhat = || format!("layer {l} of group {g} ({})", where_item(offsets, *li));
        let kind = TileKind::of(t);
        let d = kind.data_index(t);
        if d < 0 || d as usize >= df.data.len() {
            return Err(DocError::new(format!(
                "{}: tile data index {d} does not exist (the map has {} data items)",
                lwhat(),
                df.data.len()
            )));
        }
        if !used_data.insert(d) {
            return Err(DocError::new(format!("{}: tile data index {d} is used by another layer too", lwhat())));
        }
        let count = t.width as u64 * t.height as u64;
        if count * kind.tile_size() as u64 > worldfs_codec::twmap::datafile::MAX_DATA_SIZE as u64 {
            return Err(DocError::new(format!(
                "{}: {} x {} tiles are over the cap of {} bytes",
                lwhat(),
                t.width,
                t.height,
                worldfs_codec::twmap::datafile::MAX_DATA_SIZE
            )));
        }
        if kind.is_physics() && kind != TileKind::Game && count < game_count {
            return Err(DocError::new(format!(
                "{}: a {} layer of {} x {} is smaller than the game layer ({} x {})",
                lwhat(),
                kind.name(),
                t.width,
                t.height,
                game.width,
                game.height
            )));
        }
        check_tiles(df, offsets, t, count as usize, &lwhat)?;
    }
    Ok(())
}

/// The tiles of one layer (`count` of them): stored in full (or packed,
/// from version 4), each one valid for the layer's kind.
fn check_tiles(
    df: &Datafile,
    offsets: Option<&Offsets>,
    t: &TileLayer,
    count: usize,
    lwhat: &dyn Fn() -> String,
) -> DocResult<()> {
    let kind = TileKind::of(t);
    let d = kind.data_index(t);
    let stored = data(df, d, &|| format!("{}: tiles", lwhat()))?;
    let grid: std::borrow::Cow<[u8]> = if t.version >= 4 {
        if !matches!(kind, TileKind::Tiles | TileKind::Game) {
            return Err(DocError::new(format!(
                "{}: a {} layer of version 4 (tile skip packing is only for tiles and game layers)",
                lwhat(),
                kind.name()
            )));
        }
        let g = tiles::unpack(stored, count)
            .map_err(|e| DocError::new(format!("{}: tile data ({}): {e}", lwhat(), where_data(offsets, d))))?;
        std::borrow::Cow::Owned(g)
    } else {
        let have = stored.len() / kind.tile_size();
        if have < count {
            return Err(DocError::new(format!(
                "{}: tile data ({}) is truncated: {have} tiles, the layer has {count} ({} x {})",
                lwhat(),
                where_data(offsets, d),
                t.width,
                t.height
            )));
        }
        std::borrow::Cow::Borrowed(&stored[..count * kind.tile_size()])
    };
    kind.check(&grid).map_err(|(i, e)| {
        let w = t.width as usize;
        DocError::new(format!("{}: tile {i} (x {}, y {}) of {}: {e}", lwhat(), i % w, i / w, where_data(offsets, d)))
    })
}

/// Everything not shown elsewhere goes to items/, named by its kind.
fn other_items(df: &Datafile, shown: &HashSet<usize>, uuid_of: &HashMap<u16, [u8; 16]>) -> Vec<(usize, String)> {
    let mut others = Vec::new();
    for (i, it) in df.items.iter().enumerate() {
        if shown.contains(&i) {
            continue;
        }
        let kind = match it.type_id {
            types::VERSION => "version".to_string(),
            types::INFO => "info".to_string(),
            types::IMAGE => "image".to_string(),
            types::ENVELOPE => "envelope".to_string(),
            types::GROUP => "group".to_string(),
            types::LAYER => "layer".to_string(),
            types::ENVPOINTS => "envpoints".to_string(),
            types::SOUND => "sound".to_string(),
            types::EX => "uuid-index".to_string(),
            t if t > types::UUID_OFFSET => match uuid_of.get(&t) {
                Some(u) if *u == items::uuids::AUTOMAPPER_CONFIG => "automapper-config".to_string(),
                Some(u) if *u == items::uuids::ENVPOINTS_BEZIER => "envpoints-bezier".to_string(),
                Some(u) if *u == items::uuids::TEST => "test".to_string(),
                Some(u) => items::format_uuid(u),
                None => format!("type{t}"),
            },
            t => format!("type{t}"),
        };
        others.push((i, kind));
    }
    others
}

/// `UpgradeAndValidateTilesLayerItem` and `EnsureTileLayerProperties`.
fn check_tile_layer(t: &TileLayer) -> Result<(), String> {
    if !(2..=4).contains(&t.version) {
        return Err(format!("tile layer version {} is not supported (2 to 4 are)", t.version));
    }
    let physics = t.physics();
    if physics & (physics - 1) != 0 {
        return Err(format!(
            "tile layer flags {}: at most one physics flag (game, tele, speedup, front, switch, tune) may be set",
            t.flags
        ));
    }
    for (flag, name) in items::DDNET_TAIL {
        if t.flags & flag != 0 && t.ddnet.len() <= tail_pos(flag) {
            return Err(format!(
                "a {name} layer whose item has no {name} data index (version {}, {} ints)",
                t.version,
                t.to_ints().len()
            ));
        }
    }
    if t.width < 2 || t.height < 2 {
        return Err(format!("a tile layer of {} x {} (at least 2 x 2)", t.width, t.height));
    }
    if std::str::from_utf8(&t.name()).is_err() {
        return Err("the layer name is not valid UTF-8".into());
    }
    if physics == 0 && t.color.iter().any(|c| !(0..=255).contains(c)) {
        let c = t.color;
        return Err(format!("colour ({}, {}, {}, {}) is outside 0..=255", c[0], c[1], c[2], c[3]));
    }
    Ok(())
}

#[allow(clippy::unwrap_used, reason = "called only with the flags of the DDNet tail")]
fn tail_pos(flag: i32) -> usize {
    items::DDNET_TAIL.iter().position(|(f, _)| *f == flag).unwrap()
}
