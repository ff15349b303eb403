//! One piece of a cubeset: what its files show, and how an edit of one file
//! becomes new text for one field of the piece's table (the rest of the
//! file is kept byte for byte).

use crate::documents::{DocError, DocResult};
use crate::view::layers::{self, Frame, LegendEntry, Rows};
use worldfs_codec::cubeset::{self as lua, Key, Table, Value};

/// A metadata value as written: a number, a string or a boolean.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum MetaValue {
    Num(String),
    Str(String),
    Bool(bool),
}

impl MetaValue {
    pub(crate) fn text(&self) -> String {
        match self {
            MetaValue::Num(n) => n.clone(),
            MetaValue::Str(s) => s.clone(),
            MetaValue::Bool(b) => b.to_string(),
        }
    }
    fn lua(&self) -> String {
        match self {
            MetaValue::Num(n) => n.clone(),
            MetaValue::Str(s) => lua::quote(s),
            MetaValue::Bool(b) => b.to_string(),
        }
    }
}

/// Key, value, and whether the key is written as a bare name.
pub(crate) type MetaEntry = (String, MetaValue, bool);

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Def {
    pub(crate) ch: char,
    pub(crate) id: i64,
    pub(crate) meta: i64,
}

#[derive(Clone, Debug)]
pub(crate) struct Piece {
    pub(crate) name: String,
    pub(crate) size: [usize; 3],
    pub(crate) hitbox: [i64; 6],
    /// Field spans to replace: Hitbox, Connectors, Metadata,
    /// BlockDefinitions, BlockData.
    spans: std::collections::HashMap<&'static str, (usize, usize)>,
    pub(crate) connectors: Vec<[String; 5]>,
    pub(crate) metadata: Vec<MetaEntry>,
    pub(crate) blocks: Option<(Vec<Def>, Vec<char>)>,
    /// A pending replacement made by `apply`: field span and new text.
    pub(crate) edit: Option<((usize, usize), String)>,
}

fn err(m: impl Into<String>) -> DocError {
    DocError::new(m)
}

fn int(v: &Value, what: &str) -> DocResult<i64> {
    match v {
        Value::Num(n, _) if n.fract() == 0.0 => Ok(*n as i64),
        Value::Str(s) => s.trim().parse().map_err(|_| err(format!("{what} is not a whole number"))),
        _ => Err(err(format!("{what} is not a whole number"))),
    }
}

pub(crate) fn read_metadata(t: &Table) -> DocResult<Vec<MetaEntry>> {
    t.fields
        .iter()
        .map(|f| {
            let v = match &f.value {
                Value::Num(_, text) => MetaValue::Num(text.clone()),
                Value::Str(s) => MetaValue::Str(s.clone()),
                Value::Bool(b) => MetaValue::Bool(*b),
                _ => return Err(err(format!("metadata '{}' is not a number, string or boolean", f.key.text()))),
            };
            let k = f.key.text();
            if k.trim().is_empty() || k.contains('=') || k.trim() != k || k.chars().any(char::is_control) {
                return Err(err(format!("metadata key {k:?} cannot be shown as 'Key = value'")));
            }
            let t = v.text();
            if t.chars().any(char::is_control) || t.trim() != t {
                return Err(err(format!("metadata '{k}' = {t:?}: a value with control characters or surrounding spaces cannot be shown as one line")));
            }
            Ok((k, v, matches!(f.key, Key::Name(_))))
        })
        .collect()
}

pub(crate) fn render_metadata(m: &[MetaEntry]) -> String {
    m.iter().map(|(k, v, _)| format!("{k} = {}\n", v.text())).collect()
}

