//! `level.dat` of a Bedrock world as the mount's root document (`level`,
//! SNBT, written back with its 8-byte header; journaled as Java's is), and
//! each player's record of the database (`players/NAME/`).

use super::db::Db;
use super::items::{self, Slots};
use crate::documents::files_tree::{Home, Stored};
use crate::documents::{Context, DocError, DocResult, Document, Entry};
use crate::fs::{FsError, Result};
use crate::worlds::minecraft::journal as mc_journal;
use crate::worlds::minecraft::regions::{FileStamp, stamp_of};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use worldfs_codec::bedrock::key::Key;
use worldfs_codec::bedrock::level::{self, Level};
use worldfs_codec::minecraft::nbt::{self, Compound, Flavor, List, Tag};
use worldfs_codec::minecraft::snbt;

fn utf8(content: &[u8]) -> DocResult<&str> {
    std::str::from_utf8(content).map_err(|_| DocError::new("not UTF-8 text"))
}

/// Replace a root with edited SNBT (empty lists keep their types).
fn apply_snbt(root: &mut Compound, text: &str) -> DocResult<()> {
    let mut new = snbt::parse(text).map_err(DocError::new)?;
    snbt::keep_compound_list_types(&mut new, root);
    *root = new;
    Ok(())
}

pub(crate) struct LevelDoc(Level);

impl Document for LevelDoc {
    const NAME: &'static str = "bedrock";

    fn decode(bytes: &[u8], _ctx: &Context) -> DocResult<Self> {
        level::decode(bytes).map(LevelDoc).map_err(DocError::new)
    }
    fn encode(&self) -> DocResult<Vec<u8>> {
        level::encode(&self.0).map_err(DocError::new)
    }
    fn entries(&self) -> Vec<Entry> {
        vec![Entry::file("level", true)]
    }
    fn render(&self, path: &str) -> DocResult<Vec<u8>> {
        match path {
            "level" => Ok(snbt::to_snbt(&self.0.root).into_bytes()),
            _ => Err(DocError::new("no such file")),
        }
    }
    fn apply(&mut self, path: &str, content: &[u8]) -> DocResult<()> {
        match path {
            "level" => apply_snbt(&mut self.0.root, utf8(content)?),
            _ => Err(DocError::new("this file cannot be written")),
        }
    }
    fn readme(&self) -> String {
        let name = self.0.root.string("LevelName").unwrap_or("?");
        let version = match self.0.root.get("lastOpenedWithVersion") {
            Some(Tag::List(l)) => {
                l.items.iter().filter_map(Tag::as_int).map(|v| v.to_string()).collect::<Vec<_>>().join(".")
            }
            _ => "?".into(),
        };
        format!(
            "worldfs: this directory is the Minecraft Bedrock world \"{name}\" (last opened with {version}).\n\n\
             level                       level.dat as SNBT (editable)\n\
             chunks/X,Z/                 every chunk of the overworld (chunk coordinates):\n\
               info, keys                its version and database keys\n\
               sections/Y/palette        each subchunk's block states (read-only)\n\
               sections/Y/blocks         its 16x16x16 blocks drawn as text (docs/layout.md)\n\
               sections/Y/waterlog       the second layer (water of waterlogged blocks)\n\
               sections/Y/biomes         1.18+: its biomes (read-only)\n\
               block_entities/X,Y,Z/     id, items (slot count item), data (SNBT), text\n\
               entities/N                each entity as SNBT (read-only)\n\
             dimensions/nether/chunks/   the nether's chunks; dimensions/end/chunks/ the end's\n\
             block/X,Y,Z                 one block's state\n\
             players/NAME/               inventory, ender_chest, position, data\n\n\
             Each edit is one synced LevelDB write batch, journaled for `worldfs undo`;\n\
             a writable mount holds db/LOCK, so the game cannot open the world meanwhile.\n\
             A bad edit fails (EINVAL); the reason is in write-errors.\n"
        )
    }
}

/// `level.dat`, the root's one document.
pub(crate) struct LevelHome {
    pub(crate) path: PathBuf,
    pub(crate) journal: Option<PathBuf>,
}

impl Home<LevelDoc> for LevelHome {
    type Stamp = Option<FileStamp>;
    const MANY: bool = false;

