//! One chunk column of a Bedrock world (every database key of it, and the
//! entities its actor digest names) as a [`Document`]:
//!
//! ```text
//! info                    position, dimension, chunk version, its keys by tag
//! keys                    every key and its size (read-only)
//! top.png                 the chunk from above (read-only)
//! heightmap               Data3D/Data2D heights, 16 rows of 16 (read-only)
//! sections/Y/             one per subchunk (Y its index, negative below y 0)
//!   palette               "layer index state version" per entry (read-only)
//!   blocks                the first storage layer drawn as text
//!   waterlog              the second layer (the water of waterlogged blocks), where stored
//!   biomes                1.18+: the subchunk's biomes (read-only)
//! block_entities/X,Y,Z/   each block entity, by world coordinates
//!   id, items, data, text, back_text
//! entities/N              each entity as SNBT (read-only)
//! ```
//!
//! The document's bytes are the chunk's records (key, value) framed one
//! after another ([`pack`]); the home writes the records an edit changed
//! as one batch. Subchunks of versions 1, 8 and 9 are written back with
//! their palettes re-encoded (`worldfs_codec::bedrock::subchunk`); older ones are
//! shown and refused on write.

use super::items::{self, Slots};
use super::states;
use super::tables;
use crate::documents::{Context, DocError, DocResult, Document, Entry};
use crate::view::layers::{self, Frame, LegendBuilder, Rows};
use crate::worlds::minecraft::chunk::{legend_tags, merge_kept, palette_legend, snbt_without};
use crate::worlds::minecraft::section::Container;
use std::collections::BTreeMap;
use worldfs_codec::bedrock::key::{ChunkPos, Key, tag};
use worldfs_codec::bedrock::subchunk::{self, Decoded, SubChunk};
use worldfs_codec::bedrock::{biomes, records};
use worldfs_codec::minecraft::nbt::{Compound, List, Tag};
use worldfs_codec::minecraft::snbt;

/// Records as one byte string: each key and value with a little-endian u32
/// length before it.
pub(crate) fn pack(records: &BTreeMap<Vec<u8>, Vec<u8>>) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in records {
        out.extend((k.len() as u32).to_le_bytes());
        out.extend(k);
        out.extend((v.len() as u32).to_le_bytes());
        out.extend(v);
    }
    out
}

/// The records of [`pack`].
pub(crate) fn unpack(mut b: &[u8]) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, String> {
    let mut out = BTreeMap::new();
    let take = |b: &mut &[u8]| -> Result<Vec<u8>, String> {
        let n = b.get(..4).ok_or("a record cut short")?;
        let n = u32::from_le_bytes([n[0], n[1], n[2], n[3]]) as usize;
        let v = b.get(4..4 + n).ok_or("a record cut short")?.to_vec();
        *b = &b[4 + n..];
        Ok(v)
    };
    while !b.is_empty() {
        let k = take(&mut b)?;
        let v = take(&mut b)?;
        out.insert(k, v);
    }
    Ok(out)
}

pub struct ChunkDoc {
    pub(crate) pos: ChunkPos,
    pub records: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Each subchunk by index, decoded (or why it is not).
    subchunks: BTreeMap<i8, Result<Decoded, String>>,
}

/// The lowest subchunk of a dimension (where Data3D's first storage is).
pub(crate) fn lowest_subchunk(dim: i32) -> i64 {
    if dim == 0 { -4 } else { 0 }
}

fn is_air(c: &Compound) -> bool {
    matches!(states::name(c), "minecraft:air")
}

