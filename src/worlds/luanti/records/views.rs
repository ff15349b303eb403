//! Players, accounts and mod storage as files (pure: record <-> files).
//! Layout (docs/layout.md "Players, privileges and mod storage"):
//!
//! ```text
//! players/NAME/  inventory  position  look  hp  breath  meta/KEY
//! auth/NAME/     privileges  last_login  password
//! mod_storage/MOD/KEY
//! ```

use crate::documents::{Context, DocError, DocResult, Document, Entry};
use crate::view::escape;
use worldfs_codec::jsonish::HighBytes;
use worldfs_codec::luanti::auth::{AuthEntry, check_privilege};
use worldfs_codec::luanti::inventory::Inventory;
use worldfs_codec::luanti::mod_storage::{ModStorage, check_mod_name};
use worldfs_codec::luanti::player::{Player, check_name};
use worldfs_store::records::Collection;

/// One record of a collection: a [`Document`] (its files) with what the
/// collection adds: its directory, who may see it, and how a record is
/// named and made.
pub trait RecordView: Document + Clone {
    const COLLECTION: Collection;
    /// Only the mount's owner may see these records (accounts).
    const PRIVATE: bool = false;
    /// Why `name` cannot be a record's name, if it cannot.
    fn check_name(name: &str) -> Result<(), String>;
    /// A new record for `mkdir` (or why there cannot be one).
    fn create(name: &str) -> Result<Self, String>;
}

/// The `Document` methods every record has alike: an edit is judged on a
/// copy (the record itself is shared), and a record's directories are
/// fixed (none made, none removed inside it).
macro_rules! record_rules {
    () => {
        fn check_content(&self, path: &str, content: &[u8]) -> DocResult<()> {
            self.clone().apply(path, content)
        }

        fn mkdir(&mut self, path: &str) -> DocResult<()> {
            Err(DocError::new("no directories can be made inside a record").in_file(path))
        }

        fn rmdir(&mut self, path: &str) -> DocResult<()> {
            Err(DocError::new("this directory is part of the record").in_file(path))
        }
    };
}

/// The refusal of removing a file every record has.
fn part_of_every_record(path: &str) -> DocResult<()> {
    Err(DocError::new("this file is part of every record; write it instead").in_file(path))
}

/// A number, exactly: the f32's shortest decimal with the point moved
/// `shift` places left (world units / 10 = nodes).
fn shifted(v: f32, shift: usize) -> String {
    let s = format!("{v}");
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => ("-", d),
        None => ("", s.as_str()),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let all = format!("{}{int}{frac}", "0".repeat(shift));
    let point = all.len() - frac.len() - shift;
    let (i, f) = all.split_at(point);
    let i = i.trim_start_matches('0');
    let f = f.trim_end_matches('0');
    let i = if i.is_empty() { "0" } else { i };
    if f.is_empty() { format!("{neg}{i}") } else { format!("{neg}{i}.{f}") }
}

/// Parse a decimal and move its point `shift` places right, then to f32.
fn unshifted(text: &str, shift: usize) -> Option<f32> {
    let t = text.trim();
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => ("-", b),
        None => ("", t),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if int.is_empty() && frac.is_empty() || !int.bytes().chain(frac.bytes()).all(|c| c.is_ascii_digit()) {
        return None;
    }
    let frac = format!("{frac}{}", "0".repeat(shift));
    let (moved, rest) = frac.split_at(shift);
    let v: f32 = format!("{neg}{int}{moved}.{rest}0").parse().ok()?;
    v.is_finite().then_some(v)
}

fn one_line(content: &[u8], what: &str) -> DocResult<String> {
    let s = std::str::from_utf8(content).map_err(|_| DocError::new(format!("{what} must be text")))?;
    let s = s.strip_suffix('\n').unwrap_or(s);
    if s.contains('\n') {
        return Err(DocError::at_line(2, format!("{what} is one line")));
    }
    Ok(s.trim().to_string())
}

fn numbers(content: &[u8], what: &str, n: usize) -> DocResult<Vec<String>> {
    let line = one_line(content, what)?;
    let parts: Vec<String> = line.split_whitespace().map(String::from).collect();
    if parts.len() != n {
        return Err(DocError::at_line(1, format!("{what} is {n} numbers on one line, found '{line}'")));
    }
    Ok(parts)
}

