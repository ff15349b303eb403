//! Luanti schematics (`.mts`): the codec (`worldfs_codec::mts`) and the
//! files a mounted schematic shows ([`view`]), tied together as a
//! [`Document`].

pub mod view;

use worldfs_codec::mts as codec;
pub use worldfs_codec::mts::{MtsError, Schematic};

use crate::documents::{Context, DocError, DocResult, Document, Entry};
use std::path::Path;

/// A mounted `.mts` file.
pub struct MtsDocument {
    pub schematic: Schematic,
    /// What was decoded and the bytes it came from: while the schematic is
    /// unchanged, `encode` gives back those bytes exactly.
    original: Option<(Schematic, Vec<u8>)>,
}

impl MtsDocument {
    pub fn new(schematic: Schematic) -> MtsDocument {
        MtsDocument { schematic, original: None }
    }
}

impl Document for MtsDocument {
    const NAME: &'static str = "mts";

    fn sniff(path: &Path, head: &[u8]) -> bool {
        head.starts_with(codec::MAGIC) || path.extension().is_some_and(|e| e.eq_ignore_ascii_case("mts"))
    }

    fn decode(bytes: &[u8], _ctx: &Context) -> DocResult<Self> {
        let s = Schematic::decode(bytes).map_err(|e| DocError::new(e.to_string()))?;
        Ok(MtsDocument { original: Some((s.clone(), bytes.to_vec())), schematic: s })
    }

    fn encode(&self) -> DocResult<Vec<u8>> {
        if let Some((s, bytes)) = &self.original
            && *s == self.schematic
        {
            return Ok(bytes.clone());
        }
        self.schematic.encode().map_err(|e| DocError::new(e.to_string()))
    }

    fn entries(&self) -> Vec<Entry> {
        view::FILES.iter().map(|(name, w)| Entry::file(*name, *w)).collect()
    }

    fn render(&self, path: &str) -> DocResult<Vec<u8>> {
        view::render(&self.schematic, path)
    }

    fn apply(&mut self, path: &str, content: &[u8]) -> DocResult<()> {
        view::apply(&mut self.schematic, path, content)
    }

    /// `size` is one line, `yslice` a line per Y level, `param0` two bytes
    /// per node.
    fn complete(&self, path: &str, content: &[u8]) -> bool {
        let s = &self.schematic;
        match path {
            "size" => crate::documents::complete_lines(content, 1),
            "yslice" => crate::documents::complete_lines(content, s.size[1] as usize),
            "param0" => content.len() == 2 * s.volume(),
            _ => false,
        }
    }

    fn readme(&self) -> String {
        README.to_string()
    }
}

const README: &str = "\
This directory is a Luanti schematic (.mts). Every file can be edited
(except info); a write is checked when the file is closed, and refused
with the reason in write-errors when it is wrong. The .mts file is
rewritten (version 4) after each accepted change.

size     X Y Z. Writing a new size resizes: nodes keep their x y z,
         new nodes are air with probability 0, new slices 127.
names    <id> <name>: the name table. Rename a line to change that node
         type everywhere.
nodes    <x> <y> <z> <name> <probability> <param2> [force], one line per
         node, x fastest. probability is 0..127 as stored (0 never placed,
         127 always); force: the node replaces what is in the world.
layers   the schematic drawn one Y level at a time (north at the top), a
         legend of one character per node kind: `name [prob=N]
         [param2=N] [force]`. '-' is air never placed: the world is left
         as it is there. Change characters, or add legend lines.
yslice   <y> <probability>: the chance that a whole Y level is placed.
param0   2 bytes (big-endian content id) per node, in node order.
param1   1 byte per node: probability + 128 when force-placed.
param2   1 byte per node.
info     version, size and counts (read-only).

