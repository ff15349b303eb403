//! Parsing the files a user writes back into a block: the inverse of
//! `render`. Pure functions: each takes the current block (or metadata
//! entry) and the new file content, and either changes it or says exactly
//! which line is wrong and why.
//!
//! A file's content is the truth: whatever a file says is what that part of
//! the block becomes. Everything the server would refuse, or silently read
//! as something other than what is written, is an error here.

use super::{decimal, escape};
use std::collections::{HashMap, HashSet};
use std::fmt;
use worldfs_codec::jsonish::{self, HighBytes};
use worldfs_codec::luanti::block::{Block, MAX_VERSION, MIN_WRITE_VERSION, MappingEntry, NODE_COUNT, node_index};
use worldfs_codec::luanti::inventory::Inventory;
use worldfs_codec::luanti::nodemeta::{MetaEntry, MetaVar};
use worldfs_codec::luanti::objects::NodeTimer;
use worldfs_store::BlockPos;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number, when the problem is on one line.
    pub(crate) line: Option<usize>,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(n) => write!(f, "line {n}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ParseError {}

pub type Result<T> = std::result::Result<T, ParseError>;

pub(super) fn at(line: usize, message: impl Into<String>) -> ParseError {
    ParseError { line: Some(line), message: message.into() }
}

pub(super) fn whole(message: impl Into<String>) -> ParseError {
    ParseError { line: None, message: message.into() }
}

/// The most lines a decoded text file may have (`nodes` has 4096; `names`,
/// `objects` at most 65536). Counted before splitting, so that 256 MiB of
/// newlines does not become a 4 GiB list of lines.
pub(crate) const MAX_LINES: usize = 1 << 20;

/// The lines of a text file: split on `\n`, one final newline optional.
/// `\r` and NUL are refused (they are never part of these formats).
pub(super) fn lines(text: &[u8]) -> Result<Vec<&[u8]>> {
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    if body.is_empty() {
        return Ok(Vec::new());
    }
    let count = body.iter().filter(|&&c| c == b'\n').count() + 1;
    if count > MAX_LINES {
        return Err(whole(format!("{count} lines; no file here has more than {MAX_LINES}")));
    }
    let v: Vec<&[u8]> = body.split(|&c| c == b'\n').collect();
    for (i, l) in v.iter().enumerate() {
        if l.ends_with(b"\r") {
            return Err(at(i + 1, "line ends with \\r (Windows line ending); use \\n only"));
        }
        if l.contains(&0) {
            return Err(at(i + 1, "NUL byte in a text line"));
        }
    }
    Ok(v)
}

/// One space-separated word; quoted words may contain spaces.
#[derive(Debug)]
pub(super) struct Word {
    pub(super) bytes: Vec<u8>,
    pub(super) quoted: bool,
}

/// Split a line at single spaces; a quoted string (which may hold spaces)
/// can start anywhere in a token (`"odd name"`, `data="a b"`).
pub(super) fn raw_tokens(line: &[u8], n: usize) -> Result<Vec<&[u8]>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        if line[i] == b' ' {
            return Err(at(n, format!("extra space at column {}", i + 1)));
        }
        let start = i;
        while i < line.len() && line[i] != b' ' {
            if line[i] == b'"' {
                let (_, used) = jsonish::unquote(&line[i..], true)
                    .map_err(|e| at(n, format!("column {}: {}", i + e.offset + 1, e.message)))?;
                i += used;
            } else {
                i += 1;
            }
        }
        out.push(&line[start..i]);
        if i < line.len() {
            i += 1; // the space
            if i == line.len() {
                return Err(at(n, "trailing space"));
            }
        }
    }
    Ok(out)
}

/// A token as a word: a whole quoted string, or plain bytes without quotes.
pub(super) fn word_of(tok: &[u8], n: usize) -> Result<Word> {
    if tok.first() == Some(&b'"') {
        let (bytes, used) = jsonish::unquote(tok, true).map_err(|e| at(n, e.message))?;
        if used != tok.len() {
            return Err(at(n, format!("text after a quoted string: '{}'", String::from_utf8_lossy(tok))));
        }
        return Ok(Word { bytes, quoted: true });
    }
    if tok.contains(&b'"') {
        return Err(at(n, format!("a quote inside a word: '{}'", String::from_utf8_lossy(tok))));
    }
    Ok(Word { bytes: tok.to_vec(), quoted: false })
}

fn words(line: &[u8], n: usize) -> Result<Vec<Word>> {
    raw_tokens(line, n)?.into_iter().map(|t| word_of(t, n)).collect()
}

pub(super) fn text(w: &Word, n: usize, what: &str) -> Result<String> {
    if w.quoted {
        return Err(at(n, format!("{what} must not be quoted")));
    }
    String::from_utf8(w.bytes.clone()).map_err(|_| at(n, format!("{what} is not text")))
}

