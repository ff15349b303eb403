//! One chunk of a Java world (its NBT, decompressed) as a [`Document`]:
//!
//! ```text
//! info                      position, DataVersion, format, status, last update
//! top.png                   the chunk seen from above (top.rs), read-only
//! sections/Y/               one per stored section (y 16Y to 16Y+15; Y < 0 in 1.18+)
//!   palette                 "index block_state" per entry (read-only)
//!   blocks                  the 16 levels drawn as text (view::layers)
//!   block_light, sky_light  16 levels of 16 rows of 16 hex digits, where stored
//!   biomes                  1.18+: the 4x4x4 biome cells drawn as text
//! block_entities/X,Y,Z/     one per block entity (world coordinates)
//!   id                      its id (read-only)
//!   items                   its Items as inventory text (items.rs), if it has Items
//!   data                    its other keys as SNBT
//!   text, back_text         a sign's lines (sign.rs)
//! entities/N                before 1.17: the chunk's entities, SNBT (entities.rs)
//! heightmaps                the stored heightmaps (heightmap.rs), read-only
//! ```
//!
//! Formats, by where the sections are and the DataVersion: 1.12 and older
//! (`Blocks` arrays, named and written back by `legacy.rs`), 1.13 to 1.15 (indices span
//! longs), 1.16 and 1.17 (padded longs), 1.18+ (`block_states` and
//! `biomes` containers at the root). A changed section keeps its palette
//! and gains new states at its end, as the game's container does (1.12
//! and older: each unchanged block keeps its id and data); the chunk is
//! marked for the game to light again (`isLightOn: 0b`; 1.12 and older
//! `LightPopulated: 0b`) and, from 1.13 on, its `Heightmaps` emptied for
//! the game to compute again when it loads the chunk; 1.12 and older: the
//! changed columns of its `HeightMap` set from the blocks, as the game
//! sets them.

use super::items::{self, ItemForm, Slots};
use super::legacy;
use super::section::{Container, Packing, Shape, label_part, parse_state, same_state, state_label};
use super::{entities, heightmap, registry, sign};
use crate::documents::mcchunk::{parse_light, render_light};
use crate::documents::{Context, DocError, DocResult, Document, Entry};
use crate::view::layers::{self, Frame, LegendBuilder, LegendEntry, Rows};
use std::collections::HashMap;
use worldfs_codec::minecraft::nbt::{self, Compound, List, Tag};
use worldfs_codec::minecraft::snbt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Flat,
    Spanning,
    Padded,
    Containers,
}

impl Format {
    fn what(self) -> &'static str {
        match self {
            Format::Flat => "1.12 or older (Blocks/Add/Data arrays)",
            Format::Spanning => "1.13-1.15 (block states spanning longs)",
            Format::Padded => "1.16-1.17 (block states in padded longs)",
            Format::Containers => "1.18+ (block_states and biomes containers)",
        }
    }
    fn blocks_shape(self) -> Shape {
        let packing = if self == Format::Spanning { Packing::Spanning } else { Packing::Padded };
        Shape { n: 4096, min_bits: 4, packing, single_without_data: self == Format::Containers }
    }
}

const BIOMES: Shape = Shape { n: 64, min_bits: 1, packing: Packing::Padded, single_without_data: true };

/// The first DataVersion with `Heightmaps` (17w47a, on the way to 1.13):
/// from it on, the game computes a heightmap a chunk lacks from its blocks
/// (see `drop_heightmaps`).
const FIRST_COMPUTING_VERSION: i64 = 1451;

pub struct ChunkDoc {
    root_name: String,
    /// The root compound, without `Level` when the chunk has one.
    root: Compound,
    /// The `Level` compound of a chunk of 1.17 or older (where its data
    /// is) and its place among the root's entries, held apart so that
    /// the chunk's data is always at hand; None: the data is the root.
    level: Option<(usize, Compound)>,
    pub(crate) format: Format,
}

/// A chunk's root compound split into the root without `Level` and
/// `Level` with its place among the root's entries (None: the root holds
/// no `Level` compound). `ChunkDoc`'s `encode` puts it back in its place.
fn split_level(root: Compound) -> (Compound, Option<(usize, Compound)>) {
    let at = root.0.iter().position(|(k, _)| k == "Level");
    let (mut rest, mut level) = (Vec::with_capacity(root.0.len()), None);
    for (i, (key, tag)) in root.0.into_iter().enumerate() {
        match tag {
            Tag::Compound(c) if Some(i) == at => level = Some((i, c)),
            tag => rest.push((key, tag)),
        }
    }
    (Compound(rest), level)
}

fn is_air(t: &Tag) -> bool {
    matches!(t, Tag::Compound(c) if matches!(c.string("Name"), Some("minecraft:air" | "minecraft:cave_air" | "minecraft:void_air")))
}

/// Why section `y`, read a moment ago, cannot be written: its part of the
/// chunk is not there (a bug, not a user's mistake; refused, not a panic).
fn gone(y: i64) -> String {
    format!("section {y} is no longer in the chunk as it was read; nothing written")
}

