//! Minecraft Java files: NBT (what decodes encodes back byte for byte, and
//! its SNBT text reads back to the same tags), region headers and chunk
//! payloads (refused or read, never a panic), LZ4 chunk streams (lz4-java's
//! framing: refused or read; what reads encodes and reads back the same),
//! a chunk's, a chunk of points of interest's and a player's files (every
//! writable one written back as shown changes nothing), and what users
//! write into a real chunk's or player's files (refused, or taken into a
//! chunk or player that encodes, reads back, and shows that file as a
//! fixed point).

use worldfs_codec::filepatch;
use worldfs_codec::minecraft::{lz4block, nbt, region, snbt};
use std::sync::OnceLock;
use worldfs::documents::Document;
use worldfs::worlds::minecraft::chunk::ChunkDoc;
use worldfs::worlds::minecraft::level::{PlayerDoc, gunzip, gzip};
use worldfs::worlds::minecraft::poi::PoiChunkDoc;

/// `mc_nbt`: the bytes are an uncompressed NBT file.
pub fn mc_nbt(data: &[u8]) {
    let Ok((name, root)) = nbt::decode(data) else { return };
    assert_eq!(nbt::encode(&name, &root).expect("decoded tags encode"), data, "re-encoding changed the bytes");
    let text = snbt::to_snbt(&root);
    let mut back = snbt::parse(&text).unwrap_or_else(|e| panic!("our SNBT does not read back: {e}\n{text}"));
    snbt::keep_compound_list_types(&mut back, &root);
    // Compare the bytes; text has one NaN, so NaN payloads are not kept.
    if !text.contains("NaN") {
        assert_eq!(nbt::encode(&name, &back).unwrap(), data, "SNBT changed the tags");
    }
    if let Ok(mut doc) = ChunkDoc::decode(data, &Default::default()) {
        for e in doc.entries().into_iter().filter(|e| e.writable && !e.dir) {
            if let Ok(shown) = doc.render(&e.path) {
                doc.apply(&e.path, &shown).unwrap_or_else(|err| panic!("{}: {err}", e.path));
            }
        }
        assert_eq!(doc.encode().unwrap(), data, "writing the files back changed the chunk");
    }
    // The same bytes as a chunk of points of interest, and as a player's
    // file (gzip NBT): each file shows or is refused; a player's writable
    // files written back as shown change nothing.
    if let Ok(doc) = PoiChunkDoc::decode(data, &Default::default()) {
        for e in doc.entries() {
            let _ = doc.render(&e.path);
        }
    }
    if let Ok(mut doc) = PlayerDoc::decode(&gzip(data), &Default::default()) {
        for e in doc.entries().into_iter().filter(|e| e.writable && !e.dir) {
            if let Ok(shown) = doc.render(&e.path) {
                doc.apply(&e.path, &shown).unwrap_or_else(|err| panic!("player {}: {err}", e.path));
            }
        }
        // SNBT has one NaN, so NaN payloads are not kept (as above).
        if !snbt::to_snbt(&root).contains("NaN") {
            assert_eq!(gunzip(&doc.encode().unwrap()).unwrap(), data, "writing a player's files back changed it");
        }
    }
}

/// `mc_region`: the bytes are a region file (header and sectors). Read
/// entry by entry (`located`), each entry without a problem reads or is
/// refused; a chunk `put` into the file reads back, every other entry keeps
/// its place and its bytes, and the file patch of the change gives the
/// file back. Read whole (`all_chunks`), it is refused or builds into a
/// file that reads back the same.
pub fn mc_region(data: &[u8]) {
    let all = region::located(data, data.len());
    for at in all.iter().filter(|l| l.problem.is_none()) {
        if let Ok(c) = region::read_chunk(at.bytes(data), region::timestamp_of(data, at.index)) {
            let _ = region::decompress(&c);
        }
    }
    if data.len() >= 2 * region::SECTOR {
        put_one(data, &all);
    }
    let Ok(chunks) = region::all_chunks(data) else { return };
    for (_, c) in &chunks {
        let _ = region::decompress(c);
    }
    let (file, _) = region::build(&chunks);
    let again = region::all_chunks(&file).expect("what we build reads back");
    assert_eq!(again.len(), chunks.len());
    for ((i, a), (j, b)) in chunks.iter().zip(&again) {
        assert_eq!((i, a.compression, &a.data), (j, b.compression, &b.data));
    }
}

