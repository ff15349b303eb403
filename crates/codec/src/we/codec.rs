//! WorldEdit files (`.we`) <-> [`WeFile`], read the way WorldEdit's
//! `worldedit/serialization.lua` reads them, without running Lua.
//!
//! Versions (WorldEdit's `read_header` tells them apart):
//! * 5 (what current WorldEdit writes): `5:` (a header: the version, then
//!   optional `,field`s, then `:`) and a serialized Lua list of nodes
//!   `{x=, y=, z=, name=, param1=, param2=, meta=}`; param1, param2 and
//!   meta are left out when 0 / absent;
//! * 4: the same list without a header, every field present (WorldEdit
//!   0.6, Debian's `minetest-mod-worldedit`, writes it);
//! * 3: one node per line, `X Y Z NAME PARAM1 PARAM2`;
//! * 2 and 1: the old `table.save` format: a list of tables that refer to
//!   each other as `{N}`; 2 has `x, y, z, name, param1, param2, meta`
//!   fields, 1 has `{pos, node}` pairs.
//!
//! Positions are offsets from the corner the file is placed at (WorldEdit
//! writes them from the low corner of the region, so 0 or more). `meta` is
//! what `NodeMetaRef:to_table()` gives: `fields` (key -> string) and
//! `inventory` (list name -> item strings, "" for an empty slot); list
//! widths and private flags are not part of it.
//!
//! [`encode`] writes version 5, as `minetest.serialize` would but without
//! its `_[N]` references (also valid, and readable by WorldEdit's LuaJIT
//! workaround that splits the list at `},{`): x, y, z, name, then param1,
//! param2, meta when present; nodes in the file's order.

use super::lua::{self, Table, Value};
use crate::mts::MAX_NODES;
use std::fmt;

/// The largest position offset accepted (a world is 65536 nodes wide).
pub const MAX_OFFSET: i64 = 65535;

/// A WorldEdit file: its nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeFile {
    /// The version read (5 for a file made here).
    pub version: u8,
    /// The nodes, in file order.
    pub nodes: Vec<WeNode>,
}

/// One node of a WorldEdit file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeNode {
    /// Offset x, y, z from the corner the file is placed at.
    pub pos: [i32; 3],
    /// The node name, e.g. `default:stone`.
    pub name: Vec<u8>,
    /// param1 (0 when the file leaves it out).
    pub param1: u8,
    /// param2 (0 when the file leaves it out).
    pub param2: u8,
    /// None also for metadata without fields and lists (nothing to keep).
    pub meta: Option<WeMeta>,
}

/// A node's metadata as WorldEdit saves it (`NodeMetaRef:to_table()`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WeMeta {
    /// (key, value) in file order, each key once.
    pub fields: Vec<(Vec<u8>, Vec<u8>)>,
    /// (list name, item strings; "" is an empty slot) in file order.
    pub inventory: Vec<(Vec<u8>, Vec<Vec<u8>>)>,
}

impl WeMeta {
    /// Whether it has no fields and no inventory lists.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty() && self.inventory.is_empty()
    }
}

/// Why a `.we` file could not be read: where (line, column, or node
/// number) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeError {
    /// 1-based line of the file, when the problem is at one.
    pub line: Option<usize>,
    /// 1-based column on that line, when known.
    pub column: Option<usize>,
    /// What is wrong (naming the node when the place is a node, not a line).
    pub message: String,
}

impl WeError {
    fn new(m: impl Into<String>) -> WeError {
        WeError { line: None, column: None, message: m.into() }
    }
}

