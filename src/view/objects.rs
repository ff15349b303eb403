//! Parsing `objects`: one static object per line, Lua entities decoded,
//! other objects as quoted data (the inverse of `render::render_object`).

use super::decimal;
use super::parse::{Result, Word, at, int, lines, node_name, raw_tokens, text, word_of};
use std::collections::HashSet;
use worldfs_codec::luanti::Block;
use worldfs_codec::luanti::objects::{LUA_ENTITY, LuaEntity, StaticObject};

fn object_pos(s: &str, n: usize) -> Result<[i32; 3]> {
    let parts: Vec<&str> = s.split(',').collect();
    if parts.len() != 3 {
        return Err(at(n, format!("position must be X,Y,Z, not '{s}'")));
    }
    let mut p = [0; 3];
    for (i, part) in parts.iter().enumerate() {
        p[i] = decimal::parse(part, 10_000)
            .ok_or_else(|| at(n, format!("position part '{part}' must be a decimal with at most 4 decimals")))?;
    }
    Ok(p)
}

/// `key=value` tokens; values may be quoted.
fn key_values(toks: &[&[u8]], n: usize) -> Result<Vec<(String, Word)>> {
    toks.iter()
        .map(|t| {
            let eq = t.iter().position(|&c| c == b'=').filter(|&p| !t[..p].contains(&b'"'));
            let Some(eq) = eq else {
                return Err(at(n, format!("expected key=value, found '{}'", String::from_utf8_lossy(t))));
            };
            Ok((String::from_utf8_lossy(&t[..eq]).into_owned(), word_of(&t[eq + 1..], n)?))
        })
        .collect()
}

fn parse_lua_entity(toks: &[&[u8]], n: usize) -> Result<StaticObject> {
    if toks.len() < 3 {
        return Err(at(n, "expected 'lua_entity X,Y,Z NAME hp=.. velocity=.. yaw=.. staticdata=\"..\"'"));
    }
    let pos = object_pos(&text(&word_of(toks[1], n)?, n, "position")?, n)?;
    // The engine stores whatever name a mod gave; only an empty one must be quoted.
    let name_word = word_of(toks[2], n)?;
    let name = if name_word.quoted && name_word.bytes.is_empty() { Vec::new() } else { node_name(&name_word, n)? };
    let mut e =
        LuaEntity { name, staticdata: Vec::new(), hp: 0, velocity: [0; 3], yaw: 0, pitch_roll: None, guid: None };
    let mut seen = HashSet::new();
    let (mut pitch, mut roll, mut have_static, mut have_hp) = (None, None, false, false);
    for (k, w) in key_values(&toks[3..], n)? {
        if !seen.insert(k.clone()) {
            return Err(at(n, format!("{k}= given twice")));
        }
        let deg = |w: &Word| -> Result<i32> {
            let s = text(w, n, &k)?;
            decimal::parse(&s, 1000).ok_or_else(|| at(n, format!("{k} must be degrees with at most 3 decimals")))
        };
        match k.as_str() {
            "hp" => {
                e.hp = int(&w, n, "hp", "0-65535")?;
                have_hp = true;
            }
            "velocity" => e.velocity = object_pos(&text(&w, n, "velocity")?, n)?,
            "yaw" => e.yaw = deg(&w)?,
            "pitch" => pitch = Some(deg(&w)?),
            "roll" => roll = Some(deg(&w)?),
            "guid" => {
                let s = text(&w, n, "guid")?;
                let bytes: Option<Vec<u8>> = (s.len() == 32 && s.is_ascii())
                    .then(|| (0..16).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()).collect())
                    .flatten();
                e.guid =
                    Some(bytes.and_then(|b| b.try_into().ok()).ok_or_else(|| at(n, "guid must be 32 hex digits"))?);
            }
            "staticdata" => {
                if !w.quoted {
                    return Err(at(n, "staticdata must be quoted"));
                }
                e.staticdata = w.bytes;
                have_static = true;
            }
            _ => return Err(at(n, format!("unknown field {k}= (known: hp velocity yaw pitch roll guid staticdata)"))),
        }
    }
    if !have_static || !have_hp {
        return Err(at(n, "a lua_entity needs hp= and staticdata="));
    }
    e.pitch_roll = match (pitch, roll) {
        (Some(p), Some(r)) => Some((p, r)),
        (None, None) if e.guid.is_none() => None,
        (None, None) => Some((0, 0)),
        _ => return Err(at(n, "give both pitch= and roll=, or neither")),
    };
    let data = e.encode();
    if data.len() > u16::MAX as usize {
        return Err(at(n, "entity data longer than 65535 bytes"));
    }
    Ok(StaticObject { kind: LUA_ENTITY, pos, data })
}

/// `object type=N X,Y,Z data="..."`: any object, its data byte for byte.
fn parse_raw_object(toks: &[&[u8]], n: usize) -> Result<StaticObject> {
    let usage = || at(n, "expected 'object type=N X,Y,Z data=\"...\"'");
    if toks.len() != 4 {
        return Err(usage());
    }
    let t = text(&word_of(toks[1], n)?, n, "type")?;
    let kind: u8 = t
        .strip_prefix("type=")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| at(n, format!("expected type=N (0-255), not '{t}'")))?;
    let pos = object_pos(&text(&word_of(toks[2], n)?, n, "position")?, n)?;
    match key_values(&toks[3..], n)?.as_slice() {
        [(k, w)] if k == "data" && w.quoted => {
            if w.bytes.len() > u16::MAX as usize {
                return Err(at(n, "object data longer than 65535 bytes"));
            }
            Ok(StaticObject { kind, pos, data: w.bytes.clone() })
        }
        _ => Err(usage()),
    }
}

fn parse_object(line: &[u8], n: usize) -> Result<StaticObject> {
    let toks = raw_tokens(line, n)?;
    match toks.first().copied() {
        Some(b"lua_entity") => parse_lua_entity(&toks, n),
        Some(b"object") => parse_raw_object(&toks, n),
        _ => Err(at(n, "an object line starts with 'lua_entity' or 'object'")),
    }
}

/// Apply `objects`: the full list of static objects.
pub fn apply_objects(b: &mut Block, content: &[u8]) -> Result<()> {
    let mut objects = Vec::new();
    for (i, line) in lines(content)?.iter().enumerate() {
        if objects.len() == u16::MAX as usize {
            return Err(at(i + 1, "more than 65535 objects"));
        }
        objects.push(parse_object(line, i + 1)?);
    }
    b.objects.objects = objects;
    Ok(())
}
