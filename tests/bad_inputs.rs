//! The bad-input catalog: blobs and file contents that are wrong in every
//! way we could think of (truncated at every byte, lying lengths and
//! counts, zlib and zstd bombs, positions and ids out of range, duplicate
//! metadata, huge strings, non-UTF-8 and odd names, deep paths). Each must
//! give an error that says what is wrong and where, never a panic, a hang
//! or an allocation the input does not justify, and through the mount it
//! must leave the world's database exactly as it was.
//!
//! The codec cases are pure and fast; the mount cases skip themselves when
//! FUSE is missing. Memory is measured with the test binary's counting
//! allocator (`common::alloc`), which keeps a per-thread peak.
//!
//! Two things are deliberately not decode errors: content ids without a
//! name (shown as `?ID`; refused when written, see the `raw` cases) and
//! node names that are not UTF-8 (the format stores bytes; refused only in
//! unquoted text). Real blocks from tests/data/luanti (and ../shared's
//! worlds, when present) join the synthetic samples.

use crate::common;

use std::time::{Duration, Instant};
use worldfs_codec::bytes::{DecodeError, Region, WriteBe};
use worldfs_codec::compress;
use worldfs_codec::luanti::block::{Block, MappingEntry};
use worldfs_codec::luanti::inventory::Inventory;
use worldfs_codec::luanti::nodemeta::{MAX_VARS, MetaEntry, MetaVar};
use worldfs_codec::luanti::objects::{LuaEntity, NodeTimer, StaticObject};

use common::alloc::measured;

const MIB: usize = 1 << 20;

// ------------------------------------------------------------ blobs

/// A block's encoding as the sections the format compresses separately,
/// so that a test can damage one field and compress the result again.
#[derive(Clone)]
enum Parts {
    /// Version 29: the body after the version byte (zstd).
    Zstd(Vec<u8>),
    /// Versions 22-28: the plain head, the node data and metadata streams
    /// (zlib each), and the plain tail.
    Zlib { head: Vec<u8>, nodes: Vec<u8>, meta: Vec<u8>, tail: Vec<u8> },
}

impl Parts {
    fn blob(&self, version: u8) -> Vec<u8> {
        match self {
            Parts::Zstd(body) => [&[version][..], &compress::zstd(body)].concat(),
            Parts::Zlib { head, nodes, meta, tail } => {
                [&head[..], &compress::deflate_zlib(nodes), &compress::deflate_zlib(meta), tail].concat()
            }
        }
    }
}

/// The section a field lives in.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Sect {
    Body,
    Meta,
    Tail,
}

/// The fields a case can damage.
#[derive(Clone, Copy, Debug)]
enum Field {
    Widths,
    Mapping,
    Meta,
    Objects,
    Timers,
    /// The version 24 timer list (before the objects).
    Timers24,
}

/// A sample block of one version, encoded, with the offsets of its fields.
struct Sample {
    version: u8,
    block: Block,
    parts: Parts,
}

fn mapping_len(b: &Block) -> usize {
    3 + b.mapping.iter().map(|m| 4 + m.name.len()).sum::<usize>()
}

fn objects_len(b: &Block) -> usize {
    3 + b.objects.objects.iter().map(|o| 15 + o.data.len()).sum::<usize>()
}

fn meta_bytes(b: &Block) -> Vec<u8> {
    let mut m = Vec::new();
    b.metadata.encode(b.version, &mut m);
    m
}

/// The sections of `b` (version 24-29) as the crate's encoder writes them.
fn parts_of(b: &Block) -> Parts {
    let u = b.encode_uncompressed().unwrap();
    assert_eq!(u[0], b.version);
    if b.version == 29 {
        return Parts::Zstd(u[1..].to_vec());
    }
    let h = if b.version >= 27 { 6 } else { 4 };
    let n = 4096 * (b.content_width as usize + 2);
    let m = meta_bytes(b);
    assert_eq!(&u[h + n..h + n + m.len()], &m[..]);
    Parts::Zlib {
        head: u[..h].to_vec(),
        nodes: u[h..h + n].to_vec(),
        meta: m.clone(),
        tail: u[h + n + m.len()..].to_vec(),
    }
}

/// Where the first metadata value's u32 length is, from the list start.
fn value_len_at(s: &Sample) -> usize {
    11 + s.block.metadata.entries[0].vars[0].key.len()
}

/// The encoded length of the first metadata entry.
fn first_entry_len(s: &Sample) -> usize {
    let e = &s.block.metadata.entries[0];
    let private = if s.block.metadata.version >= 2 { 1 } else { 0 };
    6 + e.vars.iter().map(|v| 6 + v.key.len() + v.value.len() + private).sum::<usize>() + e.inventory.len()
}

const CHEST_P16: u16 = (3 * 256 + 16 + 3) as u16;
const INVENTORY: &[u8] = b"List main 2\nWidth 0\nItem default:dirt 5\nEmpty\nEndInventoryList\nEndInventory\n";

/// A v22 legacy metadata list: one sign at the chest's place.
fn legacy_sign_list() -> Vec<u8> {
    let mut m = Vec::new();
    m.put_u16(1); // version
    m.put_u16(1); // count
    m.put_u16(CHEST_P16);
    m.put_i16(14); // sign
    let mut body = Vec::new();
    body.put_string16(b"hi");
    m.put_string16(&body);
    m
}

impl Sample {
    /// Versions 24-29 from `b` re-encoded in `version`; 22 and 23 are built
    /// from the version 25 sections (the crate cannot write them): 23 has
    /// an unused byte after the metadata and no timers, 22 the legacy
    /// metadata list.
    fn from_block(b: &Block, version: u8) -> Sample {
        let mut b = b.clone();
        if version < 24 {
            let mut v25 = b.clone();
            v25.version = 25;
            v25.timers.clear();
            v25.lighting_complete = 0xffff;
            for e in &mut v25.metadata.entries {
                for v in &mut e.vars {
                    v.private = false;
                }
            }
            v25.metadata.version = if v25.metadata.entries.is_empty() { 0 } else { 1 };
            let Parts::Zlib { mut head, nodes, meta, mut tail } = parts_of(&v25) else { unreachable!() };
            head[0] = version;
            tail.truncate(tail.len() - 3 - 10 * v25.timers.len());
            let meta = if version == 22 {
                legacy_sign_list()
            } else {
                tail.insert(0, 0);
                meta
            };
            let parts = Parts::Zlib { head, nodes, meta, tail };
            let block = Block::decode(&parts.blob(version)).unwrap_or_else(|e| panic!("v{version} sample: {e}"));
            return Sample { version, block, parts };
        }
        b.version = version;
        if version < 27 {
            b.lighting_complete = 0xffff;
        }
        if version < 28 {
            for e in &mut b.metadata.entries {
                for v in &mut e.vars {
                    v.private = false;
                }
            }
        }
        b.metadata.version = b.metadata.version_for(version);
        let parts = parts_of(&b);
        let back = Block::decode(&parts.blob(version)).unwrap_or_else(|e| panic!("v{version} sample: {e}"));
        assert!(back == b, "v{version} sample does not round-trip");
        Sample { version, block: b, parts }
    }

    fn blob(&self) -> Vec<u8> {
        self.parts.blob(self.version)
    }

    /// Where `f` starts: its section and offset in it.
    fn at(&self, f: Field) -> Option<(Sect, usize)> {
        let b = &self.block;
        let v = self.version;
        let ml = mapping_len(b);
        let ol = objects_len(b);
        if v == 29 {
            let nodes = 9 + ml;
            let meta = nodes + 4096 * (b.content_width as usize + 2);
            let objects = meta + meta_bytes(b).len();
            return match f {
                Field::Widths => Some((Sect::Body, 7 + ml)),
                Field::Mapping => Some((Sect::Body, 7)),
                Field::Meta => Some((Sect::Body, meta)),
                Field::Objects => Some((Sect::Body, objects)),
                Field::Timers => Some((Sect::Body, objects + ol)),
                Field::Timers24 => None,
            };
        }
        let pre = match v {
            23 => 1,
            24 if b.timers.is_empty() => 1,
            24 => 3 + 10 * b.timers.len(),
            _ => 0,
        };
        match f {
            Field::Widths => None,
            Field::Meta => Some((Sect::Meta, 0)),
            Field::Timers24 => (v == 24).then_some((Sect::Tail, 0)),
            Field::Objects => Some((Sect::Tail, pre)),
            Field::Mapping => Some((Sect::Tail, pre + ol + 4)),
            Field::Timers => (v >= 25).then_some((Sect::Tail, pre + ol + 4 + ml)),
        }
    }

    /// The blob with the section holding `f` changed by `edit`, which gets
    /// the section and the field's offset in it. Returns the blob and where
    /// the decoder should report a problem at `f + rel`.
    fn edited(&self, f: Field, rel: usize, edit: impl FnOnce(&mut Vec<u8>, usize)) -> Option<(Vec<u8>, Region, usize)> {
        let (sect, off) = self.at(f)?;
        let mut parts = self.parts.clone();
        let at = off + rel;
        let (region, offset) = match (&mut parts, sect) {
            (Parts::Zstd(body), Sect::Body) => {
                edit(body, off);
                (Region::Body, at)
            }
            (Parts::Zlib { meta, .. }, Sect::Meta) => {
                edit(meta, off);
                (Region::Metadata, at)
            }
            (Parts::Zlib { head, nodes, meta, tail }, Sect::Tail) => {
                let before = head.len() + compress::deflate_zlib(nodes).len() + compress::deflate_zlib(meta).len();
                edit(tail, off);
                (Region::Blob, before + at)
            }
            _ => unreachable!(),
        };
        Some((parts.blob(self.version), region, offset))
    }

