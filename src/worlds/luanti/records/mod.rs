//! `players/`, `auth/` and `mod_storage/`: one collection of records
//! (a [`RecordStore`]) served by the one adapter of documents
//! ([`FilesTree`]) and mounted beside the map by `fs::union`. Each record
//! is a directory of files (a [`RecordView`]); an accepted edit re-encodes
//! the record and stores it in one journaled transaction that is refused
//! if the record changed since it was read.
//!
//! Inodes are numbered by path from a counter under this tree's tag; the
//! collections are small (players and accounts of one server), so the
//! numbers are kept for the mount's life.

pub(crate) mod views;

use crate::documents::files_tree::{FilesTree, Home, Stored};
use crate::documents::{Context, DocError};
use crate::fs::{FsError, Options, Result, Services, Tree};
use crate::view::escape;
use parking_lot::Mutex;
use std::collections::BTreeSet;
use std::marker::PhantomData;
use std::sync::Arc;
pub use views::RecordView;
use worldfs_store::Note;
use worldfs_store::guard::ServerGuard;
use worldfs_store::records::RecordStore;

/// The home of one collection's records: its store, and the files a
/// running server holds open (changes are refused meanwhile).
pub struct RecordSet<V> {
    store: Box<dyn RecordStore>,
    services: Arc<Services>,
    guards: Vec<ServerGuard>,
    /// Stored names already reported as shown escaped.
    warned: Mutex<BTreeSet<String>>,
    _view: PhantomData<fn() -> V>,
}

/// One collection of records as the core's tree.
pub(crate) type RecordsTree<V> = FilesTree<V, RecordSet<V>>;

/// A record's directory name: its stored name with `%`, `/`, control
/// bytes and a leading `.` escaped as metadata keys are (the empty name is
/// `%`), so that a name no engine check lets in (`../evil` in auth.txt, a
/// mod storage row `x/y`) is one directory like any other. Names the engine
/// accepts are shown as they are.
fn shown_name(stored: &str) -> String {
    // Only ASCII bytes are escaped, so the name stays UTF-8 as `stored` is.
    String::from_utf8_lossy(&escape::key_to_name(stored.as_bytes())).into_owned()
}

/// The stored name a directory name shows (None: no record's name).
fn stored_name(shown: &str) -> Option<String> {
    escape::name_to_key(shown.as_bytes()).and_then(|k| String::from_utf8(k).ok())
}

impl<V: RecordView> FilesTree<V, RecordSet<V>> {
    /// `tag`: the top four bits of every inode of this tree. `watch`:
    /// files a running server holds open (writes are refused meanwhile).
    pub fn new(
        tag: u64,
        store: Box<dyn RecordStore>,
        opts: Options,
        services: Arc<Services>,
        watch: Vec<std::path::PathBuf>,
    ) -> RecordsTree<V> {
        let enabled = !opts.read_only && !opts.force;
        let guards = watch
            .into_iter()
            .chain(store.watched())
            .map(|p| ServerGuard::new(p, enabled).with_interval(opts.guard_interval))
            .collect();
        let home = RecordSet {
            store,
            services: services.clone(),
            guards,
            warned: Mutex::new(BTreeSet::new()),
            _view: PhantomData,
        };
        FilesTree::with_home(tag, home, opts, services)
    }
}

impl<V: RecordView> Home<V> for RecordSet<V> {
    /// Records are read again after the TTL: nothing tells cheaply
    /// whether one changed.
    type Stamp = ();
    const MANY: bool = true;

    fn describe(&self) -> String {
        self.store.describe()
    }

    fn label(&self) -> &'static str {
        V::COLLECTION.name()
    }

    fn made_from(&self) -> &'static str {
        "account"
    }

    fn private(&self) -> bool {
        V::PRIVATE
    }

    fn names(&self) -> Result<Vec<String>> {
        let collection = V::COLLECTION.name();
        let mut names = Vec::new();
        for stored in self.store.names()? {
            let shown = shown_name(&stored);
            if shown != stored && self.warned.lock().insert(stored.clone()) {
                self.services.report(format!(
                    "{collection}: warning: a record is named {stored:?}, which the engine's own checks refuse; \
                     it is shown as {collection}/{shown}"
                ));
            }
            names.push(shown);
        }
        Ok(names)
    }

    fn load(&self, name: &str) -> Result<Option<Stored<V, ()>>> {
        let Some(stored) = stored_name(name) else { return Ok(None) };
        match self.store.get(&stored)? {
            None => Ok(None),
            Some(bytes) => Ok(Some(Stored { doc: self.decode(name, &bytes)?, bytes, stamp: () })),
        }
    }

    fn decode(&self, name: &str, bytes: &[u8]) -> Result<V> {
        V::decode(bytes, &Context::default())
            .map_err(|e| FsError::io(format!("{}/{name}: {}", V::COLLECTION.name(), e.message)))
    }

    fn store(&self, name: &str, old: Option<&[u8]>, new: Option<&[u8]>, what: &str) -> Result<Option<()>> {
        let stored = stored_name(name).ok_or_else(FsError::not_found)?;
        self.store.put(&stored, old, new, &Note::new(what))?;
        // read back from the store when next needed (it keeps its own form)
        Ok(None)
    }

    fn before_change(&self) -> Result<()> {
        for g in &self.guards {
            let who = g.current();
            if !who.is_empty() {
                return Err(FsError::busy(format!(
                    "a server is running on this world ({}); it would overwrite the change: \
                         stop it first (or mount with -o force)",
                    who.join(", ")
                )));
            }
        }
        Ok(())
    }

    fn refused(&self, full: &str, e: FsError) -> FsError {
        let mut e = FsError { message: format!("{full}: {}", e.message), ..e };
        self.services.report(format!("refused: {}", e.message));
        e.reported = true;
        e
    }

    fn refused_structure(&self, e: DocError) -> FsError {
        FsError::perm(e.to_string())
    }

    fn check_name(&self, name: &str) -> std::result::Result<(), String> {
        V::check_name(name)
    }

    fn new_item(&self, name: &str) -> std::result::Result<V, String> {
        V::create(name)
    }

    fn escaped_keys(&self) -> bool {
        true
    }

    /// Records appear through other programs (a server, another mount).
    fn negative_entries(&self) -> bool {
        false
    }
}

