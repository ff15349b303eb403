//! Item stacks as they appear in inventories ("itemstrings").
//!
//! `NAME [COUNT [WEAR [META]]]`, using the fewest parts needed. NAME and META
//! are quoted by the JSON-ish rules when needed; META is `\x01` followed by
//! `KEY \x02 VALUE \x03` pairs and is therefore always quoted.

use crate::jsonish::{self, HighBytes};

/// Item metadata: (key, value) pairs in stored order.
pub type ItemMeta = Vec<(Vec<u8>, Vec<u8>)>;

/// One non-empty inventory slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemStack {
    /// The item name, e.g. `default:dirt` (unquoted bytes).
    pub name: Vec<u8>,
    /// How many items, 1-65535 (1 when the itemstring leaves it out).
    pub count: u16,
    /// Tool wear, 0 (new) to 65535 (0 when left out).
    pub wear: u16,
    /// Item metadata pairs in stored order.
    pub meta: ItemMeta,
}

const META_START: u8 = 0x01;
const KV_DELIM: u8 = 0x02;
const PAIR_DELIM: u8 = 0x03;

impl ItemStack {
    /// `count` items named `name`, no wear, no metadata.
    pub fn new(name: &str, count: u16) -> Self {
        ItemStack { name: name.as_bytes().to_vec(), count, wear: 0, meta: Vec::new() }
    }

    fn meta_bytes(&self) -> Vec<u8> {
        let mut m = vec![META_START];
        for (k, v) in &self.meta {
            if k.is_empty() && v.is_empty() {
                continue;
            }
            m.extend_from_slice(k);
            m.push(KV_DELIM);
            m.extend_from_slice(v);
            m.push(PAIR_DELIM);
        }
        m
    }

    fn has_meta(&self) -> bool {
        self.meta.iter().any(|(k, v)| !k.is_empty() || !v.is_empty())
    }

    /// The engine's writer: the shortest form that keeps all information.
    pub fn serialize(&self, high: HighBytes) -> Vec<u8> {
        let mut out = jsonish::quote_if_needed(&self.name, high);
        let parts = if self.has_meta() {
            4
        } else if self.wear != 0 {
            3
        } else if self.count != 1 {
            2
        } else {
            1
        };
        if parts >= 2 {
            out.extend_from_slice(format!(" {}", self.count).as_bytes());
        }
        if parts >= 3 {
            out.extend_from_slice(format!(" {}", self.wear).as_bytes());
        }
        if parts >= 4 {
            out.push(b' ');
            out.extend_from_slice(&jsonish::quote_if_needed(&self.meta_bytes(), high));
        }
        out
    }

    /// Parse an itemstring strictly: everything the engine would refuse, and
    /// everything it would silently read as something else (count 0 or above
    /// 65535, junk after the metadata, duplicate metadata keys, legacy forms),
    /// is an error. Offsets in errors count from the start of `s`.
    pub fn parse_strict(s: &[u8]) -> Result<ItemStack, ItemError> {
        let err = |offset: usize, m: String| ItemError { offset, message: m };
        let (name, mut i) = if s.first() == Some(&b'"') {
            jsonish::unquote(s, true).map_err(|e| err(e.offset, e.message))?
        } else {
            let end = s.iter().position(|&c| c == b' ').unwrap_or(s.len());
            (s[..end].to_vec(), end)
        };
        if name.is_empty() {
            return Err(err(0, "empty item name (write Empty for an empty slot)".into()));
        }
        if let Some(bad) = name.iter().position(|&c| c == b'\n' || c == b'\r' || c == 0) {
            return Err(err(bad, "item name contains a control character".into()));
        }
        const LEGACY: [&[u8]; 9] = [
            b"MaterialItem",
            b"MaterialItem2",
            b"MaterialItem3",
            b"node",
            b"NodeItem",
            b"craft",
            b"CraftItem",
            b"tool",
            b"ToolItem",
        ];
        if LEGACY.contains(&name.as_slice()) || name == b"MBOItem" {
            return Err(err(
                0,
                format!(
                    "'{}' is a pre-2012 itemstring form; write 'modname:item COUNT'",
                    String::from_utf8_lossy(&name)
                ),
            ));
        }
        let mut stack = ItemStack { name, count: 1, wear: 0, meta: Vec::new() };
        if i == s.len() {
            return Ok(stack);
        }
        if s[i] != b' ' {
            return Err(err(i, "unexpected text after the item name (quote names with spaces)".into()));
        }
        i += 1;
        let token = |i: usize| {
            let end = s[i..].iter().position(|&c| c == b' ').map_or(s.len(), |p| i + p);
            (&s[i..end], end)
        };
        let (count, end) = token(i);
        if count.is_empty() {
            if end == s.len() {
                return Ok(stack);
            }
            return Err(err(i, "two spaces in a row where the count should be".into()));
        }
        stack.count = parse_u16(count).ok_or_else(|| {
            err(i, format!("count must be a number 1-65535, not '{}'", String::from_utf8_lossy(count)))
        })?;
        if stack.count == 0 {
            return Err(err(i, "count 0 makes the slot empty; write Empty instead".into()));
        }
        if end == s.len() {
            return Ok(stack);
        }
        i = end + 1;
        let (wear, end) = token(i);
        if wear.is_empty() {
            if end == s.len() {
                return Ok(stack);
            }
            return Err(err(i, "two spaces in a row where the wear should be".into()));
        }
        stack.wear = parse_u16(wear)
            .ok_or_else(|| err(i, format!("wear must be a number 0-65535, not '{}'", String::from_utf8_lossy(wear))))?;
        if end == s.len() {
            return Ok(stack);
        }
        i = end + 1;
        if i == s.len() {
            return Ok(stack);
        }
        if s[i] != b'"' {
            return Err(err(i, "item metadata must be a quoted string starting with \\u0001".into()));
        }
        let (meta, used) = jsonish::unquote(&s[i..], true).map_err(|e| err(i + e.offset, e.message))?;
        if i + used != s.len() {
            return Err(err(i + used, "text after the item metadata (the server ignores it)".into()));
        }
        stack.meta = parse_meta(&meta).map_err(|m| err(i, m))?;
        Ok(stack)
    }
}