    /// Whether fewer than 65535 bytes follow `f + rel` in its section (so
    /// that a u16 length of 65535 there must run past the end).
    fn short_after(&self, f: Field, rel: usize) -> bool {
        let Some((sect, off)) = self.at(f) else { return false };
        let len = match (&self.parts, sect) {
            (Parts::Zstd(body), _) => body.len(),
            (Parts::Zlib { meta, .. }, Sect::Meta) => meta.len(),
            (Parts::Zlib { tail, .. }, _) => tail.len(),
        };
        len < off + rel + 65535
    }

    /// The blob with `bytes` written over the field `f` at `rel`.
    fn patched(&self, f: Field, rel: usize, bytes: &[u8]) -> Option<(Vec<u8>, Region, usize)> {
        self.edited(f, rel, |s, off| s[off + rel..off + rel + bytes.len()].copy_from_slice(bytes))
    }
}

/// The synthetic sample: three names, a chest with two fields and an
/// inventory, a Lua entity, a timer.
fn sample_block() -> Block {
    let mut b = Block::new_air(29);
    b.mapping.push(MappingEntry { id: 1, name: b"default:chest".to_vec() });
    b.mapping.push(MappingEntry { id: 2, name: b"default:stone".to_vec() });
    for i in 0..300 {
        b.param0[i] = 2;
    }
    b.param0[CHEST_P16 as usize] = 1;
    b.param2[CHEST_P16 as usize] = 3;
    b.metadata.entries.push(MetaEntry {
        pos: CHEST_P16,
        vars: vec![
            MetaVar { key: b"infotext".to_vec(), value: b"Chest".to_vec(), private: false },
            MetaVar { key: b"owner".to_vec(), value: b"alice".to_vec(), private: true },
        ],
        inventory: INVENTORY.to_vec(),
    });
    let sheep = LuaEntity {
        name: b"mobs:sheep".to_vec(),
        staticdata: b"{hp=3}".to_vec(),
        hp: 10,
        velocity: [0, 0, 0],
        yaw: 90_000,
        pitch_roll: None,
        guid: None,
    };
    b.objects.objects.push(StaticObject { kind: 7, pos: [1000, 2000, 3000], data: sheep.encode() });
    b.timers.push(NodeTimer { pos: CHEST_P16, timeout: 1000, elapsed: 0 });
    b.timestamp = 1234;
    b
}

fn samples() -> Vec<Sample> {
    (22..=29).map(|v| Sample::from_block(&sample_block(), v)).collect()
}

/// Blocks of the real worlds, one with metadata per world when there is
/// one, re-encoded in every writable version.
fn real_samples() -> Vec<Sample> {
    let worlds = common::real_sqlite_worlds("real blocks in the bad-input catalog");
    let mut out = Vec::new();
    for map in worlds.iter().map(|w| w.join("map.sqlite")) {
        let db = rusqlite::Connection::open_with_flags(&map, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let mut stmt = db.prepare("SELECT data FROM blocks").unwrap();
        let rows = stmt.query_map([], |r| r.get::<_, Vec<u8>>(0)).unwrap();
        let picked = rows.filter_map(|r| r.ok()).map(|blob| Block::decode(&blob).unwrap()).find(|b| {
            !b.metadata.entries.is_empty()
                && b.mapping.len() > 1
                && b.metadata.entries.iter().all(|e| !e.vars.is_empty())
        });
        if let Some(b) = picked {
            for v in 24..=29 {
                out.push(Sample::from_block(&b, v));
            }
        }
    }
    assert!(!out.is_empty(), "no block with metadata and two node types in {} real worlds", worlds.len());
    out
}

// ------------------------------------------------------------ bombs

/// A zstd frame (without the block's version byte) that holds `prefix` in
/// raw blocks and then `zeros` zero bytes in RLE blocks of 128 KiB, each
/// four bytes long: 1 GiB takes 32 KiB.
fn zstd_bomb(prefix: &[u8], zeros: u64) -> Vec<u8> {
    const BLOCK: usize = 128 * 1024;
    let mut f = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38]; // magic, no size/checksum, window 128 KiB
    let header = |f: &mut Vec<u8>, last: bool, kind: u32, size: usize| {
        let h = last as u32 | (kind << 1) | ((size as u32) << 3);
        f.extend_from_slice(&h.to_le_bytes()[..3]);
    };
    let chunks: Vec<&[u8]> = prefix.chunks(BLOCK).collect();
    for (i, c) in chunks.iter().enumerate() {
        header(&mut f, zeros == 0 && i + 1 == chunks.len(), 0, c.len());
        f.extend_from_slice(c);
    }
    let mut left = zeros;
    while left > 0 {
        let n = left.min(BLOCK as u64);
        left -= n;
        header(&mut f, left == 0, 1, n as usize);
        f.push(0);
    }
    f
}

/// A zlib stream that inflates to `prefix` and then about `zeros` zero
/// bytes: one deflate block for 1 MiB of zeros, repeated (deflate cannot do
/// better than ~1000:1, so 256 MiB takes ~256 KB). Its checksum is wrong,
/// which a decoder only finds out after inflating everything.
fn zlib_bomb(prefix: &[u8], zeros: usize) -> Vec<u8> {
    use flate2::{Compress, Compression, FlushCompress};
    let mut c = Compress::new(Compression::best(), true);
    let run = |c: &mut Compress, input: &[u8], flush| {
        let mut out = Vec::new();
        let start = c.total_in();
        loop {
            if out.capacity() - out.len() < 4096 {
                out.reserve(64 * 1024);
            }
            let done = (c.total_in() - start) as usize;
            c.compress_vec(&input[done..], &mut out, flush).unwrap();
            // all input taken and room left over: the flush is complete
            if c.total_in() - start == input.len() as u64 && out.len() < out.capacity() {
                return out;
            }
        }
    };
    let mut first = run(&mut c, prefix, FlushCompress::Sync);
    first.extend(run(&mut c, &[0], FlushCompress::Sync));
    let one_mib = run(&mut c, &vec![0u8; MIB], FlushCompress::Sync);
    let mut out = first;
    for _ in 0..zeros.div_ceil(MIB) {
        out.extend_from_slice(&one_mib);
    }
    let mut end = Vec::with_capacity(64);
    c.compress_vec(&[], &mut end, FlushCompress::Finish).unwrap();
    out.extend(end);
    out
}

// ------------------------------------------------------------ codec catalog

type Make = fn(&Sample) -> Option<(Vec<u8>, Region, usize)>;

/// The offset of a case whose error position depends on the bytes a lying
/// count makes the decoder read (the region and the phrase are checked).
const ANYWHERE: usize = usize::MAX;

