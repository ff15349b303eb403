//! Derive the seed corpora of the other targets from real block blobs.
//!
//! `cargo run --example seed_corpus -- <blob dir> <corpus root> [map.sqlite...]`
//! (run by ../seed_corpus.sh after it extracted the blobs). For every blob
//! of `<blob dir>` named `real-*` that decodes it writes, into `<corpus root>/<target>/`:
//! * block_body: the uncompressed form;
//! * block_sections: the metadata list, the static objects, Lua entities;
//! * inventory_parse, itemstring_parse: inventories and their item lines;
//! * jsonish_unquote: quoted metadata values and item names;
//! * escape_names: metadata keys and their file names;
//! * decimal: timer and object numbers as the files write them;
//! * view_files: the files of the block directory (`nodes`, 100 KiB or
//!   more each, of only two blocks: large inputs slow the fuzzer down).
//!
//! Every block of the given map.sqlite files (opened read-only) is scanned
//! too, for the text seeds (inventories, items, keys, quoted values,
//! numbers) and the metadata and object sections, which few blocks have.
//!
//! File names are content hashes, so running it twice adds nothing.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use worldfs_codec::luanti::block::{self, Block};
use worldfs_codec::jsonish::{self, HighBytes};
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, MapStore};
use worldfs::view::{MetaFile, escape, render};
use worldfs_fuzz::view_header;

/// At most this many seeds per target (counting those already there).
const LIMIT: usize = 400;

struct Out {
    root: PathBuf,
    counts: std::collections::HashMap<&'static str, usize>,
    seen: std::collections::HashSet<PathBuf>,
}

impl Out {
    fn put(&mut self, target: &'static str, data: &[u8]) {
        let n = self.counts.entry(target).or_default();
        if *n >= LIMIT {
            return;
        }
        let dir = self.root.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        let mut h = DefaultHasher::new();
        data.hash(&mut h);
        let path = dir.join(format!("seed-{:016x}", h.finish()));
        if !self.seen.insert(path.clone()) {
            return;
        }
        if !path.exists() {
            std::fs::write(&path, data).unwrap();
        }
        *n += 1;
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, blobs, root, dbs @ ..] = args.as_slice() else {
        eprintln!("usage: seed_corpus <blob dir> <corpus root> [map.sqlite...]");
        std::process::exit(2);
    };
    let mut paths: Vec<PathBuf> =
        std::fs::read_dir(blobs).unwrap().filter_map(|e| e.ok().map(|e| e.path())).filter(|p| is_real(p)).collect();
    paths.sort();
    let mut out = Out { root: Path::new(root).to_path_buf(), counts: Default::default(), seen: Default::default() };
    let (mut decoded, mut failed, mut nodes_files) = (0, 0, 0);
    for (n, path) in paths.iter().enumerate() {
        let blob = std::fs::read(path).unwrap();
        let Ok(b) = Block::decode(&blob) else {
            failed += 1;
            continue;
        };
        decoded += 1;
        out.put("block_body", &block::uncompressed(&blob).unwrap());
        seed_sections(&mut out, &b);
        seed_text(&mut out, &b);
        // A made-up but stable position per blob.
        let pos = BlockPos::new((n % 64) as i16 - 32, (n % 7) as i16 - 3, -((n % 50) as i16));
        let v25 = b.version < 28;
        let mut view = |kind: usize, content: &[u8]| {
            out.put("view_files", &[&view_header(kind, v25, pos)[..], content].concat());
        };
        view(0, &render::render_info(&b, blob.len()));
        view(1, &render::render_names(&b));
        if nodes_files < 2 && b.mapping.len() > 2 {
            view(2, &render::render_nodes(pos, &b));
            nodes_files += 1;
        }
        view(3, &render::render_node(&b, (pos.x as i32 + 2048) as usize % 4096));
        view(7, &render::render_timers(pos, &b));
        view(8, &render::render_objects(&b));
        for e in &b.metadata.entries {
            view(9, &render::render_meta_file(e, MetaFile::Private));
            view(10, &e.inventory);
            if let Some(v) = e.vars.first() {
                view(11, &render::render_field(&v.value));
            }
        }
    }
    for db in dbs {
        let store = SqliteStore::open(Path::new(db), true).unwrap_or_else(|e| panic!("{db}: {e}"));
        let mut after = None;
        loop {
            let page = store.scan_after(after, 2000).unwrap();
            let Some(last) = page.last() else { break };
            after = Some(last.0);
            for (_, blob) in page {
                if let Ok(b) = Block::decode(&blob)
                    && (!b.metadata.entries.is_empty() || !b.objects.objects.is_empty() || !b.timers.is_empty())
                {
                    seed_sections(&mut out, &b);
                    seed_text(&mut out, &b);
                }
            }
        }
    }
    eprintln!("seed_corpus: {decoded} blobs decoded, {failed} did not; seeds per target: {:?}", out.counts);
}

/// The blobs seed_corpus.sh extracted (the directory also holds what
/// libFuzzer added to the corpus).
fn is_real(p: &Path) -> bool {
    p.is_file() && p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("real-"))
}

fn seed_sections(out: &mut Out, b: &Block) {
    let mut meta = vec![0u8];
    b.metadata.encode(b.version.max(24), &mut meta);
    out.put("block_sections", &meta);
    let mut objs = vec![2u8];
    b.objects.encode(&mut objs);
    if !b.objects.objects.is_empty() {
        out.put("block_sections", &objs);
    }
    for o in &b.objects.objects {
        out.put("block_sections", &[&[3u8][..], &o.data].concat());
    }
}

fn seed_text(out: &mut Out, b: &Block) {
    for e in &b.metadata.entries {
        if e.inventory.len() > 13 {
            out.put("inventory_parse", &e.inventory);
        }
        for line in e.inventory.split(|&c| c == b'\n') {
            if let Some(item) = line.strip_prefix(b"Item ") {
                out.put("itemstring_parse", item);
                if item.first() == Some(&b'"') {
                    out.put("jsonish_unquote", &[&[1u8][..], item].concat());
                }
            }
        }
        for v in &e.vars {
            out.put("escape_names", &v.key);
            out.put("escape_names", &escape::key_to_name(&v.key));
            if jsonish::needs_quoting(&v.value) && v.value.len() < 2000 {
                out.put("jsonish_unquote", &[&[1u8][..], &jsonish::quote(&v.value, HighBytes::Raw)].concat());
            }
        }
    }
    for t in &b.timers {
        for v in [t.timeout, t.elapsed] {
            out.put("decimal", &[&[3u8][..], worldfs::view::decimal::format(v as i64, 1000).as_bytes()].concat());
        }
    }
    for o in &b.objects.objects {
        for v in o.pos {
            out.put("decimal", &[&[4u8][..], worldfs::view::decimal::format(v as i64, 10_000).as_bytes()].concat());
        }
    }
}