/// `Key = value` lines; a key that was a number stays one if its new value
/// is a number; new keys are strings.
pub(crate) fn parse_metadata(text: &str, old: &[MetaEntry]) -> DocResult<Vec<MetaEntry>> {
    let mut out: Vec<MetaEntry> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let (k, v) = line.split_once('=').ok_or_else(|| DocError::at_line(i + 1, "expected 'Key = value'"))?;
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() || k.chars().any(|c| c.is_control()) {
            return Err(DocError::at_line(i + 1, "a key must be some text"));
        }
        if v.chars().any(|c| c.is_control()) {
            return Err(DocError::at_line(i + 1, "a value is one line of text"));
        }
        if out.iter().any(|(o, _, _)| o == k) {
            return Err(DocError::at_line(i + 1, format!("'{k}' twice")));
        }
        let was = old.iter().find(|(o, _, _)| o == k);
        let value = match was {
            Some((_, MetaValue::Num(_), _)) if v.parse::<f64>().is_ok() => MetaValue::Num(v.to_string()),
            Some((_, MetaValue::Bool(_), _)) if v == "true" || v == "false" => MetaValue::Bool(v == "true"),
            _ => MetaValue::Str(v.to_string()),
        };
        let bare = was.is_some_and(|(_, _, b)| *b);
        out.push((k.to_string(), value, bare));
    }
    Ok(out)
}

/// The leading whitespace of the line holding byte `pos`.
pub(crate) fn indent_at(text: &str, pos: usize) -> String {
    let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    text[line_start..].chars().take_while(|c| *c == ' ' || *c == '\t').collect()
}

pub(crate) fn emit_metadata(m: &[MetaEntry], indent: &str) -> String {
    let mut s = String::from("{\n");
    for (k, v, bare) in m {
        let key = if *bare { k.clone() } else { format!("[{}]", lua::quote(k)) };
        s.push_str(&format!("{indent}\t{key} = {},\n", v.lua()));
    }
    s.push_str(indent);
    s.push('}');
    s
}

const HITBOX_KEYS: [&str; 6] = ["MinX", "MinY", "MinZ", "MaxX", "MaxY", "MaxZ"];
const CONNECTOR_KEYS: [&str; 5] = ["Type", "RelX", "RelY", "RelZ", "Direction"];

/// The table in field `k` of `t`.
fn sub_table<'t>(t: &'t Table, k: &'static str) -> DocResult<&'t Table> {
    match t.get(k).map(|f| &f.value) {
        Some(Value::Table(x)) => Ok(x),
        _ => Err(err(format!("no {k} table"))),
    }
}

/// The Connectors table: one row of [`CONNECTOR_KEYS`] per connector.
fn read_connectors(t: &Table) -> DocResult<Vec<[String; 5]>> {
    let mut connectors = Vec::new();
    for (n, c) in t.positional().enumerate() {
        let Value::Table(c) = &c.value else { return Err(err(format!("connector {} is not a table", n + 1))) };
        let mut row: [String; 5] = Default::default();
        for (i, k) in CONNECTOR_KEYS.iter().enumerate() {
            row[i] = match c.get(k).map(|f| &f.value) {
                Some(Value::Num(_, text)) => text.clone(),
                Some(Value::Str(s)) if i == 4 => s.clone(),
                _ => return Err(err(format!("connector {} has no {k}", n + 1))),
            };
        }
        // The connectors file takes whole numbers and Cuberite's directions
        // only: hold the decode to the same, so what is shown writes back.
        for (k, v) in row[..4].iter().enumerate() {
            if v.parse::<i64>().is_err() {
                return Err(err(format!("connector {}: {} '{v}' is not a whole number", n + 1, CONNECTOR_KEYS[k])));
            }
        }
        check_direction(&row[4]).map_err(|m| err(format!("connector {}: {m}", n + 1)))?;
        connectors.push(row);
    }
    Ok(connectors)
}

/// The Size table: x, y and z, each 1 to 4096.
fn read_size(s: &Table) -> DocResult<[usize; 3]> {
    let mut size = [0usize; 3];
    for (i, k) in ["x", "y", "z"].iter().enumerate() {
        let v = int(&s.get(k).ok_or_else(|| err(format!("Size has no {k}")))?.value, &format!("Size.{k}"))?;
        size[i] =
            usize::try_from(v).ok().filter(|v| (1..=4096).contains(v)).ok_or_else(|| err(format!("Size.{k} = {v}")))?;
    }
    Ok(size)
}

