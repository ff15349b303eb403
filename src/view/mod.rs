//! Block <-> the files a user sees. Pure functions: no I/O, no FUSE.
//!
//! A block directory holds the files of [`BlockFile`]; `meta/X,Y,Z/` holds
//! one directory per node with metadata (see [`MetaFile`]).

pub mod decimal;
pub mod escape;
pub mod game_textures;
pub mod layers;
mod objects;
pub mod parse;
pub mod picture;
pub(crate) mod pixels;
pub mod render;
pub mod tiles;

pub use render::*;

use worldfs_codec::jsonish::{self, HighBytes};

/// The files of a decodable block directory, in listing order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockFile {
    Info,
    Names,
    Nodes,
    /// The block drawn as text (`view::layers`).
    Layers,
    Param0,
    Param1,
    Param2,
    Timers,
    Objects,
    Raw,
    /// The block as a Luanti schematic (read-only; `cp` it out).
    Schematic,
    /// The block seen from above (read-only PNG, `view::picture`).
    Top,
    /// Only in a block that cannot be decoded: what failed, and where.
    Error,
}

impl BlockFile {
    /// Files of a block that decodes (the `meta` directory comes after these).
    pub const DECODED: [BlockFile; 12] = [
        BlockFile::Info,
        BlockFile::Names,
        BlockFile::Nodes,
        BlockFile::Layers,
        BlockFile::Param0,
        BlockFile::Param1,
        BlockFile::Param2,
        BlockFile::Timers,
        BlockFile::Objects,
        BlockFile::Raw,
        BlockFile::Schematic,
        BlockFile::Top,
    ];
    /// Files of a block that does not decode.
    pub(crate) const CORRUPT: [BlockFile; 2] = [BlockFile::Raw, BlockFile::Error];

    pub fn name(self) -> &'static str {
        match self {
            BlockFile::Info => "info",
            BlockFile::Names => "names",
            BlockFile::Nodes => "nodes",
            BlockFile::Layers => "layers",
            BlockFile::Param0 => "param0",
            BlockFile::Param1 => "param1",
            BlockFile::Param2 => "param2",
            BlockFile::Timers => "timers",
            BlockFile::Objects => "objects",
            BlockFile::Raw => "raw",
            BlockFile::Schematic => "schematic.mts",
            BlockFile::Top => "top.png",
            BlockFile::Error => "error",
        }
    }

    pub(crate) fn from_name(name: &[u8]) -> Option<BlockFile> {
        Self::DECODED.into_iter().chain([BlockFile::Error]).find(|f| f.name().as_bytes() == name)
    }

    /// Small stable number (1..) used in inode numbers.
    pub(crate) fn id(self) -> u8 {
        self as u8 + 1
    }

    pub(crate) fn from_id(id: u8) -> Option<BlockFile> {
        Self::DECODED.into_iter().chain([BlockFile::Error]).find(|f| f.id() == id)
    }
}

/// The files in `meta/X,Y,Z/` besides the `fields` directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetaFile {
    Private,
    Inventory,
}

impl MetaFile {
    pub(crate) const ALL: [MetaFile; 2] = [MetaFile::Private, MetaFile::Inventory];

    pub(crate) fn name(self) -> &'static str {
        match self {
            MetaFile::Private => "private",
            MetaFile::Inventory => "inventory",
        }
    }

    pub(crate) fn from_name(name: &[u8]) -> Option<MetaFile> {
        Self::ALL.into_iter().find(|f| f.name().as_bytes() == name)
    }
}

/// Quote a name or string for a line-based file: unchanged when it needs
/// no quoting, else JSON-ish quoted (raw UTF-8 when valid, `\u00XX` per byte
/// otherwise). Reversible with [`jsonish::unquote`].
pub(crate) fn quote_text(s: &[u8]) -> Vec<u8> {
    // Empty and `?N` (our mark for an unnamed content id) must be quoted to
    // read back as the same text.
    let unnamed_mark = s.len() > 1 && s[0] == b'?' && s[1..].iter().all(u8::is_ascii_digit);
    if !s.is_empty() && !unnamed_mark && !jsonish::needs_quoting(s) {
        return s.to_vec();
    }
    quote_always(s)
}

/// Like [`quote_text`] but always quoted.
pub(crate) fn quote_always(s: &[u8]) -> Vec<u8> {
    let high = if std::str::from_utf8(s).is_ok() { HighBytes::Raw } else { HighBytes::Escaped };
    jsonish::quote(s, high)
}