/// One bad blob per sample it applies to: its name, how to make it (None:
/// not applicable to that version), and what the error must say (one of
/// the `|`-separated phrases).
fn codec_catalog() -> Vec<(&'static str, Make, &'static str)> {
    fn be32(v: u32) -> [u8; 4] {
        v.to_be_bytes()
    }
    vec![
        (
            "version 21",
            |s| Some(([&[21u8][..], &s.blob()[1..]].concat(), Region::Blob, 0)),
            "unsupported block version 21",
        ),
        (
            "version 30",
            |s| Some(([&[30u8][..], &s.blob()[1..]].concat(), Region::Blob, 0)),
            "unsupported block version 30",
        ),
        ("version 255", |_| Some((vec![255], Region::Blob, 0)), "unsupported block version 255"),
        ("empty blob", |_| Some((Vec::new(), Region::Blob, 0)), "truncated version byte"),
        ("version byte only", |s| Some((vec![s.version], Region::Blob, 1)), "zstd|truncated flags"),
        (
            "content_width 3",
            |s| match s.at(Field::Widths) {
                Some(_) => s.patched(Field::Widths, 0, &[3]),
                None => {
                    let mut b = s.blob();
                    let at = if s.version >= 27 { 4 } else { 2 };
                    b[at] = 3;
                    Some((b, Region::Blob, at))
                }
            },
            "invalid content_width 3",
        ),
        (
            "params_width 1",
            |s| match s.at(Field::Widths) {
                Some(_) => s.patched(Field::Widths, 1, &[1]),
                None => {
                    let mut b = s.blob();
                    let at = if s.version >= 27 { 5 } else { 3 };
                    b[at] = 1;
                    Some((b, Region::Blob, at))
                }
            },
            "invalid params_width 1",
        ),
        ("name-id mapping version 1", |s| s.patched(Field::Mapping, 0, &[1]), "unsupported name-id mapping version 1"),
        (
            "name-id mapping count 65535 (3 entries stored)",
            |s| s.patched(Field::Mapping, 1, &[0xff, 0xff]).map(|(b, r, _)| (b, r, ANYWHERE)),
            "truncated name-id mapping",
        ),
        (
            "name-id mapping name length 65535",
            |s| {
                s.short_after(Field::Mapping, 7).then_some(())?;
                s.patched(Field::Mapping, 5, &[0xff, 0xff]).map(|(b, r, o)| (b, r, o + 2))
            },
            "truncated name-id mapping name: need 65535 bytes",
        ),
        (
            "metadata list version 3",
            |s| (s.version >= 23).then(|| s.patched(Field::Meta, 0, &[3])).flatten(),
            "unsupported node metadata list version 3",
        ),
        (
            "metadata count 65535 (1 entry stored)",
            |s| (s.version >= 23).then(|| s.patched(Field::Meta, 1, &[0xff, 0xff])).flatten(),
            "node metadata|inventory text not terminated",
        ),
        (
            "metadata position 4096",
            |s| (s.version >= 23).then(|| s.patched(Field::Meta, 3, &[0x10, 0x00])).flatten(),
            "node metadata position 4096 is outside the block",
        ),
        (
            "metadata position 65535",
            |s| (s.version >= 23).then(|| s.patched(Field::Meta, 3, &[0xff, 0xff])).flatten(),
            "node metadata position 65535 is outside the block",
        ),
        (
            "duplicate metadata position",
            |s| {
                if s.version < 23 {
                    return None;
                }
                // a second copy of the first entry, and the count one more
                let entry_len = first_entry_len(s);
                let count = s.block.metadata.entries.len() as u16 + 1;
                s.edited(Field::Meta, 3 + entry_len, |m, off| {
                    let entry = m[off + 3..off + 3 + entry_len].to_vec();
                    m.splice(off + 3 + entry_len..off + 3 + entry_len, entry);
                    m[off + 1..off + 3].copy_from_slice(&count.to_be_bytes());
                })
            },
            "duplicate node metadata position",
        ),
        (
            "metadata variable count 4294967295",
            |s| (s.version >= 23).then(|| s.patched(Field::Meta, 5, &be32(u32::MAX))).flatten(),
            "node metadata variable count 4294967295 makes more than 262144 variables",
        ),
        (
            "metadata variable count 1000 (2 stored)",
            |s| (s.version >= 23).then(|| s.patched(Field::Meta, 5, &be32(1000))).flatten(),
            "node metadata|inventory text",
        ),
        (
            "metadata key length 65535",
            |s| {
                (s.version >= 23 && s.short_after(Field::Meta, 11))
                    .then(|| s.patched(Field::Meta, 9, &[0xff, 0xff]))
                    .flatten()
                    .map(|(b, r, o)| (b, r, o + 2))
            },
            "truncated node metadata key: need 65535 bytes",
        ),
        (
            "metadata value length 4294967295 (4 GiB)",
            |s| (s.version >= 23).then(|| s.patched(Field::Meta, value_len_at(s), &be32(u32::MAX))).flatten(),
            "node metadata value length 4294967295 exceeds 64 MiB",
        ),
        (
            "metadata value length 64 MiB (5 bytes stored)",
            |s| {
                let r = (s.version >= 23).then(|| s.patched(Field::Meta, value_len_at(s), &be32(64 << 20))).flatten();
                r.map(|(b, reg, o)| (b, reg, o + 4))
            },
            "truncated node metadata value: need 67108864 bytes",
        ),
        (
            "inventory without EndInventory",
            |s| {
                if s.version < 23 {
                    return None;
                }
                // the last entry's final "EndInventory" misspelt
                let inv = s.block.metadata.entries.last()?.inventory.len();
                let at = meta_bytes(&s.block).len() - inv;
                s.edited(Field::Meta, at, |m, off| {
                    let end = off + at + inv;
                    m[end - 13..end].copy_from_slice(b"EndInventorX\n");
                })
            },
            "inventory text not terminated by EndInventory",
        ),
        (
            "legacy metadata version 2",
            |s| (s.version == 22).then(|| s.patched(Field::Meta, 0, &[0, 2])).flatten(),
            "unsupported legacy node metadata version 2",
        ),
        (
            "legacy metadata count 65535",
            |s| {
                (s.version == 22)
                    .then(|| s.patched(Field::Meta, 2, &[0xff, 0xff]))
                    .flatten()
                    .map(|(b, r, _)| (b, r, 14))
            },
            "truncated legacy node metadata position",
        ),
        (
            "legacy metadata type 99",
            |s| (s.version == 22).then(|| s.patched(Field::Meta, 6, &[0, 99])).flatten().map(|(b, r, _)| (b, r, 10)),
            "unknown legacy node metadata type 99",
        ),
        (
            "legacy metadata body length 65535",
            |s| {
                (s.version == 22)
                    .then(|| s.patched(Field::Meta, 8, &[0xff, 0xff]))
                    .flatten()
                    .map(|(b, r, o)| (b, r, o + 2))
            },
            "truncated legacy node metadata body: need 65535 bytes",
        ),
        (
            "legacy metadata position 4096",
            |s| (s.version == 22).then(|| s.patched(Field::Meta, 4, &[0x10, 0])).flatten(),
            "node metadata position 4096 is outside the block",
        ),
        (
            "legacy generic metadata text length 4 GiB",
            |s| {
                if s.version != 22 {
                    return None;
                }
                let mut body = b"EndInventory\n".to_vec();
                body.put_u32(u32::MAX);
                s.edited(Field::Meta, 0, |m, _| {
                    m.truncate(6);
                    m.put_i16(1); // generic
                    m.put_string16(&body);
                })
                .map(|(b, r, _)| (b, r, 10 + 13))
            },
            "generic text length 4294967295 exceeds 64 MiB",
        ),
        (
            "static object count 65535 (1 stored)",
            |s| s.patched(Field::Objects, 1, &[0xff, 0xff]),
            "truncated static object|truncated timestamp|node timer|name-id mapping",
        ),
        (
            "static object data length 65535",
            |s| {
                s.block.objects.objects.first()?;
                s.short_after(Field::Objects, 18).then_some(())?;
                s.patched(Field::Objects, 16, &[0xff, 0xff]).map(|(b, r, o)| (b, r, o + 2))
            },
            "truncated static object data: need 65535 bytes",
        ),
        (
            "node timer record length 11",
            |s| s.patched(Field::Timers, 0, &[11]),
            "node timer record length 11, expected 10",
        ),
        (
            "node timer count 65535 (1 stored)",
            |s| {
                let stored = s.block.timers.len();
                s.patched(Field::Timers, 1, &[0xff, 0xff]).map(|(b, r, o)| (b, r, o + 2 + 10 * stored))
            },
            "truncated node timer position",
        ),
        (
            "version 24 node timer version 2",
            |s| s.patched(Field::Timers24, 0, &[2]),
            "unsupported node timer version 2",
        ),
        (
            "version 24 node timer count 65535",
            |s| s.patched(Field::Timers24, 1, &[0xff, 0xff]),
            "truncated static object|truncated timestamp|node timer|name-id mapping",
        ),
        (
            "node data one byte short (v22-28)",
            |s| match &s.parts {
                Parts::Zlib { head, nodes, meta, tail } => {
                    let short = &nodes[..nodes.len() - 1];
                    let p = Parts::Zlib {
                        head: head.clone(),
                        nodes: short.to_vec(),
                        meta: meta.clone(),
                        tail: tail.clone(),
                    };
                    Some((p.blob(s.version), Region::NodeData, short.len() - 4095))
                }
                Parts::Zstd(_) => None,
            },
            "truncated param2 array: need 4096 bytes, 4095 left",
        ),
        (
            "node data one byte long (v22-28)",
            |s| match &s.parts {
                Parts::Zlib { head, nodes, meta, tail } => {
                    let long = [&nodes[..], &[0]].concat();
                    let p = Parts::Zlib { head: head.clone(), nodes: long, meta: meta.clone(), tail: tail.clone() };
                    Some((p.blob(s.version), Region::Blob, head.len()))
                }
                Parts::Zstd(_) => None,
            },
            "node data inflates to more than",
        ),
        (
            "zstd magic damaged",
            |s| {
                let mut b = s.blob();
                if s.version != 29 {
                    return None;
                }
                b[1] ^= 0xff;
                Some((b, Region::Blob, 1))
            },
            "bad zstd frame: ",
        ),
        (
            "zlib header check bits damaged",
            |s| {
                let Parts::Zlib { head, .. } = &s.parts else { return None };
                let mut b = s.blob();
                b[head.len() + 1] ^= 1;
                Some((b, Region::Blob, head.len()))
            },
            "bad zlib stream for node data",
        ),
    ]
}

fn check_err(what: &str, r: Result<Block, DecodeError>, expect: &str, at: Option<(Region, usize)>) {
    let e = match r {
        Ok(_) => panic!("{what}: decoded without an error"),
        Err(e) => e,
    };
    let text = e.to_string();
    assert!(expect.split('|').any(|p| text.contains(p)), "{what}: error does not say '{expect}': {text}");
    assert!(text.contains("(at byte "), "{what}: error does not say where: {text}");
    if let Some((region, offset)) = at {
        assert!(
            e.region == region && e.offset == offset,
            "{what}: error at byte {} of the {} but expected byte {offset} of the {region}: {text}",
            e.offset,
            e.region
        );
    }
}

