//! Minecraft Bedrock: little-endian NBT (one root, and roots one after
//! another: what decodes encodes back byte for byte), subchunks (refused or
//! read; what reads in versions 1, 8, 9 encodes back byte for byte and
//! reads the same; a chunk's `blocks` and `waterlog` written back as shown
//! change nothing), database keys (every key parses; a chunk key's bytes
//! are the key's) and Data3D/Data2D biomes and level.dat (refused or read).

use std::collections::BTreeMap;
use worldfs::documents::Document;
use worldfs::worlds::bedrock::chunk::ChunkDoc;
use worldfs_codec::bedrock::key::{ChunkPos, Key, tag};
use worldfs_codec::bedrock::subchunk::{self, Decoded};
use worldfs_codec::bedrock::{biomes, level, records};
use worldfs_codec::minecraft::nbt::{self, Flavor};

/// `bedrock_nbt`: the bytes are little-endian NBT roots one after another
/// (a block entity value); the first byte 0 reads them as level.dat.
pub fn bedrock_nbt(data: &[u8]) {
    if let Ok(l) = level::decode(data) {
        assert_eq!(level::encode(&l).unwrap(), data, "level.dat changed");
    }
    if let Ok((name, root)) = nbt::decode_as(data, Flavor::Bedrock) {
        assert_eq!(nbt::encode_as(&name, &root, Flavor::Bedrock).unwrap(), data, "re-encoding changed the bytes");
    }
    if let Ok(all) = nbt::decode_all(data, Flavor::Bedrock) {
        let mut back = Vec::new();
        for (name, c) in &all {
            back.extend(nbt::encode_as(name, c, Flavor::Bedrock).unwrap());
        }
        assert_eq!(back, data, "roots one after another changed");
        let _ = records::decode(data);
    }
    let _ = records::digest(data);
}

/// `bedrock_subchunk`: the bytes are a subchunk value.
pub fn bedrock_subchunk(data: &[u8]) {
    let Ok(d) = subchunk::decode(data) else { return };
    let Decoded::Paletted(s) = d else { return };
    let bytes = subchunk::encode(&s).expect("a decoded subchunk encodes");
    // The unused high bits of each packed word are written as zeros, as the
    // game writes them (readers ignore them): the same size, the same
    // subchunk, and a second round trip changes no byte.
    assert_eq!(bytes.len(), data.len(), "re-encoding changed the size");
    assert_eq!(subchunk::decode(&bytes).ok(), Some(Decoded::Paletted(s.clone())), "re-encoding changed the subchunk");
    assert_eq!(subchunk::encode(&s).ok(), Some(bytes.clone()), "encoding is not stable");
    // Its files in a chunk, written back as shown, change nothing.
    let pos = ChunkPos { dim: 0, x: -3, z: 5 };
    let y = s.index.unwrap_or(0);
    let records = BTreeMap::from([(Key::Chunk { pos, tag: tag::SUBCHUNK, sub: Some(y) }.bytes(), data.to_vec())]);
    let mut doc = ChunkDoc::new(pos, records);
    for e in doc.entries().into_iter().filter(|e| e.writable && !e.dir) {
        if let Ok(shown) = doc.render(&e.path) {
            doc.apply(&e.path, &shown).unwrap_or_else(|err| panic!("{}: {err}", e.path));
        }
    }
    assert_eq!(doc.records.values().next().map(Vec::as_slice), Some(data), "writing the files back changed it");
}

/// `bedrock_keys`: the bytes are a database key.
pub fn bedrock_keys(data: &[u8]) {
    let k = Key::parse(data);
    assert_eq!(k.bytes(), data, "{k:?}");
    assert_eq!(worldfs_codec::bedrock::key::from_hex(&worldfs_codec::bedrock::key::hex(data)).unwrap(), data);
}

/// `bedrock_biomes`: the bytes are a Data3D or Data2D value.
pub fn bedrock_biomes(data: &[u8]) {
    if let Ok(d) = biomes::decode_3d(data) {
        assert_eq!(d.heights.len(), 256);
        for s in &d.storages {
            assert!(s.indices.iter().all(|&i| (i as usize) < s.palette.len()));
        }
    }
    let _ = biomes::decode_2d(data);
}

/// A small subchunk of each version the codec writes.
pub fn subchunk_seeds() -> Vec<Vec<u8>> {
    use worldfs_codec::bedrock::subchunk::{Entry, Storage, SubChunk};
    use worldfs_codec::minecraft::nbt::{Compound, Tag};
    let state = |n: &str| Entry {
        root: String::new(),
        state: Compound(vec![
            ("name".into(), Tag::String(n.into())),
            ("states".into(), Tag::Compound(Compound(vec![("age".into(), Tag::Int(2))]))),
            ("version".into(), Tag::Int(17959425)),
        ]),
    };
    let layer = |bits: u8, n: usize| Storage {
        bits,
        palette: (0..n).map(|i| state(&format!("minecraft:b{i}"))).collect(),
        indices: (0..4096).map(|i| (i % n) as u16).collect(),
    };
    vec![
        subchunk::encode(&SubChunk { version: 9, index: Some(-2), layers: vec![layer(0, 1)] }).unwrap(),
        subchunk::encode(&SubChunk { version: 8, index: None, layers: vec![layer(2, 3), layer(1, 2)] }).unwrap(),
        subchunk::encode(&SubChunk { version: 1, index: None, layers: vec![layer(5, 20)] }).unwrap(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bedrock_nbt_smoke() {
        let c =
            nbt::Compound(vec![("Items".into(), nbt::Tag::List(nbt::List { elem: 3, items: vec![nbt::Tag::Int(5)] }))]);
        let one = nbt::encode_as("", &c, Flavor::Bedrock).unwrap();
        let lvl = level::encode(&level::Level { storage_version: 10, root_name: String::new(), root: c }).unwrap();
        crate::smoke::run("bedrock_nbt", bedrock_nbt, vec![one.clone(), [one.clone(), one].concat(), lvl]);
    }

    #[test]
    fn bedrock_subchunk_smoke() {
        crate::smoke::run("bedrock_subchunk", bedrock_subchunk, subchunk_seeds());
    }

    #[test]
    fn bedrock_keys_smoke() {
        let pos = ChunkPos { dim: 1, x: -1, z: 7 };
        let seeds = vec![
            Key::Chunk { pos, tag: tag::SUBCHUNK, sub: Some(-4) }.bytes(),
            Key::Chunk { pos: ChunkPos { dim: 0, ..pos }, tag: tag::VERSION, sub: None }.bytes(),
            Key::Digest(pos).bytes(),
            Key::Actor([9; 8]).bytes(),
            b"~local_player".to_vec(),
        ];
        crate::smoke::run("bedrock_keys", bedrock_keys, seeds);
    }

    #[test]
    fn bedrock_biomes_smoke() {
        let mut d3: Vec<u8> = vec![0; 512];
        d3.push(1);
        d3.extend(1i32.to_le_bytes());
        d3.push(0xff);
        crate::smoke::run("bedrock_biomes", bedrock_biomes, vec![d3, vec![0; 768]]);
    }
}