/// The BlockDefinitions table: strings of `c: id: meta` lines.
fn read_definitions(t: &Table) -> DocResult<Vec<Def>> {
    let mut defs = Vec::new();
    for f in t.positional() {
        let Value::Str(line) = &f.value else { return Err(err("a block definition is not a string")) };
        for l in line.split('\n') {
            let parts: Vec<&str> = l.split(':').map(str::trim).collect();
            if parts.len() < 2 {
                continue; // Cuberite skips these with a warning
            }
            let ch = parts[0].chars().next().ok_or_else(|| err(format!("definition '{l}' has no character")))?;
            let num = |s: &str| {
                s.parse::<i64>()
                    .map_err(|_| err(format!("definition '{l}': '{s}' is not a number (block ids are numeric)")))
            };
            // The ranges the legend file takes, so that what is shown can be
            // written back (Cuberite keeps a meta in 4 bits and asserts).
            let id = num(parts[1])?;
            if !(0..=4095).contains(&id) {
                return Err(err(format!("definition '{l}': block id {id} is not 0 to 4095")));
            }
            let meta = if parts.len() > 2 { num(parts[2])? } else { 0 };
            if !(0..=15).contains(&meta) {
                return Err(err(format!("definition '{l}': meta {meta} is not 0 to 15 (a block's meta is 4 bits)")));
            }
            // Cuberite asserts that a character is defined once (a release
            // build takes the last); the legend file holds it to once.
            if defs.iter().any(|d: &Def| d.ch == ch) {
                return Err(err(format!("definition '{l}': '{ch}' is defined twice")));
            }
            defs.push(Def { ch, id, meta });
        }
    }
    Ok(defs)
}

/// The BlockData table: one character per block of `size`, each defined.
fn read_block_data(t: &Table, size: [usize; 3], defs: &[Def]) -> DocResult<Vec<char>> {
    let mut data = Vec::new();
    for f in t.positional() {
        let Value::Str(row) = &f.value else { return Err(err("a BlockData row is not a string")) };
        data.extend(row.chars());
    }
    let want = size[0] * size[1] * size[2];
    if data.len() != want {
        return Err(err(format!("BlockData has {} characters, Size says {want}", data.len())));
    }
    if let Some(c) = data.iter().find(|c| !defs.iter().any(|d| d.ch == **c)) {
        return Err(err(format!("BlockData uses '{c}', which BlockDefinitions does not define")));
    }
    Ok(data)
}

/// The `hitbox` file: one `min X Y Z` and one `max X Y Z` line.
fn parse_hitbox(text: &str) -> DocResult<[i64; 6]> {
    let mut h = [0i64; 6];
    let mut seen = [false; 2];
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let which = match f.first() {
            Some(&"min") => 0,
            Some(&"max") => 1,
            _ => return Err(DocError::at_line(i + 1, "expected 'min X Y Z' or 'max X Y Z'")),
        };
        if f.len() != 4 || seen[which] {
            return Err(DocError::at_line(i + 1, "expected one 'min X Y Z' and one 'max X Y Z' line"));
        }
        seen[which] = true;
        for k in 0..3 {
            h[which * 3 + k] = f[k + 1]
                .parse()
                .map_err(|_| DocError::at_line(i + 1, format!("'{}' is not a whole number", f[k + 1])))?;
        }
    }
    if seen != [true, true] {
        return Err(err("both the min and the max line are needed"));
    }
    Ok(h)
}

/// The `connectors` file: `type x y z direction` lines.
fn parse_connectors(text: &str) -> DocResult<Vec<[String; 5]>> {
    let mut cs = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 5 {
            return Err(DocError::at_line(i + 1, "expected 'type x y z direction'"));
        }
        for (k, v) in f[..4].iter().enumerate() {
            v.parse::<i64>()
                .map_err(|_| DocError::at_line(i + 1, format!("{} '{v}' is not a whole number", CONNECTOR_KEYS[k])))?;
        }
        check_direction(f[4]).map_err(|m| DocError::at_line(i + 1, m))?;
        cs.push([f[0], f[1], f[2], f[3], f[4]].map(String::from));
    }
    Ok(cs)
}

