//! One mod's storage (`core.get_mod_storage()`; Luanti's
//! `ModStorageDatabase*` classes in src/database/ of
//! <https://github.com/luanti-org/luanti>): keys and values of arbitrary
//! bytes. Encodings: worldfs's canonical form (u32 count, then u32-length
//! key and value pairs, keys sorted) and the `files` backend's
//! `mod_storage/<mod>` file, one compact JSON object of strings written the
//! way the engine's jsoncpp writes it (keys sorted, non-ASCII as `\uXXXX`).

use std::collections::BTreeMap;

/// The storage of one mod: key -> value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModStorage {
    /// The entries, keys sorted (as the canonical form and the JSON file keep them).
    pub entries: BTreeMap<Vec<u8>, Vec<u8>>,
}

/// Whether `name` is a mod name (`[a-z0-9_]+`, as mod.conf names are).
pub fn check_mod_name(name: &str) -> Result<(), String> {
    if !name.is_empty() && name.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_') {
        Ok(())
    } else {
        Err(format!("'{name}' is not a mod name (a-z, 0-9 and _ only)"))
    }
}

impl ModStorage {
    /// The canonical form: u32 count, then u32 length + key, u32 length + value per entry.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = (self.entries.len() as u32).to_be_bytes().to_vec();
        for (k, v) in &self.entries {
            out.extend_from_slice(&(k.len() as u32).to_be_bytes());
            out.extend_from_slice(k);
            out.extend_from_slice(&(v.len() as u32).to_be_bytes());
            out.extend_from_slice(v);
        }
        out
    }

    /// Reads the canonical form; keys must be sorted and unique, nothing may follow.
    pub fn decode(data: &[u8]) -> Result<ModStorage, String> {
        let mut r = Cursor { data, pos: 0 };
        let n = r.len()?;
        let mut entries = BTreeMap::new();
        for _ in 0..n {
            let k = r.take_len()?;
            // worldfs writes this form sorted; any other order (or a key
            // twice) would not come back as it was read.
            if entries.last_key_value().is_some_and(|(last, _)| *last >= k) {
                return Err("mod storage record: keys out of order or repeated".into());
            }
            entries.insert(k, r.take_len()?);
        }
        if r.pos != data.len() {
            return Err("mod storage record: bytes after the last entry".into());
        }
        Ok(ModStorage { entries })
    }

    /// The JSON file. Keys and values must be UTF-8: the engine's reader
    /// (and 5.6.1's writer) cannot keep other bytes.
    pub fn to_json(&self) -> Result<Vec<u8>, String> {
        let mut out = String::from("{");
        for (i, (k, v)) in self.entries.iter().enumerate() {
            let text = |b: &[u8], what: &str| {
                std::str::from_utf8(b).map(String::from).map_err(|_| {
                    format!(
                        "{what} {:?} is not UTF-8 text, which the files backend (JSON) cannot keep",
                        String::from_utf8_lossy(k)
                    )
                })
            };
            if i > 0 {
                out.push(',');
            }
            quote(&text(k, "key")?, &mut out);
            out.push(':');
            quote(&text(v, "the value of key")?, &mut out);
        }
        out.push('}');
        Ok(out.into_bytes())
    }

    /// The file as the engine reads it: numbers and booleans become text,
    /// null the empty string; objects and arrays are refused.
    pub fn from_json(data: &[u8]) -> Result<ModStorage, String> {
        let v: serde_json::Value = serde_json::from_slice(data).map_err(|e| format!("not JSON: {e}"))?;
        Ok(ModStorage { entries: string_map(&v, "the mod storage")? })
    }
}

/// A JSON object of keys to values as the engine reads them (its
/// `asString`: numbers and booleans become text, null the empty string;
/// objects and arrays are refused): mod storage files and players'
/// `extended_attributes`. `what` names the object for errors.
pub(crate) fn string_map(v: &serde_json::Value, what: &str) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, String> {
    let obj = v.as_object().ok_or_else(|| format!("{what} is not a JSON object"))?;
    let mut entries = BTreeMap::new();
    for (k, v) in obj {
        let s = match v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Null => String::new(),
            serde_json::Value::Bool(b) => b.to_string(),
            serde_json::Value::Number(n) => n.to_string(),
            _ => return Err(format!("{what}: the value of '{k}' is an object or array (the engine refuses those)")),
        };
        entries.insert(k.as_bytes().to_vec(), s.into_bytes());
    }
    Ok(entries)
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let s = self.data.get(self.pos..self.pos.saturating_add(n)).ok_or("mod storage record: truncated")?;
        self.pos += n;
        Ok(s)
    }
    fn len(&mut self) -> Result<usize, String> {
        let b = self.take(4)?.first_chunk::<4>().ok_or("mod storage record: truncated")?;
        Ok(u32::from_be_bytes(*b) as usize)
    }
    fn take_len(&mut self) -> Result<Vec<u8>, String> {
        let n = self.len()?;
        Ok(self.take(n)?.to_vec())
    }
}

/// A JSON string as jsoncpp writes it by default.
fn quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if c.is_ascii() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(pairs: &[(&[u8], &[u8])]) -> ModStorage {
        ModStorage { entries: pairs.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect() }
    }

    #[test]
    fn json_as_the_engine_writes_it() {
        let s = store(&[(b"hello", b"world"), ("Schl\u{fc}ssel".as_bytes(), b"k"), (b"bin", b"a\0b\x01c\x7fd")]);
        let j = String::from_utf8(s.to_json().unwrap()).unwrap();
        assert_eq!(j, "{\"Schl\\u00fcssel\":\"k\",\"bin\":\"a\\u0000b\\u0001c\x7fd\",\"hello\":\"world\"}");
        assert_eq!(ModStorage::from_json(j.as_bytes()).unwrap(), s);
        assert!(store(&[(b"k", b"\xff")]).to_json().unwrap_err().contains("not UTF-8"));
        let odd = ModStorage::from_json(br#"{"n":42,"b":true,"z":null}"#).unwrap();
        assert_eq!(odd, store(&[(b"n", b"42"), (b"b", b"true"), (b"z", b"")]));
        assert!(ModStorage::from_json(br#"{"a":[1]}"#).is_err());
        assert!(ModStorage::from_json(b"[]").is_err());
    }

    #[test]
    fn canonical_round_trip() {
        let s = store(&[(b"", b""), (b"k\0", b"\xff\xfe")]);
        assert_eq!(ModStorage::decode(&s.encode()).unwrap(), s);
        assert!(ModStorage::decode(&s.encode()[..7]).is_err());
        assert!(check_mod_name("mesecons_1").is_ok() && check_mod_name("Bad").is_err());
    }
}