/// Decode with a time and memory check: no bad blob may take more than
/// twice its size plus 1 MiB (bombs have their own tests).
fn decode_checked(what: &str, blob: &[u8]) -> Result<Block, DecodeError> {
    let (r, peak, took) = measured(|| std::panic::catch_unwind(|| Block::decode(blob)));
    let r = r.unwrap_or_else(|_| panic!("{what}: the decoder panicked"));
    eprintln!("{what}: decoding took {took:?}"); // a figure, not a check: speed is for benchmarks (machines here are shared)
    let allowed = 2 * blob.len() + MIB + 64 * 1024;
    assert!(peak <= allowed, "{what}: decoding allocated {peak} bytes for a {} byte blob", blob.len());
    r
}

#[test]
fn codec_catalog_every_version() {
    let mut all = samples();
    all.extend(real_samples());
    let catalog = codec_catalog();
    assert!(catalog.len() >= 35, "{}", catalog.len());
    let mut applied = vec![0usize; catalog.len()];
    for s in &all {
        // the sample itself decodes
        decode_checked(&format!("v{} sample", s.version), &s.blob()).unwrap();
        for (i, (name, make, expect)) in catalog.iter().enumerate() {
            let Some((blob, region, offset)) = make(s) else { continue };
            let what = format!("v{} {name}", s.version);
            let r = decode_checked(&what, &blob);
            // Lying counts read on into the next fields: where they stop depends on those bytes.
            let exact = !expect.contains('|') && offset != ANYWHERE;
            check_err(&what, r, expect, exact.then_some((region, offset)));
            applied[i] += 1;
        }
    }
    for (i, (name, ..)) in catalog.iter().enumerate() {
        assert!(applied[i] > 0, "case '{name}' applied to no version");
    }
}

/// Cut every blob at every length: always an error, at or before the cut.
#[test]
fn truncated_blobs_of_every_version() {
    let mut all = samples();
    all.extend(real_samples());
    for s in &all {
        let blob = s.blob();
        for cut in 0..blob.len() {
            let what = format!("v{} blob cut at {cut} of {}", s.version, blob.len());
            let e = decode_checked(&what, &blob[..cut]).expect_err(&what);
            assert!(e.to_string().contains("(at byte "), "{what}: {e}");
            if e.region == Region::Blob {
                assert!(e.offset <= cut, "{what}: error after the cut: {e}");
            }
        }
    }
}

/// Where to cut a section of `len` bytes: every byte near its ends, every
/// 13th in between (real blocks can hold kilobytes of metadata).
fn cuts(from: usize, len: usize) -> impl Iterator<Item = usize> {
    (from..len).filter(move |&c| c < from + 600 || c + 600 >= len || c % 13 == 0)
}

/// Cut the uncompressed sections (v29 body, legacy metadata stream and
/// tail) past the node arrays, compress again: the error must name the
/// field and a byte at or before the cut.
#[test]
fn truncated_sections_of_every_version() {
    let mut all = samples();
    all.extend(real_samples());
    for s in &all {
        let v = s.version;
        match &s.parts {
            Parts::Zstd(body) => {
                let from = s.at(Field::Meta).unwrap().1;
                for cut in (0..from).step_by(97).chain(cuts(from, body.len())) {
                    let blob = Parts::Zstd(body[..cut].to_vec()).blob(29);
                    let what = format!("v29 body cut at {cut} of {}", body.len());
                    let e = decode_checked(&what, &blob).expect_err(&what);
                    assert_eq!(e.region, Region::Body, "{what}: {e}");
                    let says = e.message.contains("truncated") || e.message.contains("not terminated");
                    assert!(e.offset <= cut && says, "{what}: {e}");
                }
            }
            Parts::Zlib { head, nodes, meta, tail } => {
                let zn = compress::deflate_zlib(nodes);
                let zm = compress::deflate_zlib(meta);
                for cut in cuts(0, meta.len()) {
                    let blob = [&head[..], &zn, &compress::deflate_zlib(&meta[..cut]), tail].concat();
                    let what = format!("v{v} metadata stream cut at {cut} of {}", meta.len());
                    let r = decode_checked(&what, &blob);
                    // Without its final newline an inventory still ends: the engine reads it too.
                    if cut == meta.len() - 1 && meta.ends_with(b"EndInventory\n") {
                        continue;
                    }
                    let e = r.expect_err(&what);
                    if e.region == Region::Metadata {
                        assert!(e.offset <= cut, "{what}: {e}");
                    }
                }
                let tail_at = head.len() + zn.len() + zm.len();
                for cut in cuts(0, tail.len()) {
                    let blob = [&head[..], &zn, &zm, &tail[..cut]].concat();
                    let what = format!("v{v} tail cut at {cut} of {}", tail.len());
                    let e = decode_checked(&what, &blob).expect_err(&what);
                    assert_eq!(e.region, Region::Blob, "{what}: {e}");
                    assert!(e.offset <= tail_at + cut && e.message.contains("truncated"), "{what}: {e}");
                }
            }
        }
    }
}

/// A few KB of zstd that would inflate to 1 GiB is stopped at 64 MiB, with
/// an error naming the frame and byte 1 (after the version byte); memory
/// stays near the bound, and the same frame 1 MiB long decodes to the same
/// error it would have without the zeros (a real block plus trailing bytes
/// is fine).
#[test]
fn zstd_bomb_stops_at_the_bound() {
    let s = Sample::from_block(&sample_block(), 29);
    let Parts::Zstd(body) = &s.parts else { unreachable!() };
    // The crafted frame format is right: a small one decodes.
    let small = [&[29u8][..], &zstd_bomb(body, 3 * 128 * 1024 + 5)].concat();
    let b = Block::decode(&small).unwrap();
    assert_eq!(b.trailing.len(), 3 * 128 * 1024 + 5);
    assert_eq!(b.metadata, s.block.metadata);

    for (name, prefix, zeros) in
        [("1 GiB of zeros", &[][..], 1u64 << 30), ("a real body and 4 GiB of zeros", &body[..], 4u64 << 30)]
    {
        let blob = [&[29u8][..], &zstd_bomb(prefix, zeros)].concat();
        assert!(blob.len() < body.len() + 160 * 1024, "{}", blob.len());
        let (r, peak, took) = measured(|| Block::decode(&blob));
        check_err(name, r, "zstd frame inflates to more than 67108864 bytes", Some((Region::Blob, 1)));
        assert!(peak < 64 * MIB + 2 * MIB, "{name}: {peak} bytes");
        eprintln!("{name}: {took:?}"); // a figure, not a check: speed is for benchmarks (machines here are shared)
    }
}

/// zlib bombs: node data stops after 16 KiB (the engine wants exactly
/// that much), metadata at 64 MiB; both errors name the stream and the
/// byte where it starts.
#[test]
fn zlib_bombs_stop_at_the_bound() {
    for v in [22, 25, 28] {
        let s = Sample::from_block(&sample_block(), v);
        let Parts::Zlib { head, nodes, meta, tail } = &s.parts else { unreachable!() };
        // node data: 256 MiB
        let bomb = zlib_bomb(nodes, 256 * MIB);
        let blob = [&head[..], &bomb, &compress::deflate_zlib(meta), tail].concat();
        let (r, peak, took) = measured(|| Block::decode(&blob));
        let what = format!("v{v} node data bomb");
        check_err(&what, r, "node data inflates to more than", Some((Region::Blob, head.len())));
        assert!(peak < MIB, "{what}: {peak} bytes");
        eprintln!("{what}: {took:?}"); // a figure, not a check: speed is for benchmarks (machines here are shared)
        // metadata: 200 MiB after the real list
        let bomb = zlib_bomb(meta, 200 * MIB);
        let zn = compress::deflate_zlib(nodes);
        let blob = [&head[..], &zn, &bomb, tail].concat();
        let (r, peak, took) = measured(|| Block::decode(&blob));
        let what = format!("v{v} metadata bomb");
        check_err(
            &what,
            r,
            "node metadata inflates to more than 67108864 bytes",
            Some((Region::Blob, head.len() + zn.len())),
        );
        assert!(peak < 64 * MIB + 2 * MIB, "{what}: {peak} bytes");
        eprintln!("{what}: {took:?}"); // a figure, not a check: speed is for benchmarks (machines here are shared)
        // the bomb builder is right: a small one inflates to what it says
        let small = zlib_bomb(meta, 2 * MIB);
        let e = compress::inflate_zlib(&small, 0, "x", 0).unwrap_err();
        assert!(e.message.contains("bad zlib stream"), "{e}"); // the checksum, after inflating it all
        let e = compress::inflate_zlib_limited(&small, 0, "x", 0, MIB).unwrap_err();
        assert!(e.message.contains("inflates to more than"), "{e}");
    }
}