    fn describe(&self) -> String {
        format!("Minecraft Bedrock world {}", self.path.parent().map(|p| p.display().to_string()).unwrap_or_default())
    }
    fn readme(&self, doc: Option<&LevelDoc>) -> String {
        doc.map(LevelDoc::readme).unwrap_or_default()
    }
    fn stamp(&self, _name: &str) -> Result<Option<Self::Stamp>> {
        Ok(Some(stamp_of(&self.path)))
    }
    fn load(&self, name: &str) -> Result<Option<Stored<LevelDoc, Self::Stamp>>> {
        let stamp = stamp_of(&self.path);
        let bytes = std::fs::read(&self.path).map_err(|e| FsError::io(format!("{}: {e}", self.path.display())))?;
        let doc = self.decode(name, &bytes)?;
        Ok(Some(Stored { bytes, doc, stamp }))
    }
    fn decode(&self, _name: &str, bytes: &[u8]) -> Result<LevelDoc> {
        LevelDoc::decode(bytes, &Context::default()).map_err(|e| FsError::io(format!("{}: {e}", self.path.display())))
    }
    fn store(&self, _name: &str, old: Option<&[u8]>, new: Option<&[u8]>, what: &str) -> Result<Option<Self::Stamp>> {
        let (Some(old), Some(new)) = (old, new) else {
            return Err(FsError::perm("level.dat cannot be deleted here"));
        };
        let journal = self.journal.as_deref();
        crate::worlds::minecraft::replace_file(
            &self.path,
            old,
            new,
            journal,
            (mc_journal::LEVEL, mc_journal::LEVEL_NAME, what),
        )?;
        Ok(Some(stamp_of(&self.path)))
    }
}

/// One player's record (little-endian NBT in the database).
pub(crate) struct PlayerDoc {
    root_name: String,
    root: Compound,
}

impl PlayerDoc {
    fn list(&self, key: &str) -> Option<&List> {
        self.root.list(key)
    }
}

/// The player files showing a list of items, and the slots each keeps.
const INVENTORIES: &[(&str, &str, Slots)] = &[
    ("inventory", "Inventory", Slots::Count("player's inventory", 36)),
    ("ender_chest", "EnderChestInventory", Slots::Count("ender chest", 27)),
];

impl Document for PlayerDoc {
    const NAME: &'static str = "players";

    fn decode(bytes: &[u8], _ctx: &Context) -> DocResult<Self> {
        let (root_name, root) = nbt::decode_as(bytes, Flavor::Bedrock).map_err(DocError::new)?;
        Ok(PlayerDoc { root_name, root })
    }
    fn encode(&self) -> DocResult<Vec<u8>> {
        nbt::encode_as(&self.root_name, &self.root, Flavor::Bedrock).map_err(DocError::new)
    }
    fn entries(&self) -> Vec<Entry> {
        let mut v: Vec<Entry> = INVENTORIES
            .iter()
            .filter(|(_, k, _)| self.list(k).is_some())
            .map(|(f, _, _)| Entry::file(*f, true))
            .collect();
        v.push(Entry::file("position", false));
        v.push(Entry::file("data", true));
        v
    }
    fn render(&self, path: &str) -> DocResult<Vec<u8>> {
        let text = match path {
            "position" => {
                let nums = |k: &str| match self.root.get(k) {
                    Some(Tag::List(l)) => l.items.iter().map(snbt::tag_inline).collect::<Vec<_>>().join(" "),
                    _ => "?".into(),
                };
                format!(
                    "pos {}\nrotation {}\ndimension {}\n",
                    nums("Pos"),
                    nums("Rotation"),
                    self.root.int("DimensionId").map_or("?".into(), |d| d.to_string())
                )
            }
            "data" => snbt::to_snbt(&self.root),
            _ => match INVENTORIES.iter().find(|(f, _, _)| *f == path) {
                Some((_, key, _)) => items::render(self.list(key).ok_or_else(|| DocError::new("no such file"))?),
                None => return Err(DocError::new("no such file")),
            },
        };
        Ok(text.into_bytes())
    }
    fn apply(&mut self, path: &str, content: &[u8]) -> DocResult<()> {
        let text = utf8(content)?;
        if path == "data" {
            return apply_snbt(&mut self.root, text);
        }
        let (_, key, slots) = INVENTORIES
            .iter()
            .find(|(f, _, _)| *f == path)
            .ok_or_else(|| DocError::new("this file cannot be written"))?;
        let old = self.list(key).cloned().ok_or_else(|| DocError::new("no such file"))?;
        let items_now = without_empty(&old);
        let new = items::parse(text, &items_now, *slots)?;
        if new != items_now {
            self.root.insert(key, Tag::List(keep_empty_slots(&old, new)));
        }
        Ok(())
    }
}