impl fmt::Display for WeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "line {l}, column {c}: {}", self.message),
            (Some(l), None) => write!(f, "line {l}: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for WeError {}

impl From<lua::LuaError> for WeError {
    fn from(e: lua::LuaError) -> WeError {
        WeError { line: Some(e.line), column: Some(e.column), message: e.message }
    }
}

/// The version of a file as WorldEdit's `read_header` decides it, and
/// where its content starts. None: not a WorldEdit file.
pub fn detect(data: &[u8]) -> Option<(u8, usize)> {
    let digits = data.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits > 0 && matches!(data.get(digits), Some(b',') | Some(b':')) {
        let colon = data.iter().position(|&c| c == b':')?;
        let v: u32 = std::str::from_utf8(&data[..digits]).ok()?.parse().ok()?;
        return u8::try_from(v).ok().map(|v| (v, colon + 1));
    }
    let has_brace = data.contains(&b'{');
    if !has_brace && has_three_numbers(data) {
        return Some((3, 0));
    }
    // ^[^"']+%{%d+%}: before any quote, a {N}.
    let before_quote = data.iter().position(|&c| c == b'"' || c == b'\'').unwrap_or(data.len());
    if before_quote > 0 && flat_ref_before(&data[..before_quote]) {
        let meta = data.windows(8).any(|w| w == b"[\"meta\"]");
        return Some((if meta { 2 } else { 1 }, 0));
    }
    if has_brace {
        return Some((4, 0));
    }
    None
}

/// Whether `s` (which holds no quotes) contains `{digits}` after at least
/// one character.
fn flat_ref_before(s: &[u8]) -> bool {
    (1..s.len()).any(|i| {
        s[i] == b'{' && {
            let d = s[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            d > 0 && s.get(i + 1 + d) == Some(&b'}')
        }
    })
}

/// `([+-]?%d+)%s+([+-]?%d+)%s+([+-]?%d+)` somewhere in `s`.
fn has_three_numbers(s: &[u8]) -> bool {
    let text = String::from_utf8_lossy(s);
    text.lines().any(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        w.windows(3).any(|w| w.iter().all(|t| is_int(t)))
    })
}

fn is_int(t: &str) -> bool {
    let d = t.strip_prefix(['+', '-']).unwrap_or(t);
    !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit())
}

/// Reads a WorldEdit file of any version from 1 to 5.
pub fn decode(data: &[u8]) -> Result<WeFile, WeError> {
    let Some((version, start)) = detect(data) else {
        return Err(WeError::new("not a WorldEdit file (no header, no node list, no table)"));
    };
    let content = &data[start..];
    let nodes = match version {
        3 => decode_list(content, start_line(data, start))?,
        1 | 2 => decode_flat(content, version).map_err(|e| shift_lines(e, data, start))?,
        4 | 5 => decode_nested(content).map_err(|e| shift_lines(e, data, start))?,
        v => return Err(WeError::new(format!("WorldEdit file version {v} is not one WorldEdit reads (1-5)"))),
    };
    Ok(WeFile { version, nodes })
}

fn start_line(data: &[u8], start: usize) -> usize {
    data[..start].iter().filter(|&&c| c == b'\n').count()
}

/// Errors found in the content after a header: count lines from the file.
fn shift_lines(mut e: WeError, data: &[u8], start: usize) -> WeError {
    let extra = start_line(data, start);
    if let Some(l) = e.line.as_mut() {
        if *l == 1
            && extra == 0
            && let Some(c) = e.column.as_mut()
        {
            *c += start;
        }
        *l += extra;
    }
    e
}

