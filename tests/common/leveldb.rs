//! LevelDB map directories for the tests.

use std::path::Path;

/// An empty LevelDB database at `dir`, made by the crate the store uses
/// (worldfs itself never creates one: the engine does).
pub fn create_empty(dir: &Path) {
    let opts = rusty_leveldb::Options { create_if_missing: true, ..rusty_leveldb::Options::default() };
    drop(rusty_leveldb::DB::open(dir, opts).expect("create a LevelDB database"));
}

/// Who holds the fcntl lock on `map.db/LOCK` (a running server), if anyone.
pub fn lock_holder(map_db: &Path) -> Option<String> {
    worldfs_store::leveldb::lock::holder(&map_db.join("LOCK")).unwrap()
}
