//! The map items of a Teeworlds/DDNet map: item payloads (i32 lists) <->
//! typed structures, pure. Every `parse` keeps what it does not know
//! (`extra` ints past the known fields), so `to_ints(parse(x)) == x` for any
//! item `parse` accepts.
//!
//! Sources: DDNet `src/game/mapitems.h`, `mapitems_ex.h`, `engine/shared/
//! map.cpp`; Teeworlds 0.7 `src/game/mapitems.h`.

/// Item type ids.
pub mod types {
    /// The map version item (id 0).
    pub const VERSION: u16 = 0;
    /// The map info item (id 0): author, version, credits, licence, settings.
    pub const INFO: u16 = 1;
    /// Image items, one per image.
    pub const IMAGE: u16 = 2;
    /// Envelope items, one per envelope.
    pub const ENVELOPE: u16 = 3;
    /// Group items, one per group of layers.
    pub const GROUP: u16 = 4;
    /// Layer items, one per layer (their groups say which belong together).
    pub const LAYER: u16 = 5;
    /// The envelope points item (id 0): the points of every envelope.
    pub const ENVPOINTS: u16 = 6;
    /// Sound items (DDNet), one per sound.
    pub const SOUND: u16 = 7;
    /// Items of a type above this one are UUID-typed: the UUID index item
    /// (type [`EX`], id = the type) says which UUID.
    pub const UUID_OFFSET: u16 = 0x8000;
    /// UUID index items.
    pub const EX: u16 = 0xFFFF;
}

/// Layer kinds (`CMapItemLayer::m_Type`).
pub mod layer_types {
    /// A tile layer.
    pub const TILES: i32 = 2;
    /// A quads layer.
    pub const QUADS: i32 = 3;
    /// A sounds layer of DDNet's first kind (36-byte sources).
    pub const SOUNDS_DEPRECATED: i32 = 9;
    /// A sounds layer.
    pub const SOUNDS: i32 = 10;
}

/// Tile layer flags (`CMapItemLayerTilemap::m_Flags`).
pub mod tile_flags {
    /// The game layer.
    pub const GAME: i32 = 1;
    /// DDNet's teleporter layer.
    pub const TELE: i32 = 2;
    /// DDNet's speedup layer.
    pub const SPEEDUP: i32 = 4;
    /// DDNet's front layer.
    pub const FRONT: i32 = 8;
    /// DDNet's switch layer.
    pub const SWITCH: i32 = 16;
    /// DDNet's tune layer.
    pub const TUNE: i32 = 32;
    /// Any of the physics layer flags.
    pub const PHYSICS: i32 = GAME | TELE | SPEEDUP | FRONT | SWITCH | TUNE;
}

/// `LAYERFLAG_DETAIL`.
pub const LAYER_DETAIL: i32 = 1;

/// The UUIDs of the UUID-typed items DDNet knows (computed from DDNet's
/// name-based scheme: MD5 of the namespace e05ddaaa-c4e6-4cfb-b642-
/// 5d48e80c0029 and the name, version 3; matched on the real maps).
pub mod uuids {
    /// "mapitemtype-test@ddnet.tw"
    pub const TEST: [u8; 16] = hex16("b1ab21865ac339d99fbc47cf03efdf1e");
    /// "mapitemtype-automapper-config@ddnet.tw"
    pub const AUTOMAPPER_CONFIG: [u8; 16] = hex16("3e1b2716178c39789bd9b11ae0410dd8");
    /// "mapitemtype-envpoints-bezier@ddnet.tw"
    pub const ENVPOINTS_BEZIER: [u8; 16] = hex16("3ab4f84dd9cc3c78b5850d6ccdb2e25c");

    const fn hex16(s: &str) -> [u8; 16] {
        let b = s.as_bytes();
        let mut out = [0u8; 16];
        let mut i = 0;
        while i < 16 {
            out[i] = (digit(b[2 * i]) << 4) | digit(b[2 * i + 1]);
            i += 1;
        }
        out
    }
    const fn digit(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            _ => c - b'a' + 10,
        }
    }
}

/// The UUID an index item (type [`types::EX`]) holds: each int is the
/// big-endian reading of 4 UUID bytes.
pub fn uuid_of_index_item(ints: &[i32]) -> Option<[u8; 16]> {
    if ints.len() < 4 {
        return None;
    }
    let mut out = [0u8; 16];
    for i in 0..4 {
        out[i * 4..i * 4 + 4].copy_from_slice(&ints[i].to_be_bytes());
    }
    Some(out)
}

