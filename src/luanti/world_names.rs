//! The node names used anywhere in the world, to warn when a write brings
//! in a valid name that appears nowhere else (most likely a typo such as
//! `default:stnoe`). The set is made on first need by one parallel scan of
//! the map, then kept current with this mount's commits; names another
//! process adds later are missed, which at worst gives a needless warning.

use crate::codec::Block;
use crate::store::MapStore;
use std::collections::HashSet;
use std::sync::Mutex;

#[derive(Default)]
pub struct WorldNames {
    set: Mutex<Option<HashSet<Vec<u8>>>>,
}

impl WorldNames {
    /// Those of `names` that no block of the world holds.
    pub fn unseen(&self, store: &dyn MapStore, names: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, String> {
        let mut set = self.set.lock().unwrap();
        if names.is_empty() {
            return Ok(Vec::new());
        }
        if set.is_none() {
            *set = Some(scan(store)?);
        }
        let known = set.as_ref().expect("made above");
        Ok(names.iter().filter(|n| !known.contains(*n)).cloned().collect())
    }

    /// Names a commit of this mount wrote.
    pub fn add(&self, names: impl IntoIterator<Item = Vec<u8>>) {
        if let Some(set) = self.set.lock().unwrap().as_mut() {
            set.extend(names);
        }
    }
}

fn scan(store: &dyn MapStore) -> Result<HashSet<Vec<u8>>, String> {
    let mut all = HashSet::new();
    let per_slice = |blocks: &[(crate::store::BlockPos, Vec<u8>)]| {
        let mut names = HashSet::new();
        for (_, blob) in blocks {
            if let Ok(b) = Block::decode(blob) {
                names.extend(b.mapping.into_iter().map(|m| m.name));
            }
        }
        names
    };
    crate::scan::scan(store, per_slice, |part| all.extend(part), &mut |_| {})?;
    Ok(all)
}
