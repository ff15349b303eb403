//! `MNT/snapshots/`: every snapshot of the world (`worldfs snapshot`, its
//! store in `WORLD/worldfs-snapshots/`) as a directory holding the world's
//! own tree as it was then: `blocks/`, `node/`, `find/`, `names`,
//! `players/`, `auth/`, `mod_storage/`, `map/`, read-only. Each is the
//! same Luanti tree a mount builds, over the snapshot's read-only stores
//! (`worldfs_store::snapshots::{SnapshotMap, SnapshotRecords}`), so every file
//! reads as it did in the world; `fs::nested` gives them inode numbers of
//! their own.

use super::snapshots::changed;
use super::{LuantiTree, MAP_TAG, draw};
use crate::fs::nested::{Children, Nested};
use crate::fs::union::{Mounted, Union};
use crate::fs::{FsError, Inval, Options, Result, Services, Tree};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use worldfs_store::records::{Collection, RecordStore};
use worldfs_store::snapshots::{DIR_NAME, SnapshotMap, SnapshotRecords, Snapshots};
use worldfs_store::world::World;

/// The inode tag of `snapshots/` (the map's tree uses 0 to 6, the records
/// 7 to 9, `map/` 10).
pub(crate) const TAG: u64 = 11;

/// The directory's name in the mount.
pub(crate) const NAME: &str = "snapshots";

/// How often the store is looked at for new or removed snapshots.
const POLL: Duration = Duration::from_secs(1);

/// `snapshots/`, mounted beside the map, when the world has a snapshot
/// store (or `-o snapshot_store=DIR` names one: then a directory without
/// a store it reads is refused with the reason). `services`: the mount's,
/// to tell the kernel when the list of snapshots changed (it keeps a
/// directory's listing until then).
pub(crate) fn mounted(
    world: &World,
    opts: &Options,
    services: &Arc<Services>,
) -> std::result::Result<Option<Mounted>, String> {
    let dir = match &opts.snapshot_store {
        Some(dir) => {
            Snapshots::open_read_only(dir).map_err(|e| {
                format!(
                    "-o snapshot_store={}: {e} (take a snapshot there first: worldfs snapshot WORLD --store {})",
                    dir.display(),
                    dir.display()
                )
            })?;
            dir.clone()
        }
        None if Snapshots::file(&world.dir.join(DIR_NAME)).is_file() => world.dir.join(DIR_NAME),
        None => return Ok(None),
    };
    let children = SnapshotChildren {
        dir: dir.clone(),
        world: world.dir.clone(),
        settings: world.settings.clone(),
        opts: opts.clone(),
    };
    let nested = Arc::new(Nested::new(TAG, Box::new(children), opts));
    let root = nested.root();
    let (weak, services) = (Arc::downgrade(&nested), services.clone());
    let watch = move || {
        let mut seen = store_changed(&dir);
        while weak.upgrade().is_some() {
            std::thread::sleep(POLL);
            let now = store_changed(&dir);
            if now != seen {
                seen = now;
                services.invalidate(vec![Inval::Inode(root)]);
            }
        }
    };
    if let Err(e) = std::thread::Builder::new().name("worldfs-snapshots".into()).spawn(watch) {
        log::warn!("snapshots/: new snapshots show only after the directory's TTL ({e})");
    }
    Ok(Some(Mounted { name: NAME.into(), tag: TAG, root, tree: nested }))
}

/// When the store's files last changed (a snapshot taken or pruned: a
/// commit writes its WAL, a checkpoint the database).
fn store_changed(dir: &std::path::Path) -> Option<SystemTime> {
    let file = Snapshots::file(dir);
    let wal = PathBuf::from(format!("{}-wal", file.display()));
    [file, wal].iter().filter_map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok()).max()
}

struct SnapshotChildren {
    dir: PathBuf,
    /// The world itself (for `changed/`).
    world: PathBuf,
    settings: Vec<(String, String)>,
    opts: Options,
}

fn io(e: String) -> FsError {
    FsError::io(e)
}

impl Children for SnapshotChildren {
    fn describe(&self) -> String {
        NAME.into()
    }

    fn names(&self) -> Result<Vec<String>> {
        let store = Snapshots::open_read_only(&self.dir).map_err(io)?;
        Ok(store.list().map_err(io)?.into_iter().map(|s| s.name).collect())
    }

    fn open(&self, name: &str) -> Result<Arc<dyn Tree>> {
        let store = Snapshots::open_read_only(&self.dir).map_err(io)?;
        let info = store.find(name).map_err(|_| FsError::not_found())?;
        let opts = Options { read_only: true, journal: false, ..self.opts.clone() };
        // Its own services: nothing of a snapshot changes, and its inode
        // numbers mean nothing to the kernel untranslated.
        let services = Services::new();
        // The store's directory holds no world text files to show.
        let world = World { dir: self.dir.clone(), settings: self.settings.clone() };
        let map = SnapshotMap::open(&store, &info).map_err(|e| FsError::io(e.to_string()))?;
        let tree = Arc::new(LuantiTree::new(world, Box::new(map), opts.clone(), services.clone()).with_index());
        let tiles = crate::worlds::map_tree::MapTree::new(MAP_TAG, draw::LuantiTops(tree.clone()), opts.clone());
        let mut more = vec![Mounted { name: "map".into(), tag: MAP_TAG, root: tiles.root(), tree: Arc::new(tiles) }];
        let mut stores: Vec<(Collection, Box<dyn RecordStore>)> = Vec::new();
        for c in Collection::ALL {
            let s = SnapshotRecords::open(&store, &info, c).map_err(|e| FsError::io(e.to_string()))?;
            stores.push((c, Box::new(s)));
        }
        more.extend(super::records::collection_trees(stores, &opts, &services));
        let changed = changed::ChangedTree::new(self.dir.clone(), name, self.world.clone(), &opts);
        more.push(Mounted { name: "changed".into(), tag: changed::TAG, root: changed.root(), tree: Arc::new(changed) });
        Ok(Arc::new(Union::new(tree, more)))
    }

    fn changed(&self) -> Option<SystemTime> {
        store_changed(&self.dir)
    }

    fn read_only_why(&self) -> String {
        "snapshots are read-only: put an area back with `worldfs restore WORLD SNAPSHOT --area X1,Y1,Z1 X2,Y2,Z2`"
            .into()
    }
}
