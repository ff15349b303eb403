//! Teeworlds / DDNet maps (`.map`): over the codecs of
//! `worldfs_codec::twmap` (the datafile container, the map items and
//! tiles), the map with the checks DDNet's loader makes ([`map`]), and the
//! view: a map as a tree of files ([`view`], and [`TwMap`] here, the
//! [`Document`]). The layout is in
//! docs/layout.md ("Teeworlds/DDNet maps").

pub mod map;
pub(crate) mod text;
mod view_content;
mod view_image;
mod view_props;

pub mod view {
    //! The files of a map <-> the map, pure: what each file of the tree shows
    //! (`render_*`) and how a written file changes the map (`apply_*`), in
    //! `view_content.rs`, `view_image.rs` and `view_props.rs`. The tree
    //! itself (names, which files exist) is [`TwMap`]; the layout is
    //! documented in docs/layout.md.
    //!
    //! Every `apply_*` leaves the map as it was when the written content shows
    //! what the map already holds, so rewriting a file with what it shows
    //! changes nothing. The caller checks the whole map afterwards
    //! ([`Map::recheck`](super::map::Map::recheck)) and keeps the old map when an edit is refused.

    pub(crate) use super::view_content::*;
    pub use super::view_image::*;
    pub use super::view_props::*;
}

use std::collections::HashMap;
use std::path::Path;

use self::map::Map;
use crate::documents::{Context, DocError, DocResult, Document, Entry};
use worldfs_codec::twmap::items::Layer;

/// What a path of the tree stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Node {
    Dir,
    Info,
    /// Embedded image `i` as PNG.
    Png(usize),
    /// External image `i`: a text file naming it.
    ExternalImage(usize),
    Envelope(usize),
    Group(usize),
    LayerInfo(usize, usize),
    Tiles(usize, usize),
    TilesRaw(usize, usize),
    Quads(usize, usize),
    Sources(usize, usize),
    Sound(usize),
    Item(usize),
}

impl Node {
    fn writable(self) -> bool {
        matches!(
            self,
            Node::Info
                | Node::Png(_)
                | Node::Group(_)
                | Node::LayerInfo(..)
                | Node::Tiles(..)
                | Node::TilesRaw(..)
                | Node::Quads(..)
        )
    }
}

/// A map mounted as a tree of files.
#[derive(Clone, Debug)]
pub struct TwMap {
    map: Map,
    entries: Vec<(Entry, Node)>,
    by_path: HashMap<String, usize>,
}

/// `NN_name` (or `NN` for an empty name): `n` zero-padded to the width of
/// the largest index, the name with `/` and control characters as `_`.
fn numbered(n: usize, count: usize, name: &[u8]) -> String {
    let width = count.saturating_sub(1).to_string().len().max(2);
    let mut s = format!("{n:0width$}");
    if !name.is_empty() {
        s.push('_');
        s.extend(String::from_utf8_lossy(name).chars().map(|c| if c == '/' || c.is_control() { '_' } else { c }));
    }
    s
}

impl TwMap {
    pub(crate) fn from_map(map: Map) -> TwMap {
        let mut t = TwMap { map, entries: Vec::new(), by_path: HashMap::new() };
        t.build_tree();
        t
    }

    pub fn map(&self) -> &Map {
        &self.map
    }