pub(super) fn int<T: std::str::FromStr>(w: &Word, n: usize, what: &str, range: &str) -> Result<T> {
    let s = text(w, n, what)?;
    // One spelling per number: no '+', no leading zeros, no "-0".
    let digits = s.strip_prefix('-').unwrap_or(&s);
    let canonical = !digits.is_empty()
        && digits.bytes().all(|c| c.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && s != "-0";
    if !canonical {
        return Err(at(n, format!("{what} must be a whole number {range}, not '{s}'")));
    }
    s.parse().map_err(|_| at(n, format!("{what} must be a whole number {range}, not '{s}'")))
}

/// A node name from a word: quoted (any bytes) or plain UTF-8 text.
pub(super) fn node_name(w: &Word, n: usize) -> Result<Vec<u8>> {
    let name = w.bytes.clone();
    if name.is_empty() {
        return Err(at(n, "empty node name"));
    }
    if !w.quoted {
        if std::str::from_utf8(&name).is_err() {
            return Err(at(n, "node name is not valid UTF-8; write other bytes as \\u00XX inside quotes"));
        }
        if name.iter().any(|&c| c < 0x20 || c == 0x7f) {
            return Err(at(n, "control character in node name"));
        }
        if name[0] == b'?' && name[1..].iter().all(u8::is_ascii_digit) && name.len() > 1 {
            return Err(at(
                n,
                format!(
                    "{} stands for a content id that has no name in this block; write a node name instead",
                    String::from_utf8_lossy(&name)
                ),
            ));
        }
    }
    if name.len() > u16::MAX as usize {
        return Err(at(n, "node name longer than 65535 bytes"));
    }
    Ok(name)
}

/// Node names the engine defines itself.
pub(crate) const BUILTIN_NODE_NAMES: [&str; 3] = ["air", "ignore", "unknown"];

/// Whether the engine could have registered `name` as a node: `air`,
/// `ignore` or `unknown`, or `modname:itemname` with a mod name of a-z,
/// 0-9 and _ and an item name of A-Z, a-z, 0-9 and _ (the rules of
/// `core.check_modname_prefix` and of mod names). Anything else in a world
/// is an unknown node the server shows as a placeholder, so a typo is
/// refused rather than spread through the map.
pub fn check_node_name(name: &[u8]) -> std::result::Result<(), String> {
    let s = String::from_utf8_lossy(name);
    if BUILTIN_NODE_NAMES.contains(&s.as_ref()) {
        return Ok(());
    }
    let why = match s.split_once(':') {
        None => "it has no ':' between mod name and item name".to_string(),
        Some((m, i)) if i.contains(':') => format!("it has more than one ':' (mod '{m}')"),
        Some(("", _)) => "the mod name before ':' is empty".to_string(),
        Some((_, "")) => "the item name after ':' is empty".to_string(),
        Some((m, _)) if !m.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_') => {
            format!("the mod name '{m}' may only hold a-z, 0-9 and _")
        }
        Some((_, i)) if !i.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') => {
            format!("the item name '{i}' may only hold A-Z, a-z, 0-9 and _")
        }
        Some(_) => return Ok(()),
    };
    Err(format!(
        "'{s}' is not a node name the engine accepts: {why} (names are modname:itemname, or air, ignore, unknown)"
    ))
}

/// A name written into block `b`: names the block already has are kept as
/// they are (old worlds hold odd ones), new ones must be valid.
fn known_or_valid(b: &Block, name: &[u8], n: usize) -> Result<()> {
    if b.mapping.iter().any(|m| m.name == name) {
        return Ok(());
    }
    check_node_name(name).map_err(|m| at(n, m))
}

/// World node coordinates -> in-block index, if inside `pos`.
fn local_index(pos: BlockPos, n: usize, x: i32, y: i32, z: i32) -> Result<usize> {
    let (ox, oy, oz) = pos.origin();
    // i64: coordinates near i32::MIN/MAX must not overflow.
    let d = [x as i64 - ox as i64, y as i64 - oy as i64, z as i64 - oz as i64];
    if d.iter().any(|d| !(0..16).contains(d)) {
        return Err(at(
            n,
            format!(
                "node {x},{y},{z} is not in block {pos} (nodes {ox}..{} , {oy}..{}, {oz}..{})",
                ox + 15,
                oy + 15,
                oz + 15
            ),
        ));
    }
    Ok(node_index(d[0] as usize, d[1] as usize, d[2] as usize))
}

fn coords(ws: &[Word], n: usize) -> Result<(i32, i32, i32)> {
    Ok((int(&ws[0], n, "x", "")?, int(&ws[1], n, "y", "")?, int(&ws[2], n, "z", "")?))
}

// ---------------------------------------------------------------- info