/// The `legend` file: `c id:meta` lines, each character once.
fn parse_legend(text: &str) -> DocResult<Vec<Def>> {
    let mut new = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let mut it = line.trim_end().chars();
        let Some(ch) = it.next() else { continue };
        let rest: String = it.collect();
        let (id, meta) = rest.trim().split_once(':').ok_or_else(|| DocError::at_line(i + 1, "expected 'c id:meta'"))?;
        let num = |s: &str, what: &str, max: i64| {
            s.trim()
                .parse::<i64>()
                .ok()
                .filter(|v| (0..=max).contains(v))
                .ok_or_else(|| DocError::at_line(i + 1, format!("{what} '{s}' is not a number 0 to {max}")))
        };
        if !layers::usable(ch) || !ch.is_ascii() || ch == '"' || ch == '\\' || ch == ':' {
            return Err(DocError::at_line(
                i + 1,
                format!("'{ch}' cannot stand for a block (one printable ASCII character other than \" \\ :)"),
            ));
        }
        if new.iter().any(|d: &Def| d.ch == ch) {
            return Err(DocError::at_line(i + 1, format!("'{ch}' is defined twice")));
        }
        new.push(Def { ch, id: num(id, "block id", 4095)?, meta: num(meta, "meta", 15)? });
    }
    Ok(new)
}

impl Piece {
    pub(crate) fn read(t: &Table) -> DocResult<Piece> {
        const KNOWN: [&str; 9] = [
            "OriginData",
            "Size",
            "Hitbox",
            "StructureBox",
            "Connectors",
            "Metadata",
            "BlockDefinitions",
            "BlockData",
            "SchematicFileName",
        ];
        if let Some(f) = t.fields.iter().find(|f| !KNOWN.contains(&f.key.text().as_str())) {
            // Cuberite ignores it; a misspelt key ("Hitbax") would be lost.
            return Err(err(format!("unknown key '{}' (a piece has {})", f.key.text(), KNOWN.join(", "))));
        }
        let mut spans = std::collections::HashMap::new();
        let name = t
            .get("OriginData")
            .and_then(|f| match &f.value {
                Value::Table(o) => o.get("ExportName").or_else(|| o.get("Name")),
                _ => None,
            })
            .and_then(|f| match &f.value {
                Value::Str(s) => Some(s.clone()),
                _ => None,
            })
            .unwrap_or_else(|| "piece".into());
        let hb = sub_table(t, "Hitbox")?;
        let mut hitbox = [0i64; 6];
        for (i, k) in HITBOX_KEYS.iter().enumerate() {
            hitbox[i] =
                int(&hb.get(k).ok_or_else(|| err(format!("Hitbox has no {k}")))?.value, &format!("Hitbox.{k}"))?;
        }
        let connectors = read_connectors(sub_table(t, "Connectors")?)?;
        let metadata = read_metadata(sub_table(t, "Metadata")?)?;
        for k in ["Hitbox", "Connectors", "Metadata", "BlockDefinitions", "BlockData"] {
            if let Some(f) = t.get(k) {
                spans.insert(k, f.span);
            }
        }
        let mut size = [0usize; 3];
        let blocks = if t.get("SchematicFileName").is_some() {
            None
        } else {
            size = read_size(sub_table(t, "Size")?)?;
            let defs = read_definitions(sub_table(t, "BlockDefinitions")?)?;
            let data = read_block_data(sub_table(t, "BlockData")?, size, &defs)?;
            Some((defs, data))
        };
        Ok(Piece { name, size, hitbox, spans, connectors, metadata, blocks, edit: None })
    }

    fn frame(&self) -> Frame {
        Frame::new(self.size, Rows::ZAscending)
    }

    fn legend(defs: &[Def]) -> Vec<LegendEntry> {
        defs.iter().map(|d| LegendEntry { ch: d.ch, label: format!("{}:{}", d.id, d.meta), line: 0 }).collect()
    }

