//! A schematic as files, and those files read back. Pure.
//!
//! * `size`: `X Y Z` (nodes along each axis). Writing another size resizes
//!   the schematic: a node keeps its (x, y, z) (the low corner stays put);
//!   nodes outside the new size are dropped; new nodes are `air` with
//!   probability 0 ("leave the world as it is"), new Y slices get
//!   probability 127; the names are then renumbered in order of first use.
//! * `names`: `<id> <name>` per content id. Renaming a line renames that
//!   node type everywhere. Ids may be listed in any order and unused ones
//!   left out; every id a node uses must be named; the table is then
//!   renumbered in the order of the ids (gaps closed).
//! * `nodes`: one line per node, x fastest, then y, then z:
//!   `<x> <y> <z> <name> <probability> <param2>` and a seventh word `force`
//!   when the node's force-placement flag is set. The probability is the
//!   raw value the file stores, 0..127 (0 never placed, 127 always; the
//!   Lua table form of a schematic uses 0..255 and halves it). Every node
//!   listed exactly once, in any order.
//! * `param0` (2 bytes per node, big-endian content id), `param1` (1 byte
//!   per node: probability + 128 for force placement), `param2` (1 byte per
//!   node): binary, in node order, like the files of a block directory.
//! * `yslice`: `<y> <probability>` per Y level (0..127 as stored; 128..255
//!   are reserved by the format and act as "always").
//! * `layers`: the drawing of `view::layers` (north, +Z, at the top). A
//!   legend label is a node name, then any of `prob=N` (when N is not 127),
//!   `param2=N` (when not 0) and `force`: `default:leaves`,
//!   `default:leaves prob=80 param2=3 force`. Air with probability 0 (the
//!   cell a placement leaves alone) is drawn `-` and air `.` when those are
//!   free.
//! * `info` (read-only): the version the file had, the size, counts.
//!
//! After an edit that changes nodes through `nodes` or `layers`, names are
//! renumbered in order of first use, as the engine writes them (a name the
//! table held twice becomes one id; until then, a node given its own name
//! keeps its id, so an unchanged file changes nothing).

use crate::documents::text::{self, Word};
use crate::documents::{DocError, DocResult};
use crate::view::layers::{self, Frame, LegendBuilder, Rows};
use worldfs_codec::mts::{FORCE_PLACE, PROB_ALWAYS, PROB_MASK, Schematic, check_size};

/// The files of a mounted schematic, in listing order, and whether each is
/// writable.
pub const FILES: [(&str, bool); 9] = [
    ("info", false),
    ("size", true),
    ("names", true),
    ("nodes", true),
    ("layers", true),
    ("yslice", true),
    ("param0", true),
    ("param1", true),
    ("param2", true),
];

pub fn render(s: &Schematic, file: &str) -> DocResult<Vec<u8>> {
    Ok(match file {
        "info" => render_info(s).into_bytes(),
        "size" => format!("{} {} {}\n", s.size[0], s.size[1], s.size[2]).into_bytes(),
        "names" => render_names(s),
        "nodes" => render_nodes(s),
        "layers" => render_layers(s).into_bytes(),
        "yslice" => s.slices.iter().enumerate().map(|(y, p)| format!("{y} {p}\n")).collect::<String>().into_bytes(),
        "param0" => s.param0.iter().flat_map(|id| id.to_be_bytes()).collect(),
        "param1" => s.param1.clone(),
        "param2" => s.param2.clone(),
        _ => return Err(DocError::new("no such file").in_file(file)),
    })
}

/// Apply new content for `file`; on error `s` is unchanged.
pub fn apply(s: &mut Schematic, file: &str, content: &[u8]) -> DocResult<()> {
    let mut new = s.clone();
    match file {
        "size" => apply_size(&mut new, content),
        "names" => apply_names(&mut new, content),
        "nodes" => apply_nodes(&mut new, content),
        "layers" => apply_layers(&mut new, content),
        "yslice" => apply_yslice(&mut new, content),
        "param0" => apply_param0(&mut new, content),
        "param1" => apply_bytes(&mut new.param1, content, "param1"),
        "param2" => apply_bytes(&mut new.param2, content, "param2"),
        "info" => Err(DocError::new("info is computed and cannot be written")),
        _ => Err(DocError::new("no such file")),
    }
    .map_err(|e| e.in_file(file))?;
    *s = new;
    Ok(())
}