    fn build_tree(&mut self) {
        let m = &self.map;
        let ix = &m.index;
        let mut e: Vec<(Entry, Node)> = Vec::new();
        let file = |path: String, node: Node| (Entry::file(path, node.writable()), node);
        let dir = |path: &str| (Entry::dir(path), Node::Dir);
        e.push(file("info".into(), Node::Info));
        e.push(dir("images"));
        for i in 0..ix.images.len() {
            let im = m.image(i);
            let base = format!("images/{}", numbered(i, ix.images.len(), &m.string(im.name)));
            e.push(if im.is_embedded() {
                file(format!("{base}.png"), Node::Png(i))
            } else {
                file(format!("{base}.external"), Node::ExternalImage(i))
            });
        }
        e.push(dir("envelopes"));
        for i in 0..ix.envelopes.len() {
            let name = numbered(i, ix.envelopes.len(), &m.envelope(i).name());
            e.push(file(format!("envelopes/{name}"), Node::Envelope(i)));
        }
        e.push(dir("groups"));
        for g in 0..ix.groups.len() {
            let gdir = format!("groups/{}", numbered(g, ix.groups.len(), &view::group_name(m, g)));
            e.push(dir(&gdir));
            e.push(file(format!("{gdir}/group"), Node::Group(g)));
            e.push(dir(&format!("{gdir}/layers")));
            let n = ix.groups[g].layers.len();
            for l in 0..n {
                let layer = m.layer(g, l);
                let ldir = format!("{gdir}/layers/{}", numbered(l, n, &view::layer_name(&layer)));
                e.push(dir(&ldir));
                e.push(file(format!("{ldir}/info"), Node::LayerInfo(g, l)));
                match layer {
                    Layer::Tiles(_) => {
                        e.push(file(format!("{ldir}/tiles"), Node::Tiles(g, l)));
                        e.push(file(format!("{ldir}/tiles.raw"), Node::TilesRaw(g, l)));
                    }
                    Layer::Quads(_) => e.push(file(format!("{ldir}/quads"), Node::Quads(g, l))),
                    Layer::Sounds(_) => e.push(file(format!("{ldir}/sources"), Node::Sources(g, l))),
                    Layer::Other(..) => {}
                }
            }
        }
        e.push(dir("sounds"));
        for i in 0..ix.sounds.len() {
            let s = m.sound(i);
            let base = format!("sounds/{}", numbered(i, ix.sounds.len(), &m.string(s.name)));
            let ext = if s.external != 0 { "external" } else { "opus" };
            e.push(file(format!("{base}.{ext}"), Node::Sound(i)));
        }
        e.push(dir("items"));
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (item, kind) in &ix.others {
            let base = format!("items/{kind}_{}", m.df.items[*item].id);
            let k = seen.entry(base.clone()).or_default();
            *k += 1;
            let path = if *k == 1 { base } else { format!("{base}.{k}") };
            e.push(file(path, Node::Item(*item)));
        }
        self.by_path = e.iter().enumerate().map(|(i, (en, _))| (en.path.clone(), i)).collect();
        self.entries = e;
    }

    fn node(&self, path: &str) -> DocResult<Node> {
        self.by_path
            .get(path)
            .map(|&i| self.entries[i].1)
            .ok_or_else(|| DocError::new("no such file in the map").in_file(path))
    }
}

impl Document for TwMap {
    const NAME: &'static str = "twmap";

    fn sniff(_path: &Path, head: &[u8]) -> bool {
        head.len() >= 8
            && (&head[..4] == b"DATA" || &head[..4] == b"ATAD")
            && matches!(i32::from_le_bytes([head[4], head[5], head[6], head[7]]), 3 | 4)
    }

    fn decode(bytes: &[u8], _ctx: &Context) -> DocResult<TwMap> {
        Ok(TwMap::from_map(Map::decode(bytes)?))
    }

    fn encode(&self) -> DocResult<Vec<u8>> {
        self.map.encode()
    }

    fn entries(&self) -> Vec<Entry> {
        self.entries.iter().map(|(e, _)| e.clone()).collect()
    }

