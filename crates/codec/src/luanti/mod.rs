//! Luanti (formerly Minetest): the map block (versions 22 to 29) with its
//! node metadata, inventories, static objects and timers, and the records
//! kept beside the map: players, accounts and mod storage.

pub mod auth;
pub mod block;
pub mod inventory;
pub mod itemstring;
pub mod legacy_meta;
pub mod mod_storage;
pub mod nodemeta;
pub mod objects;
pub mod player;

pub use block::{Block, MappingEntry, NodeCounts, NodeIds};
