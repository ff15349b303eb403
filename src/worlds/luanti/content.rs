//! The bytes of each kind of file.

use super::table::TableKey;
use super::{LuantiTree, Node};
use crate::fs::{FsError, Result};
use crate::view;
use std::sync::Arc;
use worldfs_store::BlockPos;

/// A file's bytes, with an identity for page-cache reuse.
pub(super) struct Content {
    pub(crate) bytes: Arc<Vec<u8>>,
    /// Serial of the loaded block it was rendered from (0: no identity).
    pub(crate) serial: u64,
    /// `Loaded::version` of that block (0: not from a block).
    pub(crate) version: u32,
}

impl LuantiTree {
    /// The bytes of a file node (checking that it exists).
    pub(super) fn content(&self, node: &Node) -> Result<Content> {
        let plain = |bytes: Vec<u8>| Content { bytes: Arc::new(bytes), serial: 0, version: 0 };
        match node {
            Node::BlockFile(pos, f) => {
                let l = self.existing_block(*pos)?;
                let bytes = l.file(*f).ok_or_else(FsError::not_found)?;
                Ok(Content { bytes, serial: l.serial, version: l.version() })
            }
            Node::MetaFile(pos, p16, f) => {
                let (l, entry) = self.meta_entry(*pos, *p16)?;
                Ok(Content {
                    bytes: Arc::new(view::render_meta_file(&entry, *f)),
                    serial: l.serial,
                    version: l.version(),
                })
            }
            Node::NodeFile(c) => {
                let pos = BlockPos::of_node(c[0], c[1], c[2]).ok_or_else(FsError::not_found)?;
                let l = self.existing_block(pos)?;
                let b = l.decoded().ok_or_else(|| FsError::io(format!("block {pos} cannot be decoded")))?;
                let i = super::in_block(pos, *c).ok_or_else(FsError::not_found)? as usize;
                Ok(Content { bytes: Arc::new(view::render_node(&b, i)), serial: l.serial, version: l.version() })
            }
            Node::NamesFile => Ok(plain(self.names_text()?)),
            Node::Table(id) => match self.table_key(*id)? {
                TableKey::WorldFile(name) => {
                    let bytes = std::fs::read(self.world.dir.join(&name)).map_err(|e| match e.kind() {
                        std::io::ErrorKind::NotFound => FsError::not_found(),
                        _ => FsError::from_io(&e, format!("{name}: {e}")),
                    })?;
                    Ok(plain(bytes))
                }
                TableKey::Field { pos, p16, key } => {
                    let (l, entry) = self.meta_entry(pos, p16)?;
                    let var = entry.get(&key).ok_or_else(FsError::not_found)?;
                    Ok(Content {
                        bytes: Arc::new(view::render_field(&var.value)),
                        serial: l.serial,
                        version: l.version(),
                    })
                }
            },
            _ => Err(FsError::is_dir()),
        }
    }
}
