//! The node metadata of block version 22 (before key/value metadata).
//!
//! `u16 version (<= 1)`, `u16 count`, then per entry `u16 p16`,
//! `s16 type`, `string16 body`. The engine converts each typed body into
//! ordinary variables and an inventory on load; so do we, so that a v22
//! block reads like any other (and is written as version 25 when edited).

use super::inventory;
use super::nodemeta::{MAX_VARS, MetaEntry, MetaVar};
use super::objects::NodeTimer;
use crate::bytes::{DecodeError, Reader, Region};

const GENERIC: i16 = 1;
const SIGN: i16 = 14;
const CHEST: i16 = 15;
const FURNACE: i16 = 16;
const LOCKED_CHEST: i16 = 17;

const CHEST_FORMSPEC: &[u8] = b"size[8,9]list[current_name;main;0,0;8,4;]list[current_player;main;0,5;8,4;]";
const FURNACE_FORMSPEC: &[u8] = b"size[8,9]list[current_name;fuel;2,3;1,1;]list[current_name;src;2,1;1,1;]list[current_name;dst;5,1;2,2;]list[current_player;main;0,5;8,4;]";

/// Decode the legacy list; furnaces also get the one-second timer the
/// engine gives them.
pub fn decode(r: &mut Reader<'_>) -> Result<(Vec<MetaEntry>, Vec<NodeTimer>), DecodeError> {
    let version = r.u16("legacy node metadata version")?;
    if version > 1 {
        return Err(r.error_at(r.pos() - 2, format!("unsupported legacy node metadata version {version}")));
    }
    let count = r.u16("legacy node metadata count")?;
    let mut entries: Vec<MetaEntry> = Vec::new();
    let mut seen = vec![false; 4096];
    let mut total_vars = 0usize;
    let mut timers = Vec::new();
    for _ in 0..count {
        let at = r.pos();
        let pos = r.u16("legacy node metadata position")?;
        let kind = r.i16("legacy node metadata type")?;
        let body = r.string16("legacy node metadata body")?;
        if pos >= 4096 {
            return Err(r.error_at(at, format!("node metadata position {pos} is outside the block")));
        }
        if std::mem::replace(&mut seen[pos as usize], true) {
            continue; // the engine ignores later duplicates
        }
        let body_at = r.pos() - body.len();
        let mut entry = MetaEntry::new(pos);
        let mut b = Reader::at(body, 0, Region::Metadata);
        let fail = |e: DecodeError| DecodeError { offset: body_at + e.offset, ..e };
        let furnace = decode_body(&mut b, kind, &mut entry).map_err(fail)?;
        if furnace {
            timers.push(NodeTimer { pos, timeout: 1000, elapsed: 0 });
        }
        total_vars += entry.vars.len();
        if total_vars > MAX_VARS {
            return Err(r.error_at(
                at,
                format!(
                    "more than {MAX_VARS} node metadata variables in one block (64 per node; refused to bound memory)"
                ),
            ));
        }
        entries.push(entry);
    }
    Ok((entries, timers))
}

fn set(entry: &mut MetaEntry, key: &[u8], value: &[u8]) {
    // setString("") deletes the key in the engine.
    entry.vars.retain(|v| v.key != key);
    if !value.is_empty() {
        entry.vars.push(MetaVar { key: key.to_vec(), value: value.to_vec(), private: false });
    }
}

/// `set` for each pair in turn, in linear time: a key ends up where its
/// last setting puts it (at the end), or absent if that setting is empty.
fn set_all(entry: &mut MetaEntry, sets: &[(&[u8], &[u8])]) {
    use std::collections::HashMap;
    let mut last: HashMap<&[u8], usize> = HashMap::new();
    for (i, (k, _)) in sets.iter().enumerate() {
        last.insert(k, i);
    }
    entry.vars.retain(|v| !last.contains_key(v.key.as_slice()));
    for (i, (k, v)) in sets.iter().enumerate() {
        if last[k] == i && !v.is_empty() {
            entry.vars.push(MetaVar { key: k.to_vec(), value: v.to_vec(), private: false });
        }
    }
}

fn read_inventory(b: &mut Reader<'_>) -> Result<Vec<u8>, DecodeError> {
    let Some(len) = inventory::scan_end(b.rest()) else {
        return Err(b.error("legacy inventory not terminated by EndInventory"));
    };
    Ok(b.bytes(len, "legacy inventory")?.to_vec())
}

/// Chests called their list "0"; the engine renames it to "main".
fn rename_list_zero(inv: Vec<u8>) -> Vec<u8> {
    let has_main = inv.split(|&c| c == b'\n').any(|l| l.starts_with(b"List main "));
    if has_main {
        return inv;
    }
    let mut out = Vec::with_capacity(inv.len() + 4);
    for (i, line) in inv.split(|&c| c == b'\n').enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        match line.strip_prefix(b"List 0 ") {
            Some(rest) => {
                out.extend_from_slice(b"List main ");
                out.extend_from_slice(rest);
            }
            None => out.extend_from_slice(line),
        }
    }
    out
}