impl ChunkDoc {
    fn level(&self) -> &Compound {
        match &self.level {
            Some((_, level)) => level,
            None => &self.root,
        }
    }
    fn level_mut(&mut self) -> &mut Compound {
        match &mut self.level {
            Some((_, level)) => level,
            None => &mut self.root,
        }
    }
    pub(crate) fn data_version(&self) -> i64 {
        self.root.int("DataVersion").unwrap_or(0)
    }
    /// The chunk's position (chunk coordinates).
    pub fn pos(&self) -> (i64, i64) {
        (self.level().int("xPos").unwrap_or(0), self.level().int("zPos").unwrap_or(0))
    }
    /// The position its NBT holds, if it holds both `xPos` and `zPos`.
    pub(crate) fn stored_pos(&self) -> Option<(i64, i64)> {
        Some((self.level().int("xPos")?, self.level().int("zPos")?))
    }
    pub fn section_count(&self) -> usize {
        self.sections().len()
    }
    pub(crate) fn block_entity_count(&self) -> usize {
        self.block_entities().len()
    }
    fn sections_key(&self) -> &'static str {
        if self.format == Format::Containers { "sections" } else { "Sections" }
    }
    fn sections(&self) -> Vec<&Compound> {
        let Some(l) = self.level().list(self.sections_key()) else { return Vec::new() };
        l.items.iter().filter_map(|t| if let Tag::Compound(c) = t { Some(c) } else { None }).collect()
    }
    fn section(&self, y: i64) -> Option<&Compound> {
        self.sections().into_iter().find(|s| s.int("Y") == Some(y))
    }
    fn section_mut(&mut self, y: i64) -> Option<&mut Compound> {
        let key = self.sections_key();
        let Some(Tag::List(l)) = self.level_mut().get_mut(key) else { return None };
        l.items.iter_mut().find_map(|t| match t {
            Tag::Compound(c) if c.int("Y") == Some(y) => Some(c),
            _ => None,
        })
    }

    /// A section's blocks (None: it stores none, or the format is not read).
    fn blocks(&self, s: &Compound) -> DocResult<Option<Container>> {
        let (pal, data) = match self.format {
            Format::Flat => {
                let y = s.int("Y").unwrap_or(0);
                let c = legacy::decode(s).map_err(|m| DocError::new(format!("section {y}: {m}")))?;
                return Ok(c.map(|(c, _)| c));
            }
            Format::Containers => match s.compound("block_states") {
                Some(b) => (b.list("palette"), b.get("data")),
                None => return Ok(None),
            },
            _ => (s.list("Palette"), s.get("BlockStates")),
        };
        let Some(pal) = pal else { return Ok(None) };
        let data = match data {
            Some(Tag::LongArray(d)) => Some(&d[..]),
            None => None,
            Some(_) => return Err(DocError::new("block data that is not a long array")),
        };
        let y = s.int("Y").unwrap_or(0);
        Container::decode(pal, data, self.format.blocks_shape())
            .map(Some)
            .map_err(|m| DocError::new(format!("section {y}: {m}")))
    }

    fn put_blocks(&mut self, y: i64, c: &Container) -> Result<(), String> {
        let format = self.format;
        let (pal, data) = c.encode(format.blocks_shape());
        let s = self.section_mut(y).ok_or_else(|| gone(y))?;
        let (holder, pal_key, data_key) = match format {
            Format::Containers => (s.compound_mut("block_states").ok_or_else(|| gone(y))?, "palette", "data"),
            _ => (s, "Palette", "BlockStates"),
        };
        holder.insert(pal_key, Tag::List(pal));
        match data {
            Some(d) => holder.insert(data_key, Tag::LongArray(d)),
            None => drop(holder.remove(data_key)),
        }
        Ok(())
    }

    /// Section `y`'s blocks become `values` (y*256 + z*16 + x): a 1.12 or
    /// older section as ids and data, others in their palette `c`; the
    /// chunk is then marked for the game to light again. Err: the first
    /// block whose state a 1.12 chunk cannot store, and why.
    fn store_blocks(&mut self, y: i64, mut c: Container, values: &[Tag]) -> Result<(), (usize, String)> {
        if self.format == Format::Flat {
            let ids = self.flat_ids(y, &c, values)?;
            let before = self.section(y).and_then(|s| self.flat_block_ids(s)).ok_or_else(|| (0, gone(y)))?;
            legacy::encode(self.section_mut(y).ok_or_else(|| (0, gone(y)))?, &ids);
            let changed = (0..4096).filter(|&i| before[i] != ids[i].0).map(|i| i % 256);
            self.set_legacy_heights(changed.collect());
        } else {
            c.set_all(values);
            self.put_blocks(y, &c).map_err(|m| (0, m))?;
        }
        // The game lights the chunk again when it loads it (1.12 and
        // older: a chunk not `LightPopulated` is lit on its first tick).
        let key = if self.format == Format::Flat { "LightPopulated" } else { "isLightOn" };
        if self.level().get(key).is_some() {
            self.level_mut().insert(key, Tag::Byte(0));
        }
        self.drop_heightmaps();
        Ok(())
    }

    /// Marks a 1.13+ chunk's heightmaps for the game to compute again:
    /// the game keeps stored ones as they are (which a block change makes
    /// wrong) and computes each one it needs and `Heightmaps` lacks from
    /// the blocks. 1.13.2's AnvilChunkLoader.readChunkFromNBT calls
    /// `getHeightmap(type).generate()` for each missing LIVE_WORLD type of
    /// a full chunk, and ChunkPrimer generates a missing one when first
    /// asked for it (a chunk still being generated); 1.14+'s
    /// ChunkSerializer primes the missing ones of the chunk's status.
    /// 1.12's `HeightMap`, read without a check, is set by
    /// [`Self::set_legacy_heights`] instead.
    fn drop_heightmaps(&mut self) {
        if self.data_version() < FIRST_COMPUTING_VERSION {
            return;
        }
        if let Some(maps) = self.level_mut().compound_mut("Heightmaps") {
            maps.0.clear();
        }
    }

    /// Each block's id in 1.12-or-older section `s` (y*256 + z*16 + x).
    /// None: it stores no blocks that read.
    fn flat_block_ids(&self, s: &Compound) -> Option<Vec<u16>> {
        let (c, ids) = legacy::decode(s).ok().flatten()?;
        Some(c.indices.iter().map(|&k| ids[k as usize].0).collect())
    }

    /// Sets `columns` (z*16 + x) of a 1.12-or-older chunk's `HeightMap`
    /// from its blocks, as the game does for each block it sets (its
    /// loader reads the stored one as it is); other columns keep theirs.
    /// A chunk without a `HeightMap` of 256 ints is left without.
    fn set_legacy_heights(&mut self, mut columns: Vec<usize>) {
        columns.sort_unstable();
        columns.dedup();
        let Some(Tag::IntArray(old)) = self.level().get("HeightMap") else { return };
        if columns.is_empty() || old.len() != 256 {
            return;
        }
        let mut heights = old.clone();
        let computed = self.legacy_heights_from_blocks();
        for col in columns {
            heights[col] = computed[col];
        }
        self.level_mut().insert("HeightMap", Tag::IntArray(heights));
    }

    /// A 1.12-or-older chunk's `HeightMap` as its blocks give it
    /// (heightmap::legacy_height), z*16 + x; other formats: empty.
    pub fn legacy_heights_from_blocks(&self) -> Vec<i32> {
        if self.format != Format::Flat {
            return Vec::new();
        }
        let sections: Vec<(i64, Vec<u16>)> = self
            .sections()
            .into_iter()
            .filter_map(|s| Some((s.int("Y").unwrap_or(0), self.flat_block_ids(s)?)))
            .collect();
        (0..256).map(|col| heightmap::legacy_height(&sections, col)).collect()
    }

    /// The id and data of each block of 1.12-or-older section `y` once
    /// set to `values`: a block whose state is unchanged keeps its own (of
    /// two ids showing the same, such as still and flowing water), a
    /// changed one takes the table's (`legacy::id_data`).
    fn flat_ids(&self, y: i64, c: &Container, values: &[Tag]) -> Result<Vec<legacy::IdData>, (usize, String)> {
        let s = self.section(y).ok_or_else(|| (0, gone(y)))?;
        let (_, ids) = legacy::decode(s).ok().flatten().ok_or_else(|| (0, gone(y)))?;
        let mut out = Vec::with_capacity(values.len());
        for (i, v) in values.iter().enumerate() {
            let k = c.indices[i] as usize;
            out.push(if same_state(&c.palette[k], v) { ids[k] } else { legacy::id_data(v).map_err(|m| (i, m))? });
        }
        Ok(out)
    }

    fn biomes(&self, s: &Compound) -> DocResult<Option<Container>> {
        let Some(b) = s.compound("biomes").filter(|_| self.format == Format::Containers) else { return Ok(None) };
        let Some(pal) = b.list("palette") else { return Ok(None) };
        let data = match b.get("data") {
            Some(Tag::LongArray(d)) => Some(&d[..]),
            _ => None,
        };
        Container::decode(pal, data, BIOMES).map(Some).map_err(|m| DocError::new(format!("biomes: {m}")))
    }

    fn block_entities_key(&self) -> &'static str {
        if self.format == Format::Containers { "block_entities" } else { "TileEntities" }
    }

    fn block_entities(&self) -> Vec<&Compound> {
        let Some(l) = self.level().list(self.block_entities_key()) else { return Vec::new() };
        l.items.iter().filter_map(|t| if let Tag::Compound(c) = t { Some(c) } else { None }).collect()
    }

    fn be_name(c: &Compound) -> String {
        format!("{},{},{}", c.int("x").unwrap_or(0), c.int("y").unwrap_or(0), c.int("z").unwrap_or(0))
    }

    fn block_entity_mut(&mut self, name: &str) -> Option<&mut Compound> {
        let key = self.block_entities_key();
        let Some(Tag::List(l)) = self.level_mut().get_mut(key) else { return None };
        l.items.iter_mut().find_map(|t| match t {
            Tag::Compound(c) if Self::be_name(c) == name => Some(c),
            _ => None,
        })
    }

    fn frame(&self, y: i64) -> Frame {
        let (cx, cz) = self.pos();
        Frame { size: [16, 16, 16], origin: [16 * cx, 16 * y, 16 * cz], rows: Rows::ZAscending }
    }

    fn item_form(&self) -> ItemForm {
        ItemForm::of_data_version(self.data_version())
    }

    /// The block state at world position (x, y, z), which must be in this
    /// chunk; None when its section stores no blocks.
    pub fn block_at(&self, x: i64, y: i64, z: i64) -> DocResult<Option<Tag>> {
        let Some(s) = self.section(y.div_euclid(16)) else { return Ok(None) };
        let i = (y.rem_euclid(16) * 256 + z.rem_euclid(16) * 16 + x.rem_euclid(16)) as usize;
        Ok(self.blocks(s)?.map(|c| c.get(i).clone()))
    }

    /// Set one block; a block entity at that place goes when the block's
    /// id changes (as `/setblock` does).
    pub fn set_block(&mut self, x: i64, y: i64, z: i64, state: Tag) -> DocResult<()> {
        let sy = y.div_euclid(16);
        let s = self.section(sy).ok_or_else(|| DocError::new(format!("section {sy} is not stored in this chunk")))?;
        let c = self.blocks(s)?.ok_or_else(|| DocError::new(format!("section {sy} stores no blocks here")))?;
        let i = (y.rem_euclid(16) * 256 + z.rem_euclid(16) * 16 + x.rem_euclid(16)) as usize;
        if same_state(c.get(i), &state) {
            return Ok(());
        }
        // Refused before the block entity goes.
        self.check_state(&state).map_err(DocError::new)?;
        let name = |t: &Tag| if let Tag::Compound(c) = t { c.string("Name").map(String::from) } else { None };
        if name(c.get(i)) != name(&state) {
            let key = self.block_entities_key();
            let here = format!("{x},{y},{z}");
            if let Some(Tag::List(l)) = self.level_mut().get_mut(key) {
                l.items.retain(|t| !matches!(t, Tag::Compound(b) if Self::be_name(b) == here));
            }
        }
        let mut values: Vec<Tag> = (0..4096).map(|k| c.get(k).clone()).collect();
        values[i] = state;
        self.store_blocks(sy, c, &values).map_err(|(_, m)| DocError::new(m))
    }

    /// Whether block state `state` may be stored in this chunk: a
    /// 1.12-or-older chunk needs an id and data for it; in a newer one a
    /// state the chunk already holds (in any section) is taken as it is,
    /// another must be one the game of the chunk's DataVersion knows (the
    /// game turns what it does not know into air when it loads the chunk).
    pub(crate) fn check_state(&self, state: &Tag) -> Result<(), String> {
        if self.format == Format::Flat {
            return legacy::id_data(state).map(drop);
        }
        if self.held_states().iter().any(|t| same_state(t, state)) {
            return Ok(());
        }
        registry::check_block(state, self.data_version())
    }

    /// The block states of every section's palette.
    fn held_states(&self) -> Vec<Tag> {
        let containers = self.sections().into_iter().filter_map(|s| self.blocks(s).ok().flatten());
        containers.flat_map(|c| c.palette).collect()
    }

    /// Each legend entry of a drawing of a section whose palette is
    /// `palette`, `tags` what they stand for: one the section or the chunk
    /// does not hold must be a state the game knows ([`Self::check_state`];
    /// a 1.12-or-older chunk's are judged when they are stored). Err:
    /// the first that is not, at its line.
    fn check_new_states(&self, legend: &[LegendEntry], tags: &[Tag], palette: &[Tag]) -> DocResult<()> {
        if self.format == Format::Flat {
            return Ok(());
        }
        let mut held: Option<Vec<Tag>> = None;
        for (entry, tag) in legend.iter().zip(tags) {
            if palette.iter().any(|p| same_state(p, tag)) {
                continue;
            }
            if held.get_or_insert_with(|| self.held_states()).iter().any(|p| same_state(p, tag)) {
                continue;
            }
            registry::check_block(tag, self.data_version()).map_err(|m| DocError::at_line(entry.line, m))?;
        }
        Ok(())
    }

    /// The blocks of every section that stores them, by section Y.
    pub(crate) fn section_blocks(&self) -> DocResult<Vec<(i64, Container)>> {
        let mut out = Vec::new();
        for s in self.sections() {
            if let Some(c) = self.blocks(s)? {
                out.push((s.int("Y").unwrap_or(0), c));
            }
        }
        Ok(out)
    }

    /// How many blocks of each id (the state's name, without properties)
    /// the chunk's sections hold.
    pub(crate) fn block_counts(&self) -> DocResult<Vec<(String, u64)>> {
        let mut counts: HashMap<String, u64> = HashMap::new();
        for s in self.sections() {
            let Some(c) = self.blocks(s)? else { continue };
            let mut per = vec![0u64; c.palette.len()];
            for &i in &c.indices {
                per[i as usize] += 1;
            }
            for (t, n) in c.palette.iter().zip(per).filter(|(_, n)| *n > 0) {
                let id = match t {
                    Tag::Compound(b) => b.string("Name").unwrap_or("?").to_string(),
                    _ => "?".to_string(),
                };
                *counts.entry(id).or_default() += n;
            }
        }
        Ok(counts.into_iter().collect())
    }

    /// What `worldfs check` finds wrong in the decoded chunk: each section's
    /// blocks and biomes decoded (palette indices in range), its light
    /// arrays 2048 bytes, each block entity a compound with its id and
    /// position, the heightmaps readable. Each problem names its section
    /// or block entity.
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut found = Vec::new();
        for s in self.sections() {
            let Some(y) = s.int("Y") else {
                found.push("a section without Y".to_string());
                continue;
            };
            if let Err(e) = self.blocks(s) {
                found.push(if e.message.starts_with("section ") {
                    e.message
                } else {
                    format!("section {y}: {}", e.message)
                });
            }
            if let Err(e) = self.biomes(s) {
                found.push(format!("section {y}: {}", e.message));
            }
            for key in ["BlockLight", "SkyLight"] {
                match s.get(key) {
                    None => {}
                    Some(Tag::ByteArray(b)) if b.len() == 2048 => {}
                    Some(Tag::ByteArray(b)) => {
                        found.push(format!("section {y}: {key} holds {} bytes, not 2048", b.len()))
                    }
                    Some(_) => found.push(format!("section {y}: {key} is not a byte array")),
                }
            }
        }
        let key = self.block_entities_key();
        for (i, t) in self.level().list(key).map(|l| &l.items[..]).unwrap_or_default().iter().enumerate() {
            let Tag::Compound(be) = t else {
                found.push(format!("{key} entry {i} is not a compound"));
                continue;
            };
            if be.string("id").is_none() {
                found.push(format!("block entity {}: no id", Self::be_name(be)));
            }
            if ["x", "y", "z"].iter().any(|k| be.int(k).is_none()) {
                found.push(format!("{key} entry {i}: no x, y and z"));
            }
        }
        if heightmap::present(self.level())
            && let Err(e) = heightmap::render(self.level(), self.format == Format::Spanning)
        {
            found.push(format!("heightmaps: {e}"));
        }
        found
    }

    fn info(&self) -> String {
        let l = self.level();
        let (x, z) = self.pos();
        let ys: Vec<String> = self.sections().iter().filter_map(|s| s.int("Y")).map(|y| y.to_string()).collect();
        format!(
            "x = {x}\nz = {z}\ndata_version = {}\nformat = {}\nstatus = {}\nlast_update = {}\ninhabited_time = {}\nsections = {}\nblock_entities = {}\n",
            self.data_version(),
            self.format.what(),
            l.string("Status").unwrap_or("?"),
            l.int("LastUpdate").map_or("?".into(), |v| format!("{v} (game ticks)")),
            l.int("InhabitedTime").map_or("?".into(), |v| v.to_string()),
            ys.join(" "),
            self.block_entities().len(),
        )
    }

    fn render_blocks(&self, y: i64, c: &Container) -> DocResult<String> {
        let mut b = LegendBuilder::new();
        let labels =
            palette_legend(&mut b, &c.palette, state_label, |t| if is_air(t) { &['.'] } else { &[] }, same_state)
                .map_err(|m| DocError::new(format!("section {y}: {m}")))?;
        Ok(layers::render(&self.frame(y), b.entries(), |x, y, z| labels[c.indices[y * 256 + z * 16 + x] as usize]))
    }

    fn render_biomes(&self, y: i64, c: &Container) -> DocResult<String> {
        let mut b = LegendBuilder::new();
        let labels = palette_legend(&mut b, &c.palette, snbt_label, |_| &[], |a, b| a == b)
            .map_err(|m| DocError::new(format!("section {y} biomes: {m}")))?;
        let (cx, cz) = self.pos();
        let frame = Frame { size: [4, 4, 4], origin: [4 * cx, 4 * y, 4 * cz], rows: Rows::ZAscending };
        Ok(layers::render(&frame, b.entries(), |x, y, z| labels[c.indices[y * 16 + z * 4 + x] as usize]))
    }

    fn section_file(&self, y: i64, file: &str) -> DocResult<String> {
        let s = self.section(y).ok_or_else(|| DocError::new("no such section"))?;
        let light = |key: &str| match s.get(key) {
            Some(Tag::ByteArray(b)) if b.len() == 2048 => {
                Ok(render_light(&b.iter().map(|v| *v as u8).collect::<Vec<_>>(), y))
            }
            _ => Err(DocError::new(format!("{key} is not 2048 bytes here"))),
        };
        match file {
            "palette" if self.format == Format::Flat => {
                let (c, ids) = legacy::decode(s).map_err(DocError::new)?.ok_or_else(|| DocError::new("no blocks"))?;
                let line = |(i, t): (usize, &Tag)| format!("{i} {} {}:{}\n", state_label(t), ids[i].0, ids[i].1);
                Ok(c.palette.iter().enumerate().map(line).collect())
            }
            "palette" => {
                let c = self.blocks(s)?.ok_or_else(|| DocError::new("no blocks"))?;
                Ok(c.palette.iter().enumerate().map(|(i, t)| format!("{i} {}\n", state_label(t))).collect())
            }
            "blocks" => self.render_blocks(y, &self.blocks(s)?.ok_or_else(|| DocError::new("no blocks"))?),
            "biomes" => self.render_biomes(y, &self.biomes(s)?.ok_or_else(|| DocError::new("no biomes"))?),
            "block_light" => light("BlockLight"),
            "sky_light" => light("SkyLight"),
            _ => Err(DocError::new("no such file")),
        }
    }

    fn apply_section(&mut self, y: i64, file: &str, text: &str) -> DocResult<()> {
        let s = self.section(y).ok_or_else(|| DocError::new("no such section"))?;
        match file {
            "blocks" => {
                let c = self.blocks(s)?.ok_or_else(|| DocError::new("this section stores no blocks"))?;
                let frame = self.frame(y);
                let d = layers::parse(&frame, text)?;
                let legend = legend_tags(&d.legend, &c.palette, state_label, parse_state)?;
                self.check_new_states(&d.legend, &legend, &c.palette)?;
                let at = |i: usize| d.at(i % 16, i / 256, i / 16 % 16);
                let values: Vec<Tag> = (0..4096).map(|i| legend[at(i)].clone()).collect();
                if (0..4096).all(|i| same_state(c.get(i), &values[i])) {
                    return Ok(());
                }
                self.store_blocks(y, c, &values).map_err(|(i, m)| {
                    let [x0, y0, z0] = frame.origin;
                    let pos =
                        format!("{},{},{}", x0 + (i % 16) as i64, y0 + (i / 256) as i64, z0 + (i / 16 % 16) as i64);
                    DocError::at_line(d.legend[at(i)].line, format!("block {pos}: {m}"))
                })?;
            }
            "biomes" => {
                let mut c = self.biomes(s)?.ok_or_else(|| DocError::new("this section stores no biomes"))?;
                let (cx, cz) = self.pos();
                let frame = Frame { size: [4, 4, 4], origin: [4 * cx, 4 * y, 4 * cz], rows: Rows::ZAscending };
                let d = layers::parse(&frame, text)?;
                let legend = legend_tags(&d.legend, &c.palette, snbt_label, parse_snbt_label)?;
                let values: Vec<Tag> = (0..64).map(|i| legend[d.at(i % 4, i / 16, i / 4 % 4)].clone()).collect();
                if (0..64).any(|i| c.get(i) != &values[i]) {
                    c.set_all(&values);
                    let (pal, data) = c.encode(BIOMES);
                    let b = self.section_mut(y).and_then(|s| s.compound_mut("biomes"));
                    let b = b.ok_or_else(|| DocError::new(gone(y)))?;
                    b.insert("palette", Tag::List(pal));
                    match data {
                        Some(d) => b.insert("data", Tag::LongArray(d)),
                        None => drop(b.remove("data")),
                    }
                }
            }
            "block_light" | "sky_light" => {
                let light = parse_light(text, y)?;
                let key = if file == "block_light" { "BlockLight" } else { "SkyLight" };
                let s = self.section_mut(y).ok_or_else(|| DocError::new(gone(y)))?;
                s.insert(key, Tag::ByteArray(light.into_iter().map(|v| v as i8).collect()));
            }
            _ => return Err(DocError::new("this file cannot be written")),
        }
        Ok(())
    }

    fn apply_block_entity(&mut self, name: &str, file: &str, text: &str) -> DocResult<()> {
        let (form, version) = (self.item_form(), self.data_version());
        let be = self.block_entity_mut(name).ok_or_else(|| DocError::new("no such block entity"))?;
        match file {
            "items" if has_items(be) => {
                let old = be.list("Items").cloned();
                let slots = Slots::of_block_entity(be.string("id").unwrap_or_default());
                let new = items::parse(text, old.as_ref().unwrap_or(&NO_ITEMS), form, slots, version)?;
                // An empty container without Items stays without.
                if old.is_some() || !new.items.is_empty() {
                    be.insert("Items", Tag::List(new));
                }
            }
            "text" | "back_text" => {
                let side = sign::sides(be).into_iter().find(|s| s.file() == file);
                let side = side.ok_or_else(|| DocError::new("this file cannot be written"))?;
                sign::apply(be, side, text, version).map_err(|(line, m)| DocError::at_line(line, m))?;
            }
            "data" => {
                let mut new = snbt::parse(text).map_err(DocError::new)?;
                if let Some(k) = ["id", "x", "y", "z", "Items"].iter().find(|k| new.get(k).is_some()) {
                    return Err(DocError::new(format!(
                        "'{k}' is not edited here (id and position are fixed; Items are in items)"
                    )));
                }
                snbt::keep_compound_list_types(&mut new, be);
                *be = merge_kept(be, new, &["id", "x", "y", "z", "Items"]);
            }
            _ => return Err(DocError::new("this file cannot be written")),
        }
        Ok(())
    }
}