impl ChunkDoc {
    pub fn new(pos: ChunkPos, records: BTreeMap<Vec<u8>, Vec<u8>>) -> ChunkDoc {
        let mut subchunks = BTreeMap::new();
        for (k, v) in &records {
            match Key::parse(k) {
                Key::Chunk { tag: tag::SUBCHUNK, sub: Some(y), .. } => {
                    subchunks.insert(y, subchunk::decode(v));
                }
                // Before 1.0: all blocks in one value, shown as subchunks
                // 0 to 7 (read-only).
                Key::Chunk { tag: tag::LEGACY_TERRAIN, .. } => match subchunk::legacy_terrain(v) {
                    Ok(subs) => subchunks.extend((0..).zip(subs).map(|(y, n)| (y, Ok(Decoded::Numeric(n))))),
                    Err(e) => {
                        subchunks.insert(0, Err(format!("legacy terrain: {e}")));
                    }
                },
                _ => {}
            }
        }
        ChunkDoc { pos, records, subchunks }
    }

    fn key(&self, t: u8, sub: Option<i8>) -> Vec<u8> {
        Key::Chunk { pos: self.pos, tag: t, sub }.bytes()
    }

    fn value(&self, t: u8) -> Option<&Vec<u8>> {
        self.records.get(&self.key(t, None))
    }

    /// The chunk's version byte (tag 44, or 118 before 1.16.100).
    pub(crate) fn version(&self) -> Option<u8> {
        self.value(tag::VERSION).or_else(|| self.value(tag::LEGACY_VERSION)).and_then(|v| v.first().copied())
    }

    /// The subchunks that decoded, by index.
    pub(crate) fn sections(&self) -> impl Iterator<Item = (i8, &Decoded)> {
        self.subchunks.iter().filter_map(|(y, d)| d.as_ref().ok().map(|d| (*y, d)))
    }

    fn paletted(&self, y: i8) -> DocResult<&SubChunk> {
        match self.subchunks.get(&y) {
            Some(Ok(Decoded::Paletted(s))) => Ok(s),
            Some(Ok(Decoded::Numeric(_))) => Err(DocError::new(format!(
                "subchunk {y} holds numeric block ids (a subchunk of version 0 or 2 to 7, or legacy terrain: \
                 before 1.2.13), which are shown but not written here; open the world in the game once to upgrade it"
            ))),
            Some(Err(e)) => Err(DocError::new(format!("subchunk {y}: {e}"))),
            None => Err(DocError::new(format!("subchunk {y} is not stored in this chunk"))),
        }
    }

    /// The block entities (tag 49), or why they cannot be read.
    pub(crate) fn block_entities(&self) -> Result<Vec<Compound>, String> {
        self.value(tag::BLOCK_ENTITY).map_or(Ok(Vec::new()), |v| records::decode(v))
    }

    fn be_name(c: &Compound) -> String {
        format!("{},{},{}", c.int("x").unwrap_or(0), c.int("y").unwrap_or(0), c.int("z").unwrap_or(0))
    }

    /// The entities: those of tag 50 (before 1.18.30), then those the
    /// actor digest names, in its order.
    pub(crate) fn entities(&self) -> Result<Vec<Compound>, String> {
        let mut out = match self.value(tag::ENTITY) {
            Some(v) => records::decode(v).map_err(|e| format!("entities (tag 50): {e}"))?,
            None => Vec::new(),
        };
        if let Some(d) = self.records.get(&Key::Digest(self.pos).bytes()) {
            for id in records::digest(d)? {
                let k = Key::Actor(id).bytes();
                let v = self.records.get(&k).ok_or_else(|| {
                    format!("the actor digest names {}, which is not stored", worldfs_codec::bedrock::key::show(&k))
                })?;
                out.extend(
                    records::decode(v).map_err(|e| format!("entity {}: {e}", worldfs_codec::bedrock::key::show(&k)))?,
                );
            }
        }
        Ok(out)
    }

    fn frame(&self, y: i8) -> Frame {
        let o = [16 * self.pos.x as i64, 16 * y as i64, 16 * self.pos.z as i64];
        Frame { size: [16, 16, 16], origin: o, rows: Rows::ZAscending }
    }

