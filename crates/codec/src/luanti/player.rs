//! A player's saved state: the same model in every backend (Luanti's
//! `PlayerDatabase*` classes in src/database/ of
//! <https://github.com/luanti-org/luanti>). Two encodings live here:
//! * the binary value of LevelDB's `players.db` (`PlayerDatabaseLevelDB`,
//!   src/database/database-leveldb.cpp), which worldfs also uses as its own
//!   canonical form (journal, comparisons);
//! * the `files` backend's `players/<name>` file: a Settings header ending
//!   in `PlayerArgsEnd`, then the inventory text (`PlayerDatabaseFiles`,
//!   src/database/database-files.cpp; doc/world_format.md, "Player File
//!   Format").

use crate::bytes::{Reader, Region};
use indexmap::IndexMap;
use std::collections::BTreeMap;

/// One player. Positions are in world units (nodes x 10), as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Player {
    /// Hit points (0: dead).
    pub hp: u16,
    /// Breath left under water.
    pub breath: u16,
    /// Position x, y, z in world units (nodes × 10).
    pub pos: [f32; 3],
    /// Looking up or down, in degrees.
    pub pitch: f32,
    /// Looking around, in degrees.
    pub yaw: f32,
    /// Player metadata ("extended attributes"): key -> value, in the
    /// order stored (the engine writes its unordered map as it iterates,
    /// so a LevelDB value must keep that order to re-encode byte for byte).
    pub meta: IndexMap<Vec<u8>, Vec<u8>>,
    /// Inventory text (List ... EndInventory).
    pub inventory: Vec<u8>,
}

/// Whether `name` is a player name the engine accepts (`player.h`):
/// 1 to 20 of `A-Z a-z 0-9 _ -`.
pub fn valid_name(name: &str) -> bool {
    (1..=20).contains(&name.len()) && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
}

/// The reason a player name is refused.
pub fn check_name(name: &str) -> Result<(), String> {
    if valid_name(name) {
        Ok(())
    } else {
        Err(format!("'{name}' is not a player name (1 to 20 of A-Z a-z 0-9 _ -, as the engine requires)"))
    }
}

