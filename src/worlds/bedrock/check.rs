//! `worldfs check WORLD` of a Bedrock world: level.dat decoded, then every
//! chunk of every dimension read from the database (each subchunk's
//! palettes and indices, its biomes, block entities, entities and the
//! actor digest's entities: `ChunkDoc::problems`) and every player's
//! record. Prints the counts and each problem by dimension and chunk; the
//! exit status is 1 if there is one.

use super::chunk::ChunkDoc;
use super::db::fs_err;
use std::collections::BTreeMap;
use std::path::Path;
use worldfs_codec::bedrock::key::{ChunkPos, Key};
use worldfs_codec::bedrock::subchunk::Decoded;
use worldfs_codec::minecraft::nbt::{self, Flavor};
use worldfs_store::leveldb::bedrock::BedrockDb;

#[derive(Default, Debug)]
pub(crate) struct Report {
    /// Chunks per dimension.
    pub(crate) chunks: BTreeMap<i32, u64>,
    /// Subchunks per version.
    pub(crate) subchunks: BTreeMap<u8, u64>,
    pub(crate) block_entities: u64,
    pub(crate) entities: u64,
    pub(crate) players: u64,
    /// (where: `level.dat`, `D:X,Z`, `player NAME`; what is wrong).
    pub(crate) corrupt: Vec<(String, String)>,
}

/// Check the world at `world` (read-only: a snapshot, beside a running game).
pub(crate) fn check(world: &Path, progress: &dyn Fn(u64, u64)) -> Result<Report, String> {
    let mut r = Report::default();
    let level = std::fs::read(world.join("level.dat")).map_err(|e| format!("{}/level.dat: {e}", world.display()))?;
    if let Err(e) = worldfs_codec::bedrock::level::decode(&level) {
        r.corrupt.push(("level.dat".into(), e));
    }
    let db = BedrockDb::open(&world.join("db"), true)?;
    let shared = super::db::Db::new(db, None);
    let chunks = shared.chunks().map_err(|e| e.message)?;
    for (i, &pos) in chunks.iter().enumerate() {
        progress(i as u64, chunks.len() as u64);
        check_chunk(&shared, pos, &mut r)?;
    }
    for prefix in [&b"player_"[..], b"~local_player"] {
        for (k, v) in shared.store.prefixed(prefix).map_err(|e| fs_err(e).message)? {
            if let Key::Player(name) = Key::parse(&k) {
                r.players += 1;
                if let Err(e) = nbt::decode_as(&v, Flavor::Bedrock) {
                    r.corrupt.push((format!("player {name}"), e));
                }
            }
        }
    }
    Ok(r)
}

fn check_chunk(db: &super::db::Db, pos: ChunkPos, r: &mut Report) -> Result<(), String> {
    let doc = ChunkDoc::new(pos, db.records(pos).map_err(|e| e.message)?);
    *r.chunks.entry(pos.dim).or_default() += 1;
    for (_, d) in doc.sections() {
        let v = match d {
            Decoded::Paletted(s) => s.version,
            Decoded::Numeric(n) => n.version,
        };
        *r.subchunks.entry(v).or_default() += 1;
    }
    r.block_entities += doc.block_entities().map_or(0, |b| b.len() as u64);
    r.entities += doc.entities().map_or(0, |e| e.len() as u64);
    let at = format!("{}:{},{}", pos.dim, pos.x, pos.z);
    r.corrupt.extend(doc.problems().into_iter().map(|p| (at.clone(), p)));
    Ok(())
}

impl Report {
    pub(crate) fn json(&self, world: &Path) -> serde_json::Value {
        let corrupt: Vec<serde_json::Value> =
            self.corrupt.iter().map(|(w, why)| serde_json::json!({"chunk": w, "reason": why})).collect();
        serde_json::json!({
            "bedrock_world": world.display().to_string(),
            "chunks": self.chunks.iter().map(|(d, n)| (d.to_string(), *n)).collect::<BTreeMap<_, _>>(),
            "subchunks_per_version": self.subchunks.iter().map(|(v, n)| (v.to_string(), *n)).collect::<BTreeMap<_, _>>(),
            "block_entities": self.block_entities,
            "entities": self.entities,
            "players": self.players,
            "corrupt": corrupt,
        })
    }

    pub(crate) fn print(&self, world: &Path, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(out, "Minecraft Bedrock world: {}", world.display())?;
        let dims = ["overworld", "nether", "end"];
        for (d, n) in &self.chunks {
            writeln!(out, "chunks ({}): {n}", dims.get(*d as usize).copied().unwrap_or("dimension ?"))?;
        }
        writeln!(out, "subchunks: {}", self.subchunks.values().sum::<u64>())?;
        for (v, n) in &self.subchunks {
            writeln!(out, "  version {v}: {n}")?;
        }
        writeln!(out, "block entities: {}", self.block_entities)?;
        writeln!(out, "entities: {}", self.entities)?;
        writeln!(out, "players: {}", self.players)?;
        writeln!(out, "corrupt: {}", self.corrupt.len())?;
        for (w, why) in &self.corrupt {
            writeln!(out, "  {w}: {why}")?;
        }
        Ok(())
    }
}
