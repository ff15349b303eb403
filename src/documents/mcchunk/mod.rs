//! A Minecraft Java chunk (the data of a "Chunk Data" packet, 1.9 to 1.12,
//! or 1.16; `worldfs_codec::minecraft::packet`) as a [`Document`]:
//!
//! ```text
//! info                   version, bit mask, sky light, biomes (read-only)
//! sections/N/            one per present section (y 16N to 16N+15)
//!   palette              "index id:meta name" per entry, 1.16: "index
//!                        state name[properties]" (read-only)
//!   blocks               the 16 levels drawn as text (view::layers), legend
//!                        labels "id:meta", 1.16: the state's name
//!   block_light          16 levels of 16 rows of 16 hex digits
//!   sky_light            the same (where the dimension has a sky)
//! biomes                 16 rows of 16 biome ids (ground-up chunks)
//! ```
//!
//! The bit mask comes from the `.meta` file beside the dump (the JSON that
//! minecraft-chunk-dumper writes) or `-o bitmap=N`; `-o version=1.12`
//! (the default; 1.9 to 1.15 packing) or `1.16` (to `1.16.5`: the block
//! state names of that version, `worldfs_codec::minecraft::states`); `-o sky_light=no` for the
//! Nether and the End; `-o biomes=no` for a chunk that is not ground-up.

use crate::documents::{Context, DocError, DocResult, Document, Entry};
use crate::view::layers::{self, Frame, LegendBuilder, Rows};
use std::path::{Path, PathBuf};
use worldfs_codec::minecraft::packet::{Chunk, Layout, Shape, nibble, set_nibble};
use worldfs_codec::minecraft::states::StateTable;

pub struct McChunk {
    chunk: Chunk,
    shape: Shape,
    /// The version mounted, as given (`-o version`).
    version: String,
    /// The names of the version's block states (1.13+), when known.
    states: Option<&'static StateTable>,
}

/// Names of common 1.12 block ids (the palette file of 1.9 to 1.12 data
/// only: 1.13+ numbers states otherwise).
const NAMES: &[(u32, &str)] = &[
    (0, "air"),
    (1, "stone"),
    (2, "grass"),
    (3, "dirt"),
    (4, "cobblestone"),
    (5, "planks"),
    (6, "sapling"),
    (7, "bedrock"),
    (8, "flowing_water"),
    (9, "water"),
    (10, "flowing_lava"),
    (11, "lava"),
    (12, "sand"),
    (13, "gravel"),
    (14, "gold_ore"),
    (15, "iron_ore"),
    (16, "coal_ore"),
    (17, "log"),
    (18, "leaves"),
    (20, "glass"),
    (21, "lapis_ore"),
    (24, "sandstone"),
    (31, "tallgrass"),
    (32, "deadbush"),
    (35, "wool"),
    (37, "yellow_flower"),
    (38, "red_flower"),
    (39, "brown_mushroom"),
    (40, "red_mushroom"),
    (48, "mossy_cobblestone"),
    (49, "obsidian"),
    (50, "torch"),
    (52, "mob_spawner"),
    (54, "chest"),
    (56, "diamond_ore"),
    (73, "redstone_ore"),
    (78, "snow_layer"),
    (79, "ice"),
    (80, "snow"),
    (81, "cactus"),
    (82, "clay"),
    (83, "reeds"),
    (86, "pumpkin"),
    (87, "netherrack"),
    (88, "soul_sand"),
    (89, "glowstone"),
    (97, "monster_egg"),
    (98, "stonebrick"),
    (99, "brown_mushroom_block"),
    (100, "red_mushroom_block"),
    (106, "vine"),
    (110, "mycelium"),
    (111, "waterlily"),
    (121, "end_stone"),
    (129, "emerald_ore"),
    (159, "stained_hardened_clay"),
    (161, "leaves2"),
    (162, "log2"),
    (172, "hardened_clay"),
    (174, "packed_ice"),
    (175, "double_plant"),
    (179, "red_sandstone"),
];