    /// A layer's palette entries and each block's entry (x*256 + z*16 + y).
    fn layer(&self, y: i8, l: usize) -> DocResult<(Vec<Compound>, Vec<u16>)> {
        match self.subchunks.get(&y) {
            Some(Ok(Decoded::Paletted(s))) => {
                let st = s.layers.get(l).ok_or_else(|| DocError::new(format!("subchunk {y} has no layer {l}")))?;
                Ok((st.palette.iter().map(|e| e.state.clone()).collect(), st.indices.clone()))
            }
            Some(Ok(Decoded::Numeric(n))) if l == 0 => Ok(numeric_layer(&n.ids, &n.data)),
            _ => Err(DocError::new(format!("subchunk {y} has no layer {l} to show"))),
        }
    }

    fn render_layer(&self, y: i8, l: usize) -> DocResult<String> {
        let (palette, indices) = self.layer(y, l)?;
        let tags: Vec<Tag> = palette.into_iter().map(Tag::Compound).collect();
        let mut b = LegendBuilder::new();
        let lbl = |t: &Tag| if let Tag::Compound(c) = t { states::label(c) } else { "?".into() };
        let same = |a: &Tag, b: &Tag| matches!((a, b), (Tag::Compound(a), Tag::Compound(b)) if states::same(a, b));
        let air =
            |t: &Tag| -> &'static [char] { if matches!(t, Tag::Compound(c) if is_air(c)) { &['.'] } else { &[] } };
        let labels =
            palette_legend(&mut b, &tags, lbl, air, same).map_err(|m| DocError::new(format!("subchunk {y}: {m}")))?;
        Ok(layers::render(&self.frame(y), b.entries(), |x, yy, z| labels[indices[subchunk::index(x, yy, z)] as usize]))
    }

    fn render_palette(&self, y: i8) -> DocResult<String> {
        let mut s = String::from("# layer index state [version]\n");
        match self.subchunks.get(&y) {
            Some(Ok(Decoded::Paletted(sc))) => {
                for (l, st) in sc.layers.iter().enumerate() {
                    for (i, e) in st.palette.iter().enumerate() {
                        let v = e.state.int("version").map_or(String::new(), |v| format!(" {v}"));
                        s.push_str(&format!("{l} {i} {}{v}\n", states::label(&e.state)));
                    }
                }
            }
            _ => {
                let (palette, _) = self.layer(y, 0)?;
                for (i, c) in palette.iter().enumerate() {
                    s.push_str(&format!("0 {i} {}\n", states::label(c)));
                }
            }
        }
        Ok(s)
    }

    /// Data3D's biome storage of subchunk `y`, if stored.
    fn biome_storage(&self, y: i8) -> Option<biomes::BiomeStorage> {
        let d = biomes::decode_3d(self.value(tag::DATA_3D)?).ok()?;
        let i = usize::try_from(y as i64 - lowest_subchunk(self.pos.dim)).ok()?;
        d.storages.get(i).cloned()
    }

    fn render_biomes(&self, y: i8) -> DocResult<String> {
        let b = self.biome_storage(y).ok_or_else(|| DocError::new("no biomes stored for this subchunk"))?;
        let tags: Vec<Tag> = b.palette.iter().map(|id| Tag::String(tables::biome_name(*id))).collect();
        let mut lb = LegendBuilder::new();
        let lbl = |t: &Tag| if let Tag::String(s) = t { s.clone() } else { "?".into() };
        let labels = palette_legend(&mut lb, &tags, lbl, |_| &[], |a, b| a == b).map_err(DocError::new)?;
        Ok(layers::render(&self.frame(y), lb.entries(), |x, yy, z| {
            labels[b.indices[subchunk::index(x, yy, z)] as usize]
        }))
    }

    fn heights(&self) -> Option<Vec<i16>> {
        if let Some(v) = self.value(tag::DATA_3D) {
            return biomes::decode_3d(v).ok().map(|d| d.heights);
        }
        self.value(tag::DATA_2D).and_then(|v| biomes::decode_2d(v).ok()).map(|d| d.heights)
    }

