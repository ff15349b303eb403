//! A WorldEdit file as files, and those files read back. Pure.
//!
//! * `nodes`: `<x> <y> <z> <name> <param1> <param2>` per node of the file,
//!   in file order (offsets from the corner the file is placed at). Lines
//!   may be added, removed and reordered; a position appears at most once.
//!   Metadata stays with its position while a node is there.
//! * `names`: the node names, one per line, in order of first appearance;
//!   rewrite a line to rename every node of that name (as many lines as
//!   before).
//! * `layers`: the drawing of `view::layers` over the box the nodes span
//!   (north at the top); a legend label is a name, then `param1=N` and
//!   `param2=N` when not 0. `(none)` (drawn `-`) is a position the file
//!   has no node for: placing the file leaves the world as it is there.
//!   Drawing over a `(none)` adds a node; drawing `(none)` removes one.
//! * `meta/X,Y,Z/`: the metadata of the node at offset X,Y,Z, like a
//!   block's: `fields/KEY` (the value and one newline; keys escaped as in
//!   a block's `fields/`) and `inventory` (the engine's inventory text;
//!   widths are always 0, a .we file cannot keep them). `mkdir` makes
//!   empty metadata for a node, `rmdir` removes it; a new file in
//!   `fields/` adds a field, removing one deletes it.
//! * `info` (read-only): the version read, counts, the box.

use crate::documents::text;
use crate::documents::{DocError, DocResult, Entry};
use crate::transfer::we::{meta_to_we, we_to_meta};
use crate::view::escape;
use crate::view::layers::{self, Frame, LegendBuilder, Rows};
use std::collections::HashMap;
use worldfs_codec::we::codec::{WeFile, WeMeta, WeNode};

/// The label of a position without a node.
pub(crate) const NONE: &str = "(none)";

pub(crate) fn entries(f: &WeFile) -> Vec<Entry> {
    let mut v = vec![
        Entry::file("info", false),
        Entry::file("names", true),
        Entry::file("nodes", true),
        Entry::file("layers", true),
        Entry { path: "meta".into(), dir: true, writable: true },
    ];
    for n in &f.nodes {
        let Some(m) = &n.meta else { continue };
        let d = format!("meta/{}", pos_name(n.pos));
        v.push(Entry { path: d.clone(), dir: true, writable: true });
        v.push(Entry { path: format!("{d}/fields"), dir: true, writable: true });
        for (k, _) in &m.fields {
            v.push(Entry::file(format!("{d}/fields/{}", key_name(k)), true));
        }
        v.push(Entry::file(format!("{d}/inventory"), true));
    }
    v
}

fn pos_name(p: [i32; 3]) -> String {
    format!("{},{},{}", p[0], p[1], p[2])
}

/// A metadata key as a file name: the block's escaping, and bytes that
/// are not UTF-8 as `%XX` too (tree paths are text).
pub(crate) fn key_name(key: &[u8]) -> String {
    let n = escape::key_to_name(key);
    match String::from_utf8(n) {
        Ok(s) => s,
        Err(e) => e
            .into_bytes()
            .iter()
            .map(|&c| if c >= 0x80 { format!("%{c:02X}") } else { (c as char).to_string() })
            .collect(),
    }
}

fn name_key(name: &str) -> Option<Vec<u8>> {
    if let Some(k) = escape::name_to_key(name.as_bytes()) {
        return Some(k);
    }
    // The non-UTF-8 spelling of key_name.
    let mut out = Vec::new();
    let b = name.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 3 <= b.len() {
            out.push(u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    (key_name(&out) == name).then_some(out)
}

/// Split `meta/X,Y,Z/rest` into the node index and the rest.
fn meta_path<'a>(f: &WeFile, path: &'a str) -> Option<(usize, &'a str)> {
    let rest = path.strip_prefix("meta/")?;
    let (p, rest) = rest.split_once('/').unwrap_or((rest, ""));
    let (x, y, z) = worldfs_store::parse_triple::<i32>(p)?;
    let i = f.nodes.iter().position(|n| n.pos == [x, y, z])?;
    Some((i, rest))
}

pub fn render(f: &WeFile, path: &str) -> DocResult<Vec<u8>> {
    let no = || DocError::new("no such file").in_file(path);
    Ok(match path {
        "info" => render_info(f).into_bytes(),
        "names" => names(f).iter().flat_map(|n| [text::quote_name(n), b"\n".to_vec()].concat()).collect(),
        "nodes" => render_nodes(f),
        "layers" => render_layers(f).into_bytes(),
        _ => {
            let (i, rest) = meta_path(f, path).ok_or_else(no)?;
            let m = f.nodes[i].meta.as_ref().ok_or_else(no)?;
            if rest == "inventory" {
                we_to_meta(m).map_err(|e| DocError::new(e).in_file(path))?.inventory
            } else if let Some(k) = rest.strip_prefix("fields/") {
                let key = name_key(k).ok_or_else(no)?;
                let v = m.fields.iter().find(|(kk, _)| *kk == key).ok_or_else(no)?;
                [v.1.as_slice(), b"\n"].concat()
            } else {
                return Err(no());
            }
        }
    })
}

fn render_info(f: &WeFile) -> String {
    let (lo, hi) = bounds(f);
    format!(
        "# read-only; the file is written as version 5\nversion = {}\nnodes = {}\nwith_metadata = {}\nmin = {}\nmax = {}\n",
        f.version,
        f.nodes.len(),
        f.nodes.iter().filter(|n| n.meta.is_some()).count(),
        pos_name(lo),
        pos_name(hi)
    )
}

fn names(f: &WeFile) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = Vec::new();
    for n in &f.nodes {
        if !v.contains(&n.name) {
            v.push(n.name.clone());
        }
    }
    v
}