/// Node coordinates the engine's map can hold.
const MAP_LIMIT: f32 = 31007.0;

impl RecordView for Player {
    const COLLECTION: Collection = Collection::Players;

    fn check_name(name: &str) -> Result<(), String> {
        check_name(name)
    }

    fn create(name: &str) -> Result<Self, String> {
        Err(format!(
            "players/{name}: a player's data is made by the server when the player joins; \
             to let someone in, make an account: mkdir auth/{name}"
        ))
    }
}

impl Document for Player {
    const NAME: &'static str = "players";

    fn decode(bytes: &[u8], _ctx: &Context) -> DocResult<Self> {
        Player::decode(bytes).map_err(DocError::new)
    }
    fn encode(&self) -> DocResult<Vec<u8>> {
        Ok(Player::encode(self))
    }

    fn entries(&self) -> Vec<Entry> {
        let mut v: Vec<Entry> =
            ["inventory", "position", "look", "hp", "breath"].into_iter().map(|f| Entry::file(f, true)).collect();
        v.push(Entry { path: "meta".into(), dir: true, writable: true });
        for k in self.meta.keys() {
            v.push(Entry::file(format!("meta/{}", String::from_utf8_lossy(&escape::key_to_name(k))), true));
        }
        v
    }

    fn render(&self, path: &str) -> DocResult<Vec<u8>> {
        let text = match path {
            "inventory" => return Ok(self.inventory.clone()),
            "position" => {
                let [x, y, z] = self.pos.map(|v| shifted(v, 1));
                format!("{x} {y} {z}\n")
            }
            "look" => format!("{} {}\n", self.pitch, self.yaw),
            "hp" => format!("{}\n", self.hp),
            "breath" => format!("{}\n", self.breath),
            _ => {
                let key = meta_key(path).ok_or_else(|| DocError::new("no such file").in_file(path))?;
                return self.meta.get(&key).cloned().ok_or_else(|| DocError::new("no such key").in_file(path));
            }
        };
        Ok(text.into_bytes())
    }

    fn apply(&mut self, path: &str, content: &[u8]) -> DocResult<()> {
        let e = |err: DocError| err.in_file(path);
        match path {
            "inventory" => {
                let inv = Inventory::parse_strict(content).map_err(|x| e(DocError::at_line(x.line, x.message)))?;
                self.inventory = inv.serialize(HighBytes::Raw);
            }
            "position" => {
                let p = numbers(content, "position (x y z in nodes)", 3).map_err(e)?;
                let mut pos = [0f32; 3];
                for (i, t) in p.iter().enumerate() {
                    let v = unshifted(t, 1).ok_or_else(|| e(DocError::at_line(1, format!("'{t}' is not a number"))))?;
                    if (v / 10.0).abs() > MAP_LIMIT {
                        return Err(e(DocError::at_line(1, format!("{t} is outside the map (±{MAP_LIMIT} nodes)"))));
                    }
                    pos[i] = v;
                }
                self.pos = pos;
            }
            "look" => {
                let p = numbers(content, "look (pitch yaw in degrees)", 2).map_err(e)?;
                let v: Vec<f32> = p
                    .iter()
                    .map(|t| {
                        t.parse::<f32>()
                            .ok()
                            .filter(|v| v.is_finite())
                            .ok_or_else(|| e(DocError::at_line(1, format!("'{t}' is not a number"))))
                    })
                    .collect::<DocResult<_>>()?;
                if !(-90.0..=90.0).contains(&v[0]) {
                    return Err(e(DocError::at_line(1, format!("pitch {} is not between -90 and 90", p[0]))));
                }
                // The server keeps yaw modulo 360 (what it saves); a yaw past a
                // turn is a mistake, and a huge one loses all precision.
                if !(-360.0..=360.0).contains(&v[1]) {
                    return Err(e(DocError::at_line(1, format!("yaw {} is not between -360 and 360", p[1]))));
                }
                (self.pitch, self.yaw) = (v[0], v[1]);
            }
            "hp" | "breath" => {
                let t = one_line(content, path).map_err(e)?;
                let v = t
                    .parse::<u16>()
                    .map_err(|_| e(DocError::at_line(1, format!("'{t}' is not a whole number 0 to 65535"))))?;
                if path == "hp" { self.hp = v } else { self.breath = v }
            }
            _ => {
                let key = meta_key(path).ok_or_else(|| e(DocError::new("not a file of a player")))?;
                std::str::from_utf8(content)
                    .map_err(|_| e(DocError::new("player metadata is text (UTF-8) in every backend")))?;
                self.meta.insert(key, content.to_vec());
            }
        }
        Ok(())
    }