    fn render(&self, path: &str) -> DocResult<Vec<u8>> {
        let m = &self.map;
        Ok(match self.node(path)? {
            Node::Dir => return Err(DocError::new("a directory").in_file(path)),
            Node::Info => view::render_info(m),
            Node::Png(i) => view::render_png(m, i).map_err(|e| e.in_file(path))?,
            Node::ExternalImage(i) => view::render_external_image(m, i),
            Node::Envelope(i) => view::render_envelope(m, i),
            Node::Group(g) => view::render_group(m, g),
            Node::LayerInfo(g, l) => view::render_layer_info(m, g, l),
            Node::Tiles(g, l) => view::render_tiles(m, g, l),
            Node::TilesRaw(g, l) => view::render_tiles_raw(m, g, l),
            Node::Quads(g, l) => view::render_quads(m, g, l),
            Node::Sources(g, l) => view::render_sources(m, g, l),
            Node::Sound(i) => view::render_sound(m, i),
            Node::Item(i) => view::render_item(m, i),
        })
    }

    fn apply(&mut self, path: &str, content: &[u8]) -> DocResult<()> {
        let node = self.node(path)?;
        if !node.writable() {
            return Err(DocError::new("this file is read-only").in_file(path));
        }
        let mut next = self.map.clone();
        let edit = match node {
            Node::Info => view::apply_info(&mut next, content),
            Node::Png(i) => view::apply_png(&mut next, i, content),
            Node::Group(g) => view::apply_group(&mut next, g, content),
            Node::LayerInfo(g, l) => view::apply_layer_info(&mut next, g, l, content),
            Node::Tiles(g, l) => view::apply_tiles(&mut next, g, l, content),
            Node::TilesRaw(g, l) => view::apply_tiles_raw(&mut next, g, l, content),
            Node::Quads(g, l) => view::apply_quads(&mut next, g, l, content),
            _ => unreachable!("writable nodes are listed above"),
        };
        edit.map_err(|e| e.in_file(path))?;
        if next.df == self.map.df {
            return Ok(());
        }
        next.recheck().map_err(|e| DocError::new(format!("the edited map would be invalid: {e}")).in_file(path))?;
        self.map = next;
        self.build_tree();
        Ok(())
    }

    /// `tiles.raw` holds a fixed number of bytes: all of them at once is
    /// the whole file.
    fn complete(&self, path: &str, content: &[u8]) -> bool {
        matches!(self.node(path), Ok(Node::TilesRaw(g, l)) if content.len() == view::tiles_raw_len(&self.map, g, l))
    }

    fn readme(&self) -> String {
        README.to_string()
    }
}

/// `MNT/README` of a mounted map (the same text is in docs/layout.md).
pub(crate) const README: &str = "\
worldfs: this directory is a Teeworlds/DDNet map (see `worldfs --help`).

MNT/info                  author, version, credits, license (\"key = value\"),
                          then the server settings after [settings], one
                          command per line
MNT/images/NN_name.png    an embedded image (RGBA); write a PNG of the same
                          size to replace it
MNT/images/NN_name.external
                          an image the game loads from its mapres/ folder
MNT/envelopes/NN_name     an envelope and its points (read-only)
MNT/groups/NN_name/group  the group's name, offset, parallax and clipping
MNT/groups/NN_name/layers/NN_name/
  info                    the layer's kind, size, name, detail, image, colour
                          and colour envelope (kind and size are fixed)
  tiles                   tile layers: one line per row, one cell per tile;
                          a cell is index:flags (tele number:type, speedup
                          force:max_speed:type:angle, switch
                          number:type:flags:delay, tune number:type),
                          trailing zeros left out
  tiles.raw               the same tiles as stored, unpacked (4 bytes per
                          tile; tele and tune 2, speedup 6)
  quads                   quads layers: one quad per line
  sources                 sounds layers: one sound source per line
MNT/sounds/NN_name.opus   an embedded sound (read-only)
MNT/items/                every other item, its ints as little-endian bytes
MNT/write-errors          why recent writes were refused

Writing: info, group, layer info, tiles, tiles.raw, quads and embedded
images can be edited; the map is checked as DDNet's loader checks it when
the file is closed, and rewritten (in DDNet's layout) only if it passes.
";

#[cfg(test)]
mod tests;
