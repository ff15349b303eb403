//! Colours from the world's game, when it is installed: for a node
//! `MOD:NAME` without a colour in the table, the average of the opaque
//! pixels of the texture `MOD_NAME_top.png` (else `MOD_NAME.png`) of the
//! game's mods, as Luanti's mods name their textures. A guess from the name
//! (the node definitions are Lua, which only the engine runs), used only
//! where no colors.txt was found; contrib/make-colors.sh makes the exact
//! table from the real server's node list.
//!
//! Not pure: it reads the game's texture files (once per name).

use super::pixels::{Rgba, decode_png};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where Luanti looks for games, in its order: $MINETEST_GAME_PATH, the
/// user's, then the system's (Debian's minetest-data among them).
fn game_dirs(id: &str) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("MINETEST_GAME_PATH") {
        roots.extend(std::env::split_paths(&p));
    }
    if let Some(home) = std::env::var_os("HOME") {
        roots.push(Path::new(&home).join(".minetest/games"));
    }
    roots.extend(
        ["/usr/share/games/minetest/games", "/usr/share/minetest/games", "/usr/local/share/minetest/games"]
            .map(PathBuf::from),
    );
    // Debian's minetest_game is a directory `minetest_game`, gameid `minetest`.
    roots.iter().flat_map(|r| [r.join(id), r.join(format!("{id}_game"))]).filter(|d| d.is_dir()).collect()
}

/// The world's `gameid` from world.mt.
fn game_id(world: &Path) -> Option<String> {
    let mt = std::fs::read_to_string(world.join("world.mt")).ok()?;
    mt.lines()
        .filter_map(|l| l.split_once('='))
        .find(|(k, _)| k.trim() == "gameid")
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty() && !v.contains('/'))
}

/// Texture file name -> path, over the game's mods (and modpacks) and the
/// world's own mods.
pub struct GameTextures {
    files: HashMap<String, PathBuf>,
    pub(crate) game: PathBuf,
}

impl GameTextures {
    /// The textures of the world's game, if it is installed.
    pub fn of_world(world: &Path) -> Option<GameTextures> {
        let game = game_dirs(&game_id(world)?).into_iter().next()?;
        let mut files = HashMap::new();
        for root in [world.join("worldmods"), game.join("mods")] {
            index(&root, 0, &mut files);
        }
        Some(GameTextures { files, game })
    }

    /// The colour of a node from its texture, if one is found.
    pub(crate) fn color(&self, name: &[u8]) -> Option<Rgba> {
        let name = std::str::from_utf8(name).ok()?;
        let (m, n) = name.split_once(':')?;
        [format!("{m}_{n}_top.png"), format!("{m}_{n}.png")]
            .iter()
            .find_map(|f| self.files.get(f))
            .and_then(|p| average(&std::fs::read(p).ok()?))
    }
}

/// Every `textures/` directory below `dir` (mods, modpacks: a few levels).
fn index(dir: &Path, depth: usize, files: &mut HashMap<String, PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if !p.is_dir() {
            continue;
        }
        if e.file_name() == "textures" {
            for t in std::fs::read_dir(&p).into_iter().flatten().flatten() {
                let name = t.file_name().to_string_lossy().into_owned();
                if name.ends_with(".png") {
                    files.entry(name).or_insert_with(|| t.path());
                }
            }
        } else if depth < 3 {
            index(&p, depth + 1, files);
        }
    }
}

/// The average colour of a texture's opaque pixels.
pub(crate) fn average(png: &[u8]) -> Option<Rgba> {
    let (_, _, px) = decode_png(png).ok()?;
    let (mut sum, mut n) = ([0u64; 3], 0u64);
    for p in px.chunks(4).filter(|p| p[3] >= 128) {
        for c in 0..3 {
            sum[c] += p[c] as u64;
        }
        n += 1;
    }
    (n > 0).then(|| [(sum[0] / n) as u8, (sum[1] / n) as u8, (sum[2] / n) as u8, 255])
}