fn id_meta(state: u32) -> String {
    format!("{}:{}", state >> 4, state & 15)
}

fn parse_id_meta(l: &str) -> Result<u32, String> {
    let (id, meta) = l.split_once(':').ok_or_else(|| format!("'{l}' is not id:meta"))?;
    let id: u32 = id.trim().parse().ok().filter(|v| *v < 4096).ok_or_else(|| format!("'{l}': the id is 0 to 4095"))?;
    let meta: u32 =
        meta.trim().parse().ok().filter(|v| *v < 16).ok_or_else(|| format!("'{l}': the meta is 0 to 15"))?;
    Ok(id * 16 + meta)
}

fn option_bool(ctx: &Context, key: &str, default: bool) -> DocResult<bool> {
    match ctx.option(key) {
        None => Ok(default),
        Some(None | Some("yes" | "true" | "1")) => Ok(true),
        Some(Some("no" | "false" | "0")) => Ok(false),
        Some(Some(v)) => Err(DocError::new(format!("-o {key}={v}: yes or no"))),
    }
}

impl McChunk {
    /// The version mounted (`-o version`, 1.12 by default), its layout
    /// and its block-state table.
    fn version(ctx: &Context) -> DocResult<(String, Layout, Option<&'static StateTable>)> {
        let v = match ctx.option("version") {
            None => "1.12",
            Some(v) => v.unwrap_or(""),
        };
        match v {
            "1.9" | "1.10" | "1.11" | "1.12" => Ok((v.to_string(), Layout::Spanning, None)),
            _ => match StateTable::of(v) {
                Some(t) => Ok((v.to_string(), Layout::Padded, Some(t))),
                None => Err(DocError::new(format!("-o version={v}: 1.9 to 1.12, or 1.16 to 1.16.5"))),
            },
        }
    }

    fn shape(ctx: &Context, layout: Layout) -> DocResult<Shape> {
        let meta: Option<serde_json::Value> = ctx
            .companions
            .iter()
            .find(|(p, _)| p.extension().is_some_and(|e| e == "meta"))
            .and_then(|(_, b)| serde_json::from_slice(b).ok());
        let bitmap = match ctx.option("bitmap") {
            Some(Some(v)) => v.parse::<u32>().map_err(|_| DocError::new(format!("-o bitmap={v}: a number")))?,
            Some(None) => return Err(DocError::new("-o bitmap=N needs a number")),
            None => meta.as_ref().and_then(|m| m.get("bitMap")).and_then(|v| v.as_u64()).map(|v| v as u32).ok_or_else(
                || DocError::new("no bit mask: put the dump's .meta beside it or mount with -o bitmap=N"),
            )?,
        };
        let ground_up = meta.as_ref().and_then(|m| m.get("groundUp")).and_then(|v| v.as_bool()).unwrap_or(true);
        Ok(Shape {
            layout,
            bitmap,
            sky_light: option_bool(ctx, "sky_light", true)?,
            biomes: option_bool(ctx, "biomes", ground_up)?,
        })
    }

    fn section_of(&self, path: &str) -> Option<(usize, String)> {
        let rest = path.strip_prefix("sections/")?;
        let (n, file) = rest.split_once('/')?;
        let i = self.chunk.sections.iter().position(|s| s.y.to_string() == n)?;
        Some((i, file.to_string()))
    }

    /// How a state is written in `blocks`: id:meta before 1.13; the
    /// state's name when the version's table has it, else its number.
    fn label(&self, state: u32) -> String {
        match (self.shape.layout, self.states) {
            (Layout::Spanning, _) => id_meta(state),
            (Layout::Padded, Some(t)) => t.name(state).unwrap_or_else(|| state.to_string()),
            (Layout::Padded, None) => state.to_string(),
        }
    }