A schematic holds no node metadata (chest contents, sign texts): use a
WorldEdit .we file for those.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> MtsDocument {
        let mut s = Schematic::new_air([3, 2, 2]).unwrap();
        s.names.push(b"default:stone".to_vec());
        s.names.push(b"default:leaves".to_vec());
        s.param0[1] = 1;
        s.param0[4] = 2;
        s.param1[4] = 80 | codec::FORCE_PLACE;
        s.param2[4] = 3;
        s.param1[0] = 0;
        s.slices[1] = 63;
        let bytes = s.encode().unwrap();
        MtsDocument::decode(&bytes, &Context::default()).unwrap()
    }

    /// Files the engine reads although they are not what it writes (no
    /// adler32 trailer, node data longer than the size needs; see
    /// `worldfs_codec::mts`'s tests) keep their bytes until they are
    /// changed, and a change writes no extra bytes.
    #[test]
    fn tolerated_files_keep_their_bytes_until_changed() {
        let s = doc().schematic;
        let whole = s.encode().unwrap();
        for cut in 1..=4 {
            let file = &whole[..whole.len() - cut];
            let d = MtsDocument::decode(file, &Context::default()).unwrap();
            assert_eq!(d.encode().unwrap(), file, "cut {cut}: an unchanged file keeps its bytes");
        }
        let data = [s.node_data(), b"extra bytes the engine ignores".to_vec()].concat();
        let file = [s.head(), worldfs_codec::compress::deflate_zlib(&data)].concat();
        let mut d = MtsDocument::decode(&file, &Context::default()).unwrap();
        assert_eq!(d.encode().unwrap(), file, "an unchanged file keeps its bytes");
        d.schematic.param2[0] = 1;
        assert_eq!(d.encode().unwrap(), d.schematic.encode().unwrap(), "a change writes no extra bytes");
    }

    #[test]
    fn every_file_applies_to_itself() {
        let mut d = doc();
        let before = d.encode().unwrap();
        for e in d.entries().iter().filter(|e| e.writable) {
            let content = d.render(&e.path).unwrap();
            d.apply(&e.path, &content).unwrap_or_else(|err| panic!("{}: {err}", e.path));
            assert_eq!(d.encode().unwrap(), before, "{}", e.path);
        }
    }

    #[test]
    fn files_show_the_schematic() {
        let d = doc();
        let s = |f: &str| String::from_utf8(d.render(f).unwrap()).unwrap();
        assert_eq!(s("size"), "3 2 2\n");
        assert_eq!(s("names"), "0 air\n1 default:stone\n2 default:leaves\n");
        let nodes = s("nodes");
        let lines: Vec<&str> = nodes.lines().collect();
        assert_eq!(lines[0], "0 0 0 air 0 0");
        assert_eq!(lines[1], "1 0 0 default:stone 127 0");
        assert_eq!(lines[4], "1 1 0 default:leaves 80 3 force");
        assert_eq!(s("yslice"), "0 127\n1 63\n");
        let layers = s("layers");
        assert!(layers.contains("- air prob=0\n"), "{layers}");
        assert!(layers.contains("l default:leaves prob=80 param2=3 force\n"), "{layers}");
        // north (z = 1) first: level 0 is "..." over "-s."
        assert!(layers.contains("y=0\n...\n-s.\n\ny=1\n...\n.l.\n"), "{layers}");
    }

    #[test]
    fn layers_edits_change_nodes_and_add_names() {
        let mut d = doc();
        let text = String::from_utf8(d.render("layers").unwrap()).unwrap();
        let text =
            text.replace("y=1\n...\n.l.\n", "y=1\n...\n.lw\n").replace("y=0\n", "w default:wood param2=2\n\ny=0\n");
        // the legend line must come before the first level
        let text = text.replacen("\n\nw default:wood param2=2\n", "\nw default:wood param2=2\n", 1);
        d.apply("layers", text.as_bytes()).unwrap();
        let s = &d.schematic;
        let i = s.index(2, 1, 0);
        assert_eq!((s.name_at(i), s.param1[i], s.param2[i]), (&b"default:wood"[..], 127, 2));
        // reads back as the engine would write it
        let back = Schematic::decode(&d.encode().unwrap()).unwrap();
        assert_eq!(&back, s);
    }

    #[test]
    fn bad_edits_name_line_and_column_and_change_nothing() {
        let mut d = doc();
        let before = d.encode().unwrap();
        let layers = String::from_utf8(d.render("layers").unwrap()).unwrap();
        let at = |needle: &str| layers.lines().position(|l| l == needle).unwrap() + 1;
        let cases: Vec<(&str, String, String)> = vec![
            (
                "layers",
                layers.replacen("y=1\n...\n", "y=1\n.q.\n", 1),
                format!("layers: line {}, column 2: 'q' is not in the legend", at("y=1") + 1),
            ),
            (
                "layers",
                layers.replacen("y=1\n...\n", "y=1\n..\n", 1),
                format!("layers: line {}, column 3: row has 2 characters; it needs 3 (one per x)", at("y=1") + 1),
            ),
            (
                "layers",
                layers.replacen(". air\n", ". Air\n", 1),
                format!("layers: line {}, column 3: 'Air' is not a node name the engine accepts", at(". air")),
            ),
            (
                "layers",
                layers.replacen(". air\n", ". air prob=300\n", 1),
                format!("layers: line {}, column 12: prob must be a whole number 0..127, not '300'", at(". air")),
            ),
            (
                "layers",
                layers.replacen(". air\n", ". air bogus\n", 1),
                format!("layers: line {}, column 7: 'bogus' is not prob=N, param2=N or force", at(". air")),
            ),
            (
                "nodes",
                "0 0 0 air 0 0\n".into(),
                "nodes: line 1: node 1 0 0 is missing: every node of the 3 x 2 x 2 schematic is listed once".into(),
            ),
            (
                "nodes",
                "0 0 5 air 0 0\n".into(),
                "nodes: line 1, column 5: z must be a whole number 0..1, not '5'".into(),
            ),
            (
                "nodes",
                "0 0 0 air 128 0\n".into(),
                "nodes: line 1, column 11: probability must be a whole number 0..127, not '128'".into(),
            ),
            ("nodes", "0 0 0 air 1 0 forced\n".into(), "nodes: line 1, column 15: 'forced' is not 'force'".into()),
            (
                "names",
                "0 air\n1 default:stone\n".into(),
                "names: content id 2 is used by 1 node(s) but has no name".into(),
            ),
            ("names", "0 air\n0 x:y\n".into(), "names: line 2, column 1: id 0 is named twice (also on line 1)".into()),
            ("size", "3 0 2\n".into(), "size: line 1, column 3: y must be a whole number 1..32767, not '0'".into()),
            (
                "size",
                "300 300 300\n".into(),
                "size: line 1: size 300 x 300 x 300 is 27000000 nodes; at most 16777216 (256 x 256 x 256) are allowed"
                    .into(),
            ),
            ("yslice", "0 127\n".into(), "yslice: y 1 is missing: one line per Y level (0..1)".into()),
            (
                "param0",
                "\0\0".into(),
                "param0: 2 bytes; param0 holds 2 bytes (big-endian content id) per node: 24 for 12 nodes".into(),
            ),
            (
                "param0",
                String::from_utf8([0, 9].repeat(12)).unwrap(),
                "param0: byte 0: node 0 0 0 has content id 9, but names has ids 0..2".into(),
            ),
            ("param2", "x".into(), "param2: 1 bytes; param2 holds 1 byte per node: 12 for this size".into()),
            ("info", "x".into(), "info: info is computed and cannot be written".into()),
        ];
        for (file, content, want) in cases {
            let e = d.apply(file, content.as_bytes()).unwrap_err().to_string();
            assert!(e.starts_with(&want), "{file}: got {e:?}, want {want:?}");
            assert_eq!(d.encode().unwrap(), before, "{file} changed the schematic");
        }
    }

    #[test]
    fn resizing_keeps_coordinates_and_fills_with_leave_alone_air() {
        let mut d = doc();
        d.apply("size", b"4 2 1\n").unwrap();
        let s = &d.schematic;
        assert_eq!(s.size, [4, 2, 1]);
        assert_eq!(s.name_at(s.index(1, 0, 0)), b"default:stone");
        assert_eq!(s.name_at(s.index(1, 1, 0)), b"default:leaves");
        let i = s.index(3, 0, 0);
        assert_eq!((s.name_at(i), s.param1[i]), (&b"air"[..], 0));
        assert_eq!(s.slices, vec![127, 63]);
        d.apply("size", b"4 3 1\n").unwrap();
        assert_eq!(d.schematic.slices, vec![127, 63, 127]);
    }

    #[test]
    fn names_edits_rename_and_renumber() {
        let mut d = doc();
        d.apply("names", b"2 default:jungleleaves\n0 air\n1 default:stone\n7 unused:thing\n").unwrap();
        let s = &d.schematic;
        assert_eq!(s.names[2], b"default:jungleleaves");
        assert_eq!(s.names.len(), 4);
        d.apply("names", b"0 air\n1 default:stone\n2 default:jungleleaves\n").unwrap();
        assert_eq!(d.schematic.names.len(), 3);
    }
}
