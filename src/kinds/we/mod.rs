//! WorldEdit files (`.we`): the Lua-data reader ([`lua`]), the codec
//! ([`codec`]), the world transfer ([`transfer`]).

pub mod codec;
pub mod lua;
pub mod transfer;