/// Keys of `info` that can be set, and those that are computed.
const INFO_EDITABLE: [&str; 6] =
    ["version", "underground", "generated", "day_night_differs", "lighting_complete", "timestamp"];
const INFO_COMPUTED: [&str; 7] =
    ["content_width", "params_width", "names", "metadata", "timers", "objects", "blob_bytes"];

fn parse_bool(v: &str, n: usize, key: &str) -> Result<bool> {
    match v {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(at(n, format!("{key} must be true or false, not '{v}'"))),
    }
}

/// Apply `info`: editable keys change the block; computed keys are
/// ignored; a left-out editable key keeps its value.
pub fn apply_info(block: &mut Block, content: &[u8]) -> Result<()> {
    let mut new = block.clone();
    let b = &mut new;
    let mut seen = HashSet::new();
    let mut new_version = None;
    let mut lighting_line = 0;
    for (i, line) in lines(content)?.iter().enumerate() {
        let n = i + 1;
        let line = std::str::from_utf8(line).map_err(|_| at(n, "not UTF-8 text"))?;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let (k, v) = line.split_once('=').ok_or_else(|| at(n, "expected 'key = value'"))?;
        let (k, v) = (k.trim(), v.trim());
        if !seen.insert(k.to_string()) {
            return Err(at(n, format!("'{k}' appears twice")));
        }
        if INFO_COMPUTED.contains(&k) {
            // Computed from the block: ignored, so that an `info` copied
            // from another block (cp -r) applies its editable keys.
            continue;
        }
        if !INFO_EDITABLE.contains(&k) {
            return Err(at(n, format!("unknown key '{k}' (editable: {})", INFO_EDITABLE.join(", "))));
        }
        let set_flag = |b: &mut Block, bit: u8, on: bool| {
            if on { b.flags |= bit } else { b.flags &= !bit }
        };
        use worldfs_codec::luanti::block::{FLAG_DAY_NIGHT_DIFFERS, FLAG_NOT_GENERATED, FLAG_UNDERGROUND};
        match k {
            "version" => {
                let v: u8 =
                    v.parse().map_err(|_| at(n, format!("version must be {MIN_WRITE_VERSION}-{MAX_VERSION}")))?;
                if !(MIN_WRITE_VERSION..=MAX_VERSION).contains(&v) {
                    return Err(at(
                        n,
                        format!("version {v} cannot be written (writable: {MIN_WRITE_VERSION}-{MAX_VERSION})"),
                    ));
                }
                new_version = Some((v, n));
            }
            "underground" => set_flag(b, FLAG_UNDERGROUND, parse_bool(v, n, k)?),
            "generated" => set_flag(b, FLAG_NOT_GENERATED, !parse_bool(v, n, k)?),
            "day_night_differs" => set_flag(b, FLAG_DAY_NIGHT_DIFFERS, parse_bool(v, n, k)?),
            "lighting_complete" => {
                let parsed = match v.strip_prefix("0x") {
                    Some(h) if !h.is_empty() && h.len() <= 4 => u16::from_str_radix(h, 16).ok(),
                    Some(_) => None,
                    None => v.parse::<u16>().ok(),
                };
                b.lighting_complete = parsed.ok_or_else(|| at(n, "lighting_complete must be 0x0000-0xffff"))?;
                lighting_line = n;
            }
            "timestamp" => {
                b.timestamp = v.parse().map_err(|_| at(n, "timestamp must be a whole number 0-4294967295"))?;
            }
            _ => unreachable!(),
        }
    }
    if let Some((v, n)) = new_version {
        if v < 28 && b.metadata.entries.iter().any(|e| e.vars.iter().any(|v| v.private)) {
            return Err(at(n, format!("version {v} cannot store private metadata fields (28 and later can)")));
        }
        if v < 27 && b.lighting_complete != 0xffff {
            return Err(at(n, format!("version {v} does not store lighting_complete; set it to 0xffff first")));
        }
        b.version = v;
    }
    if b.version < 27 && b.lighting_complete != 0xffff {
        let v = b.version;
        return Err(at(lighting_line, format!("version {v} does not store lighting_complete; it must be 0xffff")));
    }
    *block = new;
    Ok(())
}

// ---------------------------------------------------------------- names