    fn parse_label(&self, label: &str) -> Result<u32, String> {
        match (self.shape.layout, self.states) {
            (Layout::Spanning, _) => parse_id_meta(label),
            (Layout::Padded, Some(t)) => t.parse(label),
            (Layout::Padded, None) => label.parse().map_err(|_| format!("'{label}' is not a block state number")),
        }
    }

    /// One line of `palette`: before 1.13 "index id:meta name" (the
    /// common 1.12 names), after "index state name[properties]".
    fn palette_line(&self, index: usize, state: u32) -> String {
        let name = match (self.shape.layout, self.states) {
            (Layout::Spanning, _) => NAMES.iter().find(|(id, _)| *id == state >> 4).map(|(_, n)| n.to_string()),
            (Layout::Padded, Some(t)) => t.name(state),
            (Layout::Padded, None) => None,
        };
        let head = match self.shape.layout {
            Layout::Spanning => format!("{index} {}", id_meta(state)),
            Layout::Padded => format!("{index} {state}"),
        };
        match name {
            Some(n) if !n.is_empty() => format!(
                "{head} {n}
"
            ),
            _ => format!(
                "{head}
"
            ),
        }
    }

    fn frame(y: u8) -> Frame {
        Frame { size: [16, 16, 16], origin: [0, 16 * y as i64, 0], rows: Rows::ZAscending }
    }
}

/// Whether the game leaves the state out of a section's block count
/// (`isAir`: air, cave_air, void_air).
fn is_air(layout: Layout, table: Option<&StateTable>, state: u32) -> bool {
    match (layout, table) {
        (Layout::Spanning, _) => state >> 4 == 0,
        (Layout::Padded, Some(t)) => t.is_air(state),
        (Layout::Padded, None) => state == 0,
    }
}

/// A section's light as 16 `y=N` levels of 16 rows of 16 hex digits
/// (`y0`: the section's index; negative in 1.18+ worlds).
pub(crate) fn render_light(light: &[u8], y0: i64) -> String {
    let mut s = String::new();
    for y in 0..16 {
        if y > 0 {
            s.push('\n');
        }
        s.push_str(&format!("y={}\n", 16 * y0 + y as i64));
        for z in 0..16 {
            for x in 0..16 {
                s.push(char::from_digit(nibble(light, y * 256 + z * 16 + x) as u32 & 15, 16).unwrap_or('?'));
            }
            s.push('\n');
        }
    }
    s
}

/// Read back [`render_light`]'s text.
pub(crate) fn parse_light(text: &str, y0: i64) -> DocResult<Vec<u8>> {
    let mut light = vec![0u8; 2048];
    let mut level: Option<usize> = None;
    let mut rows = 0;
    let mut seen = [false; 16];
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_end();
        if t.is_empty() {
            continue;
        }
        if let Some(v) = t.strip_prefix("y=") {
            if let Some(prev) = level
                && rows != 16
            {
                return Err(DocError::at_line(
                    i + 1,
                    format!("level y={} has {rows} rows, 16 expected", 16 * y0 + prev as i64),
                ));
            }
            let y: i64 = v.parse().map_err(|_| DocError::at_line(i + 1, format!("'{t}' is not y=N")))?;
            let l = usize::try_from(y - 16 * y0)
                .ok()
                .filter(|l| *l < 16)
                .ok_or_else(|| DocError::at_line(i + 1, format!("y={y} is not in this section")))?;
            if seen[l] {
                return Err(DocError::at_line(i + 1, format!("y={y} twice")));
            }
            seen[l] = true;
            level = Some(l);
            rows = 0;
            continue;
        }
        let l = level.ok_or_else(|| DocError::at_line(i + 1, "a row before the first y= line"))?;
        if rows == 16 {
            return Err(DocError::at_line(i + 1, "a 17th row"));
        }
        let digits: Vec<u8> = t
            .chars()
            .map(|c| c.to_digit(16).map(|d| d as u8))
            .collect::<Option<_>>()
            .ok_or_else(|| DocError::at_line(i + 1, "light is one hex digit (0-f) per block"))?;
        if digits.len() != 16 {
            return Err(DocError::at_line(i + 1, format!("{} digits, 16 expected", digits.len())));
        }
        for (x, d) in digits.into_iter().enumerate() {
            set_nibble(&mut light, l * 256 + rows * 16 + x, d);
        }
        rows += 1;
    }
    if let Some(l) = seen.iter().position(|s| !s) {
        return Err(DocError::new(format!("level y={} is missing", 16 * y0 + l as i64)));
    }
    if rows != 16 {
        return Err(DocError::new("the last level does not have 16 rows"));
    }
    Ok(light)
}