fn render_info(s: &Schematic) -> String {
    let forced = s.param1.iter().filter(|&&p| p & FORCE_PLACE != 0).count();
    let never = s.param1.iter().filter(|&&p| p & PROB_MASK == 0).count();
    format!(
        "# read-only; the file is written as version 4\nversion = {}\nsize = {} {} {}\nnodes = {}\nnames = {}\n\
         never_placed = {never}\nforce_placed = {forced}\n",
        s.version,
        s.size[0],
        s.size[1],
        s.size[2],
        s.volume(),
        s.names.len()
    )
}

fn render_names(s: &Schematic) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, n) in s.names.iter().enumerate() {
        out.extend_from_slice(format!("{i} ").as_bytes());
        out.extend_from_slice(&text::quote_name(n));
        out.push(b'\n');
    }
    out
}

fn render_nodes(s: &Schematic) -> Vec<u8> {
    let names: Vec<Vec<u8>> = s.names.iter().map(|n| text::quote_name(n)).collect();
    let mut out = Vec::with_capacity(s.volume() * 24);
    for i in 0..s.volume() {
        let [x, y, z] = s.xyz(i);
        out.extend_from_slice(format!("{x} {y} {z} ").as_bytes());
        out.extend_from_slice(&names[s.param0[i] as usize]);
        let p1 = s.param1[i];
        out.extend_from_slice(format!(" {} {}", p1 & PROB_MASK, s.param2[i]).as_bytes());
        if p1 & FORCE_PLACE != 0 {
            out.extend_from_slice(b" force");
        }
        out.push(b'\n');
    }
    out
}

/// What one `layers` legend label stands for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Cell {
    pub(crate) name: Vec<u8>,
    pub(crate) param1: u8,
    pub(crate) param2: u8,
}

/// The legend label of a cell: name, then the parts that differ from the
/// plain "always placed" node.
pub(crate) fn label(c: &Cell) -> String {
    let mut l = String::from_utf8_lossy(&text::quote_name(&c.name)).into_owned();
    let prob = c.param1 & PROB_MASK;
    if prob != PROB_ALWAYS {
        l.push_str(&format!(" prob={prob}"));
    }
    if c.param2 != 0 {
        l.push_str(&format!(" param2={}", c.param2));
    }
    if c.param1 & FORCE_PLACE != 0 {
        l.push_str(" force");
    }
    l
}

/// Characters a label would like: `.` for air, `-` for air never placed,
/// else letters of the item name.
pub(crate) fn preferred(c: &Cell) -> Vec<char> {
    if c.name == b"air" && c.param2 == 0 && c.param1 & FORCE_PLACE == 0 {
        return match c.param1 & PROB_MASK {
            PROB_ALWAYS => vec!['.'],
            0 => vec!['-'],
            _ => vec![],
        };
    }
    let name = String::from_utf8_lossy(&c.name);
    let item = name.rsplit(':').next().unwrap_or("");
    let mut v = Vec::new();
    for ch in item.chars().filter(|c| c.is_ascii_alphanumeric()) {
        v.push(ch.to_ascii_lowercase());
        v.push(ch.to_ascii_uppercase());
    }
    v
}

fn frame(s: &Schematic) -> Frame {
    Frame::new(s.size.map(|v| v as usize), Rows::ZDescending)
}

fn render_layers(s: &Schematic) -> String {
    let mut b = LegendBuilder::new();
    let mut seen: std::collections::HashMap<(u16, u8, u8), usize> = std::collections::HashMap::new();
    let cells: Vec<usize> = (0..s.volume())
        .map(|i| {
            let key = (s.param0[i], s.param1[i], s.param2[i]);
            *seen.entry(key).or_insert_with(|| {
                let c = Cell { name: s.names[key.0 as usize].clone(), param1: key.1, param2: key.2 };
                b.index(&label(&c), &preferred(&c))
            })
        })
        .collect();
    let legend = b.into_entries();
    let f = frame(s);
    let mut out = String::from(
        "# legend: CHARACTER NAME [prob=0..127, default 127] [param2=0..255, default 0] [force];\n\
         # air never placed (the world is left as it is there) is drawn '-' when free\n",
    );
    out.push_str(&layers::render(&f, &legend, |x, y, z| cells[s.index(x, y, z)]));
    out
}

