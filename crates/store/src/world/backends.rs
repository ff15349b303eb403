//! The one registry from world.mt's backend names to stores: which map
//! store `backend = NAME` opens, which record store `player_backend`,
//! `auth_backend` and `mod_storage_backend` open, and which names the
//! engine knows but worldfs cannot open (with why). Whether a writable
//! store keeps the undo journal is decided here once, for every backend.

use crate::MapStore;
use crate::records::{Collection, RecordStore, files, sqlite};
use std::path::Path;

/// The map database file of a sqlite3 world.
pub const SQLITE_MAP_FILE: &str = "map.sqlite";

/// Where a world's stores are, as world.mt says.
pub struct WorldPlace<'a> {
    /// The world directory.
    pub dir: &'a Path,
    /// The last value of a world.mt key.
    pub setting: &'a dyn Fn(&str) -> Option<String>,
    /// Whether the world has a world.mt (a record backend's default).
    pub has_world_mt: bool,
}

type MapOpen = fn(&WorldPlace, bool) -> Result<Box<dyn JournaledMap>, String>;
type RecordsOpen = fn(&WorldPlace, Collection, bool, Option<&Path>) -> Result<Box<dyn RecordStore>, String>;

/// What one backend name opens, for maps and for records.
struct Backend {
    name: &'static str,
    map: Map,
    records: Records,
}

