//! `worldfs undo` of a Java world: the journal's records (chunks, players'
//! files, level.dat; `journal.rs`) stepped back by `crate::worlds::undo`, and
//! written back as the mount writes them (a region file rewritten and
//! renamed over the old one). A region file nothing else changed since
//! the changes undone comes back byte for byte: each change journaled the
//! patch that turns the file it left back into the file it found
//! (`worldfs_codec::filepatch`), and those are applied newest first while the file
//! is what each change left; then every chunk of the result must be what
//! the records say, or the chunks are written back one by one instead. The
//! revert is journaled in turn, one entry per collection, and refused while
//! a game holds `session.lock` unless forced.

use super::journal::{self, CHUNKS, LEVEL, LEVEL_NAME, PLAYERS};
use super::layout::Layout;
use super::regions::{ChunkBytes, Regions, Rewrite, check_session_lock, chunk_from, parse_name};
use super::{player_file, swap_file};
use crate::worlds::undo::{Plan, RecordRestore, Selection, plan_records};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use worldfs_codec::filepatch;
use worldfs_codec::minecraft::region;
use worldfs_store::journal::{FILE_NAME, FilePatch, Fingerprint, Journal};

/// A chunk to put back: x, z, its NBT now, its NBT to give back.
type ChunkBack<'a> = (i64, i64, &'a [u8], &'a [u8]);

/// A Java world's journaled files.
pub(crate) struct Records {
    world: PathBuf,
    regions: Regions,
    layout: Layout,
}

impl Records {
    pub(crate) fn new(world: &Path) -> Records {
        let journal = Some(world.join(FILE_NAME));
        let layout = super::layout::of(world);
        let regions = Regions::new(world, layout.overworld.folder("region"), journal);
        Records { world: world.to_path_buf(), regions, layout }
    }

    /// The region files of a collection of chunks: the overworld's
    /// (`CHUNKS`) or another dimension's (None: not chunks).
    fn regions_of(&self, collection: &str) -> Result<Option<Regions>, String> {
        let Some(id) = journal::dimension_of(collection) else { return Ok(None) };
        let dim = self.layout.dimension(id).ok_or_else(|| {
            format!("the journal names chunks of dimension {id}, which {} does not have", self.world.display())
        })?;
        let regions = Regions::new(&self.world, dim.folder("region"), self.regions.journal.clone());
        Ok(Some(regions.with_collection(collection.to_string())))
    }

