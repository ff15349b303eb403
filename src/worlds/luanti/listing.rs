//! Directory listings. `blocks/` is streamed from the store; every other
//! directory is small and listed whole. (`.`, `..` and scratch files are
//! the core's.)

use super::table::TableKey;
use super::{LuantiTree, Node};
use crate::fs::{Attr, DirEntry, ErrorKind, FsError, Kind, Result, list_numbered};
use crate::view::{self, MetaFile, escape};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use worldfs_store::BlockPos;

/// Blocks fetched per store query while listing `blocks/`.
const LIST_PAGE: usize = 512;

/// Directory cookies of `blocks/`: 1 and 2 are `.` and `..`; a block's
/// cookie is its packed position plus this.
const BLOCK_COOKIE_BASE: u64 = 3;

impl LuantiTree {
    /// The children of a directory other than `blocks/`, in listing order
    /// (decoded entries first, then scratch files).
    fn children(&self, dir: &Node) -> Result<Vec<(Vec<u8>, Node)>> {
        self.check_dir(dir)?;
        let v: Vec<(Vec<u8>, Node)> = match dir {
            Node::Root => {
                let mut v: Vec<(Vec<u8>, Node)> = Vec::new();
                for name in self.world.text_files() {
                    let node = self.table_node(TableKey::WorldFile(name.clone()));
                    v.push((name.into_bytes(), node));
                }
                v.push((b"blocks".to_vec(), Node::Blocks));
                v.push((b"node".to_vec(), Node::NodeDir));
                if self.index.is_some() {
                    v.push((b"find".to_vec(), Node::FindDir));
                    v.push((b"names".to_vec(), Node::NamesFile));
                }
                v
            }
            Node::NodeDir => Vec::new(),
            Node::BlockDir(pos) => {
                let l = self.existing_block(*pos)?;
                let mut v: Vec<(Vec<u8>, Node)> =
                    l.files().iter().map(|&f| (f.name().as_bytes().to_vec(), Node::BlockFile(*pos, f))).collect();
                if l.is_decodable() {
                    // after the node arrays, before timers: the order of the format
                    let at = v.iter().position(|(n, _)| n == b"timers").unwrap_or(v.len());
                    v.insert(at, (b"meta".to_vec(), Node::MetaRoot(*pos)));
                }
                v
            }
            Node::MetaRoot(pos) => {
                let l = self.existing_block(*pos)?;
                let b = l.decoded().ok_or_else(FsError::not_found)?;
                b.metadata
                    .entries
                    .iter()
                    .map(|e| (view::meta_dir_name(*pos, e.pos).into_bytes(), Node::MetaDir(*pos, e.pos)))
                    .collect()
            }
            Node::MetaDir(pos, p16) => {
                let mut v = vec![(b"fields".to_vec(), Node::FieldsDir(*pos, *p16))];
                v.extend(MetaFile::ALL.iter().map(|&f| (f.name().as_bytes().to_vec(), Node::MetaFile(*pos, *p16, f))));
                v
            }
            Node::FindDir => self.list_find_dir()?,
            Node::FieldsDir(pos, p16) => {
                let (_, entry) = self.meta_entry(*pos, *p16)?;
                view::field_names(&entry)
                    .into_iter()
                    .filter_map(|name| {
                        // Every name field_names gives is one name_to_key takes.
                        let key = escape::name_to_key(&name)?;
                        let node = self.table_node(TableKey::Field { pos: *pos, p16: *p16, key });
                        Some((name, node))
                    })
                    .collect()
            }
            _ => return Err(FsError::not_dir()),
        };
        Ok(v)
    }

    /// List a directory from `offset` (cookies 1 and 2 are the core's `.`
    /// and `..`).
    pub(super) fn list_dir(
        &self,
        dir: &Node,
        offset: u64,
        plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<()> {
        if !Self::is_dir(dir) {
            return Err(FsError::not_dir());
        }
        if *dir == Node::Blocks {
            return self.list_blocks(offset, plus, add);
        }
        if let Node::FindName(n) = dir {
            return self.list_find_name(*n, offset, plus, add);
        }
        let children = self.children(dir)?;
        list_numbered(children, offset, |(name, node), cookie| self.emit(&node, name, cookie, plus, add))
    }

    /// Send one entry; true when the buffer is full.
    fn emit(
        &self,
        node: &Node,
        name: Vec<u8>,
        cookie: u64,
        plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<bool> {
        let kind = match node {
            _ if Self::is_dir(node) => Kind::Dir,
            Node::FindLink(..) => Kind::Symlink,
            _ => Kind::File,
        };
        let entry = DirEntry { ino: node.ino(), offset: cookie, kind, name: OsString::from_vec(name) };
        let attr = if plus && *node == Node::NamesFile && self.index.as_ref().is_some_and(|i| !i.is_made()) {
            // Its size needs the whole index: a plain `ls` of the root of a
            // fresh mount of a big world would build it (1.5 s on 2.8M blocks).
            Some(Attr { provisional: true, ..self.attr(node, Kind::File, 0, 0) })
        } else if plus {
            match self.stat(node) {
                Ok(a) => Some(a),
                Err(e) if e.kind == ErrorKind::NotFound => return Ok(false), // vanished meanwhile
                Err(e) => return Err(e),
            }
        } else {
            None
        };
        Ok(add(&entry, attr.as_ref()))
    }

    /// `blocks/` is streamed from the store in key order: the cookie of an
    /// entry encodes its position, so any offset resumes with one indexed
    /// query and no state is kept between calls.
    fn list_blocks(
        &self,
        offset: u64,
        plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<()> {
        let mut after = (offset >= BLOCK_COOKIE_BASE).then(|| BlockPos::unpack(offset - BLOCK_COOKIE_BASE));
        loop {
            let page = self.store.list_after(after, LIST_PAGE)?;
            for &pos in &page {
                let node = Node::BlockDir(pos);
                let cookie = pos.packed() + BLOCK_COOKIE_BASE;
                let entry = DirEntry { ino: node.ino(), offset: cookie, kind: Kind::Dir, name: pos.to_string().into() };
                let attr = plus.then(|| self.attr(&node, Kind::Dir, 0, 0));
                if add(&entry, attr.as_ref()) {
                    return Ok(());
                }
            }
            if page.len() < LIST_PAGE {
                return Ok(());
            }
            after = page.last().copied();
        }
    }
}