    fn render_heights(&self) -> DocResult<String> {
        let h = self.heights().ok_or_else(|| DocError::new("no heights stored"))?;
        let mut s = String::from(
            "# the stored heights (1.18+: counted up from the world's bottom, y -64 in the overworld): rows z = 0 (north) to 15, each x = 0 (west) to 15\n",
        );
        for z in 0..16 {
            let row: Vec<String> = (0..16).map(|x| h[biomes::column(x, z)].to_string()).collect();
            s.push_str(&row.join(" "));
            s.push('\n');
        }
        Ok(s)
    }

    fn info(&self) -> String {
        let mut by_tag: BTreeMap<String, usize> = BTreeMap::new();
        for k in self.records.keys() {
            let what = match Key::parse(k) {
                Key::Chunk { tag: t, .. } => tag::name(t).map_or_else(|| format!("tag {t}"), String::from),
                Key::Digest(_) => "actor digest".into(),
                Key::Actor(_) => "actor".into(),
                _ => "other".into(),
            };
            *by_tag.entry(what).or_default() += 1;
        }
        let ys: Vec<String> = self.subchunks.keys().map(|y| y.to_string()).collect();
        let keys: Vec<String> = by_tag.iter().map(|(k, n)| format!("{k} {n}")).collect();
        format!(
            "x = {}\nz = {}\ndimension = {}\nchunk_version = {}\nsubchunks = {}\nblock_entities = {}\nkeys = {}\n",
            self.pos.x,
            self.pos.z,
            self.pos.dim,
            self.version().map_or("?".into(), |v| v.to_string()),
            ys.join(" "),
            self.block_entities().map_or(0, |b| b.len()),
            keys.join(", "),
        )
    }

    fn render_keys(&self) -> String {
        let mut s = String::from("# key (\\xNN: a byte), bytes\n");
        for (k, v) in &self.records {
            s.push_str(&format!("{} {}\n", worldfs_codec::bedrock::key::show(k), v.len()));
        }
        s
    }

    /// Layer `l` of subchunk `y` becomes `states` (x*256 + z*16 + y), the
    /// palette re-encoded with the fewest bits the game reads.
    fn store_layer(&mut self, y: i8, l: usize, states: &[Compound]) -> DocResult<()> {
        let mut s = self.paletted(y)?.clone();
        let st = s.layers.get_mut(l).ok_or_else(|| DocError::new(format!("subchunk {y} has no layer {l}")))?;
        st.set_all(states);
        s.repack();
        let bytes = subchunk::encode(&s).map_err(DocError::new)?;
        self.records.insert(self.key(tag::SUBCHUNK, Some(y)), bytes);
        self.subchunks.insert(y, Ok(Decoded::Paletted(s)));
        Ok(())
    }

    /// The block state at world (x, y, z) (layer 0), if its subchunk is
    /// stored.
    pub(crate) fn block_at(&self, x: i64, y: i64, z: i64) -> DocResult<Option<Compound>> {
        let Ok(sy) = i8::try_from(y.div_euclid(16)) else { return Ok(None) };
        if !self.subchunks.contains_key(&sy) {
            return Ok(None);
        }
        let (palette, indices) = self.layer(sy, 0)?;
        let i = subchunk::index(x.rem_euclid(16) as usize, y.rem_euclid(16) as usize, z.rem_euclid(16) as usize);
        Ok(Some(palette[indices[i] as usize].clone()))
    }