/// Read a legend label back.
pub(crate) fn parse_label(label: &str, line: usize, known: &[Vec<u8>]) -> DocResult<Cell> {
    // Columns count from the label's start (after "c "): legend lines are
    // "c label", so the label begins at column 3.
    let ws = text::words(label.as_bytes(), line).map_err(|e| shift(e, 2))?;
    let name = text::node_name(&ws[0], line, known).map_err(|e| shift(e, 2))?;
    let mut cell = Cell { name, param1: PROB_ALWAYS, param2: 0 };
    let (mut prob, mut p2, mut force) = (false, false, false);
    for w in &ws[1..] {
        let col = w.column + 2;
        let once = |seen: &mut bool, what: &str| -> DocResult<()> {
            if std::mem::replace(seen, true) {
                return Err(DocError::at(line, col, format!("{what} is given twice")));
            }
            Ok(())
        };
        let value = |prefix: &str| -> Option<Word> {
            w.bytes.strip_prefix(prefix.as_bytes()).map(|v| Word {
                bytes: v.to_vec(),
                quoted: false,
                column: w.column + prefix.len(),
            })
        };
        if w.quoted {
            return Err(DocError::at(line, col, "after the name: prob=N, param2=N or force"));
        } else if let Some(v) = value("prob=") {
            once(&mut prob, "prob")?;
            let p = text::int(&v, line, "prob", 0, 127).map_err(|e| shift(e, 2))? as u8;
            cell.param1 = (cell.param1 & FORCE_PLACE) | p;
        } else if let Some(v) = value("param2=") {
            once(&mut p2, "param2")?;
            cell.param2 = text::int(&v, line, "param2", 0, 255).map_err(|e| shift(e, 2))? as u8;
        } else if w.bytes == b"force" {
            once(&mut force, "force")?;
            cell.param1 |= FORCE_PLACE;
        } else {
            return Err(DocError::at(
                line,
                col,
                format!("'{}' is not prob=N, param2=N or force", String::from_utf8_lossy(&w.bytes)),
            ));
        }
    }
    Ok(cell)
}

fn shift(mut e: DocError, by: usize) -> DocError {
    if let Some(c) = e.column.as_mut() {
        *c += by;
    }
    e
}

/// The nodes of a schematic as (name, param1, param2) per node.
fn set_cells(s: &mut Schematic, cells: impl Fn(usize) -> (Vec<u8>, u8, u8)) -> DocResult<()> {
    let old = (s.param0.clone(), s.param1.clone(), s.param2.clone(), s.names.clone());
    for i in 0..s.volume() {
        let (name, p1, p2) = cells(i);
        // A name the table holds twice (the engine reads both ids as one
        // node) keeps the id the node had, so an unchanged file is a no-op.
        if s.names[s.param0[i] as usize] != name {
            s.param0[i] = s.id_for(&name).map_err(DocError::new)?;
        }
        s.param1[i] = p1;
        s.param2[i] = p2;
    }
    if (&s.param0, &s.param1, &s.param2) == (&old.0, &old.1, &old.2) {
        s.names = old.3; // nothing changed: not even the numbering
    } else {
        s.condense();
    }
    Ok(())
}

fn apply_layers(s: &mut Schematic, content: &[u8]) -> DocResult<()> {
    let text = std::str::from_utf8(content).map_err(|e| {
        let line = content[..e.valid_up_to()].iter().filter(|&&c| c == b'\n').count() + 1;
        DocError::at_line(line, "not UTF-8 text")
    })?;
    let drawing = layers::parse(&frame(s), text)?;
    let cells: Vec<Cell> =
        drawing.legend.iter().map(|e| parse_label(&e.label, e.line, &s.names)).collect::<DocResult<_>>()?;
    let d = &drawing;
    let sz = s.size.map(|v| v as usize);
    set_cells(s, |i| {
        let (x, y, z) = (i % sz[0], (i / sz[0]) % sz[1], i / (sz[0] * sz[1]));
        let c = &cells[d.at(x, y, z)];
        (c.name.clone(), c.param1, c.param2)
    })
}

