//! `block/X,Y,Z` of a Minecraft world, Java or Bedrock: one block's state
//! as a one-line file (`minecraft:chest[facing=north,type=single]`), read
//! and written like Luanti's `node/`. The directory lists nothing (a world
//! has billions of places); any `X,Y,Z` in a stored section can be looked
//! up. What differs between the games (where a block is read, what a line
//! may say, how the change is written) is the tree's [`Blocks`].

use crate::fs::{Access, Attr, DirEntry, FsError, Inval, Kind, NewName, Options, Result, Services, Tree};
use crate::worlds::names_by_inode::NamesByInode;
use std::sync::Arc;
use std::time::SystemTime;

/// A place: x, y, z.
pub(crate) type At = (i64, i64, i64);

/// The blocks of one dimension of a world, as `block/` reads and writes them.
pub(crate) trait Blocks: Send + Sync + 'static {
    /// The tree in words, for the log.
    fn describe(&self) -> String;
    /// Whether a chunk holding (x, z) can be named at all.
    fn fits(&self, _x: i64, _z: i64) -> bool {
        true
    }
    /// The label of the block's state (NotFound: its section is not stored).
    fn label(&self, at: At) -> Result<String>;
    /// Refused at open for writing (a game holding the world), so that the
    /// opening command reports it.
    fn check_open(&self) -> Result<()> {
        Ok(())
    }
    /// Whether the line `text` can be written at `at`.
    fn check_line(&self, at: At, text: &str) -> Result<()>;
    /// Write the line `text` at `at` as one change of `block/NAME`, if the
    /// block's file is still `base` (as it was read; ESTALE if not).
    fn write(&self, name: &str, at: At, text: &str, base: Option<&[u8]>) -> Result<()>;
}

/// ESTALE unless the file as read (`base`) is what `label` gives now.
pub(crate) fn unchanged_since_read(name: &str, base: Option<&[u8]>, label: &str) -> Result<()> {
    match base {
        Some(b) if b != format!("{label}\n").as_bytes() => {
            Err(FsError::stale(format!("block/{name} changed meanwhile; read it again")))
        }
        _ => Ok(()),
    }
}

pub(crate) struct BlockTree<B> {
    blocks: B,
    /// Every inode of the tree is this with a number below 1 << 48.
    base: u64,
    opts: Options,
    services: Arc<Services>,
    /// Names handed out, by inode and by name.
    names: NamesByInode,
}

impl<B: Blocks> BlockTree<B> {
    pub(crate) fn new(blocks: B, base: u64, opts: Options, services: Arc<Services>) -> BlockTree<B> {
        BlockTree { blocks, base, opts, services, names: NamesByInode::new(base, 2) }
    }

    pub(crate) fn root(&self) -> u64 {
        self.base | 1
    }

    fn ino_of(&self, name: &str) -> u64 {
        self.names.ino_of(name)
    }

    fn name_of(&self, ino: u64) -> Result<String> {
        self.names.name_of(ino)
    }

    /// The place a name `X,Y,Z` names, written as the tree writes it.
    fn parse_pos(&self, name: &str) -> Option<At> {
        let mut f = name.split(',');
        let v: Vec<i64> = f.by_ref().take(3).map(|p| p.parse().ok()).collect::<Option<_>>()?;
        let (x, y, z) = (*v.first()?, *v.get(1)?, *v.get(2)?);
        (self.blocks.fits(x, z) && f.next().is_none() && format!("{x},{y},{z}") == name).then_some((x, y, z))
    }

    fn content(&self, name: &str) -> Result<Vec<u8>> {
        let at = self.parse_pos(name).ok_or_else(FsError::not_found)?;
        Ok(format!("{}\n", self.blocks.label(at)?).into_bytes())
    }

    fn attr(&self, name: &str) -> Result<Attr> {
        let size = self.content(name)?.len() as u64;
        Ok(Attr::new(self.ino_of(name), Kind::File, size, Access::Normal, SystemTime::now(), &self.opts))
    }
}

impl<B: Blocks> Tree for BlockTree<B> {
    fn describe(&self) -> String {
        self.blocks.describe()
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
        self.blocks.check_open()?;
        self.parse_pos(&name).map(drop).ok_or_else(FsError::not_found)
    }
    /// Judged at `write()` for a whole line, so that `echo` reports it.
    fn check_content(&self, ino: u64, content: &[u8]) -> Result<()> {
        let text = std::str::from_utf8(content).map_err(|_| FsError::invalid("not UTF-8 text"))?;
        let at = self.parse_pos(&self.name_of(ino)?).ok_or_else(FsError::not_found)?;
        self.blocks.check_line(at, text)
    }
    fn complete(&self, _ino: u64, content: &[u8]) -> bool {
        crate::documents::complete_lines(content, 1)
    }
    fn write(&self, ino: u64, content: &[u8], base: Option<&[u8]>) -> Result<()> {
        let name = self.name_of(ino)?;
        let at = self.parse_pos(&name).ok_or_else(FsError::not_found)?;
        let text = std::str::from_utf8(content).map_err(|_| FsError::invalid("not UTF-8 text"))?;
        self.blocks.write(&name, at, text, base)?;
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