    /// Set one block (layer 0) from its label; a block entity at that place
    /// goes when the block's name changes (as `/setblock` does).
    pub(crate) fn set_block(&mut self, x: i64, y: i64, z: i64, text: &str) -> DocResult<()> {
        let sy = i8::try_from(y.div_euclid(16)).map_err(|_| DocError::new("no subchunk there"))?;
        let s = self.paletted(sy)?;
        let (palette, indices) = (s.layers[0].palette.clone(), s.layers[0].indices.clone());
        let now: Vec<Compound> = palette.iter().map(|e| e.state.clone()).collect();
        let new = new_state(text, &now)?;
        let i = subchunk::index(x.rem_euclid(16) as usize, y.rem_euclid(16) as usize, z.rem_euclid(16) as usize);
        let old = &now[indices[i] as usize];
        if states::same(old, &new) {
            return Ok(());
        }
        if states::name(old) != states::name(&new) {
            let here = format!("{x},{y},{z}");
            let bes = self.block_entities().map_err(DocError::new)?;
            if bes.iter().any(|b| Self::be_name(b) == here) {
                let kept: Vec<Compound> = bes.into_iter().filter(|b| Self::be_name(b) != here).collect();
                self.put_block_entities(&kept)?;
            }
        }
        let mut all: Vec<Compound> = indices.iter().map(|&k| now[k as usize].clone()).collect();
        all[i] = new;
        self.store_layer(sy, 0, &all)
    }

    fn put_block_entities(&mut self, list: &[Compound]) -> DocResult<()> {
        let k = self.key(tag::BLOCK_ENTITY, None);
        if list.is_empty() {
            self.records.remove(&k);
        } else {
            self.records.insert(k, records::encode(list).map_err(DocError::new)?);
        }
        Ok(())
    }

    fn apply_layer(&mut self, y: i8, l: usize, text: &str) -> DocResult<()> {
        let (palette, indices) = self.layer(y, l)?;
        let frame = self.frame(y);
        let d = layers::parse(&frame, text)?;
        let tags: Vec<Tag> = palette.iter().cloned().map(Tag::Compound).collect();
        let lbl = |t: &Tag| if let Tag::Compound(c) = t { states::label(c) } else { "?".into() };
        let legend = legend_tags(&d.legend, &tags, lbl, parse_new_label)?;
        // A new state gets the palette's form and version.
        let (version, old_form) = (max_version(&palette), palette.iter().any(|c| c.get("val").is_some()));
        let legend: Vec<Compound> = legend
            .into_iter()
            .map(|t| match t {
                Tag::Compound(c) if palette.contains(&c) => c,
                Tag::Compound(c) => {
                    let st = c.compound("states").map(|s| s.0.clone()).unwrap_or_default();
                    states::entry(states::name(&c).to_string(), st, version, old_form)
                }
                _ => Compound::default(),
            })
            .collect();
        let values: Vec<Compound> = (0..4096)
            .map(|i| {
                let (x, yy, z) = subchunk::xyz(i);
                legend[d.at(x, yy, z)].clone()
            })
            .collect();
        if (0..4096).all(|i| states::same(&palette[indices[i] as usize], &values[i])) {
            return Ok(());
        }
        self.paletted(y)?;
        self.store_layer(y, l, &values)
    }

    fn apply_block_entity(&mut self, name: &str, file: &str, text: &str) -> DocResult<()> {
        let mut list = self.block_entities().map_err(DocError::new)?;
        let be =
            list.iter_mut().find(|b| Self::be_name(b) == name).ok_or_else(|| DocError::new("no such block entity"))?;
        match file {
            "items" if be.list("Items").is_some() => {
                let old = be.list("Items").cloned().unwrap_or(List { elem: 10, items: Vec::new() });
                let slots = Slots::of_block_entity(be.string("id").unwrap_or_default());
                let new = items::parse(text, &old, slots)?;
                be.insert("Items", Tag::List(new));
            }
            "text" | "back_text" => {
                super::sign::apply(be, file, text).map_err(|(line, m)| DocError::at_line(line, m))?
            }
            "data" => {
                let mut new = snbt::parse(text).map_err(DocError::new)?;
                if let Some(k) = KEPT.iter().find(|k| new.get(k).is_some()) {
                    return Err(DocError::new(format!(
                        "'{k}' is not edited here (id and position are fixed; Items are in items)"
                    )));
                }
                snbt::keep_compound_list_types(&mut new, be);
                *be = merge_kept(be, new, KEPT);
            }
            _ => return Err(DocError::new("this file cannot be written")),
        }
        self.put_block_entities(&list)
    }

