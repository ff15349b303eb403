//! Minecraft Java files: NBT (what decodes encodes back byte for byte, and
//! its SNBT text reads back to the same tags), region headers and chunk
//! payloads (refused or read, never a panic), LZ4 chunk streams (lz4-java's
//! framing: refused or read; what reads encodes and reads back the same),
//! and a chunk's files (every writable one written back as shown changes
//! nothing).

use worldfs::codec::{lz4block, nbt, region, snbt};
use worldfs::kinds::Document;
use worldfs::kinds::minecraft::chunk::ChunkDoc;

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
}

/// `mc_region`: the bytes are a region file (header and sectors).
pub fn mc_region(data: &[u8]) {
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

/// `mc_lz4`: the bytes are an LZ4 chunk stream (`LZ4Block` blocks). What
/// decodes is encoded again and reads back the same; the encoding of the
/// input taken as plain bytes reads back too.
pub fn mc_lz4(data: &[u8]) {
    if let Ok(plain) = lz4block::decode(data, 1 << 24) {
        assert_eq!(lz4block::decode(&lz4block::encode(&plain), usize::MAX).unwrap(), plain);
    }
    assert_eq!(lz4block::decode(&lz4block::encode(data), usize::MAX).unwrap(), data);
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
    fn mc_lz4_smoke() {
        let seeds = vec![lz4block::encode(b"minecraft:stone minecraft:stone"), lz4block::encode(&[7; 70_000])];
        crate::smoke::run("mc_lz4", mc_lz4, seeds);
    }

    #[test]
    fn mc_region_smoke() {
        let (file, _) = region::build(&[(0, region::compress(b"\x0a\x00\x00\x00", 1))]);
        crate::smoke::run("mc_region", mc_region, vec![file]);
    }
}
