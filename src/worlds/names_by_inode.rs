//! Inode numbers handed out to names as a tree first shows them, and the
//! names back from the numbers: for trees whose entries are named by text
//! (`X,Y,Z` of a block, `NAME/X,Y,Z` in find/) and have no number of their
//! own. A number stays the same name's for the mount's life.

use crate::fs::{FsError, Result};
use parking_lot::Mutex;
use std::collections::HashMap;

/// Numbers `base | first`, `base | first + 1`, … in the order names are
/// first asked for.
pub(crate) struct NamesByInode {
    base: u64,
    first: u64,
    both: Mutex<(HashMap<u64, String>, HashMap<String, u64>)>,
}

impl NamesByInode {
    pub(crate) fn new(base: u64, first: u64) -> NamesByInode {
        NamesByInode { base, first, both: Mutex::new((HashMap::new(), HashMap::new())) }
    }

    /// The number of `name`, given now if it has none yet.
    pub(crate) fn ino_of(&self, name: &str) -> u64 {
        let mut n = self.both.lock();
        if let Some(i) = n.1.get(name) {
            return *i;
        }
        let ino = self.base | (n.0.len() as u64 + self.first);
        n.0.insert(ino, name.to_string());
        n.1.insert(name.to_string(), ino);
        ino
    }

    /// The name numbered `ino`, or ENOENT for a number never given.
    pub(crate) fn name_of(&self, ino: u64) -> Result<String> {
        self.both.lock().0.get(&ino).cloned().ok_or_else(FsError::not_found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_keeps_its_number_and_numbers_give_names_back() {
        let n = NamesByInode::new(7 << 40, 2);
        let a = n.ino_of("1,2,3");
        let b = n.ino_of("4,5,6");
        assert_eq!(a, (7 << 40) | 2);
        assert_eq!(b, (7 << 40) | 3);
        assert_eq!(n.ino_of("1,2,3"), a);
        assert_eq!(n.name_of(b).unwrap(), "4,5,6");
        assert!(n.name_of((7 << 40) | 4).is_err());
    }
}