    /// Every block's layer-0 state name and count (for `names` and `find/`).
    pub(crate) fn block_counts(&self) -> Vec<(String, u64)> {
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for (y, _) in self.sections() {
            let Ok((palette, indices)) = self.layer(y, 0) else { continue };
            let mut per = vec![0u64; palette.len()];
            for &i in &indices {
                per[i as usize] += 1;
            }
            for (c, n) in palette.iter().zip(per).filter(|(_, n)| *n > 0) {
                *counts.entry(states::name(c).to_string()).or_default() += n;
            }
        }
        counts.into_iter().collect()
    }

    /// The first layer of each subchunk as a Java container of the Java
    /// blocks whose colours they take (x, z, y order turned to y, z, x), for
    /// `top.png` and `map/`.
    pub(crate) fn java_sections(&self) -> Vec<(i64, Container)> {
        let mut out = Vec::new();
        for (y, _) in self.sections() {
            let Ok((palette, indices)) = self.layer(y, 0) else { continue };
            let palette = palette
                .iter()
                .map(|c| {
                    Tag::Compound(Compound(vec![("Name".into(), Tag::String(tables::colour_name(states::name(c))))]))
                })
                .collect();
            let indices = (0..4096).map(|j| indices[subchunk::index(j % 16, j / 256, j / 16 % 16)] as u32).collect();
            out.push((y as i64, Container { palette, indices }));
        }
        out
    }

    /// What `worldfs check` finds wrong: each subchunk, the block entities,
    /// entities and biomes that do not decode.
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut found = Vec::new();
        for (y, d) in &self.subchunks {
            match d {
                Err(e) => found.push(format!("subchunk {y}: {e}")),
                Ok(Decoded::Paletted(s)) if s.index.is_some_and(|i| i != *y) => {
                    found.push(format!("subchunk {y}: it says it is subchunk {}", s.index.unwrap_or(0)))
                }
                Ok(_) => {}
            }
        }
        if let Err(e) = self.block_entities() {
            found.push(format!("block entities: {e}"));
        }
        if let Err(e) = self.entities() {
            found.push(format!("entities: {e}"));
        }
        if let Some(v) = self.value(tag::DATA_3D)
            && let Err(e) = biomes::decode_3d(v)
        {
            found.push(format!("Data3D: {e}"));
        }
        if let Some(v) = self.value(tag::DATA_2D)
            && let Err(e) = biomes::decode_2d(v)
        {
            found.push(format!("Data2D: {e}"));
        }
        found
    }
}

/// Keys of a block entity that `data` does not show.
const KEPT: &[&str] = &["id", "x", "y", "z", "Items"];

/// A legend label new to the palette: its name (checked against the
/// game's) and states; the form and version are the palette's.
fn parse_new_label(label: &str) -> Result<Tag, String> {
    let (name, st) = states::parse(label)?;
    tables::check_block_name(&name)?;
    Ok(Tag::Compound(states::entry(name, st, None, false)))
}

/// The newest `version` of a palette's entries.
fn max_version(palette: &[Compound]) -> Option<i32> {
    palette.iter().filter_map(|c| c.int("version")).max().map(|v| v as i32)
}

/// The state a label names, for a layer whose palette is `palette`: an
/// entry of the palette when its label reads the same, else a new entry
/// (its name checked against the game's, its version the palette's).
fn new_state(text: &str, palette: &[Compound]) -> DocResult<Compound> {
    let (name, st) = states::parse(text).map_err(DocError::new)?;
    let old_form = palette.iter().any(|c| c.get("val").is_some());
    let new = states::entry(name.clone(), st, max_version(palette), old_form);
    if let Some(known) = palette.iter().find(|c| states::same(c, &new)) {
        return Ok(known.clone());
    }
    tables::check_block_name(&name).map_err(DocError::new)?;
    Ok(new)
}