/// The stored items but the empty slots the game writes in a player's
/// lists (`Count` 0, no name).
fn without_empty(l: &List) -> List {
    List { elem: l.elem, items: l.items.iter().filter(|t| !is_empty_slot(t)).cloned().collect() }
}

fn is_empty_slot(t: &Tag) -> bool {
    matches!(t, Tag::Compound(c) if c.int("Count") == Some(0) && c.string("Name").unwrap_or("").is_empty())
}

/// A player's list as the game keeps it: one entry a slot, an empty slot
/// an entry of Count 0 (as the stored list had), the items in slot order.
fn keep_empty_slots(old: &List, new: List) -> List {
    let empty = old.items.iter().find(|t| is_empty_slot(t)).cloned();
    let Some(Tag::Compound(empty)) = empty else { return new };
    let mut by_slot: BTreeMap<i64, Tag> = BTreeMap::new();
    for t in &old.items {
        if let Tag::Compound(c) = t {
            let mut e = empty.clone();
            e.insert("Slot", Tag::Byte(c.int("Slot").unwrap_or(0) as i8));
            by_slot.insert(c.int("Slot").unwrap_or(0), Tag::Compound(e));
        }
    }
    for t in new.items {
        if let Tag::Compound(c) = &t {
            by_slot.insert(c.int("Slot").unwrap_or(0), t);
        }
    }
    List { elem: 10, items: by_slot.into_values().collect() }
}

/// `players/`: the database's player keys, each a directory.
pub(crate) struct PlayerHome {
    pub(crate) db: Arc<Db>,
}

impl PlayerHome {
    fn key(name: &str) -> Result<Vec<u8>> {
        match Key::parse(name.as_bytes()) {
            Key::Player(_) => Ok(name.as_bytes().to_vec()),
            _ => Err(FsError::not_found()),
        }
    }
}

impl Home<PlayerDoc> for PlayerHome {
    type Stamp = u64;
    const MANY: bool = true;

    fn describe(&self) -> String {
        "players of the Bedrock database".into()
    }
    fn label(&self) -> &'static str {
        "players"
    }
    fn names(&self) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for prefix in [&b"player_"[..], b"~local_player"] {
            for (k, _) in self.db.store.prefixed(prefix).map_err(super::db::fs_err)? {
                if let (Key::Player(n), Ok(_)) = (Key::parse(&k), std::str::from_utf8(&k)) {
                    names.push(n);
                }
            }
        }
        names.sort();
        Ok(names)
    }
    fn stamp(&self, _name: &str) -> Result<Option<u64>> {
        Ok(Some(self.db.store.version()))
    }
    fn load(&self, name: &str) -> Result<Option<Stored<PlayerDoc, u64>>> {
        let Ok(key) = Self::key(name) else { return Ok(None) };
        let stamp = self.db.store.version();
        let Some(bytes) = self.db.store.get(&key).map_err(super::db::fs_err)? else { return Ok(None) };
        let doc = self.decode(name, &bytes)?;
        Ok(Some(Stored { bytes, doc, stamp }))
    }
    fn decode(&self, name: &str, bytes: &[u8]) -> Result<PlayerDoc> {
        PlayerDoc::decode(bytes, &Context::default()).map_err(|e| FsError::io(format!("player {name}: {e}")))
    }
    fn store(&self, name: &str, old: Option<&[u8]>, new: Option<&[u8]>, what: &str) -> Result<Option<u64>> {
        let key = Self::key(name)?;
        let (Some(old), Some(new)) = (old, new) else {
            return Err(FsError::perm("players cannot be made or deleted here"));
        };
        let _one = self.db.lock.lock();
        let one = |v: &[u8]| BTreeMap::from([(key.clone(), v.to_vec())]);
        self.db.write(&one(old), &one(new), what)?;
        Ok(Some(self.db.store.version()))
    }
}