/// A biome's label: its id (a string) as it is, quoted if a legend line
/// could not carry it (see [`label_part`]).
fn snbt_label(t: &Tag) -> String {
    match t {
        Tag::String(s) => label_part(s),
        other => snbt::tag_inline(other),
    }
}

/// Give each palette entry its legend character. Two different entries
/// drawn with the same label could not be told apart when the drawing is
/// written back, so such a palette is refused, naming both.
pub(crate) fn palette_legend(
    b: &mut LegendBuilder,
    palette: &[Tag],
    label: fn(&Tag) -> String,
    preferred: fn(&Tag) -> &'static [char],
    same: fn(&Tag, &Tag) -> bool,
) -> Result<Vec<usize>, String> {
    let mut first: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::with_capacity(palette.len());
    for (i, t) in palette.iter().enumerate() {
        let text = label(t);
        let k = *first.entry(text.clone()).or_insert(i);
        if !same(&palette[k], t) {
            return Err(format!("palette entries {k} and {i} are different but both read '{text}'"));
        }
        out.push(b.index(&text, preferred(t)));
    }
    Ok(out)
}

/// The tags a drawing's legend stands for. A label the palette already
/// holds is taken back as it is, even one whose text would not parse as a
/// new entry (a name the game would not write, a property that is not a
/// string); other labels are parsed, and refused naming their line.
pub(crate) fn legend_tags(
    legend: &[LegendEntry],
    palette: &[Tag],
    label: fn(&Tag) -> String,
    parse: fn(&str) -> Result<Tag, String>,
) -> DocResult<Vec<Tag>> {
    let known: HashMap<String, &Tag> = palette.iter().rev().map(|t| (label(t), t)).collect();
    legend
        .iter()
        .map(|e| match known.get(&e.label) {
            Some(t) => Ok((*t).clone()),
            None => parse(&e.label).map_err(|m| DocError::at_line(e.line, m)),
        })
        .collect()
}

