//! Inode numbers computed from what a file is, so that millions of blocks
//! need no inode table. The top four bits say which kind of node it is:
//!
//! | tag | layout                                   | what               |
//! |-----|------------------------------------------|--------------------|
//! | 0   | small constants                          | root, blocks/, ... |
//! | 1   | block (36 bits) << 8 \| file             | block dir and files|
//! | 2   | block << 20 \| p16 (12 bits) << 8 \| file | meta/X,Y,Z/...     |
//! | 3   | x, y, z (16 bits each, +0x8000)          | node/X,Y,Z         |
//! | 4   | counter                                  | table entries      |
//! | 5   | name number (24 bits)                    | find/NAME          |
//! | 6   | name number << 36 \| block (36 bits)      | find/NAME/X,Y,Z    |
//!
//! Table entries (world text files, metadata field files) are numbered
//! from a counter (`table.rs`). Tag 15 is the core's (README, write-errors,
//! scratch files).

use crate::view::{BlockFile, MetaFile};
use worldfs_store::BlockPos;

pub const ROOT: u64 = crate::fs::ROOT;
pub const BLOCKS: u64 = 2;
pub const NODE_DIR: u64 = 3;
pub const FIND_DIR: u64 = 6;
pub(crate) const NAMES_FILE: u64 = 7;

const TAG_SHIFT: u32 = 60;
const BLOCK_META_ROOT: u64 = 0x20;
const META_DIR: u64 = 0;
const META_FIELDS: u64 = 1;
const META_PRIVATE: u64 = 2;
const META_INVENTORY: u64 = 3;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[allow(clippy::enum_variant_names, reason = "NodeDir and NodeFile are the `node/` folder and its files")]
pub(crate) enum Node {
    Root,
    Blocks,
    NodeDir,
    BlockDir(BlockPos),
    BlockFile(BlockPos, BlockFile),
    /// `blocks/P/meta`
    MetaRoot(BlockPos),
    /// `blocks/P/meta/X,Y,Z`
    MetaDir(BlockPos, u16),
    /// `blocks/P/meta/X,Y,Z/fields`
    FieldsDir(BlockPos, u16),
    MetaFile(BlockPos, u16, MetaFile),
    /// `node/X,Y,Z`
    NodeFile([i32; 3]),
    /// An entry of the inode table.
    Table(u64),
    /// `find/`: one directory per node name of the world.
    FindDir,
    /// `names`: every name with its block and node counts.
    NamesFile,
    /// `find/NAME` (the name's number in the index).
    FindName(u32),
    /// `find/NAME/X,Y,Z`: a link to the block.
    FindLink(u32, BlockPos),
}

fn tag(t: u64, v: u64) -> u64 {
    (t << TAG_SHIFT) | v
}

impl Node {
    pub(crate) fn ino(&self) -> u64 {
        match *self {
            Node::Root => ROOT,
            Node::Blocks => BLOCKS,
            Node::NodeDir => NODE_DIR,
            Node::BlockDir(p) => tag(1, p.packed() << 8),
            Node::BlockFile(p, f) => tag(1, (p.packed() << 8) | f.id() as u64),
            Node::MetaRoot(p) => tag(1, (p.packed() << 8) | BLOCK_META_ROOT),
            Node::MetaDir(p, i) => tag(2, (p.packed() << 20) | ((i as u64) << 8) | META_DIR),
            Node::FieldsDir(p, i) => tag(2, (p.packed() << 20) | ((i as u64) << 8) | META_FIELDS),
            Node::MetaFile(p, i, f) => {
                let sub = match f {
                    MetaFile::Private => META_PRIVATE,
                    MetaFile::Inventory => META_INVENTORY,
                };
                tag(2, (p.packed() << 20) | ((i as u64) << 8) | sub)
            }
            Node::NodeFile([x, y, z]) => {
                let a = |c: i32| ((c + 0x8000) as u64) & 0xffff;
                tag(3, (a(x) << 32) | (a(y) << 16) | a(z))
            }
            Node::Table(id) => tag(4, id),
            Node::FindDir => FIND_DIR,
            Node::NamesFile => NAMES_FILE,
            Node::FindName(n) => tag(5, n as u64),
            Node::FindLink(n, p) => tag(6, ((n as u64) << 36) | p.packed()),
        }
    }

    pub(crate) fn from_ino(ino: u64) -> Option<Node> {
        let v = ino & ((1 << TAG_SHIFT) - 1);
        Some(match ino >> TAG_SHIFT {
            0 => match ino {
                ROOT => Node::Root,
                BLOCKS => Node::Blocks,
                NODE_DIR => Node::NodeDir,
                FIND_DIR => Node::FindDir,
                NAMES_FILE => Node::NamesFile,
                _ => return None,
            },
            1 => {
                let p = BlockPos::unpack(v >> 8);
                match v & 0xff {
                    0 => Node::BlockDir(p),
                    BLOCK_META_ROOT => Node::MetaRoot(p),
                    f => Node::BlockFile(p, BlockFile::from_id(f as u8)?),
                }
            }
            2 => {
                let p = BlockPos::unpack(v >> 20);
                let i = ((v >> 8) & 0xfff) as u16;
                match v & 0xff {
                    META_DIR => Node::MetaDir(p, i),
                    META_FIELDS => Node::FieldsDir(p, i),
                    META_PRIVATE => Node::MetaFile(p, i, MetaFile::Private),
                    META_INVENTORY => Node::MetaFile(p, i, MetaFile::Inventory),
                    _ => return None,
                }
            }
            3 => {
                let a = |s: u32| ((v >> s) & 0xffff) as i32 - 0x8000;
                Node::NodeFile([a(32), a(16), a(0)])
            }
            4 => Node::Table(v),
            5 => Node::FindName(u32::try_from(v).ok()?),
            6 => Node::FindLink((v >> 36) as u32, BlockPos::unpack(v & ((1 << 36) - 1))),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips() {
        let p = BlockPos::new(-2048, 7, 2047);
        let nodes = [
            Node::Root,
            Node::Blocks,
            Node::NodeDir,
            Node::BlockDir(p),
            Node::BlockFile(p, BlockFile::Nodes),
            Node::BlockFile(p, BlockFile::Error),
            Node::MetaRoot(p),
            Node::MetaDir(p, 4095),
            Node::FieldsDir(p, 0),
            Node::MetaFile(p, 17, MetaFile::Inventory),
            Node::MetaFile(p, 17, MetaFile::Private),
            Node::NodeFile([-31000, 0, 31000]),
            Node::Table(12345),
            Node::FindDir,
            Node::NamesFile,
            Node::FindName(0xff_ffff),
            Node::FindLink(0xff_ffff, p),
        ];
        let mut seen = std::collections::HashSet::new();
        for n in nodes {
            assert!(seen.insert(n.ino()), "{n:?} collides");
            assert_eq!(Node::from_ino(n.ino()), Some(n.clone()), "{n:?}");
        }
        assert_eq!(Node::from_ino(0), None);
    }
}