fn decode_list(content: &[u8], first_line: usize) -> Result<Vec<WeNode>, WeError> {
    let text = String::from_utf8_lossy(content);
    let mut nodes = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let n = first_line + i + 1;
        let line = line.trim_end_matches('\r');
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.is_empty() {
            continue;
        }
        let bad = |m: String| WeError { line: Some(n), column: None, message: m };
        if w.len() < 6 || !w[..3].iter().all(|t| is_int(t)) || !is_int(w[4]) || !is_int(w[5]) {
            return Err(bad("expected 'X Y Z NAME PARAM1 PARAM2' (version 3 lists one node per line)".into()));
        }
        let coord = |t: &str, axis: &str| -> Result<i32, WeError> {
            t.parse::<i64>()
                .ok()
                .filter(|v| v.abs() <= MAX_OFFSET)
                .map(|v| v as i32)
                .ok_or_else(|| bad(format!("{axis} {t} is beyond ±{MAX_OFFSET}")))
        };
        let byte = |t: &str, what: &str| -> Result<u8, WeError> {
            t.parse::<u8>().map_err(|_| bad(format!("{what} {t} is not 0..255")))
        };
        nodes.push(WeNode {
            pos: [coord(w[0], "x")?, coord(w[1], "y")?, coord(w[2], "z")?],
            name: w[3].as_bytes().to_vec(),
            param1: byte(w[4], "param1")?,
            param2: byte(w[5], "param2")?,
            meta: None,
        });
        if nodes.len() > MAX_NODES {
            return Err(bad(format!("more than {MAX_NODES} nodes")));
        }
    }
    Ok(nodes)
}

fn decode_nested(content: &[u8]) -> Result<Vec<WeNode>, WeError> {
    let Value::Table(list) = lua::parse(content)? else {
        return Err(WeError::new("the data is not a list of nodes"));
    };
    node_list(&list)
}

fn node_list(list: &Table) -> Result<Vec<WeNode>, WeError> {
    let entries = list.list();
    if entries.len() > MAX_NODES {
        return Err(WeError::new(format!("{} nodes; at most {MAX_NODES}", entries.len())));
    }
    entries
        .iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::Table(t) => node_of(t, i + 1),
            _ => Err(WeError::new(format!("node {}: not a table", i + 1))),
        })
        .collect()
}

/// The old flat format: table 1 is the list; a field holding `{N}` means
/// table N.
fn decode_flat(content: &[u8], version: u8) -> Result<Vec<WeNode>, WeError> {
    let Value::Table(top) = lua::parse(content)? else {
        return Err(WeError::new("the data is not a list of tables"));
    };
    let tables: Vec<Table> = top
        .list()
        .into_iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::Table(t) => Ok(t.clone()),
            _ => Err(WeError::new(format!("table {}: not a table", i + 1))),
        })
        .collect::<Result<_, _>>()?;
    let Some(first) = tables.first() else {
        return Ok(Vec::new());
    };
    let list = unflatten(first, &tables, 0)?;
    if version == 2 {
        return node_list(&list);
    }
    // Version 1: each entry is {pos, node}.
    let mut nodes = Vec::new();
    for (i, e) in list.list().into_iter().enumerate() {
        let n = i + 1;
        let Value::Table(e) = e else { return Err(WeError::new(format!("node {n}: not a table"))) };
        let (Some(Value::Table(pos)), Some(Value::Table(node))) = (e.get(&Value::Num(1.0)), e.get(&Value::Num(2.0)))
        else {
            return Err(WeError::new(format!("node {n}: expected {{pos, node}}")));
        };
        let mut t = node.clone();
        for k in ["x", "y", "z"] {
            if let Some(v) = pos.get_str(k) {
                t.fields.push((Value::Str(k.as_bytes().to_vec()), v.clone()));
            }
        }
        nodes.push(node_of(&t, n)?);
    }
    Ok(nodes)
}

fn unflatten(t: &Table, tables: &[Table], depth: usize) -> Result<Table, WeError> {
    if depth > lua::MAX_DEPTH {
        return Err(WeError::new("tables refer to each other more than 64 deep"));
    }
    let mut out = Table::default();
    for (k, v) in &t.fields {
        let v = match v {
            Value::Table(r) => {
                let Some(Value::Num(n)) = r.get(&Value::Num(1.0)) else {
                    return Err(WeError::new("a table field is not a reference {N}"));
                };
                let target = (*n >= 1.0 && n.fract() == 0.0).then(|| tables.get(*n as usize - 1)).flatten();
                let Some(target) = target else {
                    return Err(WeError::new(format!("reference {{{n}}} names no table")));
                };
                Value::Table(unflatten(target, tables, depth + 1)?)
            }
            v => v.clone(),
        };
        out.fields.push((k.clone(), v));
    }
    Ok(out)
}