fn parse_snbt_label(label: &str) -> Result<Tag, String> {
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-./:".contains(c);
    if label.is_empty() || !label.chars().all(ok) {
        return Err(format!("'{label}' is not a biome id (like minecraft:plains)"));
    }
    Ok(Tag::String(label.to_string()))
}

/// `old`'s entries in their order, those of `kept` as they were and the
/// others from `new` (dropped if `new` has them no more), then `new`'s
/// added keys.
pub(crate) fn merge_kept(old: &Compound, new: Compound, kept: &[&str]) -> Compound {
    let mut out = Compound::default();
    for (k, v) in &old.0 {
        if kept.contains(&k.as_str()) {
            out.0.push((k.clone(), v.clone()));
        } else if let Some(n) = new.get(k) {
            out.0.push((k.clone(), n.clone()));
        }
    }
    for (k, v) in new.0 {
        if out.get(&k).is_none() {
            out.0.push((k, v));
        }
    }
    out
}

/// A compound without some keys, as SNBT.
pub(crate) fn snbt_without(c: &Compound, drop: &[&str]) -> String {
    snbt::to_snbt(&Compound(c.0.iter().filter(|(k, _)| !drop.contains(&k.as_str())).cloned().collect()))
}

/// Block entities that hold items, shown with an `items` file even when
/// they hold none (the game then leaves `Items` out).
const CONTAINERS: &[&str] = &[
    "minecraft:chest",
    "minecraft:trapped_chest",
    "minecraft:barrel",
    "minecraft:shulker_box",
    "minecraft:hopper",
    "minecraft:dispenser",
    "minecraft:dropper",
    "minecraft:furnace",
    "minecraft:blast_furnace",
    "minecraft:smoker",
    "minecraft:brewing_stand",
];

