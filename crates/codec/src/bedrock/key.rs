//! The keys of a Bedrock world's database. A chunk's parts are
//! `x z [dimension] tag [subchunk]`: two little-endian i32 chunk
//! coordinates, the dimension as a third i32 except for the overworld
//! (13 or 14 bytes, else 9 or 10), one byte saying what the value is, and
//! for SubChunkPrefix (47) the subchunk's index, a signed byte (negative
//! below y 0 from 1.18 on). Entities since 1.18.30 are kept apart: `digp`
//! and the chunk's coordinates (and dimension) list their ids, each the key
//! `actorprefix` and 8 bytes. Players are `~local_player` (the one who
//! plays on this device) and `player_server_<uuid>` (on a server); any
//! other key (`BiomeData`, `scoreboard`, villages) is kept as it is.

/// The tags (the byte after the coordinates) a chunk key can carry.
pub mod tag {
    /// Heights and 3D biomes (1.18+).
    pub const DATA_3D: u8 = 43;
    /// The chunk's format version (1.16.100+).
    pub const VERSION: u8 = 44;
    /// Heights and 2D biomes (before 1.18).
    pub const DATA_2D: u8 = 45;
    /// Heights and 2D biomes with colours (before 1.0).
    pub const DATA_2D_LEGACY: u8 = 46;
    /// One subchunk's blocks (its index follows the tag).
    pub const SUBCHUNK: u8 = 47;
    /// All blocks of a chunk as numeric ids (before 1.0).
    pub const LEGACY_TERRAIN: u8 = 48;
    /// The chunk's block entities (NBT roots one after another).
    pub const BLOCK_ENTITY: u8 = 49;
    /// The chunk's entities (before 1.18.30).
    pub const ENTITY: u8 = 50;
    /// Scheduled block ticks.
    pub const PENDING_TICKS: u8 = 51;
    /// How far the chunk's generation got.
    pub const FINALIZED_STATE: u8 = 54;
    /// The chunk's format version (before 1.16.100).
    pub const LEGACY_VERSION: u8 = 118;

    /// The tag's name as Mojang's documentation and rbedrock name it.
    pub fn name(t: u8) -> Option<&'static str> {
        Some(match t {
            43 => "Data3D",
            44 => "Version",
            45 => "Data2D",
            46 => "Data2DLegacy",
            47 => "SubChunkPrefix",
            48 => "LegacyTerrain",
            49 => "BlockEntity",
            50 => "Entity",
            51 => "PendingTicks",
            52 => "LegacyBlockExtraData",
            53 => "BiomeState",
            54 => "FinalizedState",
            55 => "ConversionData",
            56 => "BorderBlocks",
            57 => "HardcodedSpawners",
            58 => "RandomTicks",
            59 => "Checksums",
            60 => "GenerationSeed",
            61 => "GeneratedPreCavesAndCliffsBlending",
            62 => "BlendingBiomeHeight",
            63 => "MetaDataHash",
            64 => "BlendingData",
            65 => "ActorDigestVersion",
            118 => "LegacyVersion",
            119 => "AabbVolumes",
            _ => return None,
        })
    }
}

/// The overworld (dimension 0).
pub const OVERWORLD: i32 = 0;
/// The nether.
pub const NETHER: i32 = 1;
/// The end.
pub const END: i32 = 2;

/// A chunk column of one dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChunkPos {
    /// Its dimension.
    pub dim: i32,
    /// Its x in chunks.
    pub x: i32,
    /// Its z in chunks.
    pub z: i32,
}

impl ChunkPos {
    /// The bytes every key of this chunk starts with (coordinates and, out
    /// of the overworld, the dimension).
    pub fn prefix(&self) -> Vec<u8> {
        let mut k = Vec::with_capacity(12);
        k.extend(self.x.to_le_bytes());
        k.extend(self.z.to_le_bytes());
        if self.dim != OVERWORLD {
            k.extend(self.dim.to_le_bytes());
        }
        k
    }
}

/// What a key of the database is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Key {
    /// A part of a chunk: its tag and, for a subchunk (47), its index.
    Chunk {
        /// Its chunk.
        pos: ChunkPos,
        /// What part it is (`tag::*`).
        tag: u8,
        /// A subchunk's index.
        sub: Option<i8>,
    },
    /// `digp`: the ids of a chunk's entities (1.18.30+).
    Digest(ChunkPos),
    /// `actorprefix` and an entity's 8-byte id.
    Actor([u8; 8]),
    /// A player: `~local_player`, `player_server_<uuid>` or `player_<id>`.
    Player(String),
    /// Anything else, kept as it is.
    Other(Vec<u8>),
}

const DIGEST: &[u8] = b"digp";
const ACTOR: &[u8] = b"actorprefix";

fn i32_at(k: &[u8], at: usize) -> i32 {
    i32::from_le_bytes([k[at], k[at + 1], k[at + 2], k[at + 3]])
}

/// Whether `d` is a dimension the game keeps (keys whose third number is
/// anything else are text, such as `~local_player`, not chunk keys).
fn is_dimension(d: i32) -> bool {
    d == NETHER || d == END
}