/// Numeric ids and data as a palette of old-form entries (`name`, `val`)
/// and each block's entry.
pub(crate) fn numeric_layer(ids: &[u8], data: &[u8]) -> (Vec<Compound>, Vec<u16>) {
    let mut palette: Vec<(u8, u8)> = Vec::new();
    let indices = ids
        .iter()
        .zip(data)
        .map(|(&id, &d)| match palette.iter().position(|p| *p == (id, d)) {
            Some(k) => k as u16,
            None => {
                palette.push((id, d));
                (palette.len() - 1) as u16
            }
        })
        .collect();
    let entries = palette
        .into_iter()
        .map(|(id, d)| {
            Compound(vec![("name".into(), Tag::String(tables::legacy_name(id))), ("val".into(), Tag::Short(d as i16))])
        })
        .collect();
    (entries, indices)
}

fn split_section(path: &str) -> Option<(i8, &str)> {
    let (y, file) = path.strip_prefix("sections/")?.split_once('/')?;
    Some((y.parse().ok()?, file))
}

fn split_be(path: &str) -> Option<(&str, &str)> {
    path.strip_prefix("block_entities/")?.split_once('/')
}

impl Document for ChunkDoc {
    const NAME: &'static str = "bedrock chunk";

    /// Decoded by the home, which knows the chunk's position
    /// ([`ChunkDoc::new`]); bytes alone are read as the records of the
    /// chunk at 0,0 of the overworld.
    fn decode(bytes: &[u8], _ctx: &Context) -> DocResult<Self> {
        let records = unpack(bytes).map_err(DocError::new)?;
        let pos = records.keys().find_map(|k| Key::parse(k).chunk()).unwrap_or(ChunkPos { dim: 0, x: 0, z: 0 });
        Ok(ChunkDoc::new(pos, records))
    }

    fn encode(&self) -> DocResult<Vec<u8>> {
        Ok(pack(&self.records))
    }

    fn entries(&self) -> Vec<Entry> {
        let mut v = vec![Entry::file("info", false), Entry::file("keys", false), Entry::file("top.png", false)];
        if self.heights().is_some() {
            v.push(Entry::file("heightmap", false));
        }
        v.push(Entry::dir("sections"));
        for (y, d) in self.sections() {
            let dir = format!("sections/{y}");
            let paletted = matches!(d, Decoded::Paletted(_));
            v.push(Entry::dir(dir.clone()));
            v.push(Entry::file(format!("{dir}/palette"), false));
            v.push(Entry::file(format!("{dir}/blocks"), paletted));
            if matches!(d, Decoded::Paletted(s) if s.layers.len() > 1) {
                v.push(Entry::file(format!("{dir}/waterlog"), true));
            }
            if self.biome_storage(y).is_some() {
                v.push(Entry::file(format!("{dir}/biomes"), false));
            }
        }
        v.push(Entry::dir("block_entities"));
        for be in self.block_entities().unwrap_or_default() {
            let d = format!("block_entities/{}", Self::be_name(&be));
            v.push(Entry::dir(d.clone()));
            v.push(Entry::file(format!("{d}/id"), false));
            if be.list("Items").is_some() {
                v.push(Entry::file(format!("{d}/items"), true));
            }
            v.push(Entry::file(format!("{d}/data"), true));
            v.extend(super::sign::files(&be).into_iter().map(|f| Entry::file(format!("{d}/{f}"), true)));
        }
        let entities = self.entities().unwrap_or_default();
        if !entities.is_empty() {
            v.push(Entry::dir("entities"));
            v.extend((0..entities.len()).map(|i| Entry::file(format!("entities/{i}"), false)));
        }
        v
    }