fn node_of(t: &Table, n: usize) -> Result<WeNode, WeError> {
    let err = |m: String| WeError::new(format!("node {n}: {m}"));
    let int = |k: &str, lo: i64, hi: i64, default: Option<i64>| -> Result<i64, WeError> {
        match t.get_str(k) {
            None => default.ok_or_else(|| err(format!("{k} is missing"))),
            Some(Value::Num(v)) if v.fract() == 0.0 && (lo as f64..=hi as f64).contains(v) => Ok(*v as i64),
            Some(Value::Num(v)) => Err(err(format!("{k} = {v} is not a whole number {lo}..{hi}"))),
            Some(_) => Err(err(format!("{k} is not a number"))),
        }
    };
    let name = match t.get_str("name") {
        Some(Value::Str(s)) if !s.is_empty() => s.clone(),
        _ => return Err(err("name is missing or not a string".into())),
    };
    let pos = [
        int("x", -MAX_OFFSET, MAX_OFFSET, None)? as i32,
        int("y", -MAX_OFFSET, MAX_OFFSET, None)? as i32,
        int("z", -MAX_OFFSET, MAX_OFFSET, None)? as i32,
    ];
    let meta = match t.get_str("meta") {
        None => None,
        Some(Value::Table(m)) => Some(meta_of(m).map_err(|m| err(format!("meta: {m}")))?).filter(|m| !m.is_empty()),
        Some(_) => return Err(err("meta is not a table".into())),
    };
    Ok(WeNode {
        pos,
        name,
        param1: int("param1", 0, 255, Some(0))? as u8,
        param2: int("param2", 0, 255, Some(0))? as u8,
        meta,
    })
}

/// A string the way the engine's `from_table` reads a field: strings as
/// they are, numbers as Lua prints them.
fn text_of(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::Str(s) => Some(s.clone()),
        Value::Num(n) => Some(lua::lua_number_string(*n).into_bytes()),
        _ => None,
    }
}

fn meta_of(m: &Table) -> Result<WeMeta, String> {
    let mut out = WeMeta::default();
    match m.get_str("fields") {
        None => {}
        Some(Value::Table(f)) => {
            for (k, v) in f.pairs() {
                let k = text_of(k).ok_or("a field key is not a string")?;
                let v = text_of(v)
                    .ok_or_else(|| format!("field '{}' is not a string or number", String::from_utf8_lossy(&k)))?;
                out.fields.push((k, v));
            }
        }
        Some(_) => return Err("fields is not a table".into()),
    }
    match m.get_str("inventory") {
        None => {}
        Some(Value::Table(inv)) => {
            for (k, v) in inv.pairs() {
                let Value::Str(name) = k else { return Err("an inventory list name is not a string".into()) };
                if name.is_empty() || name.iter().any(|c| c.is_ascii_whitespace()) {
                    return Err(format!(
                        "inventory list name '{}' is empty or has a space",
                        String::from_utf8_lossy(name)
                    ));
                }
                let Value::Table(list) = v else {
                    return Err(format!("inventory list '{}' is not a list", String::from_utf8_lossy(name)));
                };
                let mut items = Vec::new();
                for (i, it) in list.list().into_iter().enumerate() {
                    let Value::Str(s) = it else {
                        return Err(format!(
                            "inventory list '{}', slot {}: not an item string",
                            String::from_utf8_lossy(name),
                            i + 1
                        ));
                    };
                    if !s.is_empty() {
                        crate::luanti::itemstring::ItemStack::parse_strict(s).map_err(|e| {
                            format!(
                                "inventory list '{}', slot {}: bad item string: {}",
                                String::from_utf8_lossy(name),
                                i + 1,
                                e.message
                            )
                        })?;
                    }
                    items.push(s.clone());
                }
                out.inventory.push((name.clone(), items));
            }
        }
        Some(_) => return Err("inventory is not a table".into()),
    }
    Ok(out)
}