/// The 4 ints of an index item for `uuid` (the inverse of [`uuid_of_index_item`]).
pub fn uuid_to_ints(uuid: &[u8; 16]) -> [i32; 4] {
    std::array::from_fn(|i| i32::from_be_bytes([uuid[i * 4], uuid[i * 4 + 1], uuid[i * 4 + 2], uuid[i * 4 + 3]]))
}

/// `uuid` in the usual text form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
pub fn format_uuid(u: &[u8; 16]) -> String {
    let h: Vec<String> = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

/// Names kept in ints (`IntsToStr`): each int gives 4 bytes, big-endian,
/// each minus 128; the last byte is always NUL; the name ends at the first
/// NUL. Returns the bytes (DDNet then requires valid UTF-8).
pub fn ints_to_name(ints: &[i32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ints.len() * 4);
    for &v in ints {
        for b in v.to_be_bytes() {
            out.push(b.wrapping_sub(128));
        }
    }
    if let Some(last) = out.last_mut() {
        *last = 0;
    }
    let end = out.iter().position(|&c| c == 0).unwrap_or(out.len());
    out.truncate(end);
    out
}

/// The ints DDNet's `StrToInts` writes for a name; the name must have at
/// most `4 * n - 1` bytes and no NUL.
pub fn name_to_ints(name: &[u8], n: usize) -> Result<Vec<i32>, String> {
    if name.len() > 4 * n - 1 {
        return Err(format!("the name has {} bytes, at most {} fit", name.len(), 4 * n - 1));
    }
    if name.contains(&0) {
        return Err("a name cannot contain a NUL byte".into());
    }
    let mut bytes = vec![0u8; 4 * n];
    bytes[..name.len()].copy_from_slice(name);
    let mut ints: Vec<i32> = bytes
        .chunks(4)
        .map(|c| {
            i32::from_be_bytes([
                c[0].wrapping_add(128),
                c[1].wrapping_add(128),
                c[2].wrapping_add(128),
                c[3].wrapping_add(128),
            ])
        })
        .collect();
    if let Some(last) = ints.last_mut() {
        *last &= !0xFF;
    }
    Ok(ints)
}

/// A layer or group name as its 3 ints.
pub fn name3(name: &[u8]) -> Result<[i32; 3], String> {
    let v = name_to_ints(name, 3)?;
    Ok([v[0], v[1], v[2]])
}

fn need(ints: &[i32], n: usize, what: &str) -> Result<(), String> {
    if ints.len() < n {
        return Err(format!("{what} item has {} ints, at least {n} are needed", ints.len()));
    }
    Ok(())
}

/// Where the known fields end in an item of `len` ints whose optional
/// parts end at `ends` (a part is there only when the item holds all of it).
fn known_end(len: usize, ends: &[usize]) -> usize {
    ends.iter().copied().filter(|&e| e <= len).max().unwrap_or(0)
}

fn arr<const N: usize>(ints: &[i32], at: usize) -> [i32; N] {
    std::array::from_fn(|i| ints[at + i])
}

/// Map version (type 0, id 0): must be 1.
pub fn map_version(ints: &[i32]) -> Option<i32> {
    ints.first().copied()
}

/// Map info (type 1, id 0): data indices of NUL-terminated strings (-1 = none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Info {
    /// The info item's version (DDNet reads `settings` only from version 1).
    pub version: i32,
    /// Data index of the author's name.
    pub author: i32,
    /// Data index of the map's version text.
    pub map_version: i32,
    /// Data index of the credits.
    pub credits: i32,
    /// Data index of the licence.
    pub license: i32,
    /// DDNet: the server settings, NUL-separated commands.
    pub settings: Option<i32>,
    /// Ints past the known fields, kept.
    pub extra: Vec<i32>,
}

impl Info {
    /// Reads an info item's ints (at least 5).
    pub fn parse(ints: &[i32]) -> Result<Info, String> {
        need(ints, 5, "the info")?;
        Ok(Info {
            version: ints[0],
            author: ints[1],
            map_version: ints[2],
            credits: ints[3],
            license: ints[4],
            settings: ints.get(5).copied(),
            extra: ints.get(6..).unwrap_or_default().to_vec(),
        })
    }
    /// The item's ints, `extra` included.
    pub fn to_ints(&self) -> Vec<i32> {
        let mut v = vec![self.version, self.author, self.map_version, self.credits, self.license];
        v.extend(self.settings);
        v.extend(&self.extra);
        v
    }
    /// The settings DDNet reads (only from version 1 items that have them).
    pub fn settings_index(&self) -> i32 {
        match self.settings {
            Some(s) if self.version == 1 => s,
            _ => -1,
        }
    }
}