    fn accepts_new(&self, path: &str) -> bool {
        meta_key(path).is_some()
    }

    record_rules!();

    /// A one-line file's line with its newline is all of it.
    fn complete(&self, path: &str, content: &[u8]) -> bool {
        let one_line = content.ends_with(b"\n") && content.iter().filter(|&&c| c == b'\n').count() == 1;
        one_line && matches!(path, "position" | "look" | "hp" | "breath")
    }

    fn remove(&mut self, path: &str) -> DocResult<()> {
        let key = meta_key(path).ok_or_else(|| {
            DocError::new("only meta/ keys can be removed; rmdir the player to delete it").in_file(path)
        })?;
        self.meta.shift_remove(&key).map(|_| ()).ok_or_else(|| DocError::new("no such key").in_file(path))
    }
}

/// The key of `meta/NAME`.
fn meta_key(path: &str) -> Option<Vec<u8>> {
    let name = path.strip_prefix("meta/")?;
    if name.contains('/') {
        return None;
    }
    escape::name_to_key(name.as_bytes())
}

impl RecordView for AuthEntry {
    const COLLECTION: Collection = Collection::Auth;
    const PRIVATE: bool = true;

    fn check_name(name: &str) -> Result<(), String> {
        check_name(name)
    }

    fn create(_name: &str) -> Result<Self, String> {
        // The engine accepts an account without a password (the empty
        // string: anyone who logs in first with that name may set one).
        Ok(AuthEntry { password: String::new(), privileges: Vec::new(), last_login: -1 })
    }
}

impl Document for AuthEntry {
    const NAME: &'static str = "auth";

    fn decode(bytes: &[u8], _ctx: &Context) -> DocResult<Self> {
        AuthEntry::decode(bytes).map_err(DocError::new)
    }
    fn encode(&self) -> DocResult<Vec<u8>> {
        Ok(AuthEntry::encode(self))
    }

    fn entries(&self) -> Vec<Entry> {
        vec![Entry::file("privileges", true), Entry::file("last_login", false), Entry::file("password", false)]
    }

    fn render(&self, path: &str) -> DocResult<Vec<u8>> {
        Ok(match path {
            "privileges" => self.privileges.iter().map(|p| format!("{p}\n")).collect::<String>().into_bytes(),
            "last_login" => match self.last_login {
                -1 => "never (the account was made but not used)\n-1\n".into(),
                t => format!("{} UTC\n{t}\n", crate::sys::time::format_utc(t)).into_bytes(),
            },
            // The hash never leaves the database (docs/layout.md says how
            // to reset a password).
            "password" => {
                if self.password.is_empty() {
                    b"none\n".to_vec()
                } else {
                    b"set (the hash is not shown)\n".to_vec()
                }
            }
            _ => return Err(DocError::new("no such file").in_file(path)),
        })
    }

    fn apply(&mut self, path: &str, content: &[u8]) -> DocResult<()> {
        if path != "privileges" {
            return Err(DocError::new("only privileges can be written").in_file(path));
        }
        let text = std::str::from_utf8(content).map_err(|_| DocError::new("privileges are text").in_file(path))?;
        let mut privs: Vec<String> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let p = line.trim();
            if p.is_empty() || p.starts_with('#') {
                continue;
            }
            check_privilege(p).map_err(|m| DocError::at_line(i + 1, m).in_file(path))?;
            if !privs.iter().any(|q| q == p) {
                privs.push(p.to_string());
            }
        }
        self.privileges = privs;
        Ok(())
    }

    record_rules!();

    fn remove(&mut self, path: &str) -> DocResult<()> {
        part_of_every_record(path)
    }
}