fn render_nodes(f: &WeFile) -> Vec<u8> {
    let mut out = Vec::new();
    for n in &f.nodes {
        out.extend_from_slice(format!("{} {} {} ", n.pos[0], n.pos[1], n.pos[2]).as_bytes());
        out.extend_from_slice(&text::quote_name(&n.name));
        out.extend_from_slice(format!(" {} {}\n", n.param1, n.param2).as_bytes());
    }
    out
}

/// The box the nodes span (empty file: 0,0,0 to -1,-1,-1).
fn bounds(f: &WeFile) -> ([i32; 3], [i32; 3]) {
    if f.nodes.is_empty() {
        return ([0; 3], [-1; 3]);
    }
    let mut lo = [i32::MAX; 3];
    let mut hi = [i32::MIN; 3];
    for n in &f.nodes {
        for a in 0..3 {
            lo[a] = lo[a].min(n.pos[a]);
            hi[a] = hi[a].max(n.pos[a]);
        }
    }
    (lo, hi)
}

fn frame(f: &WeFile) -> DocResult<(Frame, [i32; 3])> {
    let (lo, hi) = bounds(f);
    let size = [0, 1, 2].map(|a| (hi[a] - lo[a] + 1) as usize);
    if size.iter().product::<usize>() > worldfs_codec::mts::MAX_NODES {
        return Err(DocError::new(format!(
            "the nodes span {} x {} x {}: too large to draw (at most {} positions)",
            size[0],
            size[1],
            size[2],
            worldfs_codec::mts::MAX_NODES
        )));
    }
    Ok((Frame { size, origin: [lo[0] as i64, lo[1] as i64, lo[2] as i64], rows: Rows::ZDescending }, lo))
}

fn label(n: &WeNode) -> String {
    let mut l = String::from_utf8_lossy(&text::quote_name(&n.name)).into_owned();
    if n.param1 != 0 {
        l.push_str(&format!(" param1={}", n.param1));
    }
    if n.param2 != 0 {
        l.push_str(&format!(" param2={}", n.param2));
    }
    l
}

fn render_layers(f: &WeFile) -> String {
    let Ok((fr, lo)) = frame(f) else {
        return "# the nodes span a box too large to draw\n".into();
    };
    let [sx, sy, _] = fr.size;
    let idx = |p: [i32; 3]| {
        let d = [0, 1, 2].map(|a| (p[a] - lo[a]) as usize);
        (d[2] * sy + d[1]) * sx + d[0]
    };
    let mut b = LegendBuilder::new();
    let none = if f.nodes.is_empty() { 0 } else { usize::MAX };
    let mut cells = vec![none; fr.size.iter().product()];
    let mut by_label: HashMap<String, usize> = HashMap::new();
    for n in &f.nodes {
        let l = label(n);
        let i = *by_label.entry(l.clone()).or_insert_with(|| {
            let pref = crate::documents::mts::view::preferred(&crate::documents::mts::view::Cell {
                name: n.name.clone(),
                param1: 127,
                param2: 0,
            });
            b.index(&l, &pref)
        });
        cells[idx(n.pos)] = i;
    }
    if cells.contains(&usize::MAX) || f.nodes.is_empty() {
        let i = b.index(NONE, &['-']);
        cells.iter_mut().filter(|c| **c == usize::MAX).for_each(|c| *c = i);
    }
    let legend = b.into_entries();
    let mut out = String::from(
        "# legend: CHARACTER NAME [param1=N] [param2=N]; (none): no node in the file here (the world is left as it is)\n",
    );
    out.push_str(&layers::render(&fr, &legend, |x, y, z| cells[(z * sy + y) * sx + x]));
    out
}

