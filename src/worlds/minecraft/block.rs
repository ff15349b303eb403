//! `block/X,Y,Z`: one block's state of a Java world as a one-line file
//! (`minecraft:chest[facing=north,type=single,waterlogged=false]`), read
//! and written like Luanti's `node/`. The directory lists nothing (a world
//! has billions of places); any `X,Y,Z` in a stored section can be looked
//! up. A write changes that block in its chunk and rewrites the region
//! file as `chunks/` does.

use super::chunk::ChunkDoc;
use super::regions::Regions;
use super::section::{parse_state, state_label};
use crate::documents::{Context, Document};
use crate::fs::{Access, Attr, DirEntry, FsError, Inval, Kind, NewName, Options, Result, Services, Tree};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;
use worldfs_store::Note;

pub(crate) struct BlockTree {
    regions: Arc<Regions>,
    /// Every inode of the tree is this with a number below 1 << 48.
    base: u64,
    opts: Options,
    services: Arc<Services>,
    /// Names handed out, by inode and by name.
    names: Mutex<(HashMap<u64, String>, HashMap<String, u64>)>,
}

fn parse_pos(name: &str) -> Option<(i64, i64, i64)> {
    let mut f = name.split(',');
    let v: Vec<i64> = f.by_ref().take(3).map(|p| p.parse().ok()).collect::<Option<_>>()?;
    let (x, y, z) = (*v.first()?, *v.get(1)?, *v.get(2)?);
    (f.next().is_none() && format!("{x},{y},{z}") == name).then_some((x, y, z))
}

impl BlockTree {
    pub(crate) fn new(regions: Arc<Regions>, base: u64, opts: Options, services: Arc<Services>) -> BlockTree {
        BlockTree { regions, base, opts, services, names: Mutex::new((HashMap::new(), HashMap::new())) }
    }

    pub(crate) fn root(&self) -> u64 {
        self.base | 1
    }

    fn ino_of(&self, name: &str) -> u64 {
        let mut n = self.names.lock();
        if let Some(i) = n.1.get(name) {
            return *i;
        }
        let ino = self.base | (n.0.len() as u64 + 2);
        n.0.insert(ino, name.to_string());
        n.1.insert(name.to_string(), ino);
        ino
    }

    fn name_of(&self, ino: u64) -> Result<String> {
        self.names.lock().0.get(&ino).cloned().ok_or_else(FsError::not_found)
    }

    /// The chunk holding (x, z), as stored (its bytes) and decoded.
    fn chunk(&self, x: i64, z: i64) -> Result<Option<(Vec<u8>, ChunkDoc)>> {
        let (cx, cz) = (x.div_euclid(16), z.div_euclid(16));
        let Some(bytes) = self.regions.read_chunk(cx, cz).map_err(FsError::io)? else { return Ok(None) };
        let doc =
            ChunkDoc::decode(&bytes, &Context::default()).map_err(|e| FsError::io(format!("chunk {cx},{cz}: {e}")))?;
        Ok(Some((bytes, doc)))
    }

    fn content(&self, name: &str) -> Result<Vec<u8>> {
        let (x, y, z) = parse_pos(name).ok_or_else(FsError::not_found)?;
        let (_, doc) = self.chunk(x, z)?.ok_or_else(FsError::not_found)?;
        let state = doc.block_at(x, y, z).map_err(|e| FsError::io(e.to_string()))?;
        Ok(format!("{}\n", state_label(&state.ok_or_else(FsError::not_found)?)).into_bytes())
    }

    fn attr(&self, name: &str) -> Result<Attr> {
        let size = self.content(name)?.len() as u64;
        Ok(Attr::new(self.ino_of(name), Kind::File, size, Access::Normal, SystemTime::now(), &self.opts))
    }
}

impl Tree for BlockTree {
    fn describe(&self) -> String {
        "block/ of the region files".into()
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
        let name = self.name_of(ino)?;
        // Refused at open while a game holds the world: `echo` reports it.
        if !self.opts.force {
            super::regions::check_session_lock(&self.regions.world)?;
        }
        parse_pos(&name).map(drop).ok_or_else(FsError::not_found)
    }
    /// Judged at `write()` for a whole line, so that `echo` reports it:
    /// a state the chunk can store (`ChunkDoc::check_state`: an id and
    /// data for a 1.12-or-older chunk's, one the game of a newer chunk's
    /// DataVersion knows).
    fn check_content(&self, ino: u64, content: &[u8]) -> Result<()> {
        let text = std::str::from_utf8(content).map_err(|_| FsError::invalid("not UTF-8 text"))?;
        let state = parse_state(text).map_err(FsError::invalid)?;
        let (x, _, z) = parse_pos(&self.name_of(ino)?).ok_or_else(FsError::not_found)?;
        match self.chunk(x, z)? {
            Some((_, doc)) => doc.check_state(&state).map_err(FsError::invalid),
            None => Ok(()),
        }
    }
    fn complete(&self, _ino: u64, content: &[u8]) -> bool {
        crate::documents::complete_lines(content, 1)
    }
    fn write(&self, ino: u64, content: &[u8], base: Option<&[u8]>) -> Result<()> {
        let name = self.name_of(ino)?;
        let (x, y, z) = parse_pos(&name).ok_or_else(FsError::not_found)?;
        let text = std::str::from_utf8(content).map_err(|_| FsError::invalid("not UTF-8 text"))?;
        let state = parse_state(text).map_err(|e| FsError::invalid(format!("block/{name}: {e}")))?;
        let _one = self.regions.lock.lock();
        if !self.opts.force {
            super::regions::check_session_lock(&self.regions.world)?;
        }
        let (old, mut doc) = self.chunk(x, z)?.ok_or_else(FsError::not_found)?;
        let now = doc.block_at(x, y, z).map_err(|e| FsError::io(e.to_string()))?.ok_or_else(FsError::not_found)?;
        if base.is_some_and(|b| b != format!("{}\n", state_label(&now)).as_bytes()) {
            return Err(FsError::stale(format!("block/{name} changed meanwhile; read it again")));
        }
        doc.set_block(x, y, z, state).map_err(|e| FsError::invalid(format!("block/{name}: {e}")))?;
        let new = doc.encode().map_err(|e| FsError::invalid(e.to_string()))?;
        if new != old {
            let note = Note::new(format!("write block/{name}"));
            self.regions.write_chunk(x.div_euclid(16), z.div_euclid(16), &old, &new, &note)?;
        }
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
