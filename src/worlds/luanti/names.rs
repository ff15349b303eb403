//! Names in a world mount: mkdir/rmdir of blocks and metadata, fields as
//! files (a new name becomes a key when written, unlink deletes it, rename
//! renames it), and which new names are scratch files. Decoded files
//! cannot be created, deleted or renamed.

use super::table::TableKey;
use super::{LuantiTree, Node, in_block, parse_node_coords};
use crate::fs::{Attr, ErrorKind, FsError, NewName, Result};
use crate::view::escape;
use worldfs_store::BlockPos;

impl LuantiTree {
    /// What a new name in `dir` becomes.
    pub(super) fn new_name_in(&self, dir: &Node, name: &[u8]) -> Result<NewName> {
        match dir {
            Node::Root | Node::MetaDir(..) | Node::BlockDir(_) => Ok(NewName::Scratch),
            Node::FieldsDir(..) => {
                // Names starting with a dot are always scratch files (keys
                // starting with a dot are shown as %2E...); any other name
                // that is no key's would be a file kept nowhere.
                if let Some((_, why)) = escape::refuse_key_name(name) {
                    return Err(FsError::invalid(why));
                }
                Ok(if escape::name_to_key(name).is_some() { NewName::Pending } else { NewName::Scratch })
            }
            Node::Blocks => Err(FsError::perm("blocks/ holds only block directories (mkdir X,Y,Z creates a block)")),
            Node::MetaRoot(_) => {
                Err(FsError::perm("meta/ holds only node directories (mkdir X,Y,Z adds metadata to a node)"))
            }
            Node::FindDir | Node::FindName(_) => {
                Err(FsError::perm("find/ is made from the world's blocks (mv find/OLD find/NEW renames a node type)"))
            }
            Node::NodeDir => match parse_node_coords(name) {
                Some([x, y, z]) => Err(FsError::new(
                    ErrorKind::NotFound,
                    match BlockPos::of_node(x, y, z) {
                        Some(b) => format!("node {x},{y},{z}: its block {b} is not stored"),
                        None => format!("node {x},{y},{z} is outside the map"),
                    },
                )),
                None => Err(FsError::not_found()),
            },
            _ => Err(FsError::not_dir()),
        }
    }

    /// A written pending name in `fields/` becomes that key.
    pub(super) fn create_field(&self, dir: &Node, name: &[u8], content: &[u8]) -> Result<u64> {
        let Node::FieldsDir(pos, p16) = *dir else {
            return Err(FsError::perm("new files cannot be made here"));
        };
        let key = escape::name_to_key(name).ok_or_else(|| FsError::invalid("not a field name"))?;
        let node = self.table_node(TableKey::Field { pos, p16, key: key.clone() });
        self.set_field_value(pos, p16, &key, &node, content, None, true, super::commit::Mode::Commit)?;
        Ok(node.ino())
    }

    pub(super) fn mkdir_in(&self, dir: &Node, name: &[u8]) -> Result<Attr> {
        let node = match *dir {
            Node::Blocks => {
                let pos: BlockPos = std::str::from_utf8(name).ok().and_then(|s| s.parse().ok()).ok_or_else(|| {
                    FsError::invalid("a block directory is named X,Y,Z in block coordinates (-2048..2047)")
                })?;
                self.create_block(pos)?;
                Node::BlockDir(pos)
            }
            Node::MetaRoot(pos) => {
                let c = parse_node_coords(name)
                    .ok_or_else(|| FsError::invalid("a metadata directory is named X,Y,Z in node coordinates"))?;
                let p16 = in_block(pos, c).ok_or_else(|| {
                    FsError::invalid(format!("node {},{},{} is not in block {pos}", c[0], c[1], c[2]))
                })?;
                self.add_metadata(pos, p16)?;
                Node::MetaDir(pos, p16)
            }
            _ => return Err(FsError::perm("directories can only be made in blocks/ and blocks/X,Y,Z/meta/")),
        };
        self.stat(&node)
    }

    /// rmdir of a block deletes it from the map; rmdir of a metadata
    /// directory removes that node's metadata (both regardless of content).
    pub(super) fn rmdir_in(&self, dir: &Node, name: &[u8]) -> Result<()> {
        let child = self.child(dir, name)?;
        match child {
            Node::BlockDir(pos) => self.delete_block(pos),
            Node::MetaDir(pos, p16) => self.remove_metadata(pos, p16),
            _ if self.stat(&child).is_err() => Err(FsError::not_found()),
            _ => Err(FsError::perm("only block and metadata directories can be removed")),
        }
    }

    /// The field a name in `dir` stands for, if it exists.
    fn field(&self, dir: &Node, name: &[u8]) -> Result<(BlockPos, u16, Vec<u8>)> {
        let node = self.child(dir, name)?;
        if let Node::Table(id) = node
            && let TableKey::Field { pos, p16, key } = self.table_key(id)?
        {
            return Ok((pos, p16, key));
        }
        self.stat(&node)?;
        Err(FsError::perm(
            "decoded files cannot be deleted or renamed (rmdir the block or metadata directory, or write the file)",
        ))
    }

    pub(super) fn unlink_in(&self, dir: &Node, name: &[u8]) -> Result<()> {
        let (pos, p16, key) = self.field(dir, name)?;
        self.delete_field(pos, p16, &key)
    }

    pub(super) fn rename_in(&self, dir: &Node, name: &[u8], newdir: &Node, newname: &[u8]) -> Result<()> {
        if *dir == Node::FindDir {
            return match newdir {
                Node::FindDir => self.rename_everywhere(name, newname),
                // `mv find/OLD find/NEW` when NEW exists: mv moves OLD into
                // the directory NEW, which is the same merge.
                Node::FindName(n) if newname == name => {
                    let to = self.find_name(*n)?;
                    self.rename_everywhere(name, &escape::key_to_name(&to))
                }
                _ => Err(FsError::across_boundary("a node type is renamed within find/ (mv find/OLD find/NEW)")),
            };
        }
        let (pos, p16, key) = self.field(dir, name)?;
        if newdir != dir {
            return Err(FsError::across_boundary("metadata fields move only within their fields/ directory"));
        }
        if let Some((_, why)) = escape::refuse_key_name(newname) {
            return Err(FsError::invalid(why));
        }
        let newkey = escape::name_to_key(newname).ok_or_else(|| FsError::invalid("not a field name"))?;
        self.rename_field(pos, p16, &key, &newkey)
    }
}
