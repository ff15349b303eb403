//! worldfs-codec: the file formats of game worlds, bytes <-> structures.
//!
//! Pure: no I/O, no FUSE, no database client. Every decoder is strict (a
//! bad input is an error that says what, where and why, never a panic) and
//! every encoder writes what the game itself reads back. This is the crate
//! the fuzz targets exercise, and the one other tools (editors, mappers)
//! can use without the filesystem.
//!
//! - [`luanti`]: Luanti (Minetest) map blocks and their parts, and the
//!   records beside the map (players, accounts, mod storage).
//! - [`mts`] and [`we`]: Luanti schematics and WorldEdit files.
//! - [`bedrock`]: Minecraft Bedrock's level.dat, database keys, subchunks,
//!   biomes and NBT records.
//! - [`minecraft`]: Minecraft Java's NBT and SNBT, region files, LZ4
//!   chunks, chunk sections of the network protocol, block state names.
//! - [`twmap`]: Teeworlds/DDNet map datafiles, items and tiles.
//! - [`cubeset`]: Cuberite prefab sets (a Lua subset).
//! - [`bytes`], [`compress`], [`jsonish`], [`lua_escape`] and [`error`]:
//!   what several formats share.

#![warn(missing_docs)]

pub mod bedrock;
pub mod bytes;
pub mod compress;
pub mod cubeset;
pub mod error;
pub mod filepatch;
pub mod jsonish;
pub mod lua_escape;
pub mod luanti;
pub mod minecraft;
pub mod mts;
pub mod twmap;
pub mod we;

pub use bytes::DecodeError;
pub use error::{DocError, DocResult};