impl Player {
    /// The LevelDB value: u8 1, u16 hp, f32 x y z, f32 pitch yaw, u16
    /// breath, u32 n + n x (string16 key, string32 value), inventory text.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![1u8];
        out.extend_from_slice(&self.hp.to_be_bytes());
        for v in self.pos.iter().chain([&self.pitch, &self.yaw]) {
            out.extend_from_slice(&v.to_bits().to_be_bytes());
        }
        out.extend_from_slice(&self.breath.to_be_bytes());
        out.extend_from_slice(&(self.meta.len() as u32).to_be_bytes());
        for (k, v) in &self.meta {
            out.extend_from_slice(&(k.len() as u16).to_be_bytes());
            out.extend_from_slice(k);
            out.extend_from_slice(&(v.len() as u32).to_be_bytes());
            out.extend_from_slice(v);
        }
        out.extend_from_slice(&self.inventory);
        out
    }

    /// Reads the LevelDB value (see [`Player::encode`]).
    pub fn decode(data: &[u8]) -> Result<Player, String> {
        let mut r = Reader::new(data, Region::Blob);
        let e = |e: crate::DecodeError| format!("player record: {e}");
        let version = r.u8("version").map_err(e)?;
        if version != 1 {
            return Err(format!("player record: version {version} (only 1 exists)"));
        }
        let hp = r.u16("hp").map_err(e)?;
        let mut f = [0f32; 5];
        for (i, v) in f.iter_mut().enumerate() {
            *v = f32::from_bits(r.u32(["x", "y", "z", "pitch", "yaw"][i]).map_err(e)?);
        }
        let breath = r.u16("breath").map_err(e)?;
        let n = r.u32("metadata count").map_err(e)?;
        let mut meta = IndexMap::new();
        for _ in 0..n {
            let k = r.string16("metadata key").map_err(e)?.to_vec();
            let v = r.string32("metadata value").map_err(e)?.to_vec();
            // The engine keeps the last of two equal keys; keeping one here
            // would re-encode the record differently, so it is refused.
            if meta.insert(k.clone(), v).is_some() {
                return Err(format!(
                    "player record: metadata key {:?} appears twice (the engine would drop one)",
                    String::from_utf8_lossy(&k)
                ));
            }
        }
        Ok(Player { hp, breath, pos: [f[0], f[1], f[2]], pitch: f[3], yaw: f[4], meta, inventory: r.rest().to_vec() })
    }

    /// The `players/<name>` file as the engine writes it.
    pub fn to_file(&self, name: &str) -> Result<Vec<u8>, String> {
        let mut attrs = serde_json::Map::new();
        for (k, v) in &self.meta {
            let (Ok(k), Ok(v)) = (std::str::from_utf8(k), std::str::from_utf8(v)) else {
                return Err(format!(
                    "player {name}: a metadata key or value is not UTF-8 text, which the files backend \
                     (JSON) cannot keep"
                ));
            };
            attrs.insert(k.to_string(), serde_json::Value::String(v.to_string()));
        }
        let attrs = if attrs.is_empty() {
            "null".to_string()
        } else {
            serde_json::to_string(&attrs).map_err(|e| format!("player {name}: metadata: {e}"))?
        };
        let [x, y, z] = self.pos;
        let mut out = format!(
            "name = {name}\nversion = 1\nhp = {}\nbreath = {}\nposition = ({x},{y},{z})\npitch = {}\nyaw = {}\n\
             extended_attributes = {attrs}\nPlayerArgsEnd\n",
            self.hp, self.breath, self.pitch, self.yaw
        )
        .into_bytes();
        out.extend_from_slice(&self.inventory);
        Ok(out)
    }

    /// Read a `players/<name>` file as the engine does (lenient on key
    /// order and unknown keys; `hp` 20 when missing). Returns the name the
    /// file holds and the player.
    pub fn from_file(data: &[u8]) -> Result<(String, Player), String> {
        let text_end = find_args_end(data).ok_or("no PlayerArgsEnd line (the engine refuses such a file)")?;
        let header = std::str::from_utf8(&data[..text_end.0]).map_err(|_| "the header is not UTF-8 text")?;
        let settings = parse_header(header)?;
        let get = |k: &str| settings.get(k).map(String::as_str);
        let name = get("name").ok_or("no 'name =' line")?.to_string();
        let num = |k: &str, default: f32| -> Result<f32, String> {
            match get(k) {
                None => Ok(default),
                Some(v) => v.trim().parse::<f32>().map_err(|_| format!("{k} = {v}: not a number")),
            }
        };
        let int = |k: &str, default: u16| -> Result<u16, String> {
            match get(k) {
                None => Ok(default),
                Some(v) => v.trim().parse::<u16>().map_err(|_| format!("{k} = {v}: not a whole number 0 to 65535")),
            }
        };
        let pos = match get("position") {
            None => [0.0; 3],
            Some(v) => parse_v3f(v).ok_or_else(|| format!("position = {v}: not (x,y,z)"))?,
        };
        let mut meta = IndexMap::new();
        if let Some(a) = get("extended_attributes")
            && a.trim() != "null"
            && !a.trim().is_empty()
        {
            let v: serde_json::Value =
                serde_json::from_str(a).map_err(|e| format!("extended_attributes is not JSON: {e}"))?;
            meta = super::mod_storage::string_map(&v, "extended_attributes")?.into_iter().collect();
        }
        let player = Player {
            hp: int("hp", 20)?,
            breath: int("breath", 11)?,
            pos,
            pitch: num("pitch", 0.0)?,
            yaw: num("yaw", 0.0)?,
            meta,
            inventory: data[text_end.1..].to_vec(),
        };
        Ok((name, player))
    }
}

/// Where the header ends: (end of the header text, start of the inventory).
fn find_args_end(data: &[u8]) -> Option<(usize, usize)> {
    let mut pos = 0;
    while pos < data.len() {
        let end = data[pos..].iter().position(|&c| c == b'\n').map_or(data.len(), |n| pos + n);
        if data[pos..end].trim_ascii() == b"PlayerArgsEnd" {
            return Some((pos, (end + 1).min(data.len())));
        }
        pos = end + 1;
    }
    None
}

/// Settings lines `name = value` (with `"""` multi-line values and `#`
/// comments), as the engine's Settings reads them.
fn parse_header(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let Some((k, v)) = t.split_once('=') else {
            return Err(format!("header line '{t}' is not 'name = value'"));
        };
        let (k, mut v) = (k.trim().to_string(), v.trim().to_string());
        if v == "\"\"\"" {
            let mut parts = Vec::new();
            loop {
                let l = lines.next().ok_or_else(|| format!("{k}: multi-line value without its closing \"\"\""))?;
                if l.trim() == "\"\"\"" {
                    break;
                }
                parts.push(l);
            }
            v = parts.join("\n");
        }
        out.insert(k, v);
    }
    Ok(out)
}

fn parse_v3f(v: &str) -> Option<[f32; 3]> {
    let inner = v.trim().strip_prefix('(')?.strip_suffix(')')?;
    let mut it = inner.split(',').map(|s| s.trim().parse::<f32>());
    let r = [it.next()?.ok()?, it.next()?.ok()?, it.next()?.ok()?];
    it.next().is_none().then_some(r)
}

