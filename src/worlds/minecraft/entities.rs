//! Entities (mobs, items on the ground, armor stands, ...) as files, each
//! `N` (its place in the list, from 0) holding the entity as SNBT;
//! read-only. Before 1.17 a chunk holds its entities (`Level.Entities`,
//! shown as `chunks/X,Z/entities/N`); 1.17+ keep them in region files of
//! their own, `entities/r.X.Z.mca`, one entity chunk per chunk
//! (`Entities`, `Position`, `DataVersion`), shown as `entities/X,Z/N` by
//! [`EntityChunkDoc`] (and `regions::EntityHome`).

use crate::documents::{Context, DocError, DocResult, Document, Entry};
use worldfs_codec::minecraft::nbt::{self, Compound, Tag};
use worldfs_codec::minecraft::snbt;

/// The compounds of an `Entities` list.
pub(crate) fn list(holder: &Compound) -> Vec<&Compound> {
    let Some(l) = holder.list("Entities") else { return Vec::new() };
    l.items.iter().filter_map(|t| if let Tag::Compound(c) = t { Some(c) } else { None }).collect()
}

/// The entries for `holder`'s entities under `dir` (read-only files).
pub(crate) fn entries(holder: &Compound, dir: &str) -> Vec<Entry> {
    let mut v = Vec::new();
    if holder.list("Entities").is_some() {
        v.push(Entry::dir(dir.trim_end_matches('/')));
        v.extend((0..list(holder).len()).map(|i| Entry::file(format!("{dir}{i}"), false)));
    }
    v
}

/// Entity `name` (its index) of `holder` as SNBT.
pub(crate) fn render(holder: &Compound, name: &str) -> DocResult<String> {
    let i: usize = name.parse().map_err(|_| DocError::new("no such entity"))?;
    list(holder).get(i).map(|c| snbt::to_snbt(c)).ok_or_else(|| DocError::new("no such entity"))
}

/// One entity chunk of a 1.17+ `entities/` region file.
pub(crate) struct EntityChunkDoc {
    root: Compound,
    bytes: Vec<u8>,
}

impl Document for EntityChunkDoc {
    const NAME: &'static str = "minecraft entity chunk";

    fn decode(bytes: &[u8], _ctx: &Context) -> DocResult<Self> {
        let (_, root) = nbt::decode(bytes).map_err(DocError::new)?;
        if root.list("Entities").is_none() {
            return Err(DocError::new("no Entities list: not an entity chunk"));
        }
        Ok(EntityChunkDoc { root, bytes: bytes.to_vec() })
    }
    fn encode(&self) -> DocResult<Vec<u8>> {
        Ok(self.bytes.clone())
    }
    fn entries(&self) -> Vec<Entry> {
        let mut v = entries(&self.root, "");
        v.retain(|e| !e.path.is_empty());
        v
    }
    fn render(&self, path: &str) -> DocResult<Vec<u8>> {
        render(&self.root, path).map(String::into_bytes)
    }
    fn apply(&mut self, _path: &str, _content: &[u8]) -> DocResult<()> {
        Err(DocError::new("entities are read-only here"))
    }
}