fn decode_body(b: &mut Reader<'_>, kind: i16, e: &mut MetaEntry) -> Result<bool, DecodeError> {
    match kind {
        GENERIC => {
            e.inventory = read_inventory(b)?;
            b.string32("generic text")?;
            b.string16("generic owner")?;
            let infotext = b.string16("generic infotext")?;
            set(e, b"infotext", infotext);
            let formspec = b.string16("generic formspec")?;
            set(e, b"formspec", formspec);
            b.bytes(3, "generic flags")?;
            let n = b.u32("generic variable count")?;
            // Up to ~10 000 variables fit in a 64 KiB body: set() one by
            // one would be quadratic, so apply them all at once.
            let mut sets = Vec::new();
            for _ in 0..n {
                let k = b.string16("generic variable name")?;
                let v = b.string32("generic variable value")?;
                sets.push((k, v));
            }
            set_all(e, &sets);
            Ok(false)
        }
        SIGN => {
            let text = b.string16("sign text")?.to_vec();
            set(e, b"text", &text);
            set(e, b"infotext", &[b"\"", &text[..], b"\""].concat());
            set(e, b"formspec", b"field[text;;${text}]");
            Ok(false)
        }
        CHEST | LOCKED_CHEST => {
            if kind == LOCKED_CHEST {
                let owner = b.string16("locked chest owner")?;
                set(e, b"owner", owner);
            }
            e.inventory = rename_list_zero(read_inventory(b)?);
            set(e, b"formspec", CHEST_FORMSPEC);
            Ok(false)
        }
        FURNACE => {
            e.inventory = read_inventory(b)?;
            // Four whitespace-separated integers: tenths of seconds.
            let text = String::from_utf8_lossy(b.rest()).into_owned();
            let mut nums = text.split_whitespace().map(|t| t.parse::<i32>().unwrap_or(0));
            let mut next = || nums.next().unwrap_or(0);
            let (fuel_total, fuel, _src_total, src) = (next(), next(), next(), next());
            set(e, b"fuel_totaltime", format_float(fuel_total as f32 / 10.0).as_bytes());
            set(e, b"fuel_time", format_float(fuel as f32 / 10.0).as_bytes());
            set(e, b"src_time", format_float(src as f32 / 10.0).as_bytes());
            set(e, b"formspec", FURNACE_FORMSPEC);
            Ok(true)
        }
        _ => Err(b.error_at(0, format!("unknown legacy node metadata type {kind}"))),
    }
}

/// Like C++ `ostream << float` with default precision: up to 6 significant
/// digits, no trailing zeros.
fn format_float(f: f32) -> String {
    let s = format!("{:.*}", 6usize.saturating_sub(f.abs().log10().floor().max(0.0) as usize + 1), f);
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    if s == "-0" { "0".into() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bytes::WriteBe;

    fn entry(pos: u16, kind: i16, body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.put_u16(pos);
        v.put_i16(kind);
        v.put_string16(body);
        v
    }

    #[test]
    fn converts_sign_chest_and_furnace() {
        let mut data = Vec::new();
        data.put_u16(1);
        data.put_u16(3);
        let mut sign = Vec::new();
        sign.put_string16(b"hi");
        data.extend(entry(1, SIGN, &sign));
        data.extend(entry(
            2,
            CHEST,
            b"List 0 2\nWidth 0\nItem default:dirt 3\nEmpty\nEndInventoryList\nEndInventory\n",
        ));
        data.extend(entry(3, FURNACE, b"List fuel 1\nWidth 0\nEmpty\nEndInventoryList\nEndInventory\n15 7 0 30"));
        let mut r = Reader::new(&data, Region::Metadata);
        let (entries, timers) = decode(&mut r).unwrap();
        assert_eq!(entries[0].get(b"text").unwrap().value, b"hi");
        assert_eq!(entries[0].get(b"infotext").unwrap().value, b"\"hi\"");
        assert!(entries[1].inventory.starts_with(b"List main 2\n"));
        assert_eq!(entries[2].get(b"fuel_totaltime").unwrap().value, b"1.5");
        assert_eq!(entries[2].get(b"fuel_time").unwrap().value, b"0.7");
        assert_eq!(entries[2].get(b"src_time").unwrap().value, b"3");
        assert_eq!(timers, vec![NodeTimer { pos: 3, timeout: 1000, elapsed: 0 }]);
    }

    #[test]
    fn unknown_type_is_an_error() {
        let mut data = Vec::new();
        data.put_u16(1);
        data.put_u16(1);
        data.extend(entry(1, 99, b""));
        assert!(decode(&mut Reader::new(&data, Region::Metadata)).is_err());
    }

    #[test]
    fn set_all_is_set_in_turn() {
        let sets: Vec<(&[u8], &[u8])> =
            vec![(b"a", b"1"), (b"b", b"2"), (b"a", b"3"), (b"c", b""), (b"b", b""), (b"d", b"4"), (b"c", b"5")];
        let mut one = MetaEntry::new(0);
        set(&mut one, b"c", b"old");
        set(&mut one, b"z", b"kept");
        let mut all = one.clone();
        for (k, v) in &sets {
            set(&mut one, k, v);
        }
        set_all(&mut all, &sets);
        assert_eq!(all, one);
    }

    #[test]
    fn floats_print_like_cpp() {
        assert_eq!(format_float(0.0), "0");
        assert_eq!(format_float(1.5), "1.5");
        assert_eq!(format_float(0.7), "0.7");
        assert_eq!(format_float(123.4), "123.4");
    }
}