fn parse_u16(t: &[u8]) -> Option<u16> {
    if t.is_empty() || t.len() > 5 || !t.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(t).ok()?.parse::<u32>().ok().filter(|&v| v <= 65535).map(|v| v as u16)
}

/// Parse `\x01 (KEY \x02 VALUE \x03)*` strictly.
fn parse_meta(m: &[u8]) -> Result<ItemMeta, String> {
    if m.first() != Some(&META_START) {
        return Err("item metadata must start with \\u0001".into());
    }
    let mut pairs: ItemMeta = Vec::new();
    let mut keys = std::collections::HashSet::new();
    let mut rest = &m[1..];
    while !rest.is_empty() {
        let Some(k) = rest.iter().position(|&c| c == KV_DELIM) else {
            return Err("item metadata key without \\u0002 and value".into());
        };
        let Some(v) = rest[k + 1..].iter().position(|&c| c == PAIR_DELIM) else {
            return Err("item metadata value not ended by \\u0003".into());
        };
        let key = &rest[..k];
        let value = &rest[k + 1..k + 1 + v];
        if key.iter().chain(value).any(|&c| c == META_START || c == KV_DELIM) {
            return Err("item metadata key or value contains \\u0001 or \\u0002".into());
        }
        if key.is_empty() && value.is_empty() {
            return Err("empty item metadata pair \\u0002\\u0003 (the server drops it)".into());
        }
        if !keys.insert(key) {
            return Err(format!(
                "item metadata key '{}' appears twice (the server keeps only the last)",
                String::from_utf8_lossy(key)
            ));
        }
        pairs.push((key.to_vec(), value.to_vec()));
        rest = &rest[k + 1 + v + 1..];
    }
    Ok(pairs)
}

/// Why an itemstring could not be read, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemError {
    /// The byte offset in the itemstring.
    pub offset: usize,
    /// What is wrong there.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(s: &str) -> String {
        let st = ItemStack::parse_strict(s.as_bytes()).unwrap();
        String::from_utf8(st.serialize(HighBytes::Escaped)).unwrap()
    }

    #[test]
    fn shortest_forms() {
        assert_eq!(round("default:dirt 42"), "default:dirt 42");
        assert_eq!(round("default:pick_steel"), "default:pick_steel");
        assert_eq!(round("default:pick_steel 1"), "default:pick_steel");
        assert_eq!(round("default:pick_steel 1 0"), "default:pick_steel");
        assert_eq!(round("default:pick_steel 1 1234"), "default:pick_steel 1 1234");
        assert_eq!(round("\"foo bar\" 3"), "\"foo bar\" 3");
        let m = r#"default:pick_steel 1 1234 "\u0001color\u0002#ff0000\u0003description\u0002FUSE pick\u0003""#;
        assert_eq!(round(m), m);
        assert_eq!(
            round(r#"default:pick_steel 1 0 "\u0001k\u0002v\u0003""#),
            r#"default:pick_steel 1 0 "\u0001k\u0002v\u0003""#
        );
    }

    #[test]
    fn non_ascii_meta_in_both_styles() {
        let esc = r#"default:dirt 5 0 "\u0001description\u0002Gr\u00c3\u00bc\u00c3\u009fe\u0003""#;
        let raw = "default:dirt 5 0 \"\\u0001description\\u0002Grüße\\u0003\"";
        let a = ItemStack::parse_strict(esc.as_bytes()).unwrap();
        let b = ItemStack::parse_strict(raw.as_bytes()).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.meta[0].1, "Grüße".as_bytes());
        assert_eq!(a.serialize(HighBytes::Raw), raw.as_bytes());
        assert_eq!(a.serialize(HighBytes::Escaped), esc.as_bytes());
    }

    #[test]
    fn strict_rejections() {
        for bad in [
            "",
            "default:dirt 0",
            "default:dirt 70000",
            "default:dirt -1",
            "default:dirt abc",
            "default:dirt 5 99999",
            "default:dirt 5 0 notquoted",
            "default:dirt 5 0 \"\\u0001k\\u0002v\\u0003\" junk",
            "default:dirt 5 0 \"\\u0001k\\u0002v\"",
            "default:dirt 5 0 \"\\u0001k\\u0002v\\u0003k\\u0002w\\u0003\"",
            "\"unterminated 5",
            "MaterialItem 1 2",
            "default:dirt  5",
        ] {
            assert!(ItemStack::parse_strict(bad.as_bytes()).is_err(), "accepted {bad:?}");
        }
    }
}