impl Key {
    /// What `k` is. Never fails: a key of no known form is `Other`.
    pub fn parse(k: &[u8]) -> Key {
        let chunk = |dim: i32, tag: u8, sub: Option<i8>| Key::Chunk {
            pos: ChunkPos { dim, x: i32_at(k, 0), z: i32_at(k, 4) },
            tag,
            sub,
        };
        let known = |t: u8| tag::name(t).is_some();
        match k.len() {
            9 if known(k[8]) && k[8] != tag::SUBCHUNK => return chunk(OVERWORLD, k[8], None),
            10 if k[8] == tag::SUBCHUNK => return chunk(OVERWORLD, k[8], Some(k[9] as i8)),
            13 if is_dimension(i32_at(k, 8)) && known(k[12]) && k[12] != tag::SUBCHUNK => {
                return chunk(i32_at(k, 8), k[12], None);
            }
            14 if is_dimension(i32_at(k, 8)) && k[12] == tag::SUBCHUNK => {
                return chunk(i32_at(k, 8), k[12], Some(k[13] as i8));
            }
            _ => {}
        }
        if let Some(rest) = k.strip_prefix(DIGEST) {
            match rest.len() {
                8 => return Key::Digest(ChunkPos { dim: OVERWORLD, x: i32_at(rest, 0), z: i32_at(rest, 4) }),
                12 if is_dimension(i32_at(rest, 8)) => {
                    return Key::Digest(ChunkPos { dim: i32_at(rest, 8), x: i32_at(rest, 0), z: i32_at(rest, 4) });
                }
                _ => {}
            }
        }
        if let Some(id) = k.strip_prefix(ACTOR).and_then(|r| <[u8; 8]>::try_from(r).ok()) {
            return Key::Actor(id);
        }
        if let Ok(s) = std::str::from_utf8(k)
            && (s == "~local_player" || s.starts_with("player_"))
        {
            return Key::Player(s.to_string());
        }
        Key::Other(k.to_vec())
    }

    /// The key's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Key::Chunk { pos, tag, sub } => {
                let mut k = pos.prefix();
                k.push(*tag);
                if let Some(s) = sub {
                    k.push(*s as u8);
                }
                k
            }
            Key::Digest(pos) => [DIGEST, &pos.prefix()].concat(),
            Key::Actor(id) => [ACTOR, &id[..]].concat(),
            Key::Player(name) => name.as_bytes().to_vec(),
            Key::Other(k) => k.clone(),
        }
    }

    /// The chunk this key belongs to, if any.
    pub fn chunk(&self) -> Option<ChunkPos> {
        match self {
            Key::Chunk { pos, .. } | Key::Digest(pos) => Some(*pos),
            _ => None,
        }
    }
}

/// A key as text for messages and listings: printable ASCII as it is,
/// any other byte as `\xNN`.
pub fn show(k: &[u8]) -> String {
    let mut s = String::with_capacity(k.len());
    for &b in k {
        if (0x20..0x7f).contains(&b) && b != b'\\' {
            s.push(b as char);
        } else {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    s
}

/// A key in hexadecimal (the undo journal's name for it).
pub fn hex(k: &[u8]) -> String {
    k.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of a key written by [`hex`].
pub fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_keys_of_every_length_read_and_write_back() {
        let cases = [
            Key::Chunk { pos: ChunkPos { dim: 0, x: -1, z: 5 }, tag: tag::VERSION, sub: None },
            Key::Chunk { pos: ChunkPos { dim: 0, x: 3, z: -7 }, tag: tag::SUBCHUNK, sub: Some(-4) },
            Key::Chunk { pos: ChunkPos { dim: 1, x: 300, z: 2 }, tag: tag::BLOCK_ENTITY, sub: None },
            Key::Chunk { pos: ChunkPos { dim: 2, x: 0, z: 0 }, tag: tag::SUBCHUNK, sub: Some(7) },
            Key::Digest(ChunkPos { dim: 0, x: -2, z: 9 }),
            Key::Digest(ChunkPos { dim: 1, x: -2, z: 9 }),
            Key::Actor([1, 2, 3, 4, 5, 6, 7, 8]),
            Key::Player("~local_player".into()),
            Key::Player("player_server_1a2b".into()),
            Key::Other(b"BiomeData".to_vec()),
        ];
        let lens = [9, 10, 13, 14, 12, 16, 19, 13, 18, 9];
        for (k, n) in cases.iter().zip(lens) {
            let b = k.bytes();
            assert_eq!(b.len(), n, "{k:?}");
            assert_eq!(&Key::parse(&b), k);
        }
        // A negative index is the byte's two's complement.
        assert_eq!(cases[1].bytes()[9], 0xfc);
        // Text keys of chunk-key lengths are not chunk keys.
        for text in ["scoreboard", "mobevents", "Overworld", "schedulerWT"] {
            assert_eq!(Key::parse(text.as_bytes()), Key::Other(text.as_bytes().to_vec()));
        }
        assert_eq!(from_hex(&hex(&cases[3].bytes())), Some(cases[3].bytes()));
        assert_eq!(show(b"a\x00\\"), "a\\x00\\x5c");
    }
}