/// Empty metadata variables cost 6 bytes stored and ~100 decoded: a zstd
/// body of 60 MiB of them would have needed gigabytes. The count is
/// refused where it is read; a block at the limit still decodes.
#[test]
fn metadata_variable_bombs_are_refused_where_counted() {
    let s = Sample::from_block(&sample_block(), 29);
    let (sect, meta_at) = s.at(Field::Meta).unwrap();
    assert_eq!(sect, Sect::Body);
    let Parts::Zstd(body) = &s.parts else { unreachable!() };
    // list version 1, one entry at 0 with 10 million empty variables
    let mut prefix = body[..meta_at].to_vec();
    prefix.extend_from_slice(&[1, 0, 1, 0, 0]);
    prefix.put_u32(10_000_000);
    let blob = [&[29u8][..], &zstd_bomb(&prefix, 60_000_000)].concat();
    let (r, peak, took) = measured(|| Block::decode(&blob));
    check_err(
        "10 million empty variables",
        r,
        "node metadata variable count 10000000 makes more than 262144 variables",
        Some((Region::Body, meta_at + 5)),
    );
    assert!(peak <= compress::MAX_INFLATED + MIB, "{peak} bytes");
    eprintln!("{took:?}"); // a figure, not a check: speed is for benchmarks (machines here are shared)

    // exactly the limit, spread over 4096 nodes: decodes, and encodes
    let mut b = Block::new_air(29);
    for p in 0..4096u16 {
        let mut e = MetaEntry::new(p);
        for k in 0..MAX_VARS / 4096 {
            e.vars.push(MetaVar { key: vec![b'k', k as u8], value: Vec::new(), private: false });
        }
        b.metadata.entries.push(e);
    }
    b.metadata.version = 2;
    let blob = b.encode().unwrap();
    assert_eq!(Block::decode(&blob).unwrap(), b);
    // one more is refused by the encoder too, not only by the decoder
    b.metadata.entries[0].vars.push(MetaVar { key: b"one more".to_vec(), value: Vec::new(), private: false });
    assert!(b.encode().unwrap_err().0.contains("more than 262144 node metadata variables"));
}

/// Version 22 "generic" metadata: ~7000 variables with distinct names per
/// 64 KiB body. Applying them one by one was quadratic (a hang of seconds
/// per node); now linear, and the block-wide variable limit applies.
#[test]
fn legacy_generic_metadata_bomb_is_fast_and_bounded() {
    let s = Sample::from_block(&sample_block(), 22);
    let Parts::Zlib { head, nodes, tail, .. } = &s.parts else { unreachable!() };
    let mut body = b"EndInventory\n".to_vec();
    body.put_u32(0); // text
    body.put_u16(0); // owner
    body.put_u16(0); // infotext
    body.put_u16(0); // formspec
    body.extend_from_slice(&[0, 0, 0]);
    let n = (65535 - body.len() - 4) / 9;
    body.put_u32(n as u32);
    for k in 0..n {
        body.put_string16(&(k as u16).to_be_bytes());
        body.put_string32(b"x");
    }
    let mut meta = Vec::new();
    meta.put_u16(1);
    meta.put_u16(60);
    for p in 0..60u16 {
        meta.put_u16(p);
        meta.put_i16(1);
        meta.put_string16(&body);
    }
    let blob = [&head[..], &compress::deflate_zlib(nodes), &compress::deflate_zlib(&meta), tail].concat();
    let (r, peak, took) = measured(|| Block::decode(&blob));
    let entry = 6 + body.len();
    let stop = (MAX_VARS / n) + 1; // the entry that goes over
    check_err(
        "legacy generic bomb",
        r,
        "more than 262144 node metadata variables in one block",
        Some((Region::Metadata, 4 + (stop - 1) * entry)),
    );
    eprintln!("{took:?}"); // a figure, not a check: speed is for benchmarks (machines here are shared)
    assert!(peak < 4 * meta.len() + 64 * MIB, "{peak}");
    // a few such nodes decode, each variable once
    let mut few = meta[..4 + 3 * entry].to_vec();
    few[2..4].copy_from_slice(&3u16.to_be_bytes());
    let blob = [&head[..], &compress::deflate_zlib(nodes), &compress::deflate_zlib(&few), tail].concat();
    let (b, _, took) = measured(|| Block::decode(&blob).unwrap());
    eprintln!("{took:?}"); // a figure, not a check: speed is for benchmarks (machines here are shared)
    assert_eq!(b.metadata.entries.len(), 3);
    assert_eq!(b.metadata.entries[2].vars.len(), n);
}

/// Text inputs that were quadratic or allocated per line: item metadata
/// with 200 000 keys, inventories with 200 000 lists, and 2 million empty
/// lines. Each is refused (or parsed) in well under a second of work.
#[test]
fn text_bombs_are_linear_and_bounded() {
    use worldfs::view::parse;
    // 200 000 distinct item metadata keys, then a duplicate
    let mut item = b"Item default:book 1 0 \"\\u0001".to_vec();
    for k in 0..200_000 {
        item.extend_from_slice(format!("k{k}\\u0002v\\u0003").as_bytes());
    }
    item.extend_from_slice(b"k7\\u0002v\\u0003\"");
    let inv = [&b"List main 1\nWidth 0\n"[..], &item, b"\nEndInventoryList\nEndInventory\n"].concat();
    let (r, peak, took) = measured(|| Inventory::parse_strict(&inv));
    let e = r.unwrap_err();
    assert!(e.message.contains("item metadata key 'k7' appears twice") && e.line == 3, "{e}");
    eprintln!("item metadata: {took:?}"); // a figure, not a check: speed is for benchmarks (machines here are shared)
    assert!(peak < 64 * MIB, "item metadata: {peak}");
    // 200 000 lists, then a repeated name
    let mut inv = Vec::new();
    for l in 0..200_000 {
        inv.extend_from_slice(format!("List l{l} 0\nWidth 0\nEndInventoryList\n").as_bytes());
    }
    inv.extend_from_slice(b"List l5 0\nWidth 0\nEndInventoryList\nEndInventory\n");
    let (r, _, took) = measured(|| Inventory::parse_strict(&inv));
    let e = r.unwrap_err();
    assert!(e.message.contains("list 'l5' appears twice") && e.line == 600_001, "{e}");
    eprintln!("lists: {took:?}"); // a figure, not a check: speed is for benchmarks (machines here are shared)
    // 2 million newlines: counted, not split into a list of lines
    let newlines = vec![b'\n'; 2_000_000];
    let mut b = Block::new_air(29);
    let (r, peak, _) = measured(|| parse::apply_names(&mut b, &newlines));
    assert!(r.unwrap_err().message.contains("2000000 lines; no file here has more than 1048576"));
    assert!(peak < MIB, "names: {peak}");
    let (r, peak, _) = measured(|| Inventory::parse_strict(&newlines));
    assert!(r.unwrap_err().message.contains("an inventory may have at most 1048576"));
    assert!(peak < MIB, "inventory: {peak}");
    // 70 000 objects: refused at the 65 536th line, before parsing the rest
    let objects = b"object type=1 0,0,0 data=\"\"\n".repeat(70_000);
    let (r, peak, _) = measured(|| parse::apply_objects(&mut b, &objects));
    let e = r.unwrap_err();
    assert!(e.to_string().contains("line 65536: more than 65535 objects"), "{e}");
    assert!(peak < 16 * MIB, "objects: {peak}");
}

// ------------------------------------------------------------ through the mount

mod mount {
    use super::*;
    use common::mount::Mounted;
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use worldfs_store::MapStore;
    use worldfs_store::sqlite::SqliteStore;

    /// Every row of the map database.
    fn rows(world: &Path) -> Vec<(worldfs_store::BlockPos, Vec<u8>)> {
        SqliteStore::open(&world.join("map.sqlite"), true).unwrap().scan_after(None, 1 << 30).unwrap()
    }

    fn errno() -> i32 {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
    }

    fn cpath(p: &Path) -> CString {
        CString::new(p.as_os_str().as_bytes()).unwrap()
    }

    /// open(O_WRONLY|O_TRUNC|O_CREAT), write everything, close: Ok, or the
    /// errno of the first call that failed.
    fn write_close(p: &Path, content: &[u8]) -> Result<(), i32> {
        let c = cpath(p);
        // SAFETY: `c` is a NUL-terminated path and `data` a live buffer of
        // its length, both outliving the calls; the descriptor is closed here.
        unsafe {
            let fd = libc::open(c.as_ptr(), libc::O_WRONLY | libc::O_TRUNC | libc::O_CREAT, 0o644);
            if fd < 0 {
                return Err(errno());
            }
            let mut done = 0;
            while done < content.len() {
                let n = libc::write(fd, content[done..].as_ptr().cast(), content.len() - done);
                if n < 0 {
                    let e = errno();
                    libc::close(fd);
                    return Err(e);
                }
                done += n as usize;
            }
            if libc::close(fd) != 0 {
                return Err(errno());
            }
        }
        Ok(())
    }

    fn mkdir(p: &Path) -> Result<(), i32> {
        // SAFETY: a NUL-terminated path that outlives the call.
        if unsafe { libc::mkdir(cpath(p).as_ptr(), 0o755) } != 0 { Err(errno()) } else { Ok(()) }
    }

    fn rmdir(p: &Path) -> Result<(), i32> {
        // SAFETY: a NUL-terminated path that outlives the call.
        if unsafe { libc::rmdir(cpath(p).as_ptr()) } != 0 { Err(errno()) } else { Ok(()) }
    }

