//! Inode numbers for things that have no fixed place in the numbering:
//! the world's text files, metadata field files and scratch files. Each gets a number the
//! first time it is looked up and keeps it for the life of the mount (the
//! set is small: it grows only with the fields and files actually visited).

use crate::store::BlockPos;
use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TableKey {
    /// A file in the world directory.
    WorldFile(String),
    /// `blocks/P/meta/X,Y,Z/fields/<key>`.
    Field { pos: BlockPos, p16: u16, key: Vec<u8> },
    /// A scratch file (by creation number).
    Scratch(u64),
}

#[derive(Default)]
pub struct InodeTable {
    next: u64,
    by_id: HashMap<u64, TableKey>,
    by_key: HashMap<TableKey, u64>,
}

impl InodeTable {
    /// The id of `key`, assigning one if it has none yet.
    pub fn id(&mut self, key: TableKey) -> u64 {
        if let Some(&id) = self.by_key.get(&key) {
            return id;
        }
        self.next += 1;
        let id = self.next;
        self.by_id.insert(id, key.clone());
        self.by_key.insert(key, id);
        id
    }

    pub fn get(&self, id: u64) -> Option<&TableKey> {
        self.by_id.get(&id)
    }

    /// The id of `key` if it has one (without assigning).
    pub fn find(&self, key: &TableKey) -> Option<u64> {
        self.by_key.get(key).copied()
    }

    /// A new scratch file's id.
    pub fn new_scratch(&mut self) -> u64 {
        let n = self.next + 1;
        self.id(TableKey::Scratch(n))
    }
}