/// Image (type 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// The item version: 1, or 2 (Teeworlds 0.7, with `format`).
    pub version: i32,
    /// Width in pixels.
    pub width: i32,
    /// Height in pixels.
    pub height: i32,
    /// Non-zero: loaded by name from the client's `mapres/`.
    pub external: i32,
    /// Data index of the image's name (NUL-terminated).
    pub name: i32,
    /// Data index of the pixels (embedded images).
    pub data: i32,
    /// Version 2 (Teeworlds 0.7): the pixel format, 1 = RGBA (0 = RGB in
    /// early 0.7 maps); DDNet reads an image whose format is not 1 from
    /// `mapres/` like an external one.
    pub format: Option<i32>,
    /// Ints past the known fields, kept.
    pub extra: Vec<i32>,
}

impl Image {
    /// Reads an image item's ints (at least 6; 7 from version 2).
    pub fn parse(ints: &[i32]) -> Result<Image, String> {
        need(ints, 6, "an image")?;
        if ints[0] >= 2 {
            need(ints, 7, "a version 2 image")?;
        }
        Ok(Image {
            version: ints[0],
            width: ints[1],
            height: ints[2],
            external: ints[3],
            name: ints[4],
            data: ints[5],
            format: ints.get(6).copied(),
            extra: ints.get(7..).unwrap_or_default().to_vec(),
        })
    }
    /// The item's ints, `extra` included.
    pub fn to_ints(&self) -> Vec<i32> {
        let mut v = vec![self.version, self.width, self.height, self.external, self.name, self.data];
        v.extend(self.format);
        v.extend(&self.extra);
        v
    }
    /// Whether the pixels are in the map (DDNet's rule).
    pub fn is_embedded(&self) -> bool {
        self.external == 0 && !(self.version > 1 && self.format != Some(1))
    }
    /// Bytes per pixel of embedded data: 3 for a 0.7 RGB image, else 4.
    pub fn bytes_per_pixel(&self) -> usize {
        if self.version > 1 && self.format == Some(0) { 3 } else { 4 }
    }
}

/// Envelope (type 3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// The item version: 1, 2 (`synchronized`) or 3 (Teeworlds bezier points).
    pub version: i32,
    /// 1 sound, 3 position, 4 colour.
    pub channels: i32,
    /// Index of its first point in the envelope points item.
    pub start_point: i32,
    /// How many points it has there.
    pub num_points: i32,
    /// Its name in 8 ints (see [`Envelope::name`]).
    pub name: [i32; 8],
    /// Version 2 and later.
    pub synchronized: Option<i32>,
    /// Ints past the known fields, kept.
    pub extra: Vec<i32>,
}

impl Envelope {
    /// From version 3 (Teeworlds 0.7) every point of the map carries bezier
    /// tangents (22 ints instead of 6).
    pub const VERSION_TEEWORLDS_BEZIER: i32 = 3;

    /// Reads an envelope item's ints (at least 12).
    pub fn parse(ints: &[i32]) -> Result<Envelope, String> {
        need(ints, 12, "an envelope")?;
        Ok(Envelope {
            version: ints[0],
            channels: ints[1],
            start_point: ints[2],
            num_points: ints[3],
            name: arr(ints, 4),
            synchronized: ints.get(12).copied(),
            extra: ints.get(13..).unwrap_or_default().to_vec(),
        })
    }
    /// The item's ints, `extra` included.
    pub fn to_ints(&self) -> Vec<i32> {
        let mut v = vec![self.version, self.channels, self.start_point, self.num_points];
        v.extend(self.name);
        v.extend(self.synchronized);
        v.extend(&self.extra);
        v
    }
    /// The name (old maps mark "no name" with -1 in the first int).
    pub fn name(&self) -> Vec<u8> {
        if self.name[0] == -1 { Vec::new() } else { ints_to_name(&self.name) }
    }
}

/// One envelope point: 6 ints, or 22 in maps with Teeworlds bezier
/// envelopes; DDNet keeps bezier tangents in a separate UUID item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvPoint {
    /// Milliseconds.
    pub time: i32,
    /// 0 step, 1 linear, 2 slow, 3 fast, 4 smooth, 5 bezier.
    pub curve: i32,
    /// 22.10 fixed point (colours: 1.0 = 1024).
    pub values: [i32; 4],
    /// In-tangent dx, dy, out-tangent dx, dy, 4 channels each.
    pub bezier: Option<[i32; 16]>,
}

/// The names of [`EnvPoint::curve`]'s values, by value.
pub const CURVE_NAMES: [&str; 6] = ["step", "linear", "slow", "fast", "smooth", "bezier"];