    pub(crate) fn render(&self, file: &str) -> DocResult<String> {
        Ok(match file {
            "size" => format!("{} {} {}\n", self.size[0], self.size[1], self.size[2]),
            "hitbox" => {
                let h = self.hitbox;
                format!("min {} {} {}\nmax {} {} {}\n", h[0], h[1], h[2], h[3], h[4], h[5])
            }
            "connectors" => self.connectors.iter().map(|c| format!("{}\n", c.join(" "))).collect(),
            "metadata" => render_metadata(&self.metadata),
            "legend" | "layers" => {
                let (defs, data) =
                    self.blocks.as_ref().ok_or_else(|| err("this piece's blocks are in a .schematic file"))?;
                if file == "legend" {
                    defs.iter().map(|d| format!("{} {}:{}\n", d.ch, d.id, d.meta)).collect()
                } else {
                    let legend = Self::legend(defs);
                    let [sx, _, sz] = self.size;
                    #[allow(clippy::expect_used, reason = "every block's character was checked against the legend")]
                    let levels = layers::render_levels(&self.frame(), &legend, |x, y, z| {
                        let c = data[(y * sz + z) * sx + x];
                        defs.iter().position(|d| d.ch == c).expect("checked at read")
                    });
                    levels
                }
            }
            _ => return Err(err("no such file")),
        })
    }

    /// Validate `text` for `file` and set `edit` to the replacement of the
    /// field it changes.
    pub(crate) fn apply(&mut self, file: &str, text: &str) -> DocResult<()> {
        let (key, value) = match file {
            "hitbox" => {
                self.hitbox = parse_hitbox(text)?;
                ("Hitbox", self.emit_hitbox())
            }
            "connectors" => {
                self.connectors = parse_connectors(text)?;
                ("Connectors", self.emit_connectors())
            }
            "metadata" => {
                self.metadata = parse_metadata(text, &self.metadata)?;
                ("Metadata", String::new())
            }
            "legend" => {
                let (defs, data) =
                    self.blocks.as_mut().ok_or_else(|| err("this piece's blocks are in a .schematic file"))?;
                let new = parse_legend(text)?;
                if let Some(c) = data.iter().find(|c| !new.iter().any(|d| d.ch == **c)) {
                    return Err(err(format!("'{c}' is still used in layers; change those blocks first")));
                }
                *defs = new;
                ("BlockDefinitions", Self::emit_defs(defs))
            }
            "layers" => {
                self.apply_layers(text)?;
                let (_, data) =
                    self.blocks.as_ref().ok_or_else(|| err("this piece's blocks are in a .schematic file"))?;
                ("BlockData", Self::emit_data(data, self.size))
            }
            "size" => return Err(err("size is read-only: the layers are drawn for it")),
            _ => return Err(err("no such file")),
        };
        let value = if key == "Metadata" { emit_metadata(&self.metadata, "") } else { value };
        let span = *self.spans.get(key).ok_or_else(|| err(format!("the piece has no {key} field to change")))?;
        self.edit = Some((span, value));
        Ok(())
    }

    /// The blocks drawn in `text` (the `layers` file) become the piece's.
    fn apply_layers(&mut self, text: &str) -> DocResult<()> {
        let frame = self.frame();
        let (defs, data) = self.blocks.as_mut().ok_or_else(|| err("this piece's blocks are in a .schematic file"))?;
        let legend = Self::legend(defs);
        let drawing = layers::parse_levels(&frame, &legend, text, 0).map_err(|e| {
            if e.message.contains("legend") {
                DocError { message: format!("{} (add it to the legend file first)", e.message), ..e }
            } else {
                e
            }
        })?;
        let [sx, sy, sz] = self.size;
        let mut new = Vec::with_capacity(data.len());
        for y in 0..sy {
            for z in 0..sz {
                for x in 0..sx {
                    new.push(defs[drawing.at(x, y, z)].ch);
                }
            }
        }
        *data = new;
        Ok(())
    }

    fn emit_hitbox(&self) -> String {
        let mut s = String::from("{\n");
        for (k, v) in HITBOX_KEYS.iter().zip(self.hitbox) {
            s.push_str(&format!("\t{k} = {v},\n"));
        }
        s.push('}');
        s
    }

