//! The gzip-compressed NBT files of a Java world as [`Document`]s:
//! `level.dat` (the root file `level`, SNBT) and each player's
//! `playerdata/<uuid>.dat` (`players/<uuid>/`: `inventory` as inventory
//! text, `position`, `health`, and `data`, the whole record as SNBT).

use super::items::{self, ItemForm, Slots};
use crate::documents::{Context, DocError, DocResult, Document, Entry};
use std::io::{Read, Write};
use worldfs_codec::minecraft::nbt::{self, Compound, List, Tag};
use worldfs_codec::minecraft::snbt;

static NO_ITEMS: List = List { elem: 0, items: Vec::new() };

/// Largest NBT file inflated (level.dat and players are a few KiB).
const MAX_NBT: u64 = 64 << 20;

pub fn gunzip(bytes: &[u8]) -> DocResult<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .take(MAX_NBT + 1)
        .read_to_end(&mut out)
        .map_err(|e| DocError::new(format!("not gzip-compressed NBT: {e}")))?;
    if out.len() as u64 > MAX_NBT {
        return Err(DocError::new(format!("inflates to more than {MAX_NBT} bytes")));
    }
    Ok(out)
}

#[allow(clippy::expect_used, reason = "compressing into memory fails only when memory does, which aborts anyway")]
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).expect("writing to memory");
    e.finish().expect("writing to memory")
}

/// A whole gzip NBT file: its root's name and compound.
pub(crate) struct NbtFile {
    name: String,
    pub(crate) root: Compound,
}

impl NbtFile {
    fn decode(bytes: &[u8]) -> DocResult<NbtFile> {
        let (name, root) = nbt::decode(&gunzip(bytes)?).map_err(DocError::new)?;
        Ok(NbtFile { name, root })
    }
    fn encode(&self) -> DocResult<Vec<u8>> {
        Ok(gzip(&nbt::encode(&self.name, &self.root).map_err(DocError::new)?))
    }
    /// Replace the root with edited SNBT.
    fn apply_snbt(&mut self, text: &str) -> DocResult<()> {
        let mut new = snbt::parse(text).map_err(DocError::new)?;
        snbt::keep_compound_list_types(&mut new, &self.root);
        self.root = new;
        Ok(())
    }
}

fn utf8(content: &[u8]) -> DocResult<&str> {
    std::str::from_utf8(content).map_err(|_| DocError::new("not UTF-8 text"))
}

/// `level.dat`: the mount's root, with `level`.
pub(crate) struct LevelDoc(NbtFile);

impl Document for LevelDoc {
    const NAME: &'static str = "minecraft";

    fn decode(bytes: &[u8], _ctx: &Context) -> DocResult<Self> {
        NbtFile::decode(bytes).map(LevelDoc)
    }
    fn encode(&self) -> DocResult<Vec<u8>> {
        self.0.encode()
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
            "level" => self.0.apply_snbt(utf8(content)?),
            _ => Err(DocError::new("this file cannot be written")),
        }
    }
    fn readme(&self) -> String {
        let data = self.0.root.compound("Data");
        let name = data.and_then(|d| d.string("LevelName")).unwrap_or("?");
        let version = data.and_then(|d| d.compound("Version")).and_then(|v| v.string("Name")).unwrap_or("?");
        format!(
            "worldfs: this directory is the Minecraft Java world \"{name}\" (version {version}).\n\n\
             level                       level.dat as SNBT (editable)\n\
             chunks/X,Z/                 every stored chunk (chunk coordinates):\n\
               info                      position, DataVersion, format, status\n\
               sections/Y/palette        the section's block states (read-only)\n\
               sections/Y/blocks         its 16x16x16 blocks drawn as text (docs/layout.md)\n\
               sections/Y/block_light    light levels, where stored; also sky_light\n\
               sections/Y/biomes         1.18+: the 4x4x4 biome cells drawn as text\n\
               block_entities/X,Y,Z/     id, items (slot count item [tag]), data (SNBT)\n\
             block/X,Y,Z                 one block's state, like minecraft:chest[facing=north]\n\
             entities/X,Z/, poi/X,Z/     1.17+ entities, 1.14+ points of interest (read-only)\n\
             dimensions/NS/PATH/         the Nether, the End, ...: chunks/, block/ ... of each\n\
             players/UUID/               inventory, position, health, data (the record as SNBT)\n\n\
             Edits are written back at close, each chunk by rewriting its region file\n\
             (temporary file, fsync, rename); refused while a game holds session.lock.\n\
             A bad edit fails (EINVAL); the reason is in write-errors.\n"
        )
    }
}

/// One player's record.
pub struct PlayerDoc(NbtFile);