/// Apply `names`: the name-id mapping. Renaming an entry changes that node
/// type everywhere in the block; entries of unused ids are dropped; every
/// id used by a node must be named.
pub fn apply_names(b: &mut Block, content: &[u8]) -> Result<()> {
    let mut mapping = Vec::new();
    let mut ids = HashSet::new();
    for (i, line) in lines(content)?.iter().enumerate() {
        let n = i + 1;
        let ws = words(line, n)?;
        if ws.len() != 2 {
            return Err(at(n, "expected '<id> <name>'"));
        }
        let id: u16 = int(&ws[0], n, "id", "0-65535")?;
        if !ids.insert(id) {
            return Err(at(n, format!("id {id} is named twice")));
        }
        let name = node_name(&ws[1], n)?;
        known_or_valid(b, &name, n)?;
        mapping.push(MappingEntry { id, name });
    }
    let used = worldfs_codec::luanti::block::ids_present(&b.param0);
    let mut missing: Vec<u16> = b.param0.iter().copied().filter(|id| !ids.contains(id)).collect();
    if !missing.is_empty() {
        missing.sort();
        missing.dedup();
        missing.sort();
        let count = b.param0.iter().filter(|id| missing.contains(id)).count();
        return Err(whole(format!(
            "content id {} is used by {count} node(s) of this block but has no name",
            missing.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
        )));
    }
    mapping.retain(|m| used.contains(m.id));
    b.mapping = mapping;
    Ok(())
}

// ---------------------------------------------------------------- nodes

/// The id for `name` in the block's mapping, adding an entry (smallest free
/// id) if the name is new.
pub(crate) fn id_for(b: &mut Block, name: &[u8]) -> Result<u16> {
    if let Some(m) = b.mapping.iter().rev().find(|m| m.name == name) {
        return Ok(m.id);
    }
    let used: HashSet<u16> = b.mapping.iter().map(|m| m.id).collect();
    let id = (0..=u16::MAX).find(|i| !used.contains(i)).ok_or_else(|| whole("no free content id"))?;
    b.mapping.push(MappingEntry { id, name: name.to_vec() });
    Ok(id)
}

/// Drop mapping entries that no node uses (the engine writes only used ids).
pub(crate) fn drop_unused_names(b: &mut Block) {
    let used = worldfs_codec::luanti::block::ids_present(&b.param0);
    b.mapping.retain(|m| used.contains(m.id));
}

/// Apply `nodes`: all 4096 positions, each once, in any order.
pub fn apply_nodes(pos: BlockPos, b: &mut Block, content: &[u8]) -> Result<()> {
    let ls = lines(content)?;
    let mut seen = vec![0usize; NODE_COUNT];
    let mut new = b.clone();
    for (i, line) in ls.iter().enumerate() {
        let n = i + 1;
        let ws = words(line, n)?;
        if ws.len() != 6 {
            return Err(at(n, "expected '<x> <y> <z> <name> <param1> <param2>'"));
        }
        let (x, y, z) = coords(&ws, n)?;
        let idx = local_index(pos, n, x, y, z)?;
        if seen[idx] != 0 {
            return Err(at(n, format!("node {x},{y},{z} is also on line {}", seen[idx])));
        }
        seen[idx] = n;
        let name = node_name(&ws[3], n)?;
        known_or_valid(&new, &name, n)?;
        new.param0[idx] = id_for(&mut new, &name).map_err(|e| at(n, e.message))?;
        new.param1[idx] = int(&ws[4], n, "param1", "0-255")?;
        new.param2[idx] = int(&ws[5], n, "param2", "0-255")?;
    }
    if let Some(missing) = seen.iter().position(|&s| s == 0) {
        let (x, y, z) = super::render::node_coords(pos, missing as u16);
        return Err(whole(format!(
            "{} of 4096 nodes given; node {x},{y},{z} (and maybe others) is missing",
            ls.len().min(NODE_COUNT)
        )));
    }
    drop_unused_names(&mut new);
    *b = new;
    Ok(())
}

/// Apply one node (`node/X,Y,Z`): "name [param1 [param2]]"; left-out
/// params keep their values.
pub fn apply_node(b: &mut Block, index: usize, content: &[u8]) -> Result<()> {
    let ls = lines(content)?;
    if ls.len() != 1 {
        return Err(whole("expected one line: '<name> [<param1> [<param2>]]'"));
    }
    let ws = words(ls[0], 1)?;
    if ws.is_empty() || ws.len() > 3 {
        return Err(at(1, "expected '<name> [<param1> [<param2>]]'"));
    }
    let name = node_name(&ws[0], 1)?;
    known_or_valid(b, &name, 1)?;
    if ws.len() > 1 {
        b.param1[index] = int(&ws[1], 1, "param1", "0-255")?;
    }
    if ws.len() > 2 {
        b.param2[index] = int(&ws[2], 1, "param2", "0-255")?;
    }
    b.param0[index] = id_for(b, &name)?;
    drop_unused_names(b);
    Ok(())
}

// ---------------------------------------------------------------- layers

/// A `layers` legend label: `NAME [param2=N]`.
fn layers_label(label: &str, n: usize) -> Result<(Vec<u8>, u8)> {
    let ws = words(label.as_bytes(), n)?;
    let (name, rest) = ws.split_first().ok_or_else(|| at(n, "a legend label needs a node name"))?;
    let name = node_name(name, n)?;
    let mut param2 = 0u8;
    for w in rest {
        let t = String::from_utf8_lossy(&w.bytes);
        match t.strip_prefix("param2=") {
            Some(v) => {
                param2 = v.parse().map_err(|_| at(n, format!("param2 must be a whole number 0-255, not '{v}'")))?
            }
            None => return Err(at(n, format!("'{t}' is not part of a label (NAME or NAME param2=N)"))),
        }
    }
    Ok((name, param2))
}