fn apply_nodes(s: &mut Schematic, content: &[u8]) -> DocResult<()> {
    let ls = text::lines(content)?;
    let n = s.volume();
    let mut seen = vec![0usize; n];
    let mut cells: Vec<(Vec<u8>, u8, u8)> = vec![(Vec::new(), 0, 0); n];
    let [sx, sy, sz] = s.size.map(i64::from);
    for (i, line) in ls.iter().enumerate() {
        let ln = i + 1;
        let ws = text::words(line, ln)?;
        if ws.len() != 6 && ws.len() != 7 {
            return Err(DocError::at_line(
                ln,
                "expected '<x> <y> <z> <name> <probability 0..127> <param2>' and 'force' or nothing",
            ));
        }
        let x = text::int(&ws[0], ln, "x", 0, sx - 1)? as usize;
        let y = text::int(&ws[1], ln, "y", 0, sy - 1)? as usize;
        let z = text::int(&ws[2], ln, "z", 0, sz - 1)? as usize;
        let idx = s.index(x, y, z);
        if seen[idx] != 0 {
            return Err(DocError::at_line(ln, format!("node {x} {y} {z} is also on line {}", seen[idx])));
        }
        seen[idx] = ln;
        let name = text::node_name(&ws[3], ln, &s.names)?;
        let prob = text::int(&ws[4], ln, "probability", 0, 127)? as u8;
        let p2 = text::int(&ws[5], ln, "param2", 0, 255)? as u8;
        let force = match ws.get(6) {
            None => 0,
            Some(w) if w.bytes == b"force" && !w.quoted => FORCE_PLACE,
            Some(w) => {
                return Err(DocError::at(ln, w.column, format!("'{}' is not 'force'", text::show(w))));
            }
        };
        cells[idx] = (name, prob | force, p2);
    }
    if let Some(i) = seen.iter().position(|&l| l == 0) {
        let [x, y, z] = s.xyz(i);
        return Err(DocError::at_line(
            ls.len().max(1),
            format!("node {x} {y} {z} is missing: every node of the {sx} x {sy} x {sz} schematic is listed once"),
        ));
    }
    set_cells(s, |i| cells[i].clone())
}

fn apply_names(s: &mut Schematic, content: &[u8]) -> DocResult<()> {
    let mut entries: Vec<(u16, Vec<u8>)> = Vec::new();
    for (i, line) in text::lines(content)?.iter().enumerate() {
        let ln = i + 1;
        let ws = text::words(line, ln)?;
        if ws.len() != 2 {
            return Err(DocError::at_line(ln, "expected '<id> <name>'"));
        }
        let id = text::int(&ws[0], ln, "id", 0, 65534)? as u16;
        if let Some(prev) = entries.iter().position(|(i, _)| *i == id) {
            return Err(DocError::at(ln, 1, format!("id {id} is named twice (also on line {})", prev + 1)));
        }
        entries.push((id, text::node_name(&ws[1], ln, &s.names)?));
    }
    let mut used = vec![false; 65536];
    s.param0.iter().for_each(|&id| used[id as usize] = true);
    if let Some(id) = (0..65536).find(|&id| used[id] && !entries.iter().any(|(i, _)| *i as usize == id)) {
        let count = s.param0.iter().filter(|&&p| p as usize == id).count();
        return Err(DocError::new(format!("content id {id} is used by {count} node(s) but has no name")));
    }
    entries.sort_by_key(|(id, _)| *id);
    let mut remap = vec![0u16; 65536];
    for (new, (old, _)) in entries.iter().enumerate() {
        remap[*old as usize] = new as u16;
    }
    s.param0.iter_mut().for_each(|id| *id = remap[*id as usize]);
    s.names = entries.into_iter().map(|(_, n)| n).collect();
    Ok(())
}