/// A string literal. The empty string is written `''`: WorldEdit 0.6 (and
/// WorldEdit before 2019) finds the strings of a file with the pattern
/// `"[^"]+"`, which cannot match `""` and then pairs every later quote
/// wrongly, losing most of the nodes after it.
fn string_lit(s: &[u8]) -> Vec<u8> {
    if s.is_empty() { b"''".to_vec() } else { lua::quote(s) }
}

fn put_key(out: &mut Vec<u8>, key: &[u8]) {
    if lua::is_short_key(key) {
        out.extend_from_slice(key);
    } else {
        out.push(b'[');
        out.extend_from_slice(&string_lit(key));
        out.push(b']');
    }
    out.push(b'=');
}

/// The file as current WorldEdit writes it (version 5).
pub fn encode(f: &WeFile) -> Vec<u8> {
    let mut out = b"5:return {".to_vec();
    for (i, n) in f.nodes.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(format!("{{x={},y={},z={},name=", n.pos[0], n.pos[1], n.pos[2]).as_bytes());
        out.extend_from_slice(&string_lit(&n.name));
        if n.param1 != 0 {
            out.extend_from_slice(format!(",param1={}", n.param1).as_bytes());
        }
        if n.param2 != 0 {
            out.extend_from_slice(format!(",param2={}", n.param2).as_bytes());
        }
        if let Some(m) = &n.meta {
            out.extend_from_slice(b",meta={fields={");
            for (j, (k, v)) in m.fields.iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                put_key(&mut out, k);
                out.extend_from_slice(&string_lit(v));
            }
            out.extend_from_slice(b"},inventory={");
            for (j, (name, items)) in m.inventory.iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                put_key(&mut out, name);
                out.push(b'{');
                for (k, it) in items.iter().enumerate() {
                    if k > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(&string_lit(it));
                }
                out.push(b'}');
            }
            out.extend_from_slice(b"}}");
        }
        out.push(b'}');
    }
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> WeFile {
        WeFile {
            version: 5,
            nodes: vec![
                WeNode { pos: [0, 0, 0], name: b"default:stone".to_vec(), param1: 0, param2: 0, meta: None },
                WeNode {
                    pos: [1, 2, 3],
                    name: b"default:chest".to_vec(),
                    param1: 15,
                    param2: 2,
                    meta: Some(WeMeta {
                        fields: vec![
                            (b"infotext".to_vec(), b"Chest \"1\"\nline".to_vec()),
                            (b"odd key".to_vec(), b"\x00\x01\xff".to_vec()),
                        ],
                        inventory: vec![(b"main".to_vec(), vec![b"default:dirt 5".to_vec(), Vec::new()])],
                    }),
                },
            ],
        }
    }

    #[test]
    fn version_5_round_trips() {
        let f = sample();
        let bytes = encode(&f);
        assert!(bytes.starts_with(b"5:return {{x=0,y=0,z=0,name=\"default:stone\"},{x=1,y=2,z=3,"));
        assert_eq!(decode(&bytes).unwrap(), f);
    }

    #[test]
    fn versions_are_told_apart_like_read_header() {
        assert_eq!(detect(b"5:return {}"), Some((5, 2)));
        assert_eq!(detect(b"5,extra:return {}"), Some((5, 8)));
        assert_eq!(detect(b"0 0 0 default:stone 0 0\n"), Some((3, 0)));
        assert_eq!(detect(b"return {\n-- Table: {1}\n{\n{2},\n},\n-- Table: {2}\n{[\"meta\"]={3}}}"), Some((2, 0)));
        assert_eq!(detect(b"return {\n-- Table: {1}\n{\n{2},\n}}"), Some((1, 0)));
        assert_eq!(detect(b"return {{x=0}}"), Some((4, 0)));
        assert_eq!(detect(b"hello"), None);
        let v4 = b"return {{[\"y\"] = 0, [\"x\"] = 1, [\"name\"] = \"default:dirt\", [\"z\"] = 0, [\"param1\"] = 0, [\"param2\"] = 3, [\"meta\"] = {[\"fields\"] = {}, [\"inventory\"] = {}}}}";
        let f = decode(v4).unwrap();
        assert_eq!(f.version, 4);
        assert_eq!(
            f.nodes,
            vec![WeNode { pos: [1, 0, 0], name: b"default:dirt".to_vec(), param1: 0, param2: 3, meta: None }]
        );
    }

    #[test]
    fn the_old_formats_read() {
        let v3 = decode(b"0 1 2 default:stone 0 3\n-1 0 0 wool:black 15 0 trailing\n").unwrap();
        assert_eq!(v3.nodes[1].pos, [-1, 0, 0]);
        assert_eq!((v3.nodes[0].param2, v3.nodes[1].param1), (3, 15));
        let v2 = b"return {\n-- Table: {1}\n{\n   {2},\n},\n-- Table: {2}\n{\n   [\"y\"]=0,\n   [\"x\"]=0,\n   [\"name\"]=\"default:sign_wall\",\n   [\"z\"]=3,\n   [\"meta\"]={3},\n   [\"param2\"]=2,\n   [\"param1\"]=15,\n},\n-- Table: {3}\n{\n   [\"inventory\"]={4},\n   [\"fields\"]={5},\n},\n-- Table: {4}\n{\n},\n-- Table: {5}\n{\n   [\"text\"]=\"hi\",\n   [\"n\"]=42,\n},\n}";
        let f = decode(v2).unwrap();
        assert_eq!(f.version, 2);
        let m = f.nodes[0].meta.as_ref().unwrap();
        assert_eq!(m.fields, vec![(b"text".to_vec(), b"hi".to_vec()), (b"n".to_vec(), b"42".to_vec())]);
        let v1 = b"return {\n-- Table: {1}\n{\n {2},\n},\n-- Table: {2}\n{\n {3},\n {4},\n},\n-- Table: {3}\n{\n [\"x\"]=1, [\"y\"]=2, [\"z\"]=3,\n},\n-- Table: {4}\n{\n [\"name\"]=\"default:wood\", [\"param1\"]=0, [\"param2\"]=0,\n},\n}";
        let f = decode(v1).unwrap();
        assert_eq!(f.version, 1);
        assert_eq!((f.nodes[0].pos, f.nodes[0].name.as_slice()), ([1, 2, 3], &b"default:wood"[..]));
    }

    #[test]
    fn bad_files_say_where() {
        let cases: [(&[u8], &str); 7] = [
            (b"0 0 0 default:stone 0 0\n1 1 x default:dirt 0 0\n", "line 2: expected 'X Y Z NAME PARAM1 PARAM2'"),
            (b"0 0 0 default:stone 300 0\n", "line 1: param1 300 is not 0..255"),
            (b"5:return {{x=0,y=0,z=0,name=\"a:b\",param2=256}}", "node 1: param2 = 256 is not a whole number 0..255"),
            (b"5:return {{x=0,y=0,name=\"a:b\"}}", "node 1: z is missing"),
            (
                b"5:return {{x=0,y=0,z=0,name=\"a:b\",meta={inventory={main={\"a:b 1 2 3 4\"}}}}}",
                "node 1: meta: inventory list 'main', slot 1: bad item string",
            ),
            (b"5:return {{x=0,y=0,z=0,name=os.exit()}}", "line 1, column 29: 'os' is not data"),
            (b"7:return {}", "WorldEdit file version 7 is not one WorldEdit reads"),
        ];
        for (src, want) in cases {
            let e = decode(src).unwrap_err().to_string();
            assert!(e.starts_with(want), "{}: {e}", String::from_utf8_lossy(src));
        }
    }
}
