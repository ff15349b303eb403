//! WorldEdit files (`.we`): the file format and the subset of Lua it is
//! written in.

pub mod codec;
pub mod lua;