/// One inventory list as the sqlite3 and PostgreSQL player tables hold it:
/// its name, width and size, and (slot, itemstring) of its filled slots.
pub struct ListRows {
    /// The list name (`main`, `craft`, ...).
    pub name: String,
    /// The list's width (0: not a grid).
    pub width: u32,
    /// How many slots the list has.
    pub size: usize,
    /// The filled slots: 0-based slot number and itemstring.
    pub items: Vec<(i64, String)>,
}

/// The inventory text of lists read from player tables, in the engine's
/// form (every slot `Item ...` or `Empty`): slots outside the list or with
/// an empty item stay empty; sizes are capped at 2^20 slots.
pub fn inventory_text(lists: Vec<ListRows>) -> Vec<u8> {
    let mut inv = Vec::new();
    for l in lists {
        let mut slots: Vec<Option<String>> = vec![None; l.size.min(1 << 20)];
        for (slot, item) in l.items {
            if let Some(s) = usize::try_from(slot).ok().and_then(|i| slots.get_mut(i))
                && !item.is_empty()
            {
                *s = Some(item);
            }
        }
        inv.extend_from_slice(format!("List {} {}\nWidth {}\n", l.name, slots.len(), l.width).as_bytes());
        for s in slots {
            match s {
                Some(item) => inv.extend_from_slice(format!("Item {item}\n").as_bytes()),
                None => inv.extend_from_slice(b"Empty\n"),
            }
        }
        inv.extend_from_slice(b"EndInventoryList\n");
    }
    inv.extend_from_slice(b"EndInventory\n");
    inv
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Player {
        let mut meta = IndexMap::new();
        meta.insert(b"xp".to_vec(), b"7".to_vec());
        meta.insert(b"stamina:level".to_vec(), b"20".to_vec());
        Player {
            hp: 18,
            breath: 10,
            pos: [105.0, 85.0, -42.5],
            pitch: -12.5,
            yaw: 270.0,
            meta,
            inventory: b"List main 1\nWidth 0\nItem default:dirt 42\nEndInventoryList\nEndInventory\n".to_vec(),
        }
    }

    #[test]
    fn leveldb_value_matches_the_spec_example() {
        let v = alice().encode();
        // 01 0012 42d20000 42aa0000 c22a0000 c1480000 43870000 000a 00000002
        let head = [
            0x01, 0x00, 0x12, 0x42, 0xd2, 0, 0, 0x42, 0xaa, 0, 0, 0xc2, 0x2a, 0, 0, 0xc1, 0x48, 0, 0, 0x43, 0x87, 0, 0,
            0x00, 0x0a, 0, 0, 0, 2,
        ];
        assert_eq!(&v[..head.len()], &head);
        assert_eq!(Player::decode(&v).unwrap(), alice());
        // Cut inside y (bytes 7..11).
        let e = Player::decode(&v[..10]).unwrap_err();
        assert!(e.starts_with("player record: truncated y: need 4 bytes, 3 left"), "{e}");
        let mut bad = v.clone();
        bad[0] = 2;
        assert!(Player::decode(&bad).unwrap_err().contains("version 2"));
    }

    #[test]
    fn file_round_trip_and_engine_example() {
        let f = alice().to_file("alice").unwrap();
        let (name, p) = Player::from_file(&f).unwrap();
        assert_eq!((name.as_str(), &p), ("alice", &alice()));
        // As 5.6.1 wrote it (`PlayerDatabaseFiles::savePlayer`), keys in any order.
        let engine = "breath = 10\nyaw = 270\npitch = -12.5\nextended_attributes = {\"stamina:level\":\"20\",\"xp\":\"7\"}\n\
                      position = (105,85,-42.5)\nhp = 18\nname = alice\nversion = 1\nPlayerArgsEnd\n\
                      List main 1\nWidth 0\nItem default:dirt 42\nEndInventoryList\nEndInventory\n";
        assert_eq!(Player::from_file(engine.as_bytes()).unwrap().1, alice());
        // A multi-line null, as 0.4.16 files have.
        let old = "name = bob\nextended_attributes = \"\"\"\nnull\n\"\"\"\nPlayerArgsEnd\nEndInventory\n";
        let (n, p) = Player::from_file(old.as_bytes()).unwrap();
        assert_eq!((n.as_str(), p.hp, p.meta.len()), ("bob", 20, 0));
        assert!(Player::from_file(b"name = x\n").unwrap_err().contains("PlayerArgsEnd"));
    }

    #[test]
    fn names() {
        assert!(valid_name("alice") && valid_name("A_b-9") && !valid_name("") && !valid_name("a b"));
        assert!(!valid_name("abcdefghijklmnopqrstu"));
        assert!(check_name("../x").unwrap_err().contains("not a player name"));
    }
}
