//! Points of interest (1.14+: beds, job sites, bells, portals, bee nests,
//! lodestones) of a dimension's `poi/` region files, one chunk each,
//! read-only: `poi/X,Z/records`, one point a line (`x,y,z type
//! free_tickets`, from each section's `Records`), and `data`, the chunk's
//! whole NBT as SNBT.

use super::regions::{FileStamp, Regions, parse_name, stamp_of};
use crate::documents::files_tree::{Home, Stored};
use crate::documents::{Context, DocError, DocResult, Document, Entry};
use crate::fs::{FsError, Result};
use worldfs_codec::minecraft::nbt::{self, Compound, Tag};
use worldfs_codec::minecraft::snbt;

pub struct PoiChunkDoc {
    root: Compound,
    bytes: Vec<u8>,
}

impl PoiChunkDoc {
    /// One line per record: position, type, free tickets.
    fn records(&self) -> DocResult<String> {
        let mut out = String::from("# x,y,z type free_tickets\n");
        let Some(sections) = self.root.compound("Sections") else { return Ok(out) };
        let mut ys: Vec<(i64, &Compound)> = Vec::new();
        for (y, t) in &sections.0 {
            let (Ok(y), Tag::Compound(s)) = (y.parse::<i64>(), t) else {
                return Err(DocError::new(format!("section {y:?} of Sections is not a section")));
            };
            ys.push((y, s));
        }
        ys.sort_by_key(|(y, _)| *y);
        for (y, s) in ys {
            for r in s.list("Records").map(|l| l.items.as_slice()).unwrap_or_default() {
                let pos = match r {
                    Tag::Compound(r) => match r.get("pos") {
                        Some(Tag::IntArray(p)) if p.len() == 3 => Some((r, p)),
                        _ => None,
                    },
                    _ => None,
                };
                let (r, p) = pos.ok_or_else(|| DocError::new(format!("section {y}: a record without its pos")))?;
                let kind = r.string("type").unwrap_or("?");
                let tickets = r.int("free_tickets").map_or("?".into(), |n| n.to_string());
                out.push_str(&format!("{},{},{} {kind} {tickets}\n", p[0], p[1], p[2]));
            }
        }
        Ok(out)
    }
}

impl Document for PoiChunkDoc {
    const NAME: &'static str = "minecraft poi chunk";

    fn decode(bytes: &[u8], _ctx: &Context) -> DocResult<Self> {
        let (_, root) = nbt::decode(bytes).map_err(DocError::new)?;
        Ok(PoiChunkDoc { root, bytes: bytes.to_vec() })
    }
    fn encode(&self) -> DocResult<Vec<u8>> {
        Ok(self.bytes.clone())
    }
    fn entries(&self) -> Vec<Entry> {
        vec![Entry::file("records", false), Entry::file("data", false)]
    }
    fn render(&self, path: &str) -> DocResult<Vec<u8>> {
        match path {
            "records" => self.records().map(String::into_bytes),
            "data" => Ok(snbt::to_snbt(&self.root).into_bytes()),
            _ => Err(DocError::new("no such file")),
        }
    }
    fn apply(&mut self, _path: &str, _content: &[u8]) -> DocResult<()> {
        Err(DocError::new("points of interest are read-only here"))
    }
}

/// `poi/` of a dimension: each chunk's points of interest a directory `X,Z`.
pub(crate) struct PoiHome {
    pub(crate) regions: std::sync::Arc<Regions>,
}

impl Home<PoiChunkDoc> for PoiHome {
    type Stamp = Option<FileStamp>;
    const MANY: bool = true;

    fn describe(&self) -> String {
        format!("Minecraft Java points of interest in {}", self.regions.dir().display())
    }
    fn label(&self) -> &'static str {
        "poi"
    }
    fn names(&self) -> Result<Vec<String>> {
        self.regions.chunk_names().map_err(FsError::io)
    }
    fn stamp(&self, name: &str) -> Result<Option<Self::Stamp>> {
        let (x, z) = parse_name(name).ok_or_else(FsError::not_found)?;
        Ok(Some(stamp_of(&self.regions.file_of(x, z))))
    }
    fn load(&self, name: &str) -> Result<Option<Stored<PoiChunkDoc, Self::Stamp>>> {
        let Some((x, z)) = parse_name(name) else { return Ok(None) };
        let stamp = stamp_of(&self.regions.file_of(x, z));
        let Some(bytes) = self.regions.read_chunk(x, z).map_err(FsError::io)? else { return Ok(None) };
        let doc = self.decode(name, &bytes)?;
        Ok(Some(Stored { bytes, doc, stamp }))
    }
    fn decode(&self, name: &str, bytes: &[u8]) -> Result<PoiChunkDoc> {
        PoiChunkDoc::decode(bytes, &Context::default()).map_err(|e| FsError::io(format!("poi chunk {name}: {e}")))
    }
    fn store(&self, _name: &str, _old: Option<&[u8]>, _new: Option<&[u8]>, _what: &str) -> Result<Option<Self::Stamp>> {
        Err(FsError::perm("points of interest are read-only here"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldfs_codec::minecraft::nbt::List;

    #[test]
    fn records_are_listed_by_section() {
        let record = |x: i32, y: i32, kind: &str| {
            Tag::Compound(Compound(vec![
                ("pos".into(), Tag::IntArray(vec![x, y, 5])),
                ("type".into(), Tag::String(kind.into())),
                ("free_tickets".into(), Tag::Int(1)),
            ]))
        };
        let section = |items| {
            Tag::Compound(Compound(vec![
                ("Records".into(), Tag::List(List { elem: 10, items })),
                ("Valid".into(), Tag::Byte(1)),
            ]))
        };
        let root = Compound(vec![
            ("DataVersion".into(), Tag::Int(3465)),
            (
                "Sections".into(),
                Tag::Compound(Compound(vec![
                    ("4".into(), section(vec![record(1, 70, "minecraft:home")])),
                    ("-1".into(), section(vec![record(2, -5, "minecraft:nether_portal")])),
                ])),
            ),
        ]);
        let doc = PoiChunkDoc::decode(&nbt::encode("", &root).unwrap(), &Context::default()).unwrap();
        let text = String::from_utf8(doc.render("records").unwrap()).unwrap();
        assert_eq!(text, "# x,y,z type free_tickets\n2,-5,5 minecraft:nether_portal 1\n1,70,5 minecraft:home 1\n");
        assert!(String::from_utf8(doc.render("data").unwrap()).unwrap().contains("minecraft:home"));
    }
}