/// The points of the envelope points item (type 6): `teeworlds_bezier`
/// when an envelope has version 3 or more (22 ints per point). Ints past
/// the last whole point are ignored, as DDNet does.
pub fn parse_env_points(ints: &[i32], teeworlds_bezier: bool) -> Vec<EnvPoint> {
    let size = if teeworlds_bezier { 22 } else { 6 };
    ints.chunks_exact(size)
        .map(|c| EnvPoint { time: c[0], curve: c[1], values: arr(c, 2), bezier: teeworlds_bezier.then(|| arr(c, 6)) })
        .collect()
}

/// DDNet's bezier item (UUID type `ENVPOINTS_BEZIER`): 16 ints per point;
/// used only when it has as many points as the points item.
pub fn parse_bezier_points(ints: &[i32]) -> Vec<[i32; 16]> {
    ints.chunks_exact(16).map(|c| arr(c, 0)).collect()
}

/// Group (type 4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The item version: 1, 2 (clipping) or 3 (name).
    pub version: i32,
    /// Horizontal offset of its layers, in world units (32 per tile).
    pub offset_x: i32,
    /// Vertical offset of its layers, in world units (32 per tile).
    pub offset_y: i32,
    /// Horizontal parallax in percent (100: moves with the game layer).
    pub parallax_x: i32,
    /// Vertical parallax in percent (100: moves with the game layer).
    pub parallax_y: i32,
    /// Index of its first layer among the layer items.
    pub start_layer: i32,
    /// How many layers it has.
    pub num_layers: i32,
    /// Version 2: use clipping, x, y, w, h.
    pub clipping: Option<[i32; 5]>,
    /// Version 3.
    pub name: Option<[i32; 3]>,
    /// Ints past the known fields, kept.
    pub extra: Vec<i32>,
}

impl Group {
    /// Reads a group item's ints (at least 7; 12 from version 2, 15 from version 3).
    pub fn parse(ints: &[i32]) -> Result<Group, String> {
        need(ints, 7, "a group")?;
        if ints[0] >= 2 {
            need(ints, 12, "a version 2 group")?;
        }
        if ints[0] >= 3 {
            need(ints, 15, "a version 3 group")?;
        }
        Ok(Group {
            version: ints[0],
            offset_x: ints[1],
            offset_y: ints[2],
            parallax_x: ints[3],
            parallax_y: ints[4],
            start_layer: ints[5],
            num_layers: ints[6],
            clipping: (ints.len() >= 12).then(|| arr(ints, 7)),
            name: (ints.len() >= 15).then(|| arr(ints, 12)),
            extra: ints[known_end(ints.len(), &[7, 12, 15])..].to_vec(),
        })
    }
    /// The item's ints, `extra` included.
    pub fn to_ints(&self) -> Vec<i32> {
        let mut v = vec![
            self.version,
            self.offset_x,
            self.offset_y,
            self.parallax_x,
            self.parallax_y,
            self.start_layer,
            self.num_layers,
        ];
        if let Some(c) = self.clipping {
            v.extend(c);
        }
        if let Some(n) = self.name {
            v.extend(n);
        }
        v.extend(&self.extra);
        v
    }
    /// The group's name (empty before version 3).
    pub fn name(&self) -> Vec<u8> {
        match self.name {
            Some(n) if self.version >= 3 => ints_to_name(&n),
            _ => Vec::new(),
        }
    }
    /// Clipping as DDNet reads it (version 2 and later).
    pub fn clip(&self) -> [i32; 5] {
        match self.clipping {
            Some(c) if self.version >= 2 => c,
            _ => [0; 5],
        }
    }
}

/// The header every layer item starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerHeader {
    /// Unused; DDNet resets it to 0 when loading.
    pub version: i32,
    /// The layer kind, one of [`layer_types`].
    pub kind: i32,
    /// 1 = detail.
    pub flags: i32,
}