/// `mc_region`'s check of `region::put`: the first entry (or index 0)
/// becomes a chunk of the file's first bytes.
fn put_one(data: &[u8], all: &[region::Located]) {
    let i = all.first().map_or(0, |l| l.index);
    let chunk = region::RawChunk { compression: 3, external: false, data: data[..300].to_vec(), timestamp: 7 };
    let Ok((file, outside)) = region::put(data, i, &chunk) else { return };
    assert!(outside.is_none());
    let again = region::located(&file, file.len());
    let at = again.iter().find(|l| l.index == i).expect("the chunk put is listed");
    assert_eq!(at.problem, None);
    assert_eq!(region::read_chunk(at.bytes(&file), region::timestamp_of(&file, i)), Ok(chunk));
    for old in all.iter().filter(|l| l.index != i) {
        let new = again.iter().find(|l| l.index == old.index).expect("every other entry is still listed");
        assert_eq!((new.offset, new.count), (old.offset, old.count), "entry {}", old.index);
        if old.offset >= 2 {
            let was = old.bytes(data);
            assert_eq!(&new.bytes(&file)[..was.len()], was, "the bytes of entry {}", old.index);
        }
    }
    assert_eq!(filepatch::apply(&filepatch::diff(data, &file), &file).as_deref(), Ok(data));
}

/// `mc_lz4`: the bytes are an LZ4 chunk stream (`LZ4Block` blocks). What
/// decodes is encoded again and reads back the same; the encoding of the
/// input taken as plain bytes reads back too.
pub fn mc_lz4(data: &[u8]) {
    if let Ok(plain) = lz4block::decode(data, 1 << 24) {
        assert_eq!(lz4block::decode(&lz4block::encode(&plain), usize::MAX).unwrap(), plain);
    }
    assert_eq!(lz4block::decode(&lz4block::encode(data), usize::MAX).unwrap(), data);
}

/// Real chunks' NBT, one of each layout the mount writes or refuses: 1.11
/// (`Blocks`/`Data`), 1.15 (spanning longs), 1.17 (padded longs, a chest),
/// 1.18 (containers, negative Y).
fn real_chunks() -> &'static [Vec<u8>] {
    static CHUNKS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    CHUNKS.get_or_init(|| {
        let files: [&[u8]; 4] = [
            include_bytes!("../../tests/data/minecraft/prismarine/region/r.-1.0.mca"),
            include_bytes!("../../tests/data/minecraft/querz/region/r.0.0.mca"),
            include_bytes!("../../tests/data/minecraft/querz/region/r.-3.-2.mca"),
            include_bytes!("../../tests/data/minecraft/querz/region/r.-1.-1.mca"),
        ];
        let first = |f: &[u8]| {
            let chunks = region::all_chunks(f).expect("a test region file reads");
            region::decompress(&chunks[0].1).expect("a test chunk decompresses")
        };
        files.iter().map(|f| first(f)).collect()
    })
}

/// `mc_view_files`: a write into a real chunk's file, as a mount makes it.
/// Input: a byte choosing the chunk, two choosing the file (among the
/// writable ones), then the content. What is taken encodes, decodes again,
/// and shows the file so that writing it back changes nothing.
pub fn mc_view_files(data: &[u8]) {
    let [c, hi, lo, content @ ..] = data else { return };
    let base = &real_chunks()[*c as usize % real_chunks().len()];
    let mut doc = ChunkDoc::decode(base, &Default::default()).expect("a real chunk decodes");
    let files: Vec<String> = doc.entries().into_iter().filter(|e| e.writable && !e.dir).map(|e| e.path).collect();
    let path = &files[u16::from_be_bytes([*hi, *lo]) as usize % files.len()];
    let judged = ChunkDoc::judge(ChunkDoc::decode(base, &Default::default()).unwrap(), path, content);
    if doc.check_content(path, content).is_err() || doc.apply(path, content).is_err() {
        assert!(judged.is_err(), "{path}: judged fine but refused");
        return;
    }
    let Ok(written) = doc.encode() else {
        assert!(judged.is_err(), "{path}: judged fine but does not encode");
        return;
    };
    assert!(judged.is_ok(), "{path}: taken but judged wrong: {}", judged.unwrap_err());
    let mut again = ChunkDoc::decode(&written, &Default::default())
        .unwrap_or_else(|e| panic!("{path}: what we write does not read back: {e}"));
    let shown = again.render(path).unwrap_or_else(|e| panic!("{path}: the written file does not show: {e}"));
    again.apply(path, &shown).unwrap_or_else(|e| panic!("{path}: its own text is refused: {e}"));
    assert_eq!(again.encode().unwrap(), written, "{path}: writing back what it shows changed the chunk");
}

/// A real player's file (1.17.1, two stacks in its inventory).
const PLAYER: &[u8] = include_bytes!("../../tests/data/minecraft/made/playerdata/0000000b-0000-0016-0000-00210000002c.dat");