    fn render(&self, path: &str) -> DocResult<Vec<u8>> {
        if path == "top.png" {
            return Ok(crate::worlds::minecraft::top::top_png(self.java_sections()));
        }
        let text = match path {
            "info" => self.info(),
            "keys" => self.render_keys(),
            "heightmap" => self.render_heights()?,
            _ => {
                if let Some(n) = path.strip_prefix("entities/") {
                    let i: usize = n.parse().map_err(|_| DocError::new("no such entity"))?;
                    let all = self.entities().map_err(DocError::new)?;
                    snbt::to_snbt(all.get(i).ok_or_else(|| DocError::new("no such entity"))?)
                } else if let Some((y, file)) = split_section(path) {
                    match file {
                        "palette" => self.render_palette(y)?,
                        "blocks" => self.render_layer(y, 0)?,
                        "waterlog" => self.render_layer(y, 1)?,
                        "biomes" => self.render_biomes(y)?,
                        _ => return Err(DocError::new("no such file")),
                    }
                } else if let Some((name, file)) = split_be(path) {
                    let bes = self.block_entities().map_err(DocError::new)?;
                    let be = bes
                        .iter()
                        .find(|b| Self::be_name(b) == name)
                        .ok_or_else(|| DocError::new("no such block entity"))?;
                    match file {
                        "id" => format!("{}\n", be.string("id").unwrap_or("?")),
                        "items" => items::render(be.list("Items").ok_or_else(|| DocError::new("no items"))?),
                        "data" => snbt_without(be, KEPT),
                        "text" | "back_text" => {
                            super::sign::render(be, file).ok_or_else(|| DocError::new("no such file"))?
                        }
                        _ => return Err(DocError::new("no such file")),
                    }
                } else {
                    return Err(DocError::new("no such file"));
                }
            }
        };
        Ok(text.into_bytes())
    }

    fn apply(&mut self, path: &str, content: &[u8]) -> DocResult<()> {
        let text = std::str::from_utf8(content).map_err(|_| DocError::new("not UTF-8 text"))?;
        if let Some((y, file)) = split_section(path) {
            match file {
                "blocks" => self.apply_layer(y, 0, text),
                "waterlog" => self.apply_layer(y, 1, text),
                _ => Err(DocError::new("this file cannot be written")),
            }
        } else if let Some((name, file)) = split_be(path) {
            self.apply_block_entity(name, file, text)
        } else {
            Err(DocError::new("this file cannot be written"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_subchunks_show_their_ids_and_refuse_writes() {
        let pos = ChunkPos { dim: 0, x: 1, z: -1 };
        let mut v = vec![2u8];
        v.extend((0..4096).map(|i| if i % 16 == 0 { 1 } else { 0 })); // stone at y 0
        v.extend(std::iter::repeat_n(0x00, 2048));
        let key = Key::Chunk { pos, tag: tag::SUBCHUNK, sub: Some(0) }.bytes();
        let mut doc = ChunkDoc::new(pos, BTreeMap::from([(key, v)]));
        let blocks = String::from_utf8(doc.render("sections/0/blocks").unwrap()).unwrap();
        assert!(blocks.contains("minecraft:stone[val=0s]") && blocks.contains("minecraft:air[val=0s]"), "{blocks}");
        assert!(!doc.entries().iter().any(|e| e.path == "sections/0/blocks" && e.writable));
        // The same text back is no change (a no-op rewrite is accepted
        // everywhere); a changed block is refused.
        doc.apply("sections/0/blocks", blocks.as_bytes()).unwrap();
        let edited = blocks.replacen("minecraft:stone[val=0s]", "minecraft:dirt", 1);
        let e = doc.apply("sections/0/blocks", edited.as_bytes()).unwrap_err().to_string();
        let e2 = doc.set_block(16, 0, -16, "minecraft:dirt").unwrap_err().to_string();
        assert!(e.contains("numeric block ids") && e2.contains("numeric block ids"), "{e} / {e2}");
        assert_eq!(String::from_utf8(doc.render("sections/0/palette").unwrap()).unwrap().lines().count(), 3);
    }

    #[test]
    fn records_pack_and_unpack() {
        let mut r = BTreeMap::new();
        r.insert(b"k1".to_vec(), vec![1, 2, 3]);
        r.insert(vec![0; 10], Vec::new());
        let b = pack(&r);
        assert_eq!(unpack(&b).unwrap(), r);
        assert!(unpack(&b[..b.len() - 1]).is_err());
    }
}