enum Map {
    Opens(MapOpen),
    /// worldfs can show it, but this build leaves it out (the cargo
    /// feature that builds it in).
    #[cfg_attr(all(feature = "postgresql", feature = "redis", feature = "leveldb"), allow(dead_code))]
    NotBuilt(&'static str),
    /// The engine knows it; worldfs cannot show it.
    Refused,
    /// The engine has no map backend of this name.
    Unknown,
}

enum Records {
    Opens(RecordsOpen),
    /// Left out of this build (the cargo feature that builds it in).
    #[cfg_attr(all(feature = "postgresql", feature = "leveldb"), allow(dead_code))]
    NotBuilt(&'static str),
    /// The engine knows it; worldfs cannot show it (why).
    Refused(&'static str),
    Unknown,
}

// The backends whose database clients are cargo features.
#[cfg(feature = "postgresql")]
const PG: (Map, Records) = (Map::Opens(open_pg_map), Records::Opens(open_pg_records));
#[cfg(not(feature = "postgresql"))]
const PG: (Map, Records) = (Map::NotBuilt("postgresql"), Records::NotBuilt("postgresql"));
#[cfg(feature = "leveldb")]
const LEVELDB: (Map, Records) = (Map::Opens(open_leveldb_map), Records::Opens(open_leveldb_records));
#[cfg(not(feature = "leveldb"))]
const LEVELDB: (Map, Records) = (Map::NotBuilt("leveldb"), Records::NotBuilt("leveldb"));
#[cfg(feature = "redis")]
const REDIS: Map = Map::Opens(open_redis_map);
#[cfg(not(feature = "redis"))]
const REDIS: Map = Map::NotBuilt("redis");

/// Every backend name the engine knows (Luanti 5.x: world.mt's `backend`
/// values listed in doc/world_format.md of
/// <https://github.com/luanti-org/luanti>, and `files` for the records).
const BACKENDS: [Backend; 6] = [
    Backend { name: "sqlite3", map: Map::Opens(open_sqlite_map), records: Records::Opens(open_sqlite_records) },
    Backend { name: "postgresql", map: PG.0, records: PG.1 },
    Backend { name: "leveldb", map: LEVELDB.0, records: LEVELDB.1 },
    Backend { name: "redis", map: REDIS, records: Records::Unknown },
    Backend { name: "files", map: Map::Unknown, records: Records::Opens(open_file_records) },
    Backend {
        name: "dummy",
        map: Map::Refused,
        records: Records::Refused("that data is never saved, there is nothing to show"),
    },
];

/// The map backend names the engine knows (`dummy` included, which worldfs
/// refuses).
pub fn known_map_backends() -> impl Iterator<Item = &'static str> {
    BACKENDS.iter().filter(|b| !matches!(b.map, Map::Unknown)).map(|b| b.name)
}

/// The map backends worldfs opens.
pub fn supported_map_backends() -> impl Iterator<Item = &'static str> {
    BACKENDS.iter().filter(|b| matches!(b.map, Map::Opens(_))).map(|b| b.name)
}

/// Open the map store world.mt names (`sqlite3` when it names none); a
/// writable one keeps the undo journal at `journal` when given.
pub fn open_map(place: &WorldPlace, read_only: bool, journal: Option<&Path>) -> Result<Box<dyn MapStore>, String> {
    let name = (place.setting)("backend").unwrap_or_else(|| "sqlite3".to_string());
    let dir = place.dir.display();
    let open = match BACKENDS.iter().find(|b| b.name == name).map_or(&Map::Unknown, |b| &b.map) {
        Map::Opens(open) => open,
        Map::Refused => {
            let all: Vec<_> = supported_map_backends().collect();
            let supported = match all.split_last() {
                Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
                _ => all.join(""),
            };
            return Err(format!(
                "{dir}: world.mt says backend = {name}; worldfs supports {supported} \
                 (convert a copy with: minetestserver --world DIR --migrate sqlite3)"
            ));
        }
        Map::NotBuilt(feature) => return Err(format!("{dir}: world.mt says backend = {name}: {}", not_built(feature))),
        Map::Unknown => return Err(format!("{dir}: world.mt names an unknown map backend '{name}'")),
    };
    let mut store = open(place, read_only)?;
    if let Some(j) = journal.filter(|_| !read_only) {
        store.enable_journal(j).map_err(|e| {
            format!(
                "{}: cannot keep the undo journal ({e}); mount with -o nojournal to write without it, or -o ro",
                j.display()
            )
        })?;
    }
    Ok(store.into_map())
}

/// Open the record store of `collection` world.mt names (its default when
/// it names none); a writable one journals into `journal` when given.
pub fn open_records(
    place: &WorldPlace,
    collection: Collection,
    read_only: bool,
    journal: Option<&Path>,
) -> Result<Box<dyn RecordStore>, String> {
    let key = collection.backend_key();
    let name = (place.setting)(key).unwrap_or_else(|| collection.default_backend(place.has_world_mt).to_string());
    match BACKENDS.iter().find(|b| b.name == name).map_or(&Records::Unknown, |b| &b.records) {
        Records::Opens(open) => open(place, collection, read_only, journal),
        Records::NotBuilt(feature) => Err(format!("world.mt says {key} = {name}: {}", not_built(feature))),
        Records::Refused(why) => Err(format!("world.mt says {key} = {name}: {why}")),
        Records::Unknown => Err(format!("world.mt names an unknown {key} '{name}'")),
    }
}

/// A map store that can keep the undo journal.
trait JournaledMap {
    fn enable_journal(&mut self, path: &Path) -> crate::Result<()>;
    fn into_map(self: Box<Self>) -> Box<dyn MapStore>;
}

macro_rules! journaled_map {
    ($t:ty) => {
        impl JournaledMap for $t {
            fn enable_journal(&mut self, path: &Path) -> crate::Result<()> {
                <$t>::enable_journal(self, path)
            }
            fn into_map(self: Box<Self>) -> Box<dyn MapStore> {
                self
            }
        }
    };
}

journaled_map!(crate::sqlite::SqliteStore);
#[cfg(feature = "postgresql")]
journaled_map!(crate::postgres::PgStore);
#[cfg(feature = "redis")]
journaled_map!(crate::redis::RedisStore);
#[cfg(feature = "leveldb")]
journaled_map!(crate::leveldb::LevelDbStore);

/// Why a backend left out of this build cannot be opened.
fn not_built(feature: &str) -> String {
    format!("this worldfs was built without it (build it with: cargo install worldfs --features {feature})")
}

fn open_sqlite_map(place: &WorldPlace, read_only: bool) -> Result<Box<dyn JournaledMap>, String> {
    let path = place.dir.join(SQLITE_MAP_FILE);
    if !path.is_file() {
        return Err(format!(
            "{}: no {SQLITE_MAP_FILE} (world.mt says backend = sqlite3); is this a Luanti world?",
            place.dir.display()
        ));
    }
    let store = crate::sqlite::SqliteStore::open(&path, read_only).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Box::new(store))
}