/// `mc_player_files`: a write into a real player's file, as a mount makes
/// it. Input: a byte choosing the file (among the writable ones), then the
/// content. Refused exactly when judged so; what is taken encodes, decodes
/// again, and shows the file so that writing it back changes nothing.
pub fn mc_player_files(data: &[u8]) {
    let [f, content @ ..] = data else { return };
    let mut doc = PlayerDoc::decode(PLAYER, &Default::default()).expect("a real player decodes");
    let files: Vec<String> = doc.entries().into_iter().filter(|e| e.writable && !e.dir).map(|e| e.path).collect();
    let path = &files[*f as usize % files.len()];
    let judged = PlayerDoc::judge(PlayerDoc::decode(PLAYER, &Default::default()).unwrap(), path, content);
    if doc.check_content(path, content).is_err() || doc.apply(path, content).is_err() {
        assert!(judged.is_err(), "{path}: judged fine but refused");
        return;
    }
    let Ok(written) = doc.encode() else {
        assert!(judged.is_err(), "{path}: judged fine but does not encode");
        return;
    };
    assert!(judged.is_ok(), "{path}: taken but judged wrong: {}", judged.unwrap_err());
    let mut again = PlayerDoc::decode(&written, &Default::default())
        .unwrap_or_else(|e| panic!("{path}: what we write does not read back: {e}"));
    let shown = again.render(path).unwrap_or_else(|e| panic!("{path}: the written file does not show: {e}"));
    again.apply(path, &shown).unwrap_or_else(|e| panic!("{path}: its own text is refused: {e}"));
    assert_eq!(again.encode().unwrap(), written, "{path}: writing back what it shows changed the player");
}

/// Inputs for [`mc_player_files`]: each writable file of the player as shown.
pub fn mc_player_seeds() -> Vec<Vec<u8>> {
    let doc = PlayerDoc::decode(PLAYER, &Default::default()).expect("a real player decodes");
    let files: Vec<String> = doc.entries().into_iter().filter(|e| e.writable && !e.dir).map(|e| e.path).collect();
    let shown = |(i, path): (usize, &String)| [vec![i as u8], doc.render(path).expect("a real player's file shows")].concat();
    files.iter().enumerate().map(shown).collect()
}

/// Inputs for [`mc_view_files`]: every writable file of the real chunks
/// as it is shown.
pub fn mc_view_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for (c, base) in real_chunks().iter().enumerate() {
        let doc = ChunkDoc::decode(base, &Default::default()).expect("a real chunk decodes");
        let files: Vec<String> = doc.entries().into_iter().filter(|e| e.writable && !e.dir).map(|e| e.path).collect();
        for (i, path) in files.iter().enumerate() {
            let mut seed = vec![c as u8];
            seed.extend((i as u16).to_be_bytes());
            seed.extend(doc.render(path).expect("a real chunk's file shows"));
            seeds.push(seed);
        }
    }
    seeds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mc_nbt_smoke() {
        let c = nbt::Compound(vec![("a".into(), nbt::Tag::List(nbt::List { elem: 3, items: vec![nbt::Tag::Int(5)] }))]);
        crate::smoke::run("mc_nbt", mc_nbt, vec![nbt::encode("", &c).unwrap()]);
    }

    #[test]
    fn mc_view_files_smoke() {
        crate::smoke::run("mc_view_files", mc_view_files, mc_view_seeds().into_iter().step_by(7).collect());
    }

    #[test]
    fn mc_player_files_smoke() {
        crate::smoke::run("mc_player_files", mc_player_files, mc_player_seeds());
    }

    #[test]
    fn mc_lz4_smoke() {
        let seeds = vec![lz4block::encode(b"minecraft:stone minecraft:stone"), lz4block::encode(&[7; 70_000])];
        crate::smoke::run("mc_lz4", mc_lz4, seeds);
    }

    #[test]
    fn mc_region_smoke() {
        let (file, _) = region::build(&[(0, region::compress(b"\x0a\x00\x00\x00", 1))]);
        // Entries that are wrong: past the end, and two on one sector.
        let chunks: Vec<_> = (0..4).map(|i| (i * 33, region::compress(&[i as u8; 5000], 1))).collect();
        let (mut bad, _) = region::build(&chunks);
        bad[33 * 4..33 * 4 + 4].copy_from_slice(&(90u32 << 8 | 2).to_be_bytes());
        let third = <[u8; 4]>::try_from(&bad[66 * 4..66 * 4 + 4]).unwrap();
        bad[99 * 4..99 * 4 + 4].copy_from_slice(&third);
        crate::smoke::run("mc_region", mc_region, vec![file, bad]);
    }
}