fn apply_yslice(s: &mut Schematic, content: &[u8]) -> DocResult<()> {
    let sy = s.size[1] as usize;
    let mut seen = vec![0usize; sy];
    for (i, line) in text::lines(content)?.iter().enumerate() {
        let ln = i + 1;
        let ws = text::words(line, ln)?;
        if ws.len() != 2 {
            return Err(DocError::at_line(ln, "expected '<y> <probability 0..127>'"));
        }
        let y = text::int(&ws[0], ln, "y", 0, sy as i64 - 1)? as usize;
        if seen[y] != 0 {
            return Err(DocError::at(ln, 1, format!("y {y} is also on line {}", seen[y])));
        }
        seen[y] = ln;
        s.slices[y] = text::int(&ws[1], ln, "probability", 0, 255)? as u8;
    }
    if let Some(y) = seen.iter().position(|&l| l == 0) {
        return Err(DocError::new(format!("y {y} is missing: one line per Y level (0..{})", sy - 1)));
    }
    Ok(())
}

fn apply_size(s: &mut Schematic, content: &[u8]) -> DocResult<()> {
    let ls: Vec<&[u8]> = text::lines(content)?.into_iter().filter(|l| !text::is_blank_or_comment(l)).collect();
    let [line] = ls.as_slice() else {
        return Err(DocError::new("expected one line: '<x> <y> <z>'"));
    };
    let ws = text::words(line, 1)?;
    if ws.len() != 3 {
        return Err(DocError::at_line(1, "expected '<x> <y> <z>'"));
    }
    let mut size = [0i64; 3];
    for (i, axis) in ["x", "y", "z"].iter().enumerate() {
        size[i] = text::int(&ws[i], 1, axis, 1, worldfs_codec::mts::MAX_AXIS as i64)?;
    }
    check_size(size).map_err(|m| DocError::at_line(1, m))?;
    let size = size.map(|v| v as u16);
    if size == s.size {
        return Ok(());
    }
    let mut new = Schematic::new_air(size).map_err(DocError::new)?;
    new.version = s.version;
    new.names = s.names.clone();
    let air = new.id_for(b"air").map_err(DocError::new)?;
    new.param0.iter_mut().for_each(|p| *p = air);
    new.param1.iter_mut().for_each(|p| *p = 0);
    for y in 0..(size[1].min(s.size[1]) as usize) {
        new.slices[y] = s.slices[y];
    }
    for z in 0..size[2].min(s.size[2]) as usize {
        for y in 0..size[1].min(s.size[1]) as usize {
            for x in 0..size[0].min(s.size[0]) as usize {
                let (from, to) = (s.index(x, y, z), new.index(x, y, z));
                new.param0[to] = s.param0[from];
                new.param1[to] = s.param1[from];
                new.param2[to] = s.param2[from];
            }
        }
    }
    new.condense();
    *s = new;
    Ok(())
}

fn apply_param0(s: &mut Schematic, content: &[u8]) -> DocResult<()> {
    let n = s.volume();
    if content.len() != n * 2 {
        return Err(DocError::new(format!(
            "{} bytes; param0 holds 2 bytes (big-endian content id) per node: {} for {n} nodes",
            content.len(),
            n * 2
        )));
    }
    for (i, p) in content.chunks_exact(2).enumerate() {
        let id = u16::from_be_bytes([p[0], p[1]]);
        if id as usize >= s.names.len() {
            let [x, y, z] = s.xyz(i);
            return Err(DocError::new(format!(
                "byte {}: node {x} {y} {z} has content id {id}, but names has ids 0..{}",
                i * 2,
                s.names.len() - 1
            )));
        }
        s.param0[i] = id;
    }
    Ok(())
}

fn apply_bytes(dst: &mut [u8], content: &[u8], what: &str) -> DocResult<()> {
    if content.len() != dst.len() {
        return Err(DocError::new(format!(
            "{} bytes; {what} holds 1 byte per node: {} for this size",
            content.len(),
            dst.len()
        )));
    }
    dst.copy_from_slice(content);
    Ok(())
}