#[cfg(feature = "postgresql")]
fn open_pg_map(place: &WorldPlace, read_only: bool) -> Result<Box<dyn JournaledMap>, String> {
    let conninfo = (place.setting)("pgsql_connection").filter(|c| !c.trim().is_empty()).ok_or_else(|| {
        format!(
            "{}: world.mt says backend = postgresql but has no pgsql_connection \
             (e.g. pgsql_connection = host=127.0.0.1 user=mt password=... dbname=mt)",
            place.dir.display()
        )
    })?;
    let store =
        crate::postgres::PgStore::open(&conninfo, read_only).map_err(|e| format!("{}: {e}", place.dir.display()))?;
    Ok(Box::new(store))
}

#[cfg(feature = "redis")]
fn open_redis_map(place: &WorldPlace, read_only: bool) -> Result<Box<dyn JournaledMap>, String> {
    let dir = place.dir.display();
    let need = |k: &str| {
        (place.setting)(k)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("{dir}: world.mt says backend = redis but has no {k}"))
    };
    let (address, hash) = (need("redis_address")?, need("redis_hash")?);
    let port = match (place.setting)("redis_port") {
        None => 6379,
        Some(p) => p.parse::<u16>().map_err(|_| format!("{dir}: redis_port = {p}: not a port"))?,
    };
    let password = (place.setting)("redis_password");
    let store = crate::redis::RedisStore::open(&address, port, &hash, password.as_deref(), read_only)
        .map_err(|e| format!("{dir}: {e}"))?;
    Ok(Box::new(store))
}

#[cfg(feature = "leveldb")]
fn open_leveldb_map(place: &WorldPlace, read_only: bool) -> Result<Box<dyn JournaledMap>, String> {
    Ok(Box::new(crate::leveldb::LevelDbStore::open(&place.dir.join("map.db"), read_only)?))
}

fn open_sqlite_records(
    place: &WorldPlace,
    c: Collection,
    read_only: bool,
    journal: Option<&Path>,
) -> Result<Box<dyn RecordStore>, String> {
    Ok(Box::new(sqlite::SqliteRecords::new(place.dir, c, read_only, journal)))
}

fn open_file_records(
    place: &WorldPlace,
    c: Collection,
    read_only: bool,
    journal: Option<&Path>,
) -> Result<Box<dyn RecordStore>, String> {
    Ok(Box::new(files::FileRecords::new(place.dir, c, read_only, journal)))
}

#[cfg(feature = "postgresql")]
fn open_pg_records(
    place: &WorldPlace,
    c: Collection,
    read_only: bool,
    journal: Option<&Path>,
) -> Result<Box<dyn RecordStore>, String> {
    let key = match c {
        Collection::Players => "pgsql_player_connection",
        Collection::Auth => "pgsql_auth_connection",
        Collection::ModStorage => "pgsql_mod_storage_connection",
    };
    let conninfo = (place.setting)(key)
        .filter(|c| !c.trim().is_empty())
        .ok_or_else(|| format!("world.mt says {} = postgresql but has no {key}", c.backend_key()))?;
    Ok(Box::new(crate::records::postgres::PgRecords::new(&conninfo, c, read_only, journal)))
}