/// Apply `layers`: a node whose character still stands for what the node
/// is keeps everything (param1 too); another gets the name and param2 of
/// its character's label (param1 is kept).
pub fn apply_layers(pos: BlockPos, b: &mut Block, content: &[u8]) -> Result<()> {
    let text = std::str::from_utf8(content).map_err(|_| whole("layers is not UTF-8 text"))?;
    let drawing = super::layers::parse(&super::render::layers_frame(pos), text)
        .map_err(|e| ParseError { line: e.line, message: e.message })?;
    // Each legend line is read only when a node needs it.
    let mut parsed: Vec<Option<(Vec<u8>, u8)>> = vec![None; drawing.legend.len()];
    // Which legend entry says exactly what each current label says.
    let (labels, of_node) = super::render::layers_labels(b);
    let same: Vec<Vec<bool>> =
        labels.iter().map(|label| drawing.legend.iter().map(|e| e.label == *label).collect()).collect();
    let mut new = b.clone();
    for y in 0..16 {
        for z in 0..16 {
            for x in 0..16 {
                let i = node_index(x, y, z);
                let l = drawing.at(x, y, z);
                let entry = &drawing.legend[l];
                if same[of_node[i] as usize][l] {
                    continue;
                }
                let (name, p2) = match &mut parsed[l] {
                    Some(known) => &*known,
                    slot @ None => {
                        let (name, p2) = layers_label(&entry.label, entry.line)?;
                        known_or_valid(b, &name, entry.line)?;
                        &*slot.insert((name, p2))
                    }
                };
                new.param0[i] = id_for(&mut new, name).map_err(|e| at(entry.line, e.message))?;
                new.param2[i] = *p2;
            }
        }
    }
    drop_unused_names(&mut new);
    *b = new;
    Ok(())
}

// ---------------------------------------------------------------- params

pub fn apply_param0(b: &mut Block, content: &[u8]) -> Result<()> {
    if content.len() != NODE_COUNT * 2 {
        return Err(whole(format!("param0 must be exactly 8192 bytes (4096 big-endian u16), not {}", content.len())));
    }
    let ids: Vec<u16> = content.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect();
    let named = worldfs_codec::luanti::block::ids_present(&b.mapping.iter().map(|m| m.id).collect::<Vec<_>>());
    if let Some(i) = ids.iter().position(|&id| !named.contains(id)) {
        let (x, y, z) = worldfs_codec::luanti::block::index_xyz(i);
        return Err(whole(format!(
            "content id {} (node {i}, in-block {x},{y},{z}) has no name in names; add it there first",
            ids[i]
        )));
    }
    b.param0 = ids;
    drop_unused_names(b);
    Ok(())
}

pub fn apply_param(target: &mut Vec<u8>, content: &[u8], which: &str) -> Result<()> {
    if content.len() != NODE_COUNT {
        return Err(whole(format!("{which} must be exactly 4096 bytes, not {}", content.len())));
    }
    *target = content.to_vec();
    Ok(())
}

// ---------------------------------------------------------------- timers

/// Apply `timers`: the full list, "<x> <y> <z> <timeout> <elapsed>".
pub fn apply_timers(pos: BlockPos, b: &mut Block, content: &[u8]) -> Result<()> {
    let mut timers = Vec::new();
    let mut seen = HashMap::new();
    for (i, line) in lines(content)?.iter().enumerate() {
        let n = i + 1;
        let ws = words(line, n)?;
        if ws.len() != 5 {
            return Err(at(n, "expected '<x> <y> <z> <timeout> <elapsed>' (seconds)"));
        }
        let (x, y, z) = coords(&ws, n)?;
        let idx = local_index(pos, n, x, y, z)?;
        if let Some(prev) = seen.insert(idx, n) {
            return Err(at(n, format!("node {x},{y},{z} already has a timer on line {prev}")));
        }
        let secs = |w: &Word, what: &str| -> Result<i32> {
            let s = text(w, n, what)?;
            decimal::parse(&s, 1000)
                .ok_or_else(|| at(n, format!("{what} must be seconds with at most 3 decimals, not '{s}'")))
        };
        let timeout = secs(&ws[3], "timeout")?;
        let elapsed = secs(&ws[4], "elapsed")?;
        if timeout <= 0 {
            return Err(at(n, "timeout must be above 0 (the server drops such timers)"));
        }
        if elapsed < 0 {
            return Err(at(n, "elapsed must not be negative"));
        }
        timers.push(NodeTimer { pos: idx as u16, timeout, elapsed });
    }
    if timers.len() > u16::MAX as usize {
        return Err(whole("more than 65535 timers"));
    }
    b.timers = timers;
    Ok(())
}