/// The record stores of a world that can be opened (for `worldfs undo`).
pub(crate) fn open_stores(
    world: &worldfs_store::world::World,
    read_only: bool,
    journal: bool,
) -> Vec<(&'static str, Box<dyn RecordStore>)> {
    use worldfs_store::records::Collection;
    Collection::ALL
        .into_iter()
        .filter_map(|c| world.open_records(c, read_only, journal).ok().map(|s| (c.name(), s)))
        .collect()
}

/// The inode tags of the three collections (the map's tree uses 0 to 6).
const TAGS: [u64; 3] = [7, 8, 9];

/// Whether a running server reads `collection` again from its backend
/// (5.6.1): players at every join (and writes back only players in the
/// game), accounts in a database at every use; not auth.txt (read at start,
/// rewritten whole at every login) nor mod storage (read when the mods
/// load). Those a live mount changes alongside the server.
pub(crate) fn changes_alongside_server(
    world: &worldfs_store::world::World,
    collection: worldfs_store::records::Collection,
) -> bool {
    use worldfs_store::records::Collection;
    let backend = world
        .setting(collection.backend_key())
        .map(String::from)
        .unwrap_or_else(|| collection.default_backend(world.dir.join("world.mt").is_file()).to_string());
    match collection {
        Collection::Players => true,
        Collection::Auth => backend != "files",
        Collection::ModStorage => false,
    }
}

/// A Luanti world's whole tree: the map, with `players/`, `auth/` and
/// `mod_storage/` (and `more`) mounted beside it. A collection whose backend worldfs
/// cannot open is left out, with the reason in the log.
pub fn world_tree(
    map: Arc<dyn Tree>,
    world: &worldfs_store::world::World,
    opts: &Options,
    services: &Arc<Services>,
    more: Vec<crate::fs::union::Mounted>,
) -> Arc<dyn Tree> {
    live_world_tree(map, world, opts, services, more, false)
}

/// `world_tree`; `live`: the map is changed through a running server
/// (`worldfs_store::live`), and so are players and accounts where the engine reads
/// them again (`changes_alongside_server`).
pub(crate) fn live_world_tree(
    map: Arc<dyn Tree>,
    world: &worldfs_store::world::World,
    opts: &Options,
    services: &Arc<Services>,
    more: Vec<crate::fs::union::Mounted>,
    live: bool,
) -> Arc<dyn Tree> {
    use worldfs_store::records::Collection;
    let dir = world.dir.as_path();
    let watch = vec![world.map_path()];
    let mut mounted = Vec::new();
    for (c, tag) in Collection::ALL.into_iter().zip(TAGS) {
        let mut store = match world.open_records(c, opts.read_only, opts.journal) {
            Ok(s) => s,
            Err(e) => {
                log::warn!("{}: {} not shown: {e}", dir.display(), c.name());
                continue;
            }
        };
        let mut w = watch.clone();
        if live {
            let rereads = changes_alongside_server(world, c);
            store = Box::new(worldfs_store::live::records::LiveRecords::new(dir, c, store, rereads));
            w.clear();
        }
        mounted.push(collection_tree(c, tag, store, opts, services, w));
    }
    mounted.extend(more);
    Arc::new(crate::fs::union::Union::new(map, mounted))
}

/// The tree of one collection's records, as mounted on its directory.
fn collection_tree(
    c: worldfs_store::records::Collection,
    tag: u64,
    store: Box<dyn RecordStore>,
    opts: &Options,
    services: &Arc<Services>,
    watch: Vec<std::path::PathBuf>,
) -> crate::fs::union::Mounted {
    use worldfs_codec::luanti::{auth::AuthEntry, mod_storage::ModStorage, player::Player};
    use worldfs_store::records::Collection;
    let (o, s, w) = (opts.clone(), services.clone(), watch);
    let (tree, root): (Arc<dyn Tree>, u64) = match c {
        Collection::Players => {
            let t = RecordsTree::<Player>::new(tag, store, o, s, w);
            let r = t.root();
            (Arc::new(t), r)
        }
        Collection::Auth => {
            let t = RecordsTree::<AuthEntry>::new(tag, store, o, s, w);
            let r = t.root();
            (Arc::new(t), r)
        }
        Collection::ModStorage => {
            let t = RecordsTree::<ModStorage>::new(tag, store, o, s, w);
            let r = t.root();
            (Arc::new(t), r)
        }
    };
    crate::fs::union::Mounted { name: c.name().to_string(), tag, root, tree }
}

/// The trees of records given as stores (a snapshot's), each mounted on
/// its collection's directory, with the tags a world's records use.
pub(crate) fn collection_trees(
    stores: Vec<(worldfs_store::records::Collection, Box<dyn RecordStore>)>,
    opts: &Options,
    services: &Arc<Services>,
) -> Vec<crate::fs::union::Mounted> {
    use worldfs_store::records::Collection;
    stores
        .into_iter()
        .filter_map(|(c, store)| {
            let tag = Collection::ALL.iter().position(|x| *x == c).map(|i| TAGS[i])?;
            Some(collection_tree(c, tag, store, opts, services, Vec::new()))
        })
        .collect()
}
