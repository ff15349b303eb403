//! Bytes <-> structures for everything stored in a world. Pure: no I/O.

pub mod auth;
pub mod block;
pub mod bytes;
pub mod compress;
pub mod filepatch;
pub mod inventory;
pub mod itemstring;
pub mod jsonish;
pub mod legacy_meta;
pub mod lz4block;
pub mod mod_storage;
pub mod nbt;
pub mod nodemeta;
pub mod objects;
pub mod player;
pub mod region;
pub mod snbt;

pub use block::{Block, MappingEntry, NodeCounts, NodeIds};
pub use bytes::DecodeError;