/// Apply new content for `path`; on error `f` is unchanged.
pub fn apply(f: &mut WeFile, path: &str, content: &[u8]) -> DocResult<()> {
    let mut new = f.clone();
    match path {
        "names" => apply_names(&mut new, content),
        "nodes" => apply_nodes(&mut new, content),
        "layers" => apply_layers(&mut new, content),
        "info" => Err(DocError::new("info is computed and cannot be written")),
        _ => apply_meta_file(&mut new, path, content),
    }
    .map_err(|e| e.in_file(path))?;
    *f = new;
    Ok(())
}

fn known(f: &WeFile) -> Vec<Vec<u8>> {
    names(f)
}

fn apply_names(f: &mut WeFile, content: &[u8]) -> DocResult<()> {
    let old = names(f);
    let lines = text::lines(content)?;
    if lines.len() != old.len() {
        return Err(DocError::new(format!(
            "{} lines; names has one line per name ({}): rewrite a line to rename",
            lines.len(),
            old.len()
        )));
    }
    let mut map = HashMap::new();
    for (i, l) in lines.iter().enumerate() {
        let ws = text::words(l, i + 1)?;
        if ws.len() != 1 {
            return Err(DocError::at_line(i + 1, "one node name per line"));
        }
        map.insert(old[i].clone(), text::node_name(&ws[0], i + 1, &old)?);
    }
    f.nodes.iter_mut().for_each(|n| n.name = map[&n.name].clone());
    Ok(())
}

fn apply_nodes(f: &mut WeFile, content: &[u8]) -> DocResult<()> {
    let known = known(f);
    let meta: HashMap<[i32; 3], WeMeta> = f.nodes.iter().filter_map(|n| n.meta.clone().map(|m| (n.pos, m))).collect();
    let mut seen: HashMap<[i32; 3], usize> = HashMap::new();
    let mut nodes = Vec::new();
    let lim = worldfs_codec::we::codec::MAX_OFFSET;
    for (i, l) in text::lines(content)?.iter().enumerate() {
        let n = i + 1;
        let ws = text::words(l, n)?;
        if ws.len() != 6 {
            return Err(DocError::at_line(n, "expected '<x> <y> <z> <name> <param1> <param2>'"));
        }
        let pos = [
            text::int(&ws[0], n, "x", -lim, lim)? as i32,
            text::int(&ws[1], n, "y", -lim, lim)? as i32,
            text::int(&ws[2], n, "z", -lim, lim)? as i32,
        ];
        if let Some(prev) = seen.insert(pos, n) {
            return Err(DocError::at_line(n, format!("position {} is also on line {prev}", pos_name(pos))));
        }
        if nodes.len() >= worldfs_codec::mts::MAX_NODES {
            return Err(DocError::at_line(n, "too many nodes"));
        }
        nodes.push(WeNode {
            pos,
            name: text::node_name(&ws[3], n, &known)?,
            param1: text::int(&ws[4], n, "param1", 0, 255)? as u8,
            param2: text::int(&ws[5], n, "param2", 0, 255)? as u8,
            meta: meta.get(&pos).cloned(),
        });
    }
    f.nodes = nodes;
    Ok(())
}

fn apply_layers(f: &mut WeFile, content: &[u8]) -> DocResult<()> {
    let (fr, lo) = frame(f)?;
    let text = std::str::from_utf8(content).map_err(|_| DocError::new("not UTF-8 text"))?;
    let d = layers::parse(&fr, text)?;
    let known = known(f);
    // (name, param1, param2) per legend entry; None for (none).
    let mut cells: Vec<Option<(Vec<u8>, u8, u8)>> = Vec::new();
    for e in &d.legend {
        if e.label == NONE {
            cells.push(None);
            continue;
        }
        let ws = text::words(e.label.as_bytes(), e.line).map_err(|e| shift(e, 2))?;
        let name = text::node_name(&ws[0], e.line, &known).map_err(|e| shift(e, 2))?;
        let (mut p1, mut p2) = (0u8, 0u8);
        for w in &ws[1..] {
            let col = w.column + 2;
            let s = String::from_utf8_lossy(&w.bytes).into_owned();
            let (k, v) = s.split_once('=').unwrap_or((&s, ""));
            let val = text::Word { bytes: v.as_bytes().to_vec(), quoted: false, column: w.column + k.len() + 1 };
            match k {
                "param1" => p1 = text::int(&val, e.line, "param1", 0, 255).map_err(|e| shift(e, 2))? as u8,
                "param2" => p2 = text::int(&val, e.line, "param2", 0, 255).map_err(|e| shift(e, 2))? as u8,
                _ => return Err(DocError::at(e.line, col, format!("'{s}' is not param1=N or param2=N"))),
            }
        }
        cells.push(Some((name, p1, p2)));
    }
    let [sx, sy, sz] = fr.size;
    let mut old: HashMap<[i32; 3], WeNode> = f.nodes.iter().map(|n| (n.pos, n.clone())).collect();
    let mut order: Vec<[i32; 3]> = f.nodes.iter().map(|n| n.pos).collect();
    for x in 0..sx {
        for y in 0..sy {
            for z in 0..sz {
                let p = [lo[0] + x as i32, lo[1] + y as i32, lo[2] + z as i32];
                match &cells[d.at(x, y, z)] {
                    None => {
                        old.remove(&p);
                    }
                    Some((name, p1, p2)) => {
                        let meta = old.get(&p).and_then(|n| n.meta.clone());
                        if !order.contains(&p) {
                            order.push(p);
                        }
                        old.insert(p, WeNode { pos: p, name: name.clone(), param1: *p1, param2: *p2, meta });
                    }
                }
            }
        }
    }
    f.nodes = order.into_iter().filter_map(|p| old.remove(&p)).collect();
    Ok(())
}