#[cfg(feature = "leveldb")]
fn open_leveldb_records(
    place: &WorldPlace,
    c: Collection,
    read_only: bool,
    journal: Option<&Path>,
) -> Result<Box<dyn RecordStore>, String> {
    if c == Collection::ModStorage {
        return Err(format!(
            "world.mt says {} = leveldb: the engine has no LevelDB {} \
             (convert a copy with minetestserver --migrate-mod-storage sqlite3)",
            c.backend_key(),
            c.name()
        ));
    }
    Ok(Box::new(crate::records::leveldb::LevelDbRecords::new(place.dir, c, read_only, journal)))
}

/// Open the store of `collection` for the world in `dir`, as world.mt says
/// (`sqlite3`, `files`, and with their cargo features `postgresql` and
/// `leveldb`; any other name is an error that says why).
pub fn open_record_store(
    dir: &Path,
    settings: &dyn Fn(&str) -> Option<String>,
    has_world_mt: bool,
    collection: Collection,
    read_only: bool,
    journal: Option<&Path>,
) -> std::result::Result<Box<dyn RecordStore>, String> {
    let place = WorldPlace { dir, setting: settings, has_world_mt };
    open_records(&place, collection, read_only, journal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(all(feature = "postgresql", feature = "redis", feature = "leveldb"))]
    fn known_and_supported_names_come_from_the_one_table() {
        assert_eq!(known_map_backends().collect::<Vec<_>>(), ["sqlite3", "postgresql", "leveldb", "redis", "dummy"]);
        assert_eq!(supported_map_backends().collect::<Vec<_>>(), ["sqlite3", "postgresql", "leveldb", "redis"]);
    }

    #[test]
    #[cfg(all(feature = "postgresql", feature = "redis", feature = "leveldb"))]
    fn record_backends_say_why_they_cannot_open() {
        let d = tempfile::tempdir().unwrap();
        let pick = |key: &'static str, value: &'static str| move |k: &str| (k == key).then(|| value.to_string());
        let open = |s: &dyn Fn(&str) -> Option<String>, c| {
            let place = WorldPlace { dir: d.path(), setting: s, has_world_mt: true };
            open_records(&place, c, true, None).err().unwrap_or_default()
        };
        let dummy = pick("auth_backend", "dummy");
        assert_eq!(
            open(&dummy, Collection::Auth),
            "world.mt says auth_backend = dummy: that data is never saved, there is nothing to show"
        );
        let level = pick("mod_storage_backend", "leveldb");
        assert!(open(&level, Collection::ModStorage).contains("--migrate-mod-storage sqlite3"));
        let redis = pick("player_backend", "redis");
        assert_eq!(open(&redis, Collection::Players), "world.mt names an unknown player_backend 'redis'");
        let pg = pick("player_backend", "postgresql");
        assert!(open(&pg, Collection::Players).contains("has no pgsql_player_connection"));
        let files = pick("player_backend", "files");
        assert_eq!(open(&files, Collection::Players), "");
    }

    /// A build without a backend's feature names the feature that builds
    /// it in, for maps and for records.
    #[test]
    #[cfg(not(feature = "postgresql"))]
    fn a_backend_left_out_of_the_build_says_how_to_build_it_in() {
        let d = tempfile::tempdir().unwrap();
        let setting = |k: &str| match k {
            "backend" | "player_backend" => Some("postgresql".to_string()),
            _ => None,
        };
        let place = WorldPlace { dir: d.path(), setting: &setting, has_world_mt: true };
        let e = open_map(&place, true, None).err().unwrap_or_default();
        assert!(e.contains("backend = postgresql") && e.contains("--features postgresql"), "{e}");
        let e = open_records(&place, Collection::Players, true, None).err().unwrap_or_default();
        assert!(e.contains("player_backend = postgresql") && e.contains("--features postgresql"), "{e}");
        assert!(!supported_map_backends().any(|b| b == "postgresql"));
    }
}
