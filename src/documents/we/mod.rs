//! WorldEdit files (`.we`): the codec and its Lua-data reader
//! (`worldfs_codec::we`) and the files a mounted one shows ([`view`]),
//! tied together as a [`Document`]; moving their nodes into and out of a
//! world is `crate::transfer::we`.

pub mod view;

use crate::documents::{Context, DocError, DocResult, Document, Entry};
use std::path::Path;
use worldfs_codec::we::codec::{self, WeFile};

/// A mounted `.we` file.
pub struct WeDocument {
    pub(crate) file: WeFile,
    /// What was decoded and its bytes: while unchanged, `encode` gives them back.
    original: Option<(WeFile, Vec<u8>)>,
}

impl Document for WeDocument {
    const NAME: &'static str = "we";

    fn sniff(path: &Path, head: &[u8]) -> bool {
        path.extension().is_some_and(|e| e.eq_ignore_ascii_case("we") || e.eq_ignore_ascii_case("wem"))
            || head.starts_with(b"5:return")
    }

    fn decode(bytes: &[u8], _ctx: &Context) -> DocResult<Self> {
        let f = codec::decode(bytes).map_err(|e| DocError {
            path: None,
            line: e.line,
            column: e.column,
            message: e.message,
        })?;
        Ok(WeDocument { original: Some((f.clone(), bytes.to_vec())), file: f })
    }

    fn encode(&self) -> DocResult<Vec<u8>> {
        if let Some((f, bytes)) = &self.original
            && *f == self.file
        {
            return Ok(bytes.clone());
        }
        Ok(codec::encode(&self.file))
    }

    fn entries(&self) -> Vec<Entry> {
        view::entries(&self.file)
    }

    fn render(&self, path: &str) -> DocResult<Vec<u8>> {
        view::render(&self.file, path)
    }

    fn apply(&mut self, path: &str, content: &[u8]) -> DocResult<()> {
        view::apply(&mut self.file, path, content)
    }

    fn accepts_new(&self, path: &str) -> bool {
        view::accepts_new(&self.file, path)
    }

    fn remove(&mut self, path: &str) -> DocResult<()> {
        view::remove(&mut self.file, path)
    }

    fn mkdir(&mut self, path: &str) -> DocResult<()> {
        view::mkdir(&mut self.file, path)
    }

    fn rmdir(&mut self, path: &str) -> DocResult<()> {
        view::rmdir(&mut self.file, path)
    }

    fn readme(&self) -> String {
        README.to_string()
    }
}

const README: &str = "\
This directory is a WorldEdit file (.we). Files are checked when closed;
a refused write leaves the file as it was, with the reason in
write-errors. The .we file is rewritten as version 5 (what current
WorldEdit writes) after each accepted change.

nodes    <x> <y> <z> <name> <param1> <param2>, one line per node of the
         file (offsets from where it is placed). Add, remove, reorder.
names    the node names in order of first appearance: rewrite a line to
         rename every node of that name.
layers   the nodes drawn one Y level at a time (north at the top); '-'
         (none) is a position the file has no node for.
meta/X,Y,Z/fields/KEY   a metadata field (value + newline); new files add
         fields, rm deletes them.
meta/X,Y,Z/inventory    the node's inventory (Width is always 0 here).
info     version and counts (read-only).

mkdir meta/X,Y,Z gives a node empty metadata; rmdir removes it.
";

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &[u8] = b"5:return {{x=0,y=0,z=0,name=\"default:stone\"},{x=1,y=0,z=0,name=\"default:chest\",param2=2,meta={fields={infotext=\"Chest\",[\"a/b\"]=\"x\"},inventory={main={\"default:dirt 5\",''}}}},{x=1,y=1,z=1,name=\"default:wood\",param1=15}}";

    fn doc() -> WeDocument {
        WeDocument::decode(SAMPLE, &Context::default()).unwrap()
    }

    #[test]
    fn every_file_applies_to_itself() {
        let mut d = doc();
        assert_eq!(d.encode().unwrap(), SAMPLE);
        for e in d.entries().into_iter().filter(|e| e.writable && !e.dir) {
            let c = d.render(&e.path).unwrap();
            d.apply(&e.path, &c).unwrap_or_else(|err| panic!("{}: {err}", e.path));
            assert_eq!(d.encode().unwrap(), SAMPLE, "{}", e.path);
        }
        let paths: Vec<String> = d.entries().into_iter().map(|e| e.path).collect();
        assert!(paths.contains(&"meta/1,0,0/fields/a%2Fb".to_string()), "{paths:?}");
    }

    #[test]
    fn layers_and_nodes_edit_the_file() {
        let mut d = doc();
        let layers = String::from_utf8(d.render("layers").unwrap()).unwrap();
        assert!(layers.contains("- (none)\n"), "{layers}");
        // Level y=0, rows z=1 then z=0: "--" over "sc". Remove the stone,
        // fill (0,0,1) with wood.
        assert!(layers.contains("y=0\n--\nsc\n"), "{layers}");
        let edited = layers.replace("y=0\n--\nsc\n", "y=0\nw-\n-c\n");
        d.apply("layers", edited.as_bytes()).unwrap();
        let nodes = String::from_utf8(d.render("nodes").unwrap()).unwrap();
        assert_eq!(nodes, "1 0 0 default:chest 0 2\n1 1 1 default:wood 15 0\n0 0 1 default:wood 15 0\n");
        assert!(d.file.nodes[0].meta.is_some(), "the chest keeps its metadata");
        let e = d.apply("nodes", b"0 0 0 a:b 0 0\n0 0 0 a:b 0 0\n").unwrap_err().to_string();
        assert_eq!(e, "nodes: line 2: position 0,0,0 is also on line 1");
        let e = d.apply("layers", edited.replace("w-", "wq").as_bytes()).unwrap_err().to_string();
        assert!(e.contains("column 2: 'q' is not in the legend"), "{e}");
    }

    #[test]
    fn metadata_files_edit_fields_and_inventories() {
        let mut d = doc();
        d.apply("meta/1,0,0/fields/infotext", b"Big chest\n").unwrap();
        assert!(d.accepts_new("meta/1,0,0/fields/owner"));
        d.apply("meta/1,0,0/fields/owner", b"sam\n").unwrap();
        d.remove("meta/1,0,0/fields/a%2Fb").unwrap();
        let inv = b"List main 1\nWidth 0\nItem default:mese 3\nEndInventoryList\nEndInventory\n";
        d.apply("meta/1,0,0/inventory", inv).unwrap();
        let e = d.apply("meta/1,0,0/inventory", b"List main 1\nWidth 2\nEmpty\nEndInventoryList\nEndInventory\n");
        assert!(e.unwrap_err().to_string().contains("cannot keep list widths"));
        d.mkdir("meta/0,0,0").unwrap();
        d.apply("meta/0,0,0/fields/text", b"hi\n").unwrap();
        let back = codec::decode(&d.encode().unwrap()).unwrap();
        let chest = &back.nodes[1].meta.as_ref().unwrap();
        assert_eq!(
            chest.fields,
            vec![(b"infotext".to_vec(), b"Big chest".to_vec()), (b"owner".to_vec(), b"sam".to_vec())]
        );
        assert_eq!(chest.inventory, vec![(b"main".to_vec(), vec![b"default:mese 3".to_vec()])]);
        assert_eq!(back.nodes[0].meta.as_ref().unwrap().fields, vec![(b"text".to_vec(), b"hi".to_vec())]);
        d.rmdir("meta/0,0,0").unwrap();
        assert!(d.file.nodes[0].meta.is_none());
    }
}