fn shift(mut e: DocError, by: usize) -> DocError {
    if let Some(c) = e.column.as_mut() {
        *c += by;
    }
    e
}

fn apply_meta_file(f: &mut WeFile, path: &str, content: &[u8]) -> DocResult<()> {
    let (i, rest) = meta_path(f, path).ok_or_else(|| DocError::new("no such file"))?;
    let m = f.nodes[i].meta.as_mut().ok_or_else(|| DocError::new("this node has no metadata (mkdir it first)"))?;
    if rest == "inventory" {
        let inv = worldfs_codec::luanti::inventory::Inventory::parse_strict(content)
            .map_err(|e| DocError::at_line(e.line, e.message))?;
        if let Some(l) = inv.lists.iter().find(|l| l.width != 0) {
            return Err(DocError::new(format!(
                "list '{}' has Width {}; a .we file cannot keep list widths (write Width 0)",
                String::from_utf8_lossy(&l.name),
                l.width
            )));
        }
        let mut e = worldfs_codec::luanti::nodemeta::MetaEntry::new(0);
        e.inventory = content.to_vec();
        let (we, _) = meta_to_we(&e).map_err(DocError::new)?;
        m.inventory = we.inventory;
        return Ok(());
    }
    let Some(k) = rest.strip_prefix("fields/") else {
        return Err(DocError::new("no such file"));
    };
    let key = name_key(k).ok_or_else(|| DocError::new(format!("'{k}' is not a key name (escape bytes as %XX)")))?;
    let v = content.strip_suffix(b"\n").unwrap_or(content).to_vec();
    match m.fields.iter_mut().find(|(kk, _)| *kk == key) {
        Some(slot) => slot.1 = v,
        None => m.fields.push((key, v)),
    }
    Ok(())
}

/// Whether `path` is a new field file of an existing metadata directory.
pub(crate) fn accepts_new(f: &WeFile, path: &str) -> bool {
    match meta_path(f, path) {
        Some((i, rest)) => {
            f.nodes[i].meta.is_some()
                && rest.strip_prefix("fields/").is_some_and(|k| !k.contains('/') && name_key(k).is_some())
        }
        None => false,
    }
}

pub(crate) fn remove(f: &mut WeFile, path: &str) -> DocResult<()> {
    let (i, rest) = meta_path(f, path).ok_or_else(|| DocError::new("only field files can be removed").in_file(path))?;
    let key = rest.strip_prefix("fields/").and_then(name_key);
    let (Some(key), Some(m)) = (key, f.nodes[i].meta.as_mut()) else {
        return Err(DocError::new("only field files can be removed").in_file(path));
    };
    let before = m.fields.len();
    m.fields.retain(|(k, _)| *k != key);
    if m.fields.len() == before {
        return Err(DocError::new("no such field").in_file(path));
    }
    Ok(())
}

pub(crate) fn mkdir(f: &mut WeFile, path: &str) -> DocResult<()> {
    let Some((i, "")) = meta_path(f, path) else {
        return Err(DocError::new("metadata directories are meta/X,Y,Z of a node of the file").in_file(path));
    };
    if f.nodes[i].meta.is_some() {
        return Err(DocError::new("this node already has metadata").in_file(path));
    }
    f.nodes[i].meta = Some(WeMeta::default());
    Ok(())
}

pub(crate) fn rmdir(f: &mut WeFile, path: &str) -> DocResult<()> {
    match meta_path(f, path) {
        Some((i, "")) if f.nodes[i].meta.is_some() => {
            f.nodes[i].meta = None;
            Ok(())
        }
        _ => Err(DocError::new("not a metadata directory").in_file(path)),
    }
}