/// Tile layer (layer kind 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileLayer {
    /// The layer item's header.
    pub header: LayerHeader,
    /// 2 (no name; DDRace's tail right after `data`), 3 (named), 4
    /// (Teeworlds 0.7: run-length "skip" packed tiles).
    pub version: i32,
    /// Width in tiles.
    pub width: i32,
    /// Height in tiles.
    pub height: i32,
    /// [`tile_flags`]: at most one physics flag.
    pub flags: i32,
    /// Tint: red, green, blue, alpha, each 0-255.
    pub color: [i32; 4],
    /// Index of the envelope that animates the tint (-1: none).
    pub color_env: i32,
    /// Time offset into that envelope, in milliseconds.
    pub color_env_offset: i32,
    /// Index of the image it draws with (-1: none).
    pub image: i32,
    /// Data index of its tiles (of a front, tele, speedup, switch or tune
    /// layer: a grid of empty tiles; its tiles are in [`TileLayer::ddnet`]).
    pub data: i32,
    /// Version 3 and later.
    pub name: Option<[i32; 3]>,
    /// DDNet's data indices of tele, speedup, front, switch and tune tiles;
    /// old maps have only a prefix (missing ones read as -1).
    pub ddnet: Vec<i32>,
    /// Ints past the known fields, kept.
    pub extra: Vec<i32>,
}

/// The DDNet tail entries, in order.
pub const DDNET_TAIL: [(i32, &str); 5] = [
    (tile_flags::TELE, "tele"),
    (tile_flags::SPEEDUP, "speedup"),
    (tile_flags::FRONT, "front"),
    (tile_flags::SWITCH, "switch"),
    (tile_flags::TUNE, "tune"),
];

impl TileLayer {
    /// Reads a tile layer item's ints after its `header` (at least 15; 18 from version 3).
    pub fn parse(header: LayerHeader, ints: &[i32]) -> Result<TileLayer, String> {
        need(ints, 15, "a tile layer")?;
        let version = ints[3];
        let (name, tail_at) = if version >= 3 {
            need(ints, 18, &format!("a version {version} tile layer"))?;
            (Some(arr(ints, 15)), 18)
        } else {
            (None, 15)
        };
        let tail_end = ints.len().min(tail_at + 5);
        Ok(TileLayer {
            header,
            version,
            width: ints[4],
            height: ints[5],
            flags: ints[6],
            color: arr(ints, 7),
            color_env: ints[11],
            color_env_offset: ints[12],
            image: ints[13],
            data: ints[14],
            name,
            ddnet: ints[tail_at..tail_end].to_vec(),
            extra: ints[tail_end..].to_vec(),
        })
    }
    /// The item's ints, header and `extra` included.
    pub fn to_ints(&self) -> Vec<i32> {
        let h = self.header;
        let mut v = vec![h.version, h.kind, h.flags, self.version, self.width, self.height, self.flags];
        v.extend(self.color);
        v.extend([self.color_env, self.color_env_offset, self.image, self.data]);
        if let Some(n) = self.name {
            v.extend(n);
        }
        v.extend(&self.ddnet);
        v.extend(&self.extra);
        v
    }
    /// The physics flag, if any (only the lowest is meaningful; DDNet
    /// refuses two).
    pub fn physics(&self) -> i32 {
        self.flags & tile_flags::PHYSICS
    }
    /// The DDNet tail entry for `flag` (-1 when the item does not have it,
    /// or `flag` is not one of the tail's).
    pub fn ddnet_index(&self, flag: i32) -> i32 {
        let Some(pos) = DDNET_TAIL.iter().position(|(f, _)| *f == flag) else { return -1 };
        self.ddnet.get(pos).copied().unwrap_or(-1)
    }
    /// Set the DDNet tail entry for `flag` (a flag not of the tail's is
    /// ignored: callers name the tail's flags).
    pub fn set_ddnet_index(&mut self, flag: i32, index: i32) {
        let Some(pos) = DDNET_TAIL.iter().position(|(f, _)| *f == flag) else { return };
        while self.ddnet.len() <= pos {
            self.ddnet.push(-1);
        }
        self.ddnet[pos] = index;
    }
    /// The layer's name (empty before version 3).
    pub fn name(&self) -> Vec<u8> {
        self.name.map(|n| ints_to_name(&n)).unwrap_or_default()
    }
}

/// Quads layer (layer kind 3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuadsLayer {
    /// The layer item's header.
    pub header: LayerHeader,
    /// The layer's version: 1, or 2 (named).
    pub version: i32,
    /// How many quads (of a sounds layer: sound sources) its data holds.
    pub num_quads: i32,
    /// Data index of its quads (or sound sources).
    pub data: i32,
    /// Index of the image it draws with (of a sounds layer: the sound); -1: none.
    pub image: i32,
    /// Version 2.
    pub name: Option<[i32; 3]>,
    /// Ints past the known fields, kept.
    pub extra: Vec<i32>,
}

/// Sounds layer (layer kinds 10, and 9 deprecated): same layout as quads.
pub type SoundsLayer = QuadsLayer;