fn has_items(be: &Compound) -> bool {
    be.list("Items").is_some() || be.string("id").is_some_and(|id| CONTAINERS.contains(&id))
}

const NO_ITEMS: List = List { elem: 0, items: Vec::new() };

fn split_section(path: &str) -> Option<(i64, &str)> {
    let (y, file) = path.strip_prefix("sections/")?.split_once('/')?;
    Some((y.parse().ok()?, file))
}

fn split_be(path: &str) -> Option<(&str, &str)> {
    path.strip_prefix("block_entities/")?.split_once('/')
}

impl Document for ChunkDoc {
    const NAME: &'static str = "minecraft chunk";

    fn decode(bytes: &[u8], _ctx: &Context) -> DocResult<Self> {
        let (root_name, root) = nbt::decode(bytes).map_err(DocError::new)?;
        let level = root.compound("Level");
        let version = root.int("DataVersion").unwrap_or(0);
        let format = match level {
            None if root.get("sections").is_some() => Format::Containers,
            None => return Err(DocError::new("neither Level nor sections: not a chunk")),
            Some(l)
                if version < 1451
                    || l.list("Sections").is_some_and(|s| {
                        s.items.iter().any(|t| matches!(t, Tag::Compound(c) if c.get("Blocks").is_some()))
                    }) =>
            {
                Format::Flat
            }
            Some(_) if version < 2529 => Format::Spanning,
            Some(_) => Format::Padded,
        };
        let (root, level) = split_level(root);
        Ok(ChunkDoc { root_name, root, level, format })
    }