pub use super::objects::apply_objects;

// ---------------------------------------------------------------- metadata

/// Largest metadata value accepted (the format's string32 limit).
pub(crate) const MAX_FIELD: usize = worldfs_codec::bytes::LONG_STRING_MAX;

/// A field file's content -> the value (one trailing newline stripped).
pub fn field_value(content: &[u8]) -> Result<Vec<u8>> {
    let v = content.strip_suffix(b"\n").unwrap_or(content);
    if v.len() > MAX_FIELD {
        return Err(whole(format!("value of {} bytes is over the 64 MiB limit", v.len())));
    }
    Ok(v.to_vec())
}

/// Set a field (keeping its place and private flag if it exists).
pub fn set_field(e: &mut MetaEntry, key: &[u8], value: Vec<u8>) -> Result<()> {
    if key.len() > u16::MAX as usize {
        return Err(whole("metadata key longer than 65535 bytes"));
    }
    let mut found = false;
    for v in e.vars.iter_mut().filter(|v| v.key == key) {
        v.value = value.clone();
        found = true;
    }
    if !found {
        e.vars.push(MetaVar { key: key.to_vec(), value, private: false });
    }
    Ok(())
}

/// Apply `private`: the file names of the private fields, one per line.
pub fn apply_private(e: &mut MetaEntry, content: &[u8], block_version: u8) -> Result<()> {
    let mut private = HashSet::new();
    for (i, line) in lines(content)?.iter().enumerate() {
        let n = i + 1;
        if line.is_empty() {
            continue;
        }
        let key = escape::name_to_key(line)
            .ok_or_else(|| at(n, format!("'{}' is not a field file name", String::from_utf8_lossy(line))))?;
        if e.get(&key).is_none() {
            return Err(at(n, format!("there is no field '{}'", String::from_utf8_lossy(line))));
        }
        private.insert(key);
    }
    if !private.is_empty() && block_version < 28 {
        return Err(whole(format!(
            "block version {block_version} cannot store private fields (28 and later can; set version in info)"
        )));
    }
    for v in e.vars.iter_mut() {
        v.private = private.contains(&v.key);
    }
    Ok(())
}

