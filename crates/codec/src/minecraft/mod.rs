//! Minecraft Java edition: NBT and its text form SNBT, region files
//! (Anvil) and their LZ4 chunks, the chunk sections of the network
//! protocol's "Chunk Data" packet, and the names of block states.

pub mod lz4block;
pub mod nbt;
pub mod packet;
pub mod region;
pub mod snbt;
pub mod states;