    fn encode(&self) -> DocResult<Vec<u8>> {
        let Some((at, level)) = &self.level else {
            return nbt::encode(&self.root_name, &self.root).map_err(DocError::new);
        };
        let mut root = self.root.clone();
        root.0.insert((*at).min(root.0.len()), ("Level".to_string(), Tag::Compound(level.clone())));
        nbt::encode(&self.root_name, &root).map_err(DocError::new)
    }

    fn entries(&self) -> Vec<Entry> {
        let mut v = vec![Entry::file("info", false), Entry::file("top.png", false), Entry::dir("sections")];
        if heightmap::present(self.level()) {
            v.push(Entry::file("heightmaps", false));
        }
        v.extend(entities::entries(self.level(), "entities/"));
        for s in self.sections() {
            let Some(y) = s.int("Y") else { continue };
            let d = format!("sections/{y}");
            v.push(Entry::dir(d.clone()));
            if self.blocks(s).ok().flatten().is_some() {
                v.push(Entry::file(format!("{d}/palette"), false));
                v.push(Entry::file(format!("{d}/blocks"), true));
            }
            for (key, file) in [("BlockLight", "block_light"), ("SkyLight", "sky_light")] {
                if matches!(s.get(key), Some(Tag::ByteArray(b)) if b.len() == 2048) {
                    v.push(Entry::file(format!("{d}/{file}"), true));
                }
            }
            if self.biomes(s).ok().flatten().is_some() {
                v.push(Entry::file(format!("{d}/biomes"), true));
            }
        }
        v.push(Entry::dir("block_entities"));
        for be in self.block_entities() {
            let d = format!("block_entities/{}", Self::be_name(be));
            v.push(Entry::dir(d.clone()));
            v.push(Entry::file(format!("{d}/id"), false));
            if has_items(be) {
                v.push(Entry::file(format!("{d}/items"), true));
            }
            v.push(Entry::file(format!("{d}/data"), true));
            v.extend(sign::sides(be).into_iter().map(|s| Entry::file(format!("{d}/{}", s.file()), true)));
        }
        v
    }