/// Apply `inventory`: validated as the server reads it, stored as the
/// server writes it.
pub fn apply_inventory(e: &mut MetaEntry, content: &[u8]) -> Result<()> {
    let inv = Inventory::parse_strict(content).map_err(|e| at(e.line, e.message))?;
    e.inventory = inv.serialize(HighBytes::Raw);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::render;
    use worldfs_codec::luanti::objects::{LuaEntity, StaticObject};

    fn block() -> Block {
        let mut b = Block::new_air(29);
        b.mapping.push(MappingEntry { id: 1, name: b"default:stone".to_vec() });
        for i in 0..100 {
            b.param0[i] = 1;
        }
        b
    }

    const P: BlockPos = BlockPos::new(1, 0, -1);

    #[test]
    fn rendered_files_parse_back_to_the_same_block() {
        let mut b = block();
        b.timers.push(NodeTimer { pos: 7, timeout: 1500, elapsed: 0 });
        let e = LuaEntity {
            name: b"mobs:cow".to_vec(),
            staticdata: b"x\ny".to_vec(),
            hp: 5,
            velocity: [1, 2, 3],
            yaw: 4,
            pitch_roll: None,
            guid: Some([9; 16]),
        };
        b.objects.objects.push(StaticObject { kind: 7, pos: [10000, -20000, 5], data: e.encode() });
        b.objects.objects.push(StaticObject { kind: 3, pos: [0, 0, 0], data: vec![0xff, 0] });
        let orig = b.clone();
        apply_nodes(P, &mut b, &render::render_nodes(P, &orig)).unwrap();
        apply_names(&mut b, &render::render_names(&orig)).unwrap();
        apply_timers(P, &mut b, &render::render_timers(P, &orig)).unwrap();
        apply_objects(&mut b, &render::render_objects(&orig)).unwrap();
        apply_info(&mut b, &render::render_info(&orig, 10)).unwrap();
        assert_eq!(b, orig);
    }

    #[test]
    fn nodes_rename_and_new_names() {
        let mut b = block();
        let text = String::from_utf8(render::render_nodes(P, &b)).unwrap();
        let edited = text.replace(" default:stone ", " default:cobble ").replacen(" air ", " mod_2:Odd_name9 ", 1);
        apply_nodes(P, &mut b, edited.as_bytes()).unwrap();
        let names: Vec<&[u8]> = b.mapping.iter().map(|m| m.name.as_slice()).collect();
        assert_eq!(names, vec![&b"air"[..], b"default:cobble", b"mod_2:Odd_name9"]);
        assert_eq!(b.name_of(b.param0[0]), Some(&b"default:cobble"[..]));
    }

    #[test]
    fn new_names_follow_the_engine_rules_and_old_odd_ones_stay() {
        let bad = [
            ("nonsense:::", "more than one ':'"),
            ("stone", "no ':'"),
            (":stone", "mod name before ':' is empty"),
            ("default:", "item name after ':' is empty"),
            ("Default:stone", "mod name 'Default' may only hold a-z, 0-9 and _"),
            ("default:ston-e", "item name 'ston-e' may only hold A-Z, a-z, 0-9 and _"),
            ("\"odd name\"", "'odd name' is not a node name"),
        ];
        let b = block();
        for (name, why) in bad {
            let e = apply_node(&mut b.clone(), 0, format!("{name}\n").as_bytes()).unwrap_err();
            assert!(e.message.contains(why) && e.line == Some(1), "{name}: {e:?}");
            let nodes =
                String::from_utf8(render::render_nodes(P, &b)).unwrap().replacen(" air ", &format!(" {name} "), 1);
            let e = apply_nodes(P, &mut b.clone(), nodes.as_bytes()).unwrap_err();
            assert!(e.message.contains(why) && e.line == Some(101), "{name}: {e:?}");
            let e = apply_names(&mut b.clone(), format!("0 air\n1 {name}\n").as_bytes()).unwrap_err();
            assert!(e.message.contains(why) && e.line == Some(2), "{name}: {e:?}");
        }
        for good in ["air", "ignore", "unknown", "default:stone", "mesecons_gates:and_off", "a1_:B_2"] {
            apply_node(&mut b.clone(), 0, format!("{good}\n").as_bytes()).unwrap();
        }
        // A name the block already has is kept, whatever it looks like.
        let mut odd = block();
        odd.mapping[1].name = b"odd name".to_vec();
        let text = render::render_nodes(P, &odd);
        let mut again = odd.clone();
        apply_nodes(P, &mut again, &text).unwrap();
        assert_eq!(again, odd);
        apply_node(&mut again, 5, b"\"odd name\"\n").unwrap();
    }

    #[test]
    fn layers_read_back_and_draw_edits() {
        let mut b = block();
        b.param2[7] = 3;
        b.param1[9] = 77;
        let text = String::from_utf8(render::render_layers(P, &b)).unwrap();
        assert!(text.contains(". air\ns default:stone\nS default:stone param2=3\n"), "{text}");
        let mut c = b.clone();
        apply_layers(P, &mut c, text.as_bytes()).unwrap();
        assert_eq!(c, b, "rendered layers parse back to the same block");
        // Draw: the bottom level's first row is z = 15 (north); its first
        // character is node (0, 0, 15). Add a legend line for a new name.
        let edited = text.replacen(". air\n", ". air\nc default:cobble param2=2\n", 1);
        let mut lines: Vec<String> = edited.lines().map(String::from).collect();
        let first_row = lines.iter().position(|l| l == "y=0").unwrap() + 1;
        lines[first_row].replace_range(0..1, "c");
        apply_layers(P, &mut c, (lines.join("\n") + "\n").as_bytes()).unwrap();
        let i = node_index(0, 0, 15);
        assert_eq!(c.name_of(c.param0[i]), Some(&b"default:cobble"[..]));
        assert_eq!(c.param2[i], 2);
        for j in (0..NODE_COUNT).filter(|&j| j != i) {
            assert_eq!((c.param0[j], c.param1[j], c.param2[j]), (b.param0[j], b.param1[j], b.param2[j]));
        }
        // Bad drawings and labels name the line.
        let e = apply_layers(P, &mut c.clone(), text.replacen("s default:stone\n", "s default:sto-ne\n", 1).as_bytes())
            .unwrap_err();
        assert_eq!(e.line, Some(4), "relabelling a character changes its nodes: {e:?}");
        let unused = text.replacen(". air\n", ". air\nu not a:label=\n", 1);
        assert!(apply_layers(P, &mut c.clone(), unused.as_bytes()).is_ok(), "an unused legend line is not read");
        let bad = text.replacen(". air\n", ". air\nq Bad:name\n", 1).replacen("\n....", "\nq...", 1);
        let e = apply_layers(P, &mut c.clone(), bad.as_bytes()).unwrap_err();
        assert_eq!(e.line, Some(4), "{e:?}");
        assert!(e.message.contains("mod name 'Bad'"), "{e:?}");
        let e = apply_layers(P, &mut c.clone(), text.replacen("\n....", "\n...", 1).as_bytes()).unwrap_err();
        assert!(e.message.contains("row has 15 characters; it needs 16"), "{e:?}");
    }

    #[test]
    fn names_rename_replaces_everywhere() {
        let mut b = block();
        apply_names(&mut b, b"0 air\n1 default:cobble\n7 unused:thing\n").unwrap();
        assert_eq!(b.mapping.len(), 2);
        assert_eq!(b.name_of(1), Some(&b"default:cobble"[..]));
        assert!(apply_names(&mut b, b"0 air\n").unwrap_err().message.contains("content id 1 is used by 100"));
    }

    #[test]
    fn bad_inputs_are_refused_with_a_line() {
        let b = block();
        let nodes = String::from_utf8(render::render_nodes(P, &b)).unwrap();
        type Edit<'a> = Box<dyn Fn(&mut Block) -> Result<()> + 'a>;
        let cases: Vec<(&str, Edit)> = vec![
            ("duplicate node", Box::new(|b| apply_nodes(P, b, nodes.replacen("16 0 -16 ", "17 0 -16 ", 1).as_bytes()))),
            (
                "missing nodes",
                Box::new(|b| apply_nodes(P, b, nodes.lines().skip(1).collect::<Vec<_>>().join("\n").as_bytes())),
            ),
            ("outside block", Box::new(|b| apply_nodes(P, b, nodes.replacen("16 0 -16 ", "0 0 0 ", 1).as_bytes()))),
            ("param1 256", Box::new(|b| apply_nodes(P, b, nodes.replacen(" 15 0\n", " 256 0\n", 1).as_bytes()))),
            ("unmapped placeholder", Box::new(|b| apply_nodes(P, b, nodes.replacen(" air ", " ?77 ", 1).as_bytes()))),
            ("crlf", Box::new(|b| apply_nodes(P, b, nodes.replace('\n', "\r\n").as_bytes()))),
            ("bad escape", Box::new(|b| apply_nodes(P, b, nodes.replacen(" air ", " \"a\\qb\" ", 1).as_bytes()))),
            ("non-utf8 name", Box::new(|b| apply_node(b, 0, b"caf\xe9"))),
            ("dup id in names", Box::new(|b| apply_names(b, b"0 air\n0 default:stone\n1 x\n"))),
            ("param0 size", Box::new(|b| apply_param0(b, &[0; 100]))),
            ("param0 unknown id", Box::new(|b| apply_param0(b, &[0x12; 8192]))),
            ("param2 size", Box::new(|b| apply_param(&mut b.param2, &[0; 4097], "param2"))),
            ("timer zero", Box::new(|b| apply_timers(P, b, b"16 0 -16 0 0\n"))),
            ("timer dup", Box::new(|b| apply_timers(P, b, b"16 0 -16 1 0\n16 0 -16 2 0\n"))),
            ("timer decimals", Box::new(|b| apply_timers(P, b, b"16 0 -16 1.0001 0\n"))),
            ("info unknown", Box::new(|b| apply_info(b, b"colour = blue\n"))),
            ("info version", Box::new(|b| apply_info(b, b"version = 23\n"))),
            ("info bool", Box::new(|b| apply_info(b, b"underground = maybe\n"))),
            ("info twice", Box::new(|b| apply_info(b, b"timestamp = 1\ntimestamp = 2\n"))),
            ("object junk", Box::new(|b| apply_objects(b, b"cow 1,2,3\n"))),
            ("object unquoted", Box::new(|b| apply_objects(b, b"lua_entity 0,0,0 a:b hp=1 staticdata=x\n"))),
        ];
        for (what, f) in cases {
            let mut c = b.clone();
            let e = f(&mut c).expect_err(what);
            assert!(!e.message.is_empty(), "{what}");
            assert!(c == b, "{what}: block changed by a refused write");
        }
    }

    #[test]
    fn metadata_edits() {
        let mut e = MetaEntry::new(5);
        set_field(&mut e, b"text", field_value(b"hello\n").unwrap()).unwrap();
        set_field(&mut e, b".dot", b"x".to_vec()).unwrap();
        apply_private(&mut e, b"%2Edot\n", 28).unwrap();
        assert!(e.get(b".dot").unwrap().private && !e.get(b"text").unwrap().private);
        assert!(apply_private(&mut e, b"%2Edot\n", 27).is_err());
        assert!(apply_private(&mut e, b"nope\n", 28).is_err());
        apply_inventory(&mut e, "List main 1\nWidth 0\nItem default:dirt 5 0 \"\\u0001d\\u0002Gr\\u00c3\\u00bc\\u0003\"\nEndInventoryList\nEndInventory\n".as_bytes()).unwrap();
        assert_eq!(e.inventory, "List main 1\nWidth 0\nItem default:dirt 5 0 \"\\u0001d\\u0002Grü\\u0003\"\nEndInventoryList\nEndInventory\n".as_bytes());
        assert!(apply_inventory(&mut e, b"List main 1\nEndInventory\n").is_err());
    }
}
