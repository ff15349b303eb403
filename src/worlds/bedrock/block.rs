//! `block/X,Y,Z` of a Bedrock world's overworld: one block's state (its
//! first storage layer) as a one-line file, read and written as a Java
//! world's `block/` is. The directory lists nothing; any place in a stored
//! subchunk can be looked up. A write changes that block in its subchunk
//! (the palette re-encoded) as one write batch.

use super::chunk::ChunkDoc;
use super::db::{Db, Records};
use super::states;
use crate::fs::{Access, Attr, DirEntry, FsError, Inval, Kind, NewName, Options, Result, Services, Tree};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;
use worldfs_codec::bedrock::key::{ChunkPos, OVERWORLD};

pub(crate) struct BlockTree {
    db: Arc<Db>,
    tag: u64,
    opts: Options,
    services: Arc<Services>,
    names: Mutex<(HashMap<u64, String>, HashMap<String, u64>)>,
}

fn parse_pos(name: &str) -> Option<(i64, i64, i64)> {
    let mut f = name.split(',');
    let v: Vec<i64> = f.by_ref().take(3).map(|p| p.parse().ok()).collect::<Option<_>>()?;
    let (x, y, z) = (*v.first()?, *v.get(1)?, *v.get(2)?);
    let fits = i32::try_from(x.div_euclid(16)).is_ok() && i32::try_from(z.div_euclid(16)).is_ok();
    (fits && f.next().is_none() && format!("{x},{y},{z}") == name).then_some((x, y, z))
}

impl BlockTree {
    pub(crate) fn new(db: Arc<Db>, tag: u64, opts: Options, services: Arc<Services>) -> BlockTree {
        BlockTree { db, tag, opts, services, names: Mutex::new((HashMap::new(), HashMap::new())) }
    }

    pub(crate) fn root(&self) -> u64 {
        (self.tag << 60) | 1
    }

    fn ino_of(&self, name: &str) -> u64 {
        let mut n = self.names.lock();
        if let Some(i) = n.1.get(name) {
            return *i;
        }
        let ino = (self.tag << 60) | (n.0.len() as u64 + 2);
        n.0.insert(ino, name.to_string());
        n.1.insert(name.to_string(), ino);
        ino
    }

    fn name_of(&self, ino: u64) -> Result<String> {
        self.names.lock().0.get(&ino).cloned().ok_or_else(FsError::not_found)
    }

    fn chunk(&self, x: i64, z: i64) -> Result<(Records, ChunkDoc)> {
        let pos = ChunkPos { dim: OVERWORLD, x: x.div_euclid(16) as i32, z: z.div_euclid(16) as i32 };
        let records = self.db.records(pos)?;
        Ok((records.clone(), ChunkDoc::new(pos, records)))
    }

    fn content(&self, name: &str) -> Result<Vec<u8>> {
        let (x, y, z) = parse_pos(name).ok_or_else(FsError::not_found)?;
        let (_, doc) = self.chunk(x, z)?;
        let state = doc.block_at(x, y, z).map_err(|e| FsError::io(e.to_string()))?.ok_or_else(FsError::not_found)?;
        Ok(format!("{}\n", states::label(&state)).into_bytes())
    }

    fn attr(&self, name: &str) -> Result<Attr> {
        let size = self.content(name)?.len() as u64;
        Ok(Attr::new(self.ino_of(name), Kind::File, size, Access::Normal, SystemTime::now(), &self.opts))
    }
}

impl Tree for BlockTree {
    fn describe(&self) -> String {
        "block/ of the overworld".into()
    }
    fn readme(&self) -> String {
        String::new()
    }
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Attr> {
        if parent != self.root() {
            return Err(FsError::not_dir());
        }
        self.attr(std::str::from_utf8(name).map_err(|_| FsError::not_found())?)
    }
    fn getattr(&self, ino: u64) -> Result<Attr> {
        if ino == self.root() {
            return Ok(Attr::new(ino, Kind::Dir, 0, Access::Normal, SystemTime::now(), &self.opts));
        }
        self.attr(&self.name_of(ino)?)
    }
    fn parent(&self, _ino: u64) -> Result<u64> {
        Ok(self.root())
    }
    fn list(&self, dir: u64, _o: u64, _p: bool, _add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool) -> Result<()> {
        if dir == self.root() { Ok(()) } else { Err(FsError::not_dir()) }
    }
    fn read(&self, ino: u64) -> Result<Arc<Vec<u8>>> {
        Ok(Arc::new(self.content(&self.name_of(ino)?)?))
    }
    fn check_writable(&self, ino: u64) -> Result<()> {
        if self.opts.read_only {
            return Err(FsError::read_only("the mount is read-only"));
        }
        parse_pos(&self.name_of(ino)?).map(drop).ok_or_else(FsError::not_found)
    }
    /// Judged at `write()` for a whole line, so that `echo` reports it.
    fn check_content(&self, ino: u64, content: &[u8]) -> Result<()> {
        let text = std::str::from_utf8(content).map_err(|_| FsError::invalid("not UTF-8 text"))?;
        let (x, y, z) = parse_pos(&self.name_of(ino)?).ok_or_else(FsError::not_found)?;
        let (_, mut doc) = self.chunk(x, z)?;
        doc.set_block(x, y, z, text.trim_end()).map_err(|e| FsError::invalid(e.to_string()))
    }
    fn complete(&self, _ino: u64, content: &[u8]) -> bool {
        crate::documents::complete_lines(content, 1)
    }
    fn write(&self, ino: u64, content: &[u8], base: Option<&[u8]>) -> Result<()> {
        let name = self.name_of(ino)?;
        let (x, y, z) = parse_pos(&name).ok_or_else(FsError::not_found)?;
        let text = std::str::from_utf8(content).map_err(|_| FsError::invalid("not UTF-8 text"))?;
        let _one = self.db.lock.lock();
        let (old, mut doc) = self.chunk(x, z)?;
        let now = doc.block_at(x, y, z).map_err(|e| FsError::io(e.to_string()))?.ok_or_else(FsError::not_found)?;
        if base.is_some_and(|b| b != format!("{}\n", states::label(&now)).as_bytes()) {
            return Err(FsError::stale(format!("block/{name} changed meanwhile; read it again")));
        }
        doc.set_block(x, y, z, text.trim_end()).map_err(|e| FsError::invalid(format!("block/{name}: {e}")))?;
        self.db.write(&old, &doc.records, &format!("write block/{name}"))?;
        self.services.invalidate(vec![Inval::Inode(ino)]);
        Ok(())
    }
    fn new_name(&self, _dir: u64, _name: &[u8]) -> Result<NewName> {
        Err(FsError::perm("block/ holds one file per stored place, named X,Y,Z; there are no new ones"))
    }
    fn path(&self, ino: u64) -> String {
        format!("block/{}", self.name_of(ino).unwrap_or_default())
    }
    fn negative_entries(&self, _dir: u64) -> bool {
        false
    }
}