    fn emit_connectors(&self) -> String {
        let mut s = String::from("{\n");
        for c in &self.connectors {
            s.push_str("\t{\n");
            for (k, v) in CONNECTOR_KEYS.iter().zip(c) {
                match (*k, v.parse::<usize>().ok().and_then(|n| DIRECTION_NAMES.get(n))) {
                    // GalExport names a numbered direction in a comment.
                    ("Direction", Some(name)) => s.push_str(&format!("\t\t{k} = {v},  -- {name}\n")),
                    ("Direction", None) => s.push_str(&format!("\t\t{k} = {},\n", lua::quote(v))),
                    _ => s.push_str(&format!("\t\t{k} = {v},\n")),
                }
            }
            s.push_str("\t},\n");
        }
        s.push('}');
        s
    }

    fn emit_defs(defs: &[Def]) -> String {
        let mut s = String::from("{\n");
        for d in defs {
            s.push_str(&format!("\t\"{}:{:3}:{:2}\",\n", d.ch, d.id, d.meta));
        }
        s.push('}');
        s
    }

    fn emit_data(data: &[char], size: [usize; 3]) -> String {
        let [sx, sy, sz] = size;
        let mut s = String::from("{\n");
        for y in 0..sy {
            s.push_str(&format!("\t-- Level {y}\n"));
            for z in 0..sz {
                let row: String = data[(y * sz + z) * sx..(y * sz + z + 1) * sx].iter().collect();
                s.push_str(&format!("\t{},  -- {z:2}\n", lua::quote(&row)));
            }
            s.push('\n');
        }
        s.push('}');
        s
    }
}

/// Cuberite's connector directions by number (`cPiece::cConnector::
/// eDirection`), written as GalExport writes them in its comments.
const DIRECTION_NAMES: [&str; 14] = [
    "Y-", "Y+", "Z-", "Z+", "X-", "X+", "Y-X-Z-", "Y-X-Z+", "Y-X+Z-", "Y-X+Z+", "Y+X-Z-", "Y+X-Z+", "Y+X+Z-", "Y+X+Z+",
];

/// The block definitions `new` (as `emit_defs` makes them) with the
/// `-- name` comments the old text `old` gave each block id (GalExport
/// names blocks by id); ids new to the piece get none.
pub(crate) fn keep_def_comments(old: &str, new: &str) -> String {
    let id_of = |def: &str| def.split(':').nth(1).and_then(|v| v.trim().parse::<i64>().ok());
    let mut names: Vec<(i64, &str)> = Vec::new();
    for line in old.lines() {
        let l = line.trim();
        // `"c: id: meta",  -- name`: the comment after the closing quote.
        let Some((def, rest)) = l.strip_prefix('"').and_then(|r| r.split_once('"')) else { continue };
        let Some((_, comment)) = rest.split_once("--") else { continue };
        if let Some(id) = id_of(def) {
            names.push((id, comment.trim()));
        }
    }
    let mut out = String::with_capacity(new.len() + names.len() * 16);
    for line in new.lines() {
        let def = line.trim().strip_prefix('"').and_then(|r| r.split('"').next());
        match def.and_then(id_of).and_then(|id| names.iter().find(|(i, _)| *i == id)) {
            Some((_, name)) if !name.is_empty() => out.push_str(&format!("{line}  -- {name}\n")),
            _ => out.push_str(&format!("{line}\n")),
        }
    }
    out.truncate(out.trim_end_matches('\n').len());
    out
}

/// A connector direction Cuberite accepts: 0 to 13, or a name such as
/// `x-`, `y+`, `y-x+z-` (with or without slashes).
fn check_direction(d: &str) -> Result<(), String> {
    if let Ok(n) = d.parse::<i64>() {
        return if (0..=13).contains(&n) { Ok(()) } else { Err(format!("direction {n} is not 0 to 13")) };
    }
    let plain: String = d.chars().filter(|c| *c != '/').collect();
    let ok = matches!(plain.as_str(), "x-" | "x+" | "y-" | "y+" | "z-" | "z+")
        || (plain.len() == 6
            && (plain.starts_with("y-") || plain.starts_with("y+"))
            && matches!(&plain[2..], "x-z-" | "x-z+" | "x+z-" | "x+z+"));
    if ok { Ok(()) } else { Err(format!("direction '{d}' is not 0 to 13 or a name like x+, y-, y+x-z+")) }
}