    fn render(&self, path: &str) -> DocResult<Vec<u8>> {
        if path == "top.png" {
            return Ok(super::top::top_png(self.section_blocks()?));
        }
        let text = if path == "info" {
            self.info()
        } else if path == "heightmaps" {
            heightmap::render(self.level(), self.format == Format::Spanning).map_err(DocError::new)?
        } else if let Some(n) = path.strip_prefix("entities/") {
            entities::render(self.level(), n)?
        } else if let Some((y, file)) = split_section(path) {
            self.section_file(y, file)?
        } else if let Some((name, file)) = split_be(path) {
            let be = self.block_entities().into_iter().find(|b| Self::be_name(b) == name);
            let be = be.ok_or_else(|| DocError::new("no such block entity"))?;
            match file {
                "id" => format!("{}\n", be.string("id").unwrap_or("?")),
                "items" if has_items(be) => items::render(be.list("Items").unwrap_or(&NO_ITEMS), self.item_form()),
                "data" => snbt_without(be, &["id", "x", "y", "z", "Items"]),
                "text" | "back_text" => match sign::sides(be).into_iter().find(|s| s.file() == file) {
                    Some(side) => sign::render(be, side, self.data_version()),
                    None => return Err(DocError::new("no such file")),
                },
                _ => return Err(DocError::new("no such file")),
            }
        } else {
            return Err(DocError::new("no such file"));
        };
        Ok(text.into_bytes())
    }

    fn apply(&mut self, path: &str, content: &[u8]) -> DocResult<()> {
        let text = std::str::from_utf8(content).map_err(|_| DocError::new("not UTF-8 text"))?;
        if let Some((y, file)) = split_section(path) {
            self.apply_section(y, file, text)
        } else if let Some((name, file)) = split_be(path) {
            self.apply_block_entity(name, file, text)
        } else {
            Err(DocError::new("this file cannot be written"))
        }
    }
}