impl RecordView for ModStorage {
    const COLLECTION: Collection = Collection::ModStorage;

    fn check_name(name: &str) -> Result<(), String> {
        check_mod_name(name)
    }

    fn create(_name: &str) -> Result<Self, String> {
        Ok(ModStorage::default())
    }
}

impl Document for ModStorage {
    const NAME: &'static str = "mod_storage";

    fn decode(bytes: &[u8], _ctx: &Context) -> DocResult<Self> {
        ModStorage::decode(bytes).map_err(DocError::new)
    }
    fn encode(&self) -> DocResult<Vec<u8>> {
        Ok(ModStorage::encode(self))
    }

    fn entries(&self) -> Vec<Entry> {
        self.entries.keys().map(|k| Entry::file(String::from_utf8_lossy(&escape::key_to_name(k)), true)).collect()
    }

    fn render(&self, path: &str) -> DocResult<Vec<u8>> {
        let key = escape::name_to_key(path.as_bytes()).ok_or_else(|| DocError::new("no such key").in_file(path))?;
        self.entries.get(&key).cloned().ok_or_else(|| DocError::new("no such key").in_file(path))
    }

    fn apply(&mut self, path: &str, content: &[u8]) -> DocResult<()> {
        let key =
            escape::name_to_key(path.as_bytes()).ok_or_else(|| DocError::new("not a key's file name").in_file(path))?;
        if content.is_empty() {
            // The engine deletes a key set to "": an empty file would vanish.
            return Err(DocError::new("an empty value deletes the key in Luanti; rm the file instead").in_file(path));
        }
        self.entries.insert(key, content.to_vec());
        Ok(())
    }

    fn accepts_new(&self, path: &str) -> bool {
        !path.contains('/') && escape::name_to_key(path.as_bytes()).is_some()
    }

    fn remove(&mut self, path: &str) -> DocResult<()> {
        let key = escape::name_to_key(path.as_bytes()).ok_or_else(|| DocError::new("no such key").in_file(path))?;
        self.entries.remove(&key).map(|_| ()).ok_or_else(|| DocError::new("no such key").in_file(path))
    }

    record_rules!();

    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_convert_exactly() {
        for (v, s) in
            [(105.0f32, "10.5"), (191.7, "19.17"), (-42.5, "-4.25"), (0.5, "0.05"), (0.0, "0"), (-3.0, "-0.3")]
        {
            assert_eq!(shifted(v, 1), s, "{v}");
            assert_eq!(unshifted(s, 1), Some(v), "{s}");
        }
        assert_eq!(unshifted("x", 1), None);
        assert_eq!(unshifted("1e5", 1), None);
        let mut p = Player::decode(
            &worldfs_codec::luanti::player::Player {
                hp: 20,
                breath: 10,
                pos: [1.0, 2.0, 3.0],
                pitch: 0.0,
                yaw: 0.0,
                meta: Default::default(),
                inventory: b"EndInventory\n".to_vec(),
            }
            .encode(),
        )
        .unwrap();
        p.apply("position", b"10.5 -2 40000\n").unwrap_err();
        p.apply("position", b"10.5 -2 7\n").unwrap();
        assert_eq!(p.pos, [105.0, -20.0, 70.0]);
        assert_eq!(p.render("position").unwrap(), b"10.5 -2 7\n");
        assert!(p.apply("hp", b"-1\n").unwrap_err().to_string().contains("hp: line 1"));
        p.apply("meta/xp", b"7").unwrap();
        assert_eq!(p.render("meta/xp").unwrap(), b"7");
        assert!(p.apply("inventory", b"List main 1\nEndInventory\n").is_err());
    }

    #[test]
    fn privileges_and_password() {
        let mut a = AuthEntry::create("x").unwrap();
        a.apply("privileges", b"interact\nshout\n\nfly\nshout\n").unwrap();
        assert_eq!(a.privileges, ["interact", "shout", "fly"]);
        assert!(a.apply("privileges", b"a b\n").is_err());
        assert!(a.apply("password", b"x").is_err());
        a.password = "#1#salt#verifier".into();
        assert!(!String::from_utf8(a.render("password").unwrap()).unwrap().contains("salt"));
    }
}
