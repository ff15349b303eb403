//! Inode numbers for things that have no fixed place in the numbering:
//! the world's text files and metadata field files. Each gets a number the
//! first time it is looked up and keeps it for the life of the mount (the
//! set is small: it grows only with the fields and files actually visited).

use crate::store::BlockPos;
use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TableKey {
    /// A file in the world directory.
    WorldFile(String),
    /// `blocks/P/meta/X,Y,Z/fields/<key>`.
    Field {
        pos: BlockPos,
        p16: u16,
        key: Vec<u8>,
    },
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
}
