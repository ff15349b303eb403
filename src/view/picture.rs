//! Pictures of a world seen from above (pure): node colours, the top-most
//! visible node of each column of a block (PNG files: `pixels`). Used by
//! `top.png` in every block directory, the tiles of `MNT/map/` and
//! `worldfs map`.
//!
//! Colours come from `colors.txt` (minetestmapper's format, `name r g b`
//! per line, made by contrib/make-colors.sh from the real game's textures)
//! or a file of the user's (`-o colors=FILE`), and for names the built-in
//! table lacks, the installed game's textures (`game_textures`, the one
//! part that reads files); a name without a colour gets a stable colour
//! from a hash of its name, so unknown nodes still show. Minecraft worlds
//! use `mc_colors.txt` (made by contrib/make-mc-colors.sh from the game's
//! block models and textures).

pub use super::pixels::{Rgba, decode_png, encode_png, scale};
use std::collections::HashMap;
use worldfs_codec::luanti::block::node_index;
use worldfs_codec::luanti::{Block, MappingEntry};

const DEFAULT_COLORS: &str = include_str!("colors.txt");
const MINECRAFT_COLORS: &str = include_str!("mc_colors.txt");

pub(crate) const NOTHING: Rgba = [0, 0, 0, 0];

static COLORS: std::sync::OnceLock<Colors> = std::sync::OnceLock::new();

/// The colours pictures use: the user's (set once, at mount) or the
/// built-in ones.
pub(crate) fn colors() -> &'static Colors {
    COLORS.get_or_init(Colors::builtin)
}

/// The colours of Minecraft blocks (`minecraft:stone` and the like; air
/// and the other see-through blocks have alpha 0).
#[allow(clippy::expect_used, reason = "the built-in colour tables are worldfs's own, each read by a unit test")]
pub(crate) fn minecraft_colors() -> &'static Colors {
    static MINECRAFT: std::sync::OnceLock<Colors> = std::sync::OnceLock::new();
    MINECRAFT.get_or_init(|| Colors::parse(MINECRAFT_COLORS).expect("the built-in Minecraft colours parse"))
}

/// Use these colours for every picture of this process (before the first).
pub(crate) fn set_colors(c: Colors) -> Result<(), String> {
    COLORS.set(c).map_err(|_| "the colours are already chosen".to_string())
}

/// Where minetestmapper looks for a colors.txt, in its order: the world
/// directory, the user's ~/.minetest, then the shared data of an installed
/// minetestmapper.
pub(crate) fn usual_places(world: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v = vec![world.join("colors.txt")];
    if let Some(home) = std::env::var_os("HOME") {
        v.push(std::path::Path::new(&home).join(".minetest/colors.txt"));
    }
    v.push("/usr/share/minetest/colors.txt".into());
    v.push("/usr/local/share/minetest/colors.txt".into());
    v
}

/// The colours for a world: FILE when given, else the first colors.txt of
/// the usual places, else the built-in ones (made from minetest_game's
/// textures) with, for names they lack, the textures of the world's game
/// when it is installed. Returns what was chosen, for the log.
pub fn choose(world: &std::path::Path, file: Option<&std::path::Path>) -> Result<(Colors, String), String> {
    let read = |p: &std::path::Path| -> Result<Colors, String> {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        Colors::parse(&text).map_err(|e| format!("{}: {e}", p.display()))
    };
    if let Some(f) = file {
        return Ok((read(f)?, f.display().to_string()));
    }
    for p in usual_places(world) {
        if p.is_file() {
            return Ok((read(&p)?, p.display().to_string()));
        }
    }
    match super::game_textures::GameTextures::of_world(world) {
        Some(game) => {
            let from = format!("the built-in colours, else the textures of {}", game.game.display());
            Ok((Colors::builtin().with_textures(game), from))
        }
        None => Ok((Colors::builtin(), "the built-in colours (minetest_game's textures)".into())),
    }
}

#[derive(Clone)]
pub struct Colors {
    by_name: HashMap<Vec<u8>, Rgba>,
    /// For names the table lacks: the game's textures, each looked up once.
    textures: Option<std::sync::Arc<Textures>>,
}

struct Textures {
    game: super::game_textures::GameTextures,
    seen: parking_lot::RwLock<HashMap<Vec<u8>, Option<Rgba>>>,
}

impl std::fmt::Debug for Colors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let game = self.textures.as_ref().map(|t| t.game.game.display().to_string());
        f.debug_struct("Colors").field("names", &self.by_name.len()).field("textures_of", &game).finish()
    }
}

/// Names that are never drawn (seen through).
fn invisible(name: &[u8]) -> bool {
    matches!(name, b"air" | b"ignore" | b"unknown")
}

impl Colors {
    /// The colours made from minetest_game's textures.
    #[allow(clippy::expect_used, reason = "the built-in colour tables are worldfs's own, each read by a unit test")]
    pub fn builtin() -> Colors {
        Colors::parse(DEFAULT_COLORS).expect("the built-in colours parse")
    }