impl QuadsLayer {
    /// Reads a quads or sounds layer item's ints after its `header` (at least 7;
    /// 10 from version 2).
    pub fn parse(header: LayerHeader, ints: &[i32]) -> Result<QuadsLayer, String> {
        need(ints, 7, "a quads or sounds layer")?;
        if ints[3] >= 2 {
            need(ints, 10, "a version 2 quads or sounds layer")?;
        }
        Ok(QuadsLayer {
            header,
            version: ints[3],
            num_quads: ints[4],
            data: ints[5],
            image: ints[6],
            name: (ints.len() >= 10).then(|| arr(ints, 7)),
            extra: ints[known_end(ints.len(), &[7, 10])..].to_vec(),
        })
    }
    /// The item's ints, header and `extra` included.
    pub fn to_ints(&self) -> Vec<i32> {
        let h = self.header;
        let mut v = vec![h.version, h.kind, h.flags, self.version, self.num_quads, self.data, self.image];
        if let Some(n) = self.name {
            v.extend(n);
        }
        v.extend(&self.extra);
        v
    }
    /// The layer's name (empty before version 2).
    pub fn name(&self) -> Vec<u8> {
        match self.name {
            Some(n) if self.version >= 2 => ints_to_name(&n),
            _ => Vec::new(),
        }
    }
}

/// A layer item (type 5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Layer {
    /// Kind 2: tiles.
    Tiles(TileLayer),
    /// Kind 3: quads.
    Quads(QuadsLayer),
    /// Kind 10, or 9 (deprecated, 36-byte sources).
    Sounds(SoundsLayer),
    /// Any other kind: kept as it is.
    Other(LayerHeader, Vec<i32>),
}

impl Layer {
    /// Reads a layer item's ints by its kind.
    pub fn parse(ints: &[i32]) -> Result<Layer, String> {
        need(ints, 3, "a layer")?;
        let header = LayerHeader { version: ints[0], kind: ints[1], flags: ints[2] };
        Ok(match header.kind {
            layer_types::TILES => Layer::Tiles(TileLayer::parse(header, ints)?),
            layer_types::QUADS => Layer::Quads(QuadsLayer::parse(header, ints)?),
            layer_types::SOUNDS | layer_types::SOUNDS_DEPRECATED => Layer::Sounds(QuadsLayer::parse(header, ints)?),
            _ => Layer::Other(header, ints[3..].to_vec()),
        })
    }
    /// The item's ints.
    pub fn to_ints(&self) -> Vec<i32> {
        match self {
            Layer::Tiles(t) => t.to_ints(),
            Layer::Quads(q) | Layer::Sounds(q) => q.to_ints(),
            Layer::Other(h, rest) => [&[h.version, h.kind, h.flags][..], rest].concat(),
        }
    }
    /// The header every layer item starts with.
    pub fn header(&self) -> LayerHeader {
        match self {
            Layer::Tiles(t) => t.header,
            Layer::Quads(q) | Layer::Sounds(q) => q.header,
            Layer::Other(h, _) => *h,
        }
    }
}

/// Sound (type 7, DDNet): opus data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sound {
    /// The item version (DDNet writes 1).
    pub version: i32,
    /// Non-zero: loaded by name from the client's `mapres/<name>.opus`.
    pub external: i32,
    /// Data index of the sound's name (NUL-terminated).
    pub name: i32,
    /// Data index of the opus data (embedded sounds).
    pub data: i32,
    /// Deprecated copy of the data's size (DDNet still writes it).
    pub data_size: i32,
    /// Ints past the known fields, kept.
    pub extra: Vec<i32>,
}

impl Sound {
    /// Reads a sound item's ints (at least 5).
    pub fn parse(ints: &[i32]) -> Result<Sound, String> {
        need(ints, 5, "a sound")?;
        Ok(Sound {
            version: ints[0],
            external: ints[1],
            name: ints[2],
            data: ints[3],
            data_size: ints[4],
            extra: ints[5..].to_vec(),
        })
    }
    /// The item's ints, `extra` included.
    pub fn to_ints(&self) -> Vec<i32> {
        let mut v = vec![self.version, self.external, self.name, self.data, self.data_size];
        v.extend(&self.extra);
        v
    }
}

/// Auto-mapper configuration of a tile layer (UUID type
/// `AUTOMAPPER_CONFIG`, DDNet editor).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoMapper {
    /// The item version (DDNet writes 1).
    pub version: i32,
    /// Index of the group of the layer it configures.
    pub group: i32,
    /// Index of that layer within its group.
    pub layer: i32,
    /// Index of the rule set in the image's auto-mapper file (-1 none).
    pub config: i32,
    /// The random seed the rules run with.
    pub seed: i32,
    /// 1 = run automatically.
    pub flags: i32,
    /// Ints past the known fields, kept.
    pub extra: Vec<i32>,
}