impl PlayerDoc {
    fn inventory(&self) -> Option<&List> {
        self.0.root.list("Inventory")
    }
    fn data_version(&self) -> i64 {
        self.0.root.int("DataVersion").unwrap_or(0)
    }
    fn form(&self) -> ItemForm {
        ItemForm::of_data_version(self.data_version())
    }
    /// Refuse an item the record as SNBT adds to the inventory or the
    /// ender chest that the game of the player's DataVersion does not
    /// know (it would drop it when it loads the player).
    fn check_new_items(&self, old: &Compound) -> DocResult<()> {
        for key in ["Inventory", "EnderItems"] {
            let (Some(new), held) = (self.0.root.list(key), old.list(key).unwrap_or(&NO_ITEMS)) else { continue };
            if let Some(why) = items::unknown_id(new, held, self.data_version()) {
                return Err(DocError::new(format!("{key}: {why}")));
            }
        }
        Ok(())
    }
    fn numbers(&self, key: &str) -> String {
        match self.0.root.get(key) {
            Some(Tag::List(l)) => l
                .items
                .iter()
                .map(|t| snbt::tag_inline(t).trim_end_matches(['d', 'f']).to_string())
                .collect::<Vec<_>>()
                .join(" "),
            Some(t) => snbt::tag_inline(t),
            None => "?".into(),
        }
    }
}

impl Document for PlayerDoc {
    const NAME: &'static str = "minecraft player";

    fn decode(bytes: &[u8], _ctx: &Context) -> DocResult<Self> {
        NbtFile::decode(bytes).map(PlayerDoc)
    }
    fn encode(&self) -> DocResult<Vec<u8>> {
        self.0.encode()
    }
    fn entries(&self) -> Vec<Entry> {
        let mut v = vec![Entry::file("position", false), Entry::file("health", false), Entry::file("data", true)];
        if self.inventory().is_some() {
            v.insert(0, Entry::file("inventory", true));
        }
        v
    }
    fn render(&self, path: &str) -> DocResult<Vec<u8>> {
        let r = &self.0.root;
        let text = match path {
            "inventory" => items::render(self.inventory().ok_or_else(|| DocError::new("no Inventory"))?, self.form()),
            "position" => format!(
                "{}\ndimension = {}\nrotation = {}\n",
                self.numbers("Pos"),
                r.get("Dimension").map_or("?".into(), |t| match t {
                    Tag::String(s) => s.clone(),
                    t => snbt::tag_inline(t),
                }),
                self.numbers("Rotation")
            ),
            "health" => format!("{}\n", self.numbers("Health")),
            "data" => snbt::to_snbt(r),
            _ => return Err(DocError::new("no such file")),
        };
        Ok(text.into_bytes())
    }
    fn apply(&mut self, path: &str, content: &[u8]) -> DocResult<()> {
        let text = utf8(content)?;
        match path {
            "data" => {
                let old = self.0.root.clone();
                self.0.apply_snbt(text)?;
                self.check_new_items(&old).inspect_err(|_| self.0.root = old)
            }
            "inventory" => {
                let old = self.inventory().cloned().ok_or_else(|| DocError::new("no Inventory"))?;
                let new = items::parse(text, &old, self.form(), Slots::Player, self.data_version())?;
                self.0.root.insert("Inventory", Tag::List(new));
                Ok(())
            }
            _ => Err(DocError::new("this file cannot be written")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn player() -> Vec<u8> {
        let item = |slot: i8, id: &str| {
            Tag::Compound(Compound(vec![
                ("Slot".into(), Tag::Byte(slot)),
                ("id".into(), Tag::String(id.into())),
                ("Count".into(), Tag::Byte(1)),
            ]))
        };
        let root = Compound(vec![
            ("DataVersion".into(), Tag::Int(2730)),
            (
                "Pos".into(),
                Tag::List(List { elem: 6, items: vec![Tag::Double(1.5), Tag::Double(64.0), Tag::Double(-3.25)] }),
            ),
            ("Health".into(), Tag::Float(20.0)),
            (
                "Inventory".into(),
                Tag::List(List { elem: 10, items: vec![item(0, "minecraft:torch"), item(-106, "minecraft:shield")] }),
            ),
            ("EnderItems".into(), Tag::List(List { elem: 0, items: vec![] })),
        ]);
        gzip(&nbt::encode("", &root).unwrap())
    }

    #[test]
    fn a_player_reads_and_writes_back() {
        let bytes = player();
        let mut doc = PlayerDoc::decode(&bytes, &Context::default()).unwrap();
        assert_eq!(String::from_utf8(doc.render("position").unwrap()).unwrap().lines().next(), Some("1.5 64.0 -3.25"));
        let inv = String::from_utf8(doc.render("inventory").unwrap()).unwrap();
        assert!(inv.ends_with("0 1 minecraft:torch\n-106 1 minecraft:shield\n"), "{inv}");
        let plain = |d: &PlayerDoc| gunzip(&d.encode().unwrap()).unwrap();
        let before = plain(&doc);
        assert_eq!(before, gunzip(&bytes).unwrap());
        for f in ["inventory", "data"] {
            let shown = doc.render(f).unwrap();
            doc.apply(f, &shown).unwrap();
            assert_eq!(plain(&doc), before, "{f} written back as shown");
        }
        doc.apply("inventory", b"0 5 minecraft:torch\n").unwrap();
        let (_, root) = nbt::decode(&plain(&doc)).unwrap();
        assert_eq!(root.list("Inventory").unwrap().items.len(), 1);
        assert!(doc.apply("data", b"{Pos: [1.0d, 2b]}").is_err(), "a list of mixed types");
    }
}