    /// `name r g b [a]` lines; `#` comments and blank lines skipped.
    pub fn parse(text: &str) -> Result<Colors, String> {
        let mut by_name = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let f: Vec<&str> = t.split_whitespace().collect();
            let num = |s: &str| s.parse::<u8>().map_err(|_| format!("line {}: '{s}' is not 0 to 255", i + 1));
            if f.len() < 4 {
                return Err(format!("line {}: expected 'name r g b', found '{t}'", i + 1));
            }
            let a = if f.len() >= 5 { num(f[4])? } else { 255 };
            by_name.insert(f[0].as_bytes().to_vec(), [num(f[1])?, num(f[2])?, num(f[3])?, a]);
        }
        Ok(Colors { by_name, textures: None })
    }

    /// These colours, and for names they lack the colour of the game's
    /// texture for the name (see `game_textures`).
    pub fn with_textures(mut self, game: super::game_textures::GameTextures) -> Colors {
        self.textures = Some(std::sync::Arc::new(Textures { game, seen: Default::default() }));
        self
    }

    /// Whether the table names this node (else it gets a colour made from
    /// its name).
    pub fn has(&self, name: &[u8]) -> bool {
        self.by_name.contains_key(name)
    }

    /// A node's colour (NOTHING for air and the like).
    pub fn of(&self, name: &[u8]) -> Rgba {
        if invisible(name) {
            return NOTHING;
        }
        if let Some(c) = self.by_name.get(name) {
            return *c;
        }
        if let Some(t) = &self.textures {
            let known = t.seen.read().get(name).copied();
            let c = known.unwrap_or_else(|| {
                let c = t.game.color(name);
                t.seen.write().insert(name.to_vec(), c);
                c
            });
            if let Some(c) = c {
                return c;
            }
        }
        // FNV-1a of the name: the same colour in every picture and run.
        let h = name.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
        [64 + (h & 0x7f) as u8, 64 + ((h >> 8) & 0x7f) as u8, 64 + ((h >> 16) & 0x7f) as u8, 255]
    }
}

/// The top of one column: the colour of its highest visible node and that
/// node's height in the block (0 to 15), if the block has one.
pub(crate) type Top = Option<(Rgba, u8)>;

/// The top of every column of a block given by its name-id mapping and
/// node ids (`Block` or `NodeIds`), `[z][x]` with z = 0 the south.
pub(crate) fn block_tops(mapping: &[MappingEntry], param0: &[u16], colors: &Colors) -> [[Top; 16]; 16] {
    // A table by content id: this runs for every node looked at, so no hashing.
    let len = mapping.iter().map(|m| m.id as usize + 1).max().unwrap_or(0);
    let mut by_id = vec![NOTHING; len];
    for m in mapping {
        by_id[m.id as usize] = colors.of(&m.name);
    }
    let mut out = [[None; 16]; 16];
    if by_id.iter().all(|c| c[3] == 0) {
        return out; // all air: most blocks at the top of a column
    }
    // Top down through each z plane, one row of 16 x at a time, keeping a
    // bit per x column still to find.
    for (z, row) in out.iter_mut().enumerate() {
        let mut left: u16 = 0xffff;
        for y in (0..16).rev() {
            let line = &param0[node_index(0, y, z)..node_index(0, y, z) + 16];
            for (x, &id) in line.iter().enumerate() {
                if left & (1 << x) == 0 {
                    continue;
                }
                let c = by_id.get(id as usize).copied().unwrap_or(NOTHING);
                if c[3] > 0 {
                    row[x] = Some((c, y as u8));
                    left &= !(1 << x);
                }
            }
            if left == 0 {
                break;
            }
        }
    }
    out
}

/// A colour darkened or lightened by height: `h` in nodes relative to a
/// reference, so that slopes show.
pub fn shade(c: Rgba, h: i32) -> Rgba {
    let f = (1.0 + h.clamp(-64, 64) as f32 / 128.0).clamp(0.5, 1.5);
    let s = |v: u8| ((v as f32 * f).round().clamp(0.0, 255.0)) as u8;
    [s(c[0]), s(c[1]), s(c[2]), c[3]]
}

/// `top.png` of a block: 16 x 16 pixels, north up (the row of z = 15
/// first), west left; columns with nothing visible are transparent.
pub fn block_top_png(block: &Block, colors: &Colors) -> Vec<u8> {
    let tops = block_tops(&block.mapping, &block.param0, colors);
    let mut px = Vec::with_capacity(16 * 16 * 4);
    for row in tops.iter().rev() {
        for top in row {
            px.extend_from_slice(&match *top {
                Some((c, y)) => shade(c, y as i32 * 2 - 16),
                None => NOTHING,
            });
        }
    }
    encode_png(16, 16, &px)
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldfs_codec::luanti::MappingEntry;

    #[test]
    fn tops_and_png() {
        let colors = Colors::builtin();
        assert_eq!(colors.of(b"default:stone"), [97, 94, 93, 255]);
        assert_eq!(colors.of(b"air"), NOTHING);
        assert_eq!(colors.of(b"nomod:thing"), colors.of(b"nomod:thing"));
        let mut b = Block::new_air(29);
        b.mapping.push(MappingEntry { id: 1, name: b"default:stone".to_vec() });
        b.param0[node_index(3, 5, 15)] = 1;
        b.param0[node_index(3, 2, 15)] = 1;
        let tops = block_tops(&b.mapping, &b.param0, &colors);
        assert_eq!(tops[15][3], Some(([97, 94, 93, 255], 5)));
        assert_eq!(tops[0][0], None);
        let (w, h, px) = decode_png(&block_top_png(&b, &colors)).unwrap();
        assert_eq!((w, h), (16, 16));
        // z = 15 is the top row; x = 3 the fourth pixel
        assert_eq!(px[3 * 4 + 3], 255);
        assert_eq!(px[(15 * 16) * 4 + 3], 0);
        assert!(Colors::parse("a 1 2").is_err() && Colors::parse("a 1 2 300").is_err());
    }
}