impl AutoMapper {
    /// Reads an auto-mapper item's ints (at least 6).
    pub fn parse(ints: &[i32]) -> Result<AutoMapper, String> {
        need(ints, 6, "an auto-mapper")?;
        Ok(AutoMapper {
            version: ints[0],
            group: ints[1],
            layer: ints[2],
            config: ints[3],
            seed: ints[4],
            flags: ints[5],
            extra: ints[6..].to_vec(),
        })
    }
    /// The item's ints, `extra` included.
    pub fn to_ints(&self) -> Vec<i32> {
        let mut v = vec![self.version, self.group, self.layer, self.config, self.seed, self.flags];
        v.extend(&self.extra);
        v
    }
}

/// A quad: 38 ints (152 bytes) in the quads layer's data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quad {
    /// 4 corners and the pivot, 22.10 fixed point.
    pub points: [[i32; 2]; 5],
    /// RGBA per corner, 0..=255.
    pub colors: [[i32; 4]; 4],
    /// Texture coordinates per corner, 22.10 fixed point.
    pub texcoords: [[i32; 2]; 4],
    /// Index of the envelope that moves and rotates the quad (-1: none).
    pub pos_env: i32,
    /// Time offset into that envelope, in milliseconds.
    pub pos_env_offset: i32,
    /// Index of the envelope that animates its colours (-1: none).
    pub color_env: i32,
    /// Time offset into that envelope, in milliseconds.
    pub color_env_offset: i32,
}

/// Bytes per quad in a quads layer's data.
pub const QUAD_SIZE: usize = 152;

impl Quad {
    /// Reads a quad from the first [`QUAD_SIZE`] bytes of `b` (which must hold them).
    pub fn from_bytes(b: &[u8]) -> Quad {
        let ints: Vec<i32> = b[..QUAD_SIZE].chunks(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        Quad {
            points: std::array::from_fn(|i| arr(&ints, i * 2)),
            colors: std::array::from_fn(|i| arr(&ints, 10 + i * 4)),
            texcoords: std::array::from_fn(|i| arr(&ints, 26 + i * 2)),
            pos_env: ints[34],
            pos_env_offset: ints[35],
            color_env: ints[36],
            color_env_offset: ints[37],
        }
    }
    /// The quad's [`QUAD_SIZE`] bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut ints: Vec<i32> = Vec::with_capacity(38);
        self.points.iter().for_each(|p| ints.extend(p));
        self.colors.iter().for_each(|c| ints.extend(c));
        self.texcoords.iter().for_each(|t| ints.extend(t));
        ints.extend([self.pos_env, self.pos_env_offset, self.color_env, self.color_env_offset]);
        ints.iter().flat_map(|v| v.to_le_bytes()).collect()
    }
}

/// A sound source: 52 bytes (13 ints) in a sounds layer's data; 36 bytes
/// (9 ints) in the deprecated kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SoundSource {
    /// The source's ints, in stored order (named by [`SOURCE_FIELDS`] or
    /// [`SOURCE_FIELDS_DEPRECATED`]).
    pub ints: Vec<i32>,
}

/// Bytes per sound source in a sounds layer's data.
pub const SOURCE_SIZE: usize = 52;
/// Bytes per sound source in a deprecated sounds layer's data.
pub const SOURCE_SIZE_DEPRECATED: usize = 36;
/// The names of a sound source's 13 ints, in stored order.
pub const SOURCE_FIELDS: [&str; 13] = [
    "x",
    "y",
    "loop",
    "pan",
    "time_delay",
    "falloff",
    "pos_env",
    "pos_env_offset",
    "sound_env",
    "sound_env_offset",
    "shape",
    "width_or_radius",
    "height",
];
/// The names of a deprecated sound source's 9 ints, in stored order.
pub const SOURCE_FIELDS_DEPRECATED: [&str; 9] =
    ["x", "y", "loop", "time_delay", "falloff_distance", "pos_env", "pos_env_offset", "sound_env", "sound_env_offset"];

