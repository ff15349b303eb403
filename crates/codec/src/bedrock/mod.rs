//! Minecraft Bedrock Edition: a world is `level.dat` (an 8-byte header and
//! little-endian NBT, [`level`]) beside `db/`, Mojang's LevelDB, whose keys
//! ([`key`]) name a chunk's parts: its subchunks of blocks ([`subchunk`],
//! SubChunkPrefix versions 1, 8 and 9, and the 1.2-era and older forms
//! read-only), biomes and heights ([`biomes`], read-only), and little-endian
//! NBT records one after another ([`records`]: block entities, entities,
//! actor digests). The NBT itself is `minecraft::nbt` with
//! [`Flavor::Bedrock`](crate::minecraft::nbt::Flavor). Pure: bytes in,
//! structures out, every error naming what and where.

pub mod biomes;
pub mod key;
pub mod level;
pub mod records;
pub mod subchunk;