impl Document for McChunk {
    const NAME: &'static str = "mcchunk";

    fn sniff(path: &Path, _head: &[u8]) -> bool {
        path.extension().is_some_and(|e| e == "dump") && path.with_extension("meta").is_file()
    }

    fn options() -> &'static [&'static str] {
        &["bitmap", "version", "sky_light", "biomes"]
    }

    fn companions(path: &Path) -> Vec<PathBuf> {
        vec![path.with_extension("meta")]
    }

    fn decode(bytes: &[u8], ctx: &Context) -> DocResult<Self> {
        let (version, layout, states) = Self::version(ctx)?;
        let shape = Self::shape(ctx, layout)?;
        let chunk = Chunk::decode(bytes, shape).map_err(DocError::new)?;
        Ok(McChunk { chunk, shape, version, states })
    }

    fn encode(&self) -> DocResult<Vec<u8>> {
        self.chunk.encode(self.shape).map_err(DocError::new)
    }

    fn entries(&self) -> Vec<Entry> {
        let mut v = vec![Entry::file("info", false), Entry::dir("sections")];
        let spanning = self.shape.layout == Layout::Spanning;
        for s in &self.chunk.sections {
            let d = format!("sections/{}", s.y);
            v.push(Entry::dir(d.clone()));
            v.push(Entry::file(format!("{d}/palette"), false));
            v.push(Entry::file(format!("{d}/blocks"), true));
            if spanning {
                v.push(Entry::file(format!("{d}/block_light"), true));
                if self.shape.sky_light {
                    v.push(Entry::file(format!("{d}/sky_light"), true));
                }
            }
        }
        if self.shape.biomes && spanning {
            v.push(Entry::file("biomes", true));
        }
        v
    }

    fn render(&self, path: &str) -> DocResult<Vec<u8>> {
        let text = match path {
            "info" => format!(
                "version = {}\nbitmap = {}\nsections = {}\nsky_light = {}\nbiomes = {}\n{}",
                if self.shape.layout == Layout::Spanning { "1.9-1.12" } else { &self.version },
                self.shape.bitmap,
                self.chunk.sections.len(),
                self.shape.sky_light,
                self.shape.biomes && self.shape.layout == Layout::Spanning,
                self.states.map_or(String::new(), |t| format!("block_states = {} (minecraft-data)\n", t.version))
            ),
            "biomes" => self
                .chunk
                .biomes
                .chunks(16)
                .map(|r| r.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(" ") + "\n")
                .collect(),
            _ => {
                let (i, file) = self.section_of(path).ok_or_else(|| DocError::new("no such file"))?;
                let s = &self.chunk.sections[i];
                match file.as_str() {
                    "palette" if s.palette.is_empty() => format!("# direct: {} bits, global block-state ids\n", s.bits),
                    "palette" => s.palette.iter().enumerate().map(|(k, st)| self.palette_line(k, *st)).collect(),
                    "blocks" => {
                        let mut b = LegendBuilder::new();
                        let idx: Vec<usize> = s
                            .states
                            .iter()
                            .map(|st| b.index(&self.label(*st), if *st == 0 { &['.'] } else { &[] }))
                            .collect();
                        layers::render(&Self::frame(s.y), b.entries(), |x, y, z| idx[y * 256 + z * 16 + x])
                    }
                    "block_light" => render_light(&s.block_light, s.y as i64),
                    "sky_light" => render_light(&s.sky_light, s.y as i64),
                    _ => return Err(DocError::new("no such file")),
                }
            }
        };
        Ok(text.into_bytes())
    }

    fn apply(&mut self, path: &str, content: &[u8]) -> DocResult<()> {
        let text = std::str::from_utf8(content).map_err(|_| DocError::new("not UTF-8 text"))?;
        if path == "biomes" {
            let mut b = Vec::with_capacity(256);
            for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                let row: Vec<u8> = line
                    .split_whitespace()
                    .map(|v| {
                        v.parse::<u8>()
                            .map_err(|_| DocError::at_line(i + 1, format!("'{v}' is not a biome id 0 to 255")))
                    })
                    .collect::<DocResult<_>>()?;
                if row.len() != 16 {
                    return Err(DocError::at_line(i + 1, format!("{} biomes, 16 expected", row.len())));
                }
                b.extend(row);
            }
            if b.len() != 256 {
                return Err(DocError::new(format!("{} rows, 16 expected", b.len() / 16)));
            }
            self.chunk.biomes = b;
            return Ok(());
        }
        let (i, file) = self.section_of(path).ok_or_else(|| DocError::new("no such file"))?;
        let layout = self.shape.layout;
        let y = self.chunk.sections[i].y;
        let states: Vec<u32> = match file.as_str() {
            "blocks" => {
                let d = layers::parse(&Self::frame(y), text)?;
                let legend: Vec<u32> = d
                    .legend
                    .iter()
                    .map(|e| self.parse_label(&e.label).map_err(|m| DocError::at_line(e.line, m)))
                    .collect::<DocResult<_>>()?;
                let mut all = vec![0u32; 4096];
                for y in 0..16 {
                    for z in 0..16 {
                        for x in 0..16 {
                            all[y * 256 + z * 16 + x] = legend[d.at(x, y, z)];
                        }
                    }
                }
                all
            }
            _ => Vec::new(),
        };
        let table = self.states;
        let s = &mut self.chunk.sections[i];
        match file.as_str() {
            "blocks" => {
                if states != s.states {
                    s.set_states(states, layout, |st| is_air(layout, table, st)).map_err(DocError::new)?;
                }
            }
            "block_light" => s.block_light = parse_light(text, s.y as i64)?,
            "sky_light" if self.shape.sky_light => s.sky_light = parse_light(text, s.y as i64)?,
            _ => return Err(DocError::new("this file cannot be written")),
        }
        Ok(())
    }

    /// `biomes` is 16 rows.
    fn complete(&self, path: &str, content: &[u8]) -> bool {
        path == "biomes" && crate::documents::complete_lines(content, 16)
    }

    fn readme(&self) -> String {
        format!(
            "worldfs: this directory is a Minecraft chunk ({} section(s), {}).\n\n\
             info                    version, bit mask, sky light, biomes\n\
             sections/N/             one per present section, y 16N to 16N+15:\n\
               palette               {} (read-only)\n\
               blocks                the blocks drawn as text: a legend of {}, then y=N levels,\n\
                                     rows z = 0 first, one character per x (docs/layout.md)\n\
               block_light           y=N levels of 16 rows of 16 hex digits (1.9-1.12)\n\
               sky_light             the same\n\
             biomes                  16 rows of 16 biome ids (1.9-1.12)\n\n\
             Edits keep the palette as the game keeps it (new states appended; made again\n\
             when it outgrows its bits). A bad edit fails at close (EINVAL); the reason is\n\
             in write-errors.\n",
            self.chunk.sections.len(),
            if self.shape.layout == Layout::Spanning {
                "1.9-1.12 layout".to_string()
            } else {
                format!("{} layout", self.version)
            },
            if self.shape.layout == Layout::Spanning {
                "\"index id:meta name\""
            } else {
                "\"index state name[properties]\""
            },
            if self.shape.layout == Layout::Spanning { "id:meta" } else { "block state names (or numbers)" },
        )
    }
}