/// Read little-endian i32s.
pub fn ints_of(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_and_write_like_ddnet() {
        // "Game" as DDNet writes it (seen in every sample's game group).
        let game = [-941494811, -2139062144, -2139062272];
        assert_eq!(ints_to_name(&game), b"Game");
        assert_eq!(name_to_ints(b"Game", 3).unwrap(), game);
        assert_eq!(name_to_ints(b"", 3).unwrap(), [-2139062144, -2139062144, -2139062272]);
        assert_eq!(ints_to_name(&name_to_ints(b"12345678901", 3).unwrap()), b"12345678901");
        assert_eq!(name_to_ints(b"123456789012", 3).unwrap_err(), "the name has 12 bytes, at most 11 fit");
        assert_eq!(name_to_ints(b"a\0b", 3).unwrap_err(), "a name cannot contain a NUL byte");
        // The last byte is forced to NUL whatever the ints say.
        assert_eq!(ints_to_name(&[0x7f7f7f7f]), [0xff, 0xff, 0xff]);
    }

    #[test]
    fn uuids_read_as_stored() {
        // The index item of ddnet_coverage.map / ddnet_Tsunami.map.
        let ints = [1041966870, 395065720, -1680232166, -532607528];
        let u = uuid_of_index_item(&ints).unwrap();
        assert_eq!(u, uuids::AUTOMAPPER_CONFIG);
        assert_eq!(format_uuid(&u), "3e1b2716-178c-3978-9bd9-b11ae0410dd8");
        assert_eq!(uuid_to_ints(&u), ints);
    }

    #[test]
    fn layouts_by_version() {
        let v2 = [0, 2, 0, 2, 60, 50, 0, 255, 255, 255, 255, -1, 0, 4, 14, 7, 8];
        let Layer::Tiles(t) = Layer::parse(&v2).unwrap() else { panic!() };
        assert_eq!((t.name, t.ddnet.clone(), t.ddnet_index(tile_flags::SPEEDUP)), (None, vec![7, 8], 8));
        assert_eq!(t.ddnet_index(tile_flags::TUNE), -1);
        assert_eq!(t.to_ints(), v2);
        let short = [0, 2, 0, 3, 60, 50, 0, 255, 255, 255, 255, -1, 0, 4, 14, 1];
        assert_eq!(
            Layer::parse(&short).unwrap_err(),
            "a version 3 tile layer item has 16 ints, at least 18 are needed"
        );
        assert_eq!(
            Group::parse(&[2, 0, 0, 100, 100, 0, 1]).unwrap_err(),
            "a version 2 group item has 7 ints, at least 12 are needed"
        );
        assert_eq!(
            Image::parse(&[2, 1, 1, 0, 0, 1]).unwrap_err(),
            "a version 2 image item has 6 ints, at least 7 are needed"
        );
    }

    /// Parse `ints` as every item kind; each parse that succeeds must write
    /// back the same ints. Counts the successes per kind in `parsed`.
    fn writes_back(ints: &[i32], parsed: &mut [usize; 7]) -> proptest::test_runner::TestCaseResult {
        let mut layer = ints.to_vec();
        if layer.len() > 1 {
            layer[1] = [2, 3, 9, 10, 7][ints[0].rem_euclid(5) as usize];
        }
        let back: [Option<Vec<i32>>; 7] = [
            Info::parse(ints).ok().map(|x| x.to_ints()),
            Image::parse(ints).ok().map(|x| x.to_ints()),
            Envelope::parse(ints).ok().map(|x| x.to_ints()),
            Group::parse(ints).ok().map(|x| x.to_ints()),
            Sound::parse(ints).ok().map(|x| x.to_ints()),
            AutoMapper::parse(ints).ok().map(|x| x.to_ints()),
            Layer::parse(&layer).ok().map(|x| x.to_ints()),
        ];
        for (kind, back) in back.into_iter().enumerate() {
            if let Some(back) = back {
                parsed[kind] += 1;
                let want: &[i32] = if kind == 6 { &layer } else { ints };
                proptest::prop_assert_eq!(back.as_slice(), want, "kind {}", kind);
            }
        }
        Ok(())
    }

    /// Random ints: every kind must parse some of them, or the property
    /// would hold of nothing.
    #[test]
    fn every_parsed_item_writes_back_its_ints() {
        let parsed = std::cell::RefCell::new([0usize; 7]);
        let mut runner = proptest::test_runner::TestRunner::default();
        runner
            .run(&proptest::collection::vec(-3i32..40, 0..40), |ints| writes_back(&ints, &mut parsed.borrow_mut()))
            .unwrap();
        let parsed = parsed.into_inner();
        assert!(
            parsed.iter().all(|&n| n > 0),
            "parsed per kind (info image envelope group sound automapper layer): {parsed:?}"
        );
    }

    proptest::proptest! {

        #[test]
        fn names_round_trip(name in proptest::collection::vec(1u8..=255, 0..=11)) {
            let ints = name_to_ints(&name, 3).unwrap();
            proptest::prop_assert_eq!(ints_to_name(&ints), name);
        }
    }
}