    fn unlink(p: &Path) -> Result<(), i32> {
        // SAFETY: a NUL-terminated path that outlives the call.
        if unsafe { libc::unlink(cpath(p).as_ptr()) } != 0 { Err(errno()) } else { Ok(()) }
    }

    /// What a case does through the mount.
    enum Op {
        Write(String, Vec<u8>),
        Mkdir(Vec<u8>),
        Rmdir(&'static str),
        Unlink(&'static str),
    }

    const CHEST: &str = "blocks/0,0,0/meta/3,1,3";
    const SIGN: &str = "blocks/0,0,0/meta/3,2,8";

    /// The mount catalog: name, what to do, the errno, and what the line in
    /// write-errors must say (None: the refusal is not a write and is not
    /// recorded there).
    fn catalog() -> Vec<(&'static str, Op, i32, Option<&'static str>)> {
        use Op::*;
        let s29 = Sample::from_block(&sample_block(), 29);
        let s25 = Sample::from_block(&sample_block(), 25);
        let Parts::Zstd(body) = &s29.parts else { unreachable!() };
        let Parts::Zlib { head, nodes, meta, tail } = &s25.parts else { unreachable!() };
        let zn = compress::deflate_zlib(nodes);
        let zm = compress::deflate_zlib(meta);
        let raw = |b: Vec<u8>| Write("blocks/0,0,0/raw".into(), b);
        let bad = |name: &'static str, f: Field, rel: usize, bytes: &[u8]| (name, f, rel, bytes.to_vec());
        let mut raw_cases: Vec<(&'static str, Op, i32, Option<&'static str>)> = vec![
            (
                "raw: zstd bomb of 1 GiB",
                raw([&[29u8][..], &zstd_bomb(body, 1 << 30)].concat()),
                libc::EINVAL,
                Some("zstd frame inflates to more than 67108864 bytes (the block body) (at byte 1 of the blob)"),
            ),
            (
                "raw: node data zlib bomb of 256 MiB",
                raw([&head[..], &zlib_bomb(nodes, 256 * MIB), &zm, tail].concat()),
                libc::EINVAL,
                Some("node data inflates to more than 16384 bytes"),
            ),
            (
                "raw: metadata zlib bomb of 200 MiB",
                raw([&head[..], &zn, &zlib_bomb(meta, 200 * MIB), tail].concat()),
                libc::EINVAL,
                Some("node metadata inflates to more than 67108864 bytes"),
            ),
            (
                "raw: node data one byte long",
                raw([&head[..], &compress::deflate_zlib(&[&nodes[..], &[0]].concat()), &zm, tail].concat()),
                libc::EINVAL,
                Some("node data inflates to more than 16384 bytes"),
            ),
            (
                "raw: version 30",
                raw([&[30u8][..], &s29.blob()[1..]].concat()),
                libc::EINVAL,
                Some("unsupported block version 30"),
            ),
            ("raw: version byte only", raw(vec![29]), libc::EINVAL, Some("the new blob does not decode")),
        ];
        for (name, f, rel, bytes) in [
            bad("raw: metadata value length 4 GiB", Field::Meta, 11 + 8, &u32::MAX.to_be_bytes()),
            bad("raw: metadata position 4096", Field::Meta, 3, &[0x10, 0]),
            bad("raw: metadata variable count 4294967295", Field::Meta, 5, &u32::MAX.to_be_bytes()),
            bad("raw: name-id mapping count 65535", Field::Mapping, 1, &[0xff, 0xff]),
            bad("raw: static object data length 65535", Field::Objects, 16, &[0xff, 0xff]),
            bad("raw: node timer record length 0", Field::Timers, 0, &[0]),
        ] {
            let (blob, ..) = s29.patched(f, rel, &bytes).unwrap();
            let expect = match name {
                "raw: metadata value length 4 GiB" => "exceeds 64 MiB",
                "raw: metadata position 4096" => "node metadata position 4096 is outside the block",
                "raw: metadata variable count 4294967295" => "makes more than 262144 variables",
                "raw: name-id mapping count 65535" => "truncated name-id mapping",
                "raw: static object data length 65535" => "truncated static object data",
                _ => "node timer record length 0, expected 10",
            };
            raw_cases.push((name, raw(blob), libc::EINVAL, Some(expect)));
        }
        // duplicate metadata position
        let entry_len = meta_bytes(&s29.block).len() - 3;
        let (dup, ..) = s29
            .edited(Field::Meta, 0, |m, off| {
                let entry = m[off + 3..off + 3 + entry_len].to_vec();
                m.splice(off + 3 + entry_len..off + 3 + entry_len, entry);
                m[off + 2] = 2;
            })
            .unwrap();
        raw_cases.push((
            "raw: duplicate metadata position",
            raw(dup),
            libc::EINVAL,
            Some("duplicate node metadata position 787"),
        ));
        // content id out of range, an empty name, private fields in version 27
        let mut b = s29.block.clone();
        b.param0[5] = 999;
        raw_cases.push((
            "raw: content id 999 without a name",
            raw(b.encode().unwrap()),
            libc::EINVAL,
            Some("content id 999 is used but has no name"),
        ));
        let mut b = s29.block.clone();
        b.mapping[2].name.clear();
        raw_cases.push((
            "raw: an empty node name",
            raw(b.encode().unwrap()),
            libc::EINVAL,
            Some("a name in names is empty"),
        ));
        let mut b = s29.block.clone();
        b.version = 27;
        raw_cases.push((
            "raw: private fields in version 27",
            raw(b.encode().unwrap()),
            libc::EINVAL,
            Some("version 27 cannot store private fields"),
        ));

        let long_name = vec![b'n'; 70_000];
        let mut text_cases = vec![
            (
                "names: NUL in a name",
                Write("blocks/0,0,0/names".into(), b"0 air\n1 default:ch\0est\n".to_vec()),
                libc::EINVAL,
                Some("line 2: NUL byte in a text line"),
            ),
            (
                "names: control character",
                Write("blocks/0,0,0/names".into(), b"0 air\n1 default:\x01chest\n".to_vec()),
                libc::EINVAL,
                Some("control character in node name"),
            ),
            (
                "names: id 65536",
                Write("blocks/0,0,0/names".into(), b"65536 air\n".to_vec()),
                libc::EINVAL,
                Some("id must be a whole number 0-65535, not '65536'"),
            ),
            (
                "names: name of 70 000 bytes",
                Write("blocks/0,0,0/names".into(), [&b"0 "[..], &long_name, b"\n"].concat()),
                libc::EINVAL,
                Some("node name longer than 65535 bytes"),
            ),
            (
                "names: empty quoted name",
                Write("blocks/0,0,0/names".into(), b"0 \"\"\n".to_vec()),
                libc::EINVAL,
                Some("empty node name"),
            ),
            (
                "names: 2 million empty lines",
                Write("blocks/0,0,0/names".into(), vec![b'\n'; 2_000_000]),
                libc::EINVAL,
                Some("2000000 lines; no file here has more than 1048576"),
            ),
            (
                "nodes: non-UTF-8 name",
                Write("blocks/0,0,0/nodes".into(), b"0 0 0 caf\xe9 0 0\n".to_vec()),
                libc::EINVAL,
                Some("node name is not valid UTF-8"),
            ),
            (
                "nodes: coordinate beyond i32",
                Write("blocks/0,0,0/nodes".into(), b"99999999999 0 0 air 0 0\n".to_vec()),
                libc::EINVAL,
                Some("x must be a whole number"),
            ),
            (
                "nodes: quoted coordinate",
                Write("blocks/0,0,0/nodes".into(), b"\"0\" 0 0 air 0 0\n".to_vec()),
                libc::EINVAL,
                Some("x must not be quoted"),
            ),
            (
                "param0: 8193 bytes",
                Write("blocks/0,0,0/param0".into(), vec![0; 8193]),
                libc::EINVAL,
                Some("param0 must be exactly 8192 bytes"),
            ),
            (
                "param0: id 65535",
                Write("blocks/0,0,0/param0".into(), vec![0xff; 8192]),
                libc::EINVAL,
                Some("content id 65535 (node 0"),
            ),
            (
                "param2: 4097 bytes",
                Write("blocks/0,0,0/param2".into(), vec![0; 4097]),
                libc::EINVAL,
                Some("param2 must be exactly 4096 bytes, not 4097"),
            ),
            (
                "info: non-UTF-8",
                Write("blocks/0,0,0/info".into(), b"timestamp = 1\xff\n".to_vec()),
                libc::EINVAL,
                Some("line 1: not UTF-8 text"),
            ),
            (
                "info: lighting_complete 0x10000",
                Write("blocks/0,0,0/info".into(), b"lighting_complete = 0x10000\n".to_vec()),
                libc::EINVAL,
                Some("lighting_complete must be 0x0000-0xffff"),
            ),
            (
                "info: timestamp 2^32",
                Write("blocks/0,0,0/info".into(), b"timestamp = 4294967296\n".to_vec()),
                libc::EINVAL,
                Some("timestamp must be a whole number 0-4294967295"),
            ),
            (
                "info: no '='",
                Write("blocks/0,0,0/info".into(), b"version 29\n".to_vec()),
                libc::EINVAL,
                Some("expected 'key = value'"),
            ),
            (
                "timers: outside the block",
                Write("blocks/0,0,0/timers".into(), b"16 0 0 1 0\n".to_vec()),
                libc::EINVAL,
                Some("node 16,0,0 is not in block 0,0,0"),
            ),
            (
                "timers: negative elapsed",
                Write("blocks/0,0,0/timers".into(), b"1 1 1 5 -1\n".to_vec()),
                libc::EINVAL,
                Some("elapsed must not be negative"),
            ),
            (
                "timers: timeout beyond i32 ms",
                Write("blocks/0,0,0/timers".into(), b"1 1 1 9999999999 0\n".to_vec()),
                libc::EINVAL,
                Some("timeout must be seconds"),
            ),
            (
                "timers: non-UTF-8",
                Write("blocks/0,0,0/timers".into(), b"1 1 1 5\xa0 0\n".to_vec()),
                libc::EINVAL,
                Some("timeout is not text"),
            ),
            (
                "objects: data of 65 536 bytes",
                Write(
                    "blocks/0,0,0/objects".into(),
                    [&b"object type=1 0,0,0 data=\""[..], &vec![b'a'; 65536], b"\"\n"].concat(),
                ),
                libc::EINVAL,
                Some("object data longer than 65535 bytes"),
            ),
            (
                "objects: 70 000 lines",
                Write("blocks/0,0,0/objects".into(), b"object type=1 0,0,0 data=\"\"\n".repeat(70_000)),
                libc::EINVAL,
                Some("line 65536: more than 65535 objects"),
            ),
            (
                "objects: non-UTF-8 entity name",
                Write("blocks/0,0,0/objects".into(), b"lua_entity 0,0,0 mobs:sh\xeep hp=1 staticdata=\"\"\n".to_vec()),
                libc::EINVAL,
                Some("node name is not valid UTF-8"),
            ),
            (
                "objects: position 1e12",
                Write("blocks/0,0,0/objects".into(), b"object type=1 1000000000000,0,0 data=\"\"\n".to_vec()),
                libc::EINVAL,
                Some("position part '1000000000000'"),
            ),
            (
                "objects: type 256",
                Write("blocks/0,0,0/objects".into(), b"object type=256 0,0,0 data=\"\"\n".to_vec()),
                libc::EINVAL,
                Some("expected type=N (0-255), not 'type=256'"),
            ),
            (
                "node/: param1 256",
                Write("node/1,1,1".into(), b"air 256\n".to_vec()),
                libc::EINVAL,
                Some("param1 must be a whole number 0-255"),
            ),
        ];
        // inventories
        let inv = |body: &[u8]| Write("blocks/0,0,0/meta/3,1,3/inventory".into(), body.to_vec());
        let mut pairs = b"List main 1\nWidth 0\nItem default:book 1 0 \"\\u0001".to_vec();
        for k in 0..100_000 {
            pairs.extend_from_slice(format!("k{k}\\u0002v\\u0003").as_bytes());
        }
        pairs.extend_from_slice(b"k9\\u0002v\\u0003\"\nEndInventoryList\nEndInventory\n");
        let mut lists = Vec::new();
        for l in 0..100_000 {
            lists.extend_from_slice(format!("List l{l} 0\nWidth 0\nEndInventoryList\n").as_bytes());
        }
        lists.extend_from_slice(b"List l9 0\nWidth 0\nEndInventoryList\nEndInventory\n");
        text_cases.extend([
            (
                "inventory: list size 2^32",
                inv(b"List main 4294967296\nWidth 0\nEndInventoryList\nEndInventory\n"),
                libc::EINVAL,
                Some("list size must be a whole number"),
            ),
            (
                "inventory: list size 4 000 000 000, one slot",
                inv(b"List main 4000000000\nWidth 0\nEmpty\nEndInventoryList\nEndInventory\n"),
                libc::EINVAL,
                Some("has size 4000000000 but 1 slot lines"),
            ),
            (
                "inventory: NUL in an item name",
                inv(b"List main 1\nWidth 0\nItem a\0b 1\nEndInventoryList\nEndInventory\n"),
                libc::EINVAL,
                Some("item name contains a control character"),
            ),
            (
                "inventory: 100 000 item metadata keys and a repeat",
                inv(&pairs),
                libc::EINVAL,
                Some("item metadata key 'k9' appears twice"),
            ),
            ("inventory: 100 000 lists and a repeat", inv(&lists), libc::EINVAL, Some("list 'l9' appears twice")),
            (
                "inventory: 2 million empty lines",
                inv(&vec![b'\n'; 2_000_001]),
                libc::EINVAL,
                Some("an inventory may have at most 1048576"),
            ),
        ]);
        // fields and private
        text_cases.extend([
            (
                "private: non-UTF-8 name",
                Write(format!("{CHEST}/private"), b"caf\xe9\n".to_vec()),
                libc::EINVAL,
                Some("there is no field 'caf"),
            ),
            (
                "private: NUL",
                Write(format!("{CHEST}/private"), b"a\0b\n".to_vec()),
                libc::EINVAL,
                Some("NUL byte in a text line"),
            ),
            (
                "fields: value of 64 MiB + 1 without newline",
                Write(format!("{SIGN}/fields/text"), vec![b'y'; (64 << 20) + 1]),
                libc::EINVAL,
                Some("value of 67108865 bytes is over the 64 MiB limit"),
            ),
        ]);

        let n = |s: &str| s.as_bytes().to_vec();
        const BLOCK_NAME: &str = "a block directory is named X,Y,Z in block coordinates";
        let dir_cases = vec![
            ("mkdir blocks/1,2", Mkdir(n("blocks/1,2")), libc::EINVAL, Some(BLOCK_NAME)),
            ("mkdir blocks/a,b,c", Mkdir(n("blocks/a,b,c")), libc::EINVAL, Some(BLOCK_NAME)),
            ("mkdir blocks/99999,0,0 (outside the map)", Mkdir(n("blocks/99999,0,0")), libc::EINVAL, Some(BLOCK_NAME)),
            ("mkdir blocks/2048,0,0 (one past the edge)", Mkdir(n("blocks/2048,0,0")), libc::EINVAL, Some(BLOCK_NAME)),
            ("mkdir blocks/+1,0,0", Mkdir(n("blocks/+1,0,0")), libc::EINVAL, Some(BLOCK_NAME)),
            (
                "mkdir blocks/1,2,3 with a newline",
                Mkdir(n("blocks/1,2,3\n")),
                libc::EINVAL,
                Some("mkdir blocks/1,2,3\\n: a block directory"),
            ),
            (
                "mkdir blocks/ name of 255 bytes",
                Mkdir([&b"blocks/"[..], &vec![b'1'; 255]].concat()),
                libc::EINVAL,
                Some(BLOCK_NAME),
            ),
            (
                // (FUSE passes names up to 1024 or, on newer kernels, 4095
                // bytes to the daemon, which refuses them like any bad name;
                // a path over PATH_MAX never leaves the kernel)
                "mkdir blocks/ name of 5000 bytes",
                Mkdir([&b"blocks/"[..], &vec![b'1'; 5000]].concat()),
                libc::ENAMETOOLONG,
                None,
            ),
            ("mkdir blocks/0,0,0 (exists)", Mkdir(n("blocks/0,0,0")), libc::EEXIST, None),
            (
                "mkdir meta outside the block",
                Mkdir(n("blocks/0,0,0/meta/16,0,0")),
                libc::EINVAL,
                Some("mkdir blocks/0,0,0/meta/16,0,0: node 16,0,0 is not in block 0,0,0"),
            ),
            (
                "mkdir meta 1,1",
                Mkdir(n("blocks/0,0,0/meta/1,1")),
                libc::EINVAL,
                Some("a metadata directory is named X,Y,Z"),
            ),
            ("mkdir meta that exists", Mkdir(n(CHEST)), libc::EEXIST, None),
            (
                "mkdir a directory in a block",
                Mkdir(n("blocks/0,0,0/sub")),
                libc::EPERM,
                Some("mkdir blocks/0,0,0/sub: directories can only be made in"),
            ),
            ("mkdir a deep path", Mkdir(n("blocks/0,0,0/meta/3,1,3/fields/a/b/c")), libc::ENOENT, None),
            ("rmdir meta of a node without metadata", Rmdir("blocks/0,0,0/meta/1,1,1"), libc::ENOENT, None),
            (
                "unlink a decoded file",
                Unlink("blocks/0,0,0/nodes"),
                libc::EPERM,
                Some("unlink blocks/0,0,0/nodes: decoded files cannot be deleted"),
            ),
            ("write below a file", Write("blocks/0,0,0/nodes/x".into(), b"x".to_vec()), libc::ENOTDIR, None),
            (
                "write in a block that is not stored",
                Write("blocks/9,9,9/names".into(), b"0 air\n".to_vec()),
                libc::ENOENT,
                None,
            ),
        ];
        raw_cases.into_iter().chain(text_cases).chain(dir_cases).collect()
    }

    /// The daemon's peak resident memory (VmHWM), in bytes.
    fn daemon_hwm(mnt: &Path) -> Option<usize> {
        for e in std::fs::read_dir("/proc").ok()? {
            let p = e.ok()?.path();
            let Ok(cmd) = std::fs::read(p.join("cmdline")) else { continue };
            let args: Vec<&[u8]> = cmd.split(|&c| c == 0).collect();
            if args.first().is_some_and(|a| a.ends_with(b"worldfs")) && args.contains(&mnt.as_os_str().as_bytes()) {
                let status = std::fs::read_to_string(p.join("status")).ok()?;
                let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
                let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
                return Some(kb * 1024);
            }
        }
        None
    }

    #[test]
    fn mount_catalog_refuses_and_changes_nothing() {
        require_fuse!("mount_catalog_refuses_and_changes_nothing");
        let world = common::demo_world();
        let m = Mounted::new(world.path(), &[]);
        let before = rows(world.path());
        let cases = catalog();
        assert!(cases.len() >= 40, "{}", cases.len());
        let errors_file = m.path("write-errors");
        let mut problems = Vec::new();
        for (name, op, want_errno, logged) in &cases {
            let errors_before = std::fs::read_to_string(&errors_file).unwrap();
            let t = Instant::now();
            let got = match op {
                Op::Write(rel, content) => write_close(&m.path(rel), content),
                Op::Mkdir(rel) => mkdir(&m.mnt.join(std::ffi::OsStr::from_bytes(rel))),
                Op::Rmdir(rel) => rmdir(&m.path(rel)),
                Op::Unlink(rel) => unlink(&m.path(rel)),
            };
            let took = t.elapsed();
            if got != Err(*want_errno) {
                problems.push(format!(
                    "{name}: got {got:?}, expected errno {want_errno} ({})",
                    std::io::Error::from_raw_os_error(*want_errno)
                ));
            }
            if took > Duration::from_secs(10) {
                eprintln!("{name}: took {took:?} (a figure, not a check)");
            }
            // The kernel learns of the new line from an invalidation sent
            // after the reply: give it a moment when a line is expected.
            let mut errors = std::fs::read_to_string(&errors_file).unwrap();
            let wait = Instant::now();
            while logged.is_some() && errors == errors_before && wait.elapsed() < Duration::from_secs(2) {
                std::thread::sleep(Duration::from_millis(20));
                errors = std::fs::read_to_string(&errors_file).unwrap();
            }
            let new: Vec<&str> = errors.lines().skip(errors_before.lines().count()).collect();
            match logged {
                Some(expect) => {
                    if new.len() != 1 || !new[0].contains(expect) {
                        problems
                            .push(format!("{name}: write-errors should gain one line saying '{expect}', got {new:?}"));
                    }
                }
                None => {
                    if !new.is_empty() {
                        problems.push(format!("{name}: unexpected write-errors lines {new:?}"));
                    }
                }
            }
            if rows(world.path()) != before {
                problems.push(format!("{name}: the map database changed"));
                break;
            }
        }
        assert!(
            problems.is_empty(),
            "{} of {} cases failed:\n{}\nlog:\n{}",
            problems.len(),
            cases.len(),
            problems.join("\n"),
            m.log_text()
        );
        // The files still show the stored state, and the daemon's memory stayed bounded.
        assert!(m.ok("cat $MNT/blocks/0,0,0/names").contains("default:chest"));
        if let Some(hwm) = daemon_hwm(&m.mnt) {
            assert!(hwm < 512 * MIB, "the daemon's peak resident memory was {} MiB", hwm / MIB);
        }
        drop(m);
        assert_eq!(rows(world.path()), before);
    }
}

/// Cubesets and Minecraft chunk data cut short, with a byte changed, or
/// with the faults the issue lists: a clear error (with a position for
/// text), never a panic, and a refused edit changes nothing.
#[test]
fn cubesets_and_chunk_dumps_that_are_bent_fail_clearly() {
    use worldfs::documents::cubeset::Cubeset;
    use worldfs::documents::{Context, Document};
    use worldfs_codec::minecraft::packet::{Chunk, Layout, Shape};
    let ctx = Context::default();
    let well = std::fs::read_to_string(common::real_formats("cubeset").join("DesertWell.cubeset")).unwrap();
    for cut in (0..well.len()).step_by(97) {
        let _ = Cubeset::decode(&well.as_bytes()[..cut], &ctx); // no panic, whatever it says
    }
    let cases = [
        (well.replace("Hitbox =", "Hitbax ="), "unknown key 'Hitbax'"),
        (well.replacen("\t\t\t\tMinX = 0,\n", "", 1), "Hitbox has no MinX"),
        (well.replacen("}", "", 1), "line"),
        (well.replace("\"aabaa\"", "\"aazaa\""), "does not define"),
        (well.replace("\"aabaa\"", "\"aabaaa\""), "Size says"),
        (well.replace("CubesetFormatVersion = 1", "CubesetFormatVersion = 2"), "only 1 exists"),
        (well.replace("Cubeset =", "Cubeset = dofile('x') or"), "line"),
    ];
    for (text, want) in cases {
        let e = Cubeset::decode(text.as_bytes(), &ctx).err().unwrap_or_else(|| panic!("accepted: {want}"));
        assert!(e.to_string().contains(want), "{want}: {e}");
    }
    let mut doc = Cubeset::decode(well.as_bytes(), &ctx).unwrap();
    for (path, content, want) in [
        ("pieces/01_DesertWell/layers", "y=0\naaaa\n", "line"),
        ("pieces/01_DesertWell/layers", "y=0\naaaaa\naaaaa\naaaaa\naaaaa\naaaaq\n", "line"),
        ("pieces/01_DesertWell/legend", "a 24:0\n", "still used"),
    ] {
        let e = doc.apply(path, content.as_bytes()).unwrap_err();
        assert!(e.to_string().contains(want), "{path}: {e}");
    }
    assert_eq!(doc.encode().unwrap(), well.as_bytes());

    let dump = std::fs::read(common::real_formats("mc_chunk_section").join("prismarine_1.12_chunk.dump")).unwrap();
    let shape = Shape { layout: Layout::Spanning, bitmap: 31, sky_light: true, biomes: true };
    Chunk::decode(&dump, shape).unwrap();
    for cut in (0..dump.len()).step_by(331) {
        assert!(Chunk::decode(&dump[..cut], shape).is_err(), "accepted {cut} bytes");
    }
    let e = Chunk::decode(&dump, Shape { sky_light: false, ..shape }).unwrap_err();
    assert!(e.contains("bytes after") || e.contains("section"), "{e}");
    let mut bits = dump.clone();
    bits[0] = 14; // over 13 without being the direct form
    assert!(Chunk::decode(&bits, shape).unwrap_err().contains("14 bits"));
    let mut pal = dump.clone();
    pal[1] = 40; // a 4-bit section with a 40-entry palette
    assert!(Chunk::decode(&pal, shape).is_err());
}

/// Players and accounts: every bad edit is refused with a reason that names
/// the file and line, and leaves the record exactly as it was.
#[test]
fn bad_player_and_account_edits_change_nothing() {
    use worldfs::documents::Document;
    use worldfs::worlds::luanti::records::RecordView;
    use worldfs_codec::luanti::auth::AuthEntry;
    use worldfs_codec::luanti::player::Player;
    let alice = Player {
        hp: 18,
        breath: 10,
        pos: [105.0, 85.0, -42.5],
        pitch: 0.0,
        yaw: 90.0,
        meta: Default::default(),
        inventory: b"List main 1\nWidth 0\nItem default:dirt 4\nEndInventoryList\nEndInventory\n".to_vec(),
    };
    let cases: [(&str, &[u8], &str); 12] = [
        ("hp", b"-1\n", "hp: line 1"),
        ("hp", b"70000\n", "0 to 65535"),
        ("breath", b"lots\n", "whole number"),
        ("position", b"NaN 0 0\n", "not a number"),
        ("position", b"1e999 0 0\n", "not a number"),
        ("position", b"0 0 40000\n", "outside the map"),
        ("position", b"1 2\n", "3 numbers"),
        ("look", b"100 0\n", "-90 and 90"),
        (
            "inventory",
            b"List main 1\nWidth 0\nItem default:dirt 4 0 \"\\x\"\nEndInventoryList\nEndInventory\n",
            "inventory: line 3",
        ),
        ("inventory", b"List main 2\nWidth 0\nEmpty\nEndInventoryList\nEndInventory\n", "inventory"),
        ("meta/k", b"\xff\xfe", "UTF-8"),
        ("nosuch", b"1", "not a file"),
    ];
    for (file, content, want) in cases {
        let mut p = alice.clone();
        let e = p.apply(file, content).unwrap_err().to_string();
        assert!(e.contains(want), "{file} {:?}: {e}", String::from_utf8_lossy(content));
        assert_eq!(p, alice, "{file}: a refused edit changed the player");
    }
    let mut a = AuthEntry { password: "#1#s#v".into(), privileges: vec!["shout".into()], last_login: 1 };
    let before = a.clone();
    for (file, content) in
        [("privileges", &b"fly,fast\n"[..]), ("privileges", b"a b\n"), ("password", b"x\n"), ("last_login", b"0\n")]
    {
        assert!(a.apply(file, content).is_err(), "{file} accepted");
        assert_eq!(a, before);
    }
    for bad in ["", "a b", "../x", "abcdefghijklmnopqrstuvwxyz"] {
        assert!(<Player as RecordView>::check_name(bad).is_err(), "{bad:?}");
    }
}