    /// The journal (None: nothing was changed through worldfs yet).
    pub(crate) fn journal(&self) -> Result<Option<Journal>, String> {
        let path = self.world.join(FILE_NAME);
        Journal::open(&path).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn file_of(&self, collection: &str, name: &str) -> Result<PathBuf, String> {
        match collection {
            PLAYERS => player_file(&self.world.join(&self.layout.players), name),
            LEVEL if name == LEVEL_NAME => Some(self.world.join("level.dat")),
            _ => None,
        }
        .ok_or_else(|| format!("the journal names {collection}/{name}, which is no file of a Minecraft world"))
    }

    /// What a journaled record holds now (a chunk's NBT, a file's bytes).
    pub(crate) fn read(&self, collection: &str, name: &str) -> Result<Option<Vec<u8>>, String> {
        if collection == CHUNKS {
            let (x, z) = parse_name(name).ok_or_else(|| format!("the journal names chunk {name:?}"))?;
            return self.regions.read_chunk(x, z);
        }
        if let Some(regions) = self.regions_of(collection)? {
            let (x, z) = parse_name(name).ok_or_else(|| format!("the journal names chunk {name:?}"))?;
            return regions.read_chunk(x, z);
        }
        let path = self.file_of(collection, name)?;
        match std::fs::read(&path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// The writes that revert `sel`.
    pub(crate) fn plan(&self, journal: &Journal, sel: Selection) -> Result<Plan, String> {
        plan_records(journal, &|c, n| self.read(c, n), sel)
    }

    /// Apply a plan: each collection's records in one journal entry.
    pub(crate) fn execute(&self, plan: &Plan, force: bool) -> Result<(), String> {
        if !force {
            check_session_lock(&self.world).map_err(|e| e.message)?;
        }
        let _one = self.regions.lock.lock();
        let mut collections: Vec<String> = [CHUNKS, PLAYERS, LEVEL].map(String::from).into();
        let others = plan.records.iter().map(|r| &r.collection).filter(|c| journal::dimension_of(c).is_some());
        for c in others {
            if !collections.contains(c) {
                collections.push(c.clone());
            }
        }
        for collection in &collections {
            let group: Vec<&RecordRestore> = plan.records.iter().filter(|r| &r.collection == collection).collect();
            if !group.is_empty() {
                self.restore_group(collection, &group, plan)?;
            }
        }
        match plan.records.iter().find(|r| !collections.contains(&r.collection)) {
            Some(r) => Err(format!("{}/{}: not a record of a Minecraft world; not restored", r.collection, r.name)),
            None => Ok(()),
        }
    }

    fn restore_group(&self, collection: &str, group: &[&RecordRestore], plan: &Plan) -> Result<(), String> {
        let mut steps = Vec::new();
        for r in group {
            let (Some(now), Some(back)) = (&r.now, &r.back) else {
                return Err(format!("{collection}/{}: undo neither makes nor deletes chunks or files", r.name));
            };
            steps.push((r.name.as_str(), now.as_slice(), back.as_slice()));
        }
        // The chunks of every dimension come back as the overworld's do.
        let dimension = self.regions_of(collection)?;
        let regions = if collection == CHUNKS { Some(&self.regions) } else { dimension.as_ref() };
        if let Some(regions) = regions {
            return self.restore_chunks(regions, collection, &steps, plan);
        }
        let entry =
            journal::begin(self.regions.journal.as_deref(), &plan.note(), collection, &steps).map_err(|e| e.message)?;
        for (done, (name, now, back)) in steps.iter().enumerate() {
            if let Err(e) = swap_file(&self.file_of(collection, name)?, now, back) {
                if done > 0 {
                    entry.kept(); // the ones written are in the journal
                }
                return Err(format!(
                    "{collection}/{name}: {}; {done} of {} restored before it",
                    e.message,
                    steps.len()
                ));
            }
        }
        entry.kept();
        Ok(())
    }

    /// Chunks of `collection` back (those of `regions`: the overworld's or
    /// another dimension's), each region file rewritten once: byte for
    /// byte when its patches allow (see the module's text), else chunk by
    /// chunk; journaled with the patch of each file, as the mount's writes.
    fn restore_chunks(
        &self,
        regions: &Regions,
        collection: &str,
        steps: &[(&str, &[u8], &[u8])],
        plan: &Plan,
    ) -> Result<(), String> {
        let journal = self.journal()?.ok_or("the undo journal is gone")?;
        let mut by_file: BTreeMap<PathBuf, Vec<ChunkBack>> = BTreeMap::new();
        for (name, now, back) in steps {
            let (x, z) = parse_name(name).ok_or_else(|| format!("the journal names chunk {name:?}"))?;
            by_file.entry(regions.file_of(x, z)).or_default().push((x, z, now, back));
        }
        let mut rewrites = Vec::new();
        for chunks in by_file.values() {
            let (x0, z0) = (chunks[0].0, chunks[0].1);
            let mut rewrite = regions.rewrite(x0, z0).map_err(|e| e.message)?;
            match self.exactly_as_before(&journal, plan, (regions, collection), &rewrite, chunks)? {
                Some(before) => rewrite.after = before,
                None => {
                    for &(x, z, now, back) in chunks {
                        rewrite.put(x, z, now, back).map_err(|e| format!("{collection}/{x},{z}: {}", e.message))?;
                    }
                }
            }
            rewrites.push(rewrite);
        }
        let patches: Vec<(String, Vec<u8>, Fingerprint)> = rewrites.iter().map(Rewrite::patch).collect();
        let files: Vec<_> = patches.iter().map(|(n, p, f)| (n.as_str(), p.as_slice(), *f)).collect();
        let entry = journal::begin_with_files(regions.journal.as_deref(), &plan.note(), collection, steps, &files)
            .map_err(|e| e.message)?;
        for (done, rewrite) in rewrites.iter().enumerate() {
            if let Err(e) = rewrite.commit() {
                if done > 0 {
                    entry.kept(); // the files written are in the journal
                }
                return Err(format!(
                    "{}: {}; {done} of {} region files restored before it",
                    rewrite.name,
                    e.message,
                    rewrites.len()
                ));
            }
        }
        entry.kept();
        Ok(())
    }

    /// The region file of `rewrite` as it was before the changes `plan`
    /// walks back, byte for byte, if its journaled patches give it: every
    /// walked change that wrote chunks of it journaled a patch of it, the
    /// file is what each of them left when its patch is applied, and the
    /// result holds each chunk of `chunks` as `back` and every other chunk
    /// as it is now. None: the chunks are to be written back one by one.
    fn exactly_as_before(
        &self,
        journal: &Journal,
        plan: &Plan,
        (regions, collection): (&Regions, &str),
        rewrite: &Rewrite,
        chunks: &[ChunkBack],
    ) -> Result<Option<Vec<u8>>, String> {
        let mut state = rewrite.before.clone();
        let mut applied = 0;
        for &id in &plan.walked {
            let writes_it = journal.records(id).map_err(|e| e.to_string())?.iter().any(|r| {
                r.collection == collection
                    && parse_name(&r.name).is_some_and(|(x, z)| regions.file_of(x, z) == rewrite.path)
            });
            let patches = journal.file_patches(id).map_err(|e| e.to_string())?;
            let mine: Vec<&FilePatch> = patches.iter().filter(|p| p.path == rewrite.name).collect();
            match (writes_it, mine.as_slice()) {
                (false, []) => continue,
                (_, [p]) if Fingerprint::of(&state) == p.after => match filepatch::apply(&p.patch, &state) {
                    Ok(back) => state = back,
                    Err(_) => return Ok(None),
                },
                _ => return Ok(None),
            }
            applied += 1;
        }
        let wanted: BTreeMap<(i64, i64), &[u8]> = chunks.iter().map(|&(x, z, _, back)| ((x, z), back)).collect();
        let (now, then) = (self.chunks_in(rewrite, &rewrite.before), self.chunks_in(rewrite, &state));
        let same = now.len() == then.len()
            && now.iter().all(|(xz, chunk)| match (wanted.get(xz), then.get(xz)) {
                (Some(back), Some(Ok(nbt))) => nbt == back,
                (None, Some(old)) => old == chunk,
                _ => false,
            });
        Ok((applied > 0 && same).then_some(state))
    }

    /// Each chunk `file` (a version of `rewrite`'s region file) lists: its
    /// NBT, or its bytes in the file when it cannot be read.
    fn chunks_in(&self, rewrite: &Rewrite, file: &[u8]) -> BTreeMap<(i64, i64), Result<Vec<u8>, Vec<u8>>> {
        let name = rewrite.path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let xz = name.strip_prefix("r.").and_then(|n| n.strip_suffix(".mca"));
        let Some((rx, rz)) = xz.and_then(super::regions::region_xz) else { return BTreeMap::new() };
        region::located(file, file.len())
            .into_iter()
            .map(|at| {
                let xz = (rx * 32 + (at.index % 32) as i64, rz * 32 + (at.index / 32) as i64);
                let chunk = match chunk_from(&rewrite.path, &at, at.bytes(file), xz) {
                    ChunkBytes::Nbt(nbt) => Ok(nbt),
                    ChunkBytes::Bad(_) => Err(at.bytes(file).to_vec()),
                };
                (xz, chunk)
            })
            .collect()
    }
}
