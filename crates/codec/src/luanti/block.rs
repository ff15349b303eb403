//! A mapblock: 16x16x16 nodes plus metadata, objects and timers, decoded
//! from and encoded to the stored blob (versions 22-29 read, 24-29 written).
//!
//! Layout differences by version:
//! * 29: `u8 29 | zstd(flags, lighting, timestamp, mapping, widths, nodes,
//!   metadata, objects, timers)`.
//! * 22-28: `u8 version, flags, [lighting >= 27], widths` then two
//!   concatenated zlib streams (nodes, metadata), then plain bytes:
//!   [v23 unused byte | v24 timers], objects, timestamp, mapping, [timers >= 25].

use super::legacy_meta;
use super::nodemeta::MetaList;
use super::objects::{NodeTimer, StaticObjects, decode_timer, encode_timer};
use crate::bytes::{DecodeError, Reader, Region, WriteBe};
use crate::compress;
use std::fmt;

/// Nodes in a block: 16 × 16 × 16.
pub const NODE_COUNT: usize = 4096;
/// The oldest block version [`Block::decode`] reads.
pub const MIN_READ_VERSION: u8 = 22;
/// The oldest block version [`Block::encode`] writes (the first with 16-bit content ids).
pub const MIN_WRITE_VERSION: u8 = 24;
/// The newest block version, and the one Luanti writes to disk since 5.5.0.
pub const MAX_VERSION: u8 = 29;

/// Flag bit: the block is underground (no sunlight is assumed to come down
/// from above it when the block above is missing).
pub const FLAG_UNDERGROUND: u8 = 0x01;
/// Flag bit: originally "day and night lighting differ"; since Luanti 5.9
/// written as "the block is not all air", and ignored by Luanti when read.
pub const FLAG_DAY_NIGHT_DIFFERS: u8 = 0x02;
/// Flag bit: the map generator has not finished this block (it will
/// generate over it when a player comes near). Luanti's
/// doc/world_format.md calls the bit `generated`, but the engine sets it
/// when the block is *not* generated (`MapBlock::serialize`,
/// src/mapblock.cpp).
pub const FLAG_NOT_GENERATED: u8 = 0x08;

/// One entry of a block's name-id mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MappingEntry {
    /// The block-local content id used in `param0`.
    pub id: u16,
    /// The node name it stands for, e.g. `default:stone`.
    pub name: Vec<u8>,
}

/// A decoded map block (see the module doc for the layouts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// The block version, 22..=29 (the stored blob's first byte).
    pub version: u8,
    /// `FLAG_*` bits; unknown bits are kept.
    pub flags: u8,
    /// Always 0xFFFF for versions < 27, which do not store it.
    pub lighting_complete: u16,
    /// Game time of last activity; 0xFFFFFFFF = undefined.
    pub timestamp: u32,
    /// The name-id mapping in stored order.
    pub mapping: Vec<MappingEntry>,
    /// 1 or 2 bytes per content id as stored.
    pub content_width: u8,
    /// Block-local content ids, x fastest, then y, then z.
    pub param0: Vec<u16>,
    /// 4096 param1 bytes, same order as `param0`: light (low nibble day, high
    /// nibble night) for lit nodes, else defined by the node.
    pub param1: Vec<u8>,
    /// 4096 param2 bytes, same order as `param0`; defined by the node (facedir,
    /// wallmounted, colour, level, ...).
    pub param2: Vec<u8>,
    /// The node metadata (key/value pairs and inventories) of nodes that have some.
    pub metadata: MetaList,
    /// The objects stored in the block (dropped items, mobs, ...).
    pub objects: StaticObjects,
    /// The running node timers.
    pub timers: Vec<NodeTimer>,
    /// Bytes after the last section, kept as they are.
    pub trailing: Vec<u8>,
}

/// Which content ids occur in `ids`: a table indexed by id (a HashSet of
/// 4096 ids costs more than the rest of editing a block).
pub fn ids_present(ids: &[u16]) -> IdSet {
    let mut set = IdSet(vec![false; ids.iter().copied().max().map_or(0, |m| m as usize + 1)]);
    for &id in ids {
        set.0[id as usize] = true;
    }
    set
}

/// A set of content ids as a table (see [`ids_present`]).
#[derive(Clone, Debug, Default)]
pub struct IdSet(Vec<bool>);

impl IdSet {
    /// Whether content id `id` is in the set.
    pub fn contains(&self, id: u16) -> bool {
        self.0.get(id as usize).copied().unwrap_or(false)
    }

    /// Every id in the set, in order.
    pub fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        self.0.iter().enumerate().filter(|(_, p)| **p).map(|(id, _)| id as u16)
    }
}

/// Index of node (x, y, z) inside a block, each 0..16.
pub fn node_index(x: usize, y: usize, z: usize) -> usize {
    z * 256 + y * 16 + x
}

/// (x, y, z) inside a block of a node index or metadata/timer position.
pub fn index_xyz(i: usize) -> (usize, usize, usize) {
    (i & 15, (i >> 4) & 15, i >> 8)
}

/// Why a [`Block`] cannot be written: a version outside 24-29, node arrays
/// that do not hold 4096 entries, or a count, name or value too long for its
/// length field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodeError(pub String);

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EncodeError {}

/// The parts of a blob with every compressed section inflated.
enum Parts<'a> {
    /// Version 29: everything after the version byte.
    Whole(Vec<u8>),
    /// Versions 22-28. `head` starts at the version byte.
    Split { head: &'a [u8], nodes: Vec<u8>, meta: Vec<u8>, tail: &'a [u8], tail_at: usize },
}

fn split(blob: &[u8]) -> Result<Parts<'_>, DecodeError> {
    let mut r = Reader::new(blob, Region::Blob);
    let version = r.u8("version byte")?;
    if !(MIN_READ_VERSION..=MAX_VERSION).contains(&version) {
        return Err(r.error_at(0, format!("unsupported block version {version} (readable: 22-29)")));
    }
    if version >= 29 {
        return Ok(Parts::Whole(compress::unzstd(blob)?));
    }
    r.u8("flags")?;
    if version >= 27 {
        r.u16("lighting_complete")?;
    }
    let widths_at = r.pos();
    let cw = r.u8("content_width")?;
    let pw = r.u8("params_width")?;
    check_widths(&r, widths_at, cw, pw)?;
    let head_end = r.pos();
    let node_len = NODE_COUNT * (cw as usize + 2);
    // The engine refuses node data of any size other than exactly this
    // (deSerializeBulk: "decompress resulted in invalid size"), so nothing
    // beyond it is inflated: a zlib bomb in this stream stops after 16 KiB.
    let (nodes, used) =
        compress::inflate_zlib_limited(blob, head_end, "node data", node_len, node_len).map_err(|mut e| {
            if e.message.contains("inflates to more than") {
                e.message = format!(
                    "node data inflates to more than {node_len} bytes; it must be exactly 4096 nodes x \
                     (content_width {cw} + params_width 2) = {node_len} bytes"
                );
            }
            e
        })?;
    let meta_at = head_end + used;
    let (meta, used) = compress::inflate_zlib(blob, meta_at, "node metadata", 64)?;
    let tail_at = meta_at + used;
    Ok(Parts::Split { head: &blob[..head_end], nodes, meta, tail: &blob[tail_at..], tail_at })
}

/// The blob with every compressed section replaced by its inflated bytes:
/// the form in which decode-then-encode must be byte-identical.
pub fn uncompressed(blob: &[u8]) -> Result<Vec<u8>, DecodeError> {
    Ok(match split(blob)? {
        Parts::Whole(body) => [&[blob[0]][..], &body].concat(),
        Parts::Split { head, nodes, meta, tail, .. } => [head, &nodes, &meta, tail].concat(),
    })
}

fn check_widths(r: &Reader<'_>, at: usize, cw: u8, pw: u8) -> Result<(), DecodeError> {
    if cw != 1 && cw != 2 {
        return Err(r.error_at(at, format!("invalid content_width {cw} (must be 1 or 2)")));
    }
    if pw != 2 {
        return Err(r.error_at(at + 1, format!("invalid params_width {pw} (must be 2)")));
    }
    Ok(())
}

type Nodes = (Vec<u16>, Vec<u8>, Vec<u8>);

fn decode_nodes(r: &mut Reader<'_>, cw: u8) -> Result<Nodes, DecodeError> {
    let raw0 = r.bytes(NODE_COUNT * cw as usize, "param0 array")?;
    let param1 = r.bytes(NODE_COUNT, "param1 array")?.to_vec();
    let mut param2 = r.bytes(NODE_COUNT, "param2 array")?.to_vec();
    let param0 = if cw == 2 {
        // Fixed-size chunks let the compiler vectorize the byte swap
        // (a third of `worldfs check`'s time with chunks_exact).
        raw0.as_chunks::<2>().0.iter().map(|&p| u16::from_be_bytes(p)).collect()
    } else {
        // One byte per id; values above 0x7F borrow the high nibble of param2.
        raw0.iter()
            .zip(param2.iter_mut())
            .map(|(&p0, p2)| {
                if p0 > 0x7f {
                    let id = ((p0 as u16) << 4) | (*p2 as u16 >> 4);
                    *p2 &= 0x0f;
                    id
                } else {
                    p0 as u16
                }
            })
            .collect()
    };
    Ok((param0, param1, param2))
}

fn decode_mapping(r: &mut Reader<'_>) -> Result<Vec<MappingEntry>, DecodeError> {
    let at = r.pos();
    let v = r.u8("name-id mapping version")?;
    if v != 0 {
        return Err(r.error_at(at, format!("unsupported name-id mapping version {v}")));
    }
    let n = r.u16("name-id mapping count")?;
    // An entry takes at least 4 bytes: a lying count reserves nothing more.
    let mut mapping = Vec::with_capacity((n as usize).min(r.remaining() / 4));
    for _ in 0..n {
        let id = r.u16("name-id mapping id")?;
        let name = r.string16("name-id mapping name")?.to_vec();
        mapping.push(MappingEntry { id, name });
    }
    Ok(mapping)
}

fn decode_timers_v25(r: &mut Reader<'_>) -> Result<Vec<NodeTimer>, DecodeError> {
    let at = r.pos();
    let len = r.u8("node timer record length")?;
    if len != 10 {
        return Err(r.error_at(at, format!("node timer record length {len}, expected 10")));
    }
    let n = r.u16("node timer count")?;
    let mut timers = Vec::with_capacity((n as usize).min(r.remaining() / 10));
    for _ in 0..n {
        timers.push(decode_timer(r)?);
    }
    Ok(timers)
}

/// The node ids of a version-29 body as stored: the mapping, the content
/// width, the raw param0 bytes and param2 (which holds the high nibble of
/// 1-byte ids), with the rest of the body checked as `Block::decode` checks
/// it but nothing else copied out.
struct RawIds<'a> {
    mapping: Vec<MappingEntry>,
    cw: u8,
    raw0: &'a [u8],
    param2: &'a [u8],
}

impl<'a> RawIds<'a> {
    fn of(body: &'a [u8]) -> Result<RawIds<'a>, DecodeError> {
        let mut r = Reader::new(body, Region::Body);
        r.u8("flags")?;
        r.u16("lighting_complete")?;
        r.u32("timestamp")?;
        let mapping = decode_mapping(&mut r)?;
        let at = r.pos();
        let cw = r.u8("content_width")?;
        let pw = r.u8("params_width")?;
        check_widths(&r, at, cw, pw)?;
        let raw0 = r.bytes(NODE_COUNT * cw as usize, "param0 array")?;
        r.bytes(NODE_COUNT, "param1 array")?;
        let param2 = r.bytes(NODE_COUNT, "param2 array")?;
        MetaList::decode(&mut r)?;
        StaticObjects::decode(&mut r)?;
        decode_timers_v25(&mut r)?;
        Ok(RawIds { mapping, cw, raw0, param2 })
    }

    /// The content ids of 1-byte bodies (values above 0x7F borrow the high
    /// nibble of param2).
    fn narrow_ids(&self) -> impl Iterator<Item = u16> + '_ {
        self.raw0.iter().zip(self.param2).map(
            |(&p0, &p2)| {
                if p0 > 0x7f { ((p0 as u16) << 4) | (p2 as u16 >> 4) } else { p0 as u16 }
            },
        )
    }
}

/// What `stored` makes of a blob's ids as stored, or for the old formats
/// (split into parts) what `legacy` makes of the whole decoded block: an
/// error exactly when [`Block::decode`] fails.
fn with_ids<T>(
    blob: &[u8],
    legacy: impl FnOnce(Block) -> T,
    stored: impl FnOnce(RawIds<'_>) -> T,
) -> Result<T, DecodeError> {
    match split(blob)? {
        Parts::Whole(body) => Ok(stored(RawIds::of(&body)?)),
        Parts::Split { head, nodes, meta, tail_at, .. } => {
            Ok(legacy(Block::decode_legacy(blob, head, &nodes, &meta, tail_at)?))
        }
    }
}

/// A block's name-id mapping and its nodes' content ids, read as
/// [`Block::decode`] reads them (an error exactly when it fails) without
/// copying light, param2, metadata, objects or timers out: what pictures
/// need of a block.
pub struct NodeIds {
    /// The name-id mapping in stored order.
    pub mapping: Vec<MappingEntry>,
    /// The 4096 block-local content ids, x fastest, then y, then z.
    pub param0: Vec<u16>,
}

impl NodeIds {
    /// Reads the mapping and ids of a blob; an error exactly when
    /// [`Block::decode`] fails.
    pub fn of(blob: &[u8]) -> Result<NodeIds, DecodeError> {
        with_ids(
            blob,
            |b| NodeIds { mapping: b.mapping, param0: b.param0 },
            |ids| {
                let param0 = if ids.cw == 2 {
                    ids.raw0.as_chunks::<2>().0.iter().map(|&p| u16::from_be_bytes(p)).collect()
                } else {
                    ids.narrow_ids().collect()
                };
                NodeIds { mapping: ids.mapping, param0 }
            },
        )
    }
}

/// A block's name-id mapping and how many of its nodes have each content
/// id (`by_id[id]`), read as [`NodeIds`] reads a block: what the name index
/// needs of every block of a world.
pub struct NodeCounts {
    /// The name-id mapping in stored order.
    pub mapping: Vec<MappingEntry>,
    /// How many nodes have each content id, indexed by id (ids past the end: none).
    pub by_id: Vec<u32>,
}

impl NodeCounts {
    /// Read the counts of a blob; an error exactly when `Block::decode` fails.
    pub fn of(blob: &[u8]) -> Result<NodeCounts, DecodeError> {
        with_ids(
            blob,
            |b| NodeCounts { by_id: count_runs(b.param0.iter().copied()), mapping: b.mapping },
            |ids| {
                // Counted straight from the stored bytes (no id array built).
                let by_id = if ids.cw == 2 { count_runs_be(ids.raw0) } else { count_runs(ids.narrow_ids()) };
                NodeCounts { mapping: ids.mapping, by_id }
            },
        )
    }
}

/// [`count_runs`] of big-endian u16 ids, four at a time while they equal
/// the current one (most of a block: this is the index build's hot loop).
fn count_runs_be(raw0: &[u8]) -> Vec<u32> {
    let (words, rest) = raw0.as_chunks::<8>();
    if words.is_empty() {
        return count_runs(raw0.as_chunks::<2>().0.iter().map(|&p| u16::from_be_bytes(p)));
    }
    let mut by_id = Vec::new();
    let mut add = |id: u16, n: u32| add_count(&mut by_id, id, n);
    let mut current = u16::from_be_bytes([raw0[0], raw0[1]]);
    let four = |id: u16| {
        let [a, b] = id.to_be_bytes();
        u64::from_ne_bytes([a, b, a, b, a, b, a, b])
    };
    let mut current4 = four(current);
    let mut run = 0u32;
    for w in words {
        if u64::from_ne_bytes(*w) == current4 {
            run += 4;
            continue;
        }
        for p in w.as_chunks::<2>().0 {
            let id = u16::from_be_bytes(*p);
            if id == current {
                run += 1;
            } else {
                add(current, run);
                current = id;
                current4 = four(id);
                run = 1;
            }
        }
    }
    for p in rest.as_chunks::<2>().0 {
        let id = u16::from_be_bytes(*p);
        if id != current {
            add(current, run);
            current = id;
            run = 0;
        }
        run += 1;
    }
    add(current, run);
    by_id
}

/// `n` more nodes of content id `id`.
fn add_count(by_id: &mut Vec<u32>, id: u16, n: u32) {
    let i = id as usize;
    if by_id.len() <= i {
        by_id.resize(i + 1, 0);
    }
    by_id[i] += n;
}

/// Nodes per content id, counted by runs: neighbouring nodes are mostly the
/// same (air above stone), and a counter in a register is not a
/// read-modify-write of memory per node.
fn count_runs(mut ids: impl Iterator<Item = u16>) -> Vec<u32> {
    let mut by_id = Vec::new();
    let mut add = |id: u16, n: u32| add_count(&mut by_id, id, n);
    let Some(mut current) = ids.next() else { return by_id };
    let mut run = 1u32;
    for id in ids {
        if id == current {
            run += 1;
        } else {
            add(current, run);
            current = id;
            run = 1;
        }
    }
    add(current, run);
    by_id
}

impl Block {
    /// An all-air block (generated, lit by full sunlight) of `version`.
    pub fn new_air(version: u8) -> Block {
        Block {
            version,
            flags: 0,
            lighting_complete: 0xffff,
            timestamp: 0xffff_ffff,
            mapping: vec![MappingEntry { id: 0, name: b"air".to_vec() }],
            content_width: 2,
            param0: vec![0; NODE_COUNT],
            param1: vec![0x0f; NODE_COUNT],
            param2: vec![0; NODE_COUNT],
            metadata: MetaList::default(),
            objects: StaticObjects::default(),
            timers: Vec::new(),
            trailing: Vec::new(),
        }
    }

    /// Decodes a stored blob of any version from 22 to 29.
    pub fn decode(blob: &[u8]) -> Result<Block, DecodeError> {
        match split(blob)? {
            Parts::Whole(body) => Self::decode_v29(&body),
            Parts::Split { head, nodes, meta, tail_at, .. } => Self::decode_legacy(blob, head, &nodes, &meta, tail_at),
        }
    }

    fn decode_v29(body: &[u8]) -> Result<Block, DecodeError> {
        let mut r = Reader::new(body, Region::Body);
        let flags = r.u8("flags")?;
        let lighting_complete = r.u16("lighting_complete")?;
        let timestamp = r.u32("timestamp")?;
        let mapping = decode_mapping(&mut r)?;
        let at = r.pos();
        let cw = r.u8("content_width")?;
        let pw = r.u8("params_width")?;
        check_widths(&r, at, cw, pw)?;
        let (param0, param1, param2) = decode_nodes(&mut r, cw)?;
        let metadata = MetaList::decode(&mut r)?;
        let objects = StaticObjects::decode(&mut r)?;
        let timers = decode_timers_v25(&mut r)?;
        Ok(Block {
            version: 29,
            flags,
            lighting_complete,
            timestamp,
            mapping,
            content_width: cw,
            param0,
            param1,
            param2,
            metadata,
            objects,
            timers,
            trailing: r.rest().to_vec(),
        })
    }

    fn decode_legacy(
        blob: &[u8],
        head: &[u8],
        nodes: &[u8],
        meta: &[u8],
        tail_at: usize,
    ) -> Result<Block, DecodeError> {
        let mut h = Reader::new(head, Region::Blob);
        let version = h.u8("version byte")?;
        let flags = h.u8("flags")?;
        let lighting_complete = if version >= 27 { h.u16("lighting_complete")? } else { 0xffff };
        let at = h.pos();
        let cw = h.u8("content_width")?;
        let pw = h.u8("params_width")?;
        check_widths(&h, at, cw, pw)?;

        let mut n = Reader::new(nodes, Region::NodeData);
        let (param0, param1, param2) = decode_nodes(&mut n, cw)?;

        let mut m = Reader::new(meta, Region::Metadata);
        let mut timers = Vec::new();
        let metadata = if version >= 23 {
            MetaList::decode(&mut m)?
        } else {
            let (entries, furnace_timers) = legacy_meta::decode(&mut m)?;
            timers = furnace_timers;
            MetaList { version: if entries.is_empty() { 0 } else { 1 }, entries }
        };

        // The plain tail after the zlib streams; offsets are blob offsets.
        let mut t = Reader::at(blob, tail_at, Region::Blob);
        if version == 23 {
            t.u8("unused byte of version 23")?;
        }
        if version == 24 {
            let at = t.pos();
            match t.u8("node timer version")? {
                0 => {}
                1 => {
                    let count = t.u16("node timer count")?;
                    for _ in 0..count {
                        timers.push(decode_timer(&mut t)?);
                    }
                }
                v => return Err(t.error_at(at, format!("unsupported node timer version {v}"))),
            }
        }
        let objects = StaticObjects::decode(&mut t)?;
        let timestamp = t.u32("timestamp")?;
        let mapping = decode_mapping(&mut t)?;
        if version >= 25 {
            timers.extend(decode_timers_v25(&mut t)?);
        }
        Ok(Block {
            version,
            flags,
            lighting_complete,
            timestamp,
            mapping,
            content_width: cw,
            param0,
            param1,
            param2,
            metadata,
            objects,
            timers,
            trailing: t.rest().to_vec(),
        })
    }

    /// Whether every content id fits the stored content width.
    pub fn fits_content_width(&self) -> bool {
        self.content_width == 2
            || self
                .param0
                .iter()
                .zip(&self.param2)
                .all(|(&id, &p2)| id <= 0x7f || ((0x800..=0xfff).contains(&id) && p2 <= 0x0f))
    }

    fn check_encodable(&self) -> Result<(), EncodeError> {
        let e = |m: String| Err(EncodeError(m));
        if !(MIN_WRITE_VERSION..=MAX_VERSION).contains(&self.version) {
            return e(format!("cannot write block version {} (writable: 24-29)", self.version));
        }
        if self.param0.len() != NODE_COUNT || self.param1.len() != NODE_COUNT || self.param2.len() != NODE_COUNT {
            return e("node arrays must hold 4096 entries".into());
        }
        if self.mapping.len() > u16::MAX as usize {
            return e("more than 65535 name-id mapping entries".into());
        }
        if self.metadata.entries.len() > u16::MAX as usize {
            return e("more than 65535 node metadata entries".into());
        }
        if self.objects.objects.len() > u16::MAX as usize || self.timers.len() > u16::MAX as usize {
            return e("more than 65535 static objects or node timers".into());
        }
        if self.objects.objects.iter().any(|o| o.data.len() > u16::MAX as usize) {
            return e("static object data longer than 65535 bytes".into());
        }
        if self.mapping.iter().any(|m| m.name.len() > u16::MAX as usize) {
            return e("node name longer than 65535 bytes".into());
        }
        if self.metadata.entries.iter().map(|e| e.vars.len()).sum::<usize>() > super::nodemeta::MAX_VARS {
            return e(format!("more than {} node metadata variables in one block", super::nodemeta::MAX_VARS));
        }
        for entry in &self.metadata.entries {
            for v in &entry.vars {
                if v.key.len() > u16::MAX as usize {
                    return e("node metadata key longer than 65535 bytes".into());
                }
                if v.value.len() > crate::bytes::LONG_STRING_MAX {
                    return e("node metadata value longer than 64 MiB".into());
                }
            }
        }
        if self.content_width != 1 && self.content_width != 2 {
            return e(format!("invalid content_width {}", self.content_width));
        }
        if !self.fits_content_width() {
            return e("content ids do not fit content_width 1".into());
        }
        Ok(())
    }

    fn encode_nodes(&self, out: &mut Vec<u8>) {
        out.reserve(NODE_COUNT * (self.content_width as usize + 2));
        if self.content_width == 2 {
            for &id in &self.param0 {
                out.put_u16(id);
            }
            out.extend_from_slice(&self.param1);
            out.extend_from_slice(&self.param2);
        } else {
            out.extend(self.param0.iter().map(|&id| if id <= 0x7f { id as u8 } else { (id >> 4) as u8 }));
            out.extend_from_slice(&self.param1);
            out.extend(
                self.param0.iter().zip(&self.param2).map(
                    |(&id, &p2)| {
                        if id <= 0x7f { p2 } else { (((id & 0x0f) as u8) << 4) | p2 }
                    },
                ),
            );
        }
    }

    fn encode_mapping(&self, out: &mut Vec<u8>) {
        out.put_u8(0);
        out.put_u16(self.mapping.len() as u16);
        for m in &self.mapping {
            out.put_u16(m.id);
            out.put_string16(&m.name);
        }
    }

    fn encode_timers_v25(&self, out: &mut Vec<u8>) {
        out.put_u8(10);
        out.put_u16(self.timers.len() as u16);
        for t in &self.timers {
            encode_timer(t, out);
        }
    }

    /// The sections of the encoding, uncompressed: (head, nodes, metadata,
    /// tail) for versions < 29, or (body) for 29.
    fn encode_parts(&self) -> Result<Vec<Vec<u8>>, EncodeError> {
        self.check_encodable()?;
        let v = self.version;
        if v >= 29 {
            let mut b = Vec::with_capacity(17 * 1024);
            b.put_u8(self.flags);
            b.put_u16(self.lighting_complete);
            b.put_u32(self.timestamp);
            self.encode_mapping(&mut b);
            b.put_u8(self.content_width);
            b.put_u8(2);
            self.encode_nodes(&mut b);
            self.metadata.encode(v, &mut b);
            self.objects.encode(&mut b);
            self.encode_timers_v25(&mut b);
            b.extend_from_slice(&self.trailing);
            return Ok(vec![b]);
        }
        let mut head = vec![v, self.flags];
        if v >= 27 {
            head.put_u16(self.lighting_complete);
        }
        head.put_u8(self.content_width);
        head.put_u8(2);
        let mut nodes = Vec::new();
        self.encode_nodes(&mut nodes);
        let mut meta = Vec::new();
        self.metadata.encode(v, &mut meta);
        let mut tail = Vec::new();
        if v == 24 {
            if self.timers.is_empty() {
                tail.put_u8(0);
            } else {
                tail.put_u8(1);
                tail.put_u16(self.timers.len() as u16);
                for t in &self.timers {
                    encode_timer(t, &mut tail);
                }
            }
        }
        self.objects.encode(&mut tail);
        tail.put_u32(self.timestamp);
        self.encode_mapping(&mut tail);
        if v >= 25 {
            self.encode_timers_v25(&mut tail);
        }
        tail.extend_from_slice(&self.trailing);
        Ok(vec![head, nodes, meta, tail])
    }

    /// The stored blob.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        let parts = self.encode_parts()?;
        Ok(match parts.as_slice() {
            [body] => [&[self.version][..], &compress::zstd(body)].concat(),
            [head, nodes, meta, tail] => {
                [&head[..], &compress::deflate_zlib(nodes), &compress::deflate_zlib(meta), tail].concat()
            }
            _ => unreachable!(),
        })
    }

    /// The encoding with sections left uncompressed (see [`uncompressed`]).
    pub fn encode_uncompressed(&self) -> Result<Vec<u8>, EncodeError> {
        let parts = self.encode_parts()?;
        Ok(if parts.len() == 1 { [&[self.version][..], &parts[0]].concat() } else { parts.concat() })
    }

    /// The name of a content id as the engine resolves it (last entry wins).
    pub fn name_of(&self, id: u16) -> Option<&[u8]> {
        self.mapping.iter().rev().find(|m| m.id == id).map(|m| m.name.as_slice())
    }

    /// Whether [`FLAG_UNDERGROUND`] is set.
    pub fn is_underground(&self) -> bool {
        self.flags & FLAG_UNDERGROUND != 0
    }

    /// Whether [`FLAG_DAY_NIGHT_DIFFERS`] is set.
    pub fn day_night_differs(&self) -> bool {
        self.flags & FLAG_DAY_NIGHT_DIFFERS != 0
    }

    /// Whether the map generator has finished the block ([`FLAG_NOT_GENERATED`] clear).
    pub fn is_generated(&self) -> bool {
        self.flags & FLAG_NOT_GENERATED == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counting by runs of four agrees with counting one by one, for
    /// uniform, layered and noisy blocks and odd lengths.
    #[test]
    fn counts_by_runs_agree_with_plain_counting() {
        let plain = |ids: &[u16]| {
            let mut v = vec![0u32; ids.iter().copied().max().map_or(0, |m| m as usize + 1)];
            ids.iter().for_each(|&i| v[i as usize] += 1);
            v
        };
        let mut seed = 7u32;
        let mut noise = || {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (seed >> 16) as u16 % 5
        };
        let cases: Vec<Vec<u16>> = vec![
            vec![3; 4096],
            (0..4096).map(|i| if i < 2000 { 0 } else { 9 }).collect(),
            (0..4096).map(|_| noise()).collect(),
            (0..4097).map(|i| (i / 3) as u16 % 7).collect(),
            vec![1, 2, 2],
            vec![],
        ];
        for ids in cases {
            let be: Vec<u8> = ids.iter().flat_map(|i| i.to_be_bytes()).collect();
            assert_eq!(count_runs_be(&be), plain(&ids), "{:?}", &ids[..ids.len().min(8)]);
            assert_eq!(count_runs(ids.iter().copied()), plain(&ids));
        }
    }
    use crate::luanti::nodemeta::{MetaEntry, MetaVar};
    use crate::luanti::objects::StaticObject;

    /// The engine's smallest real block: all `ignore`, not generated; every
    /// such block of a world Luanti 5.6.1 made is stored as these 40 bytes.
    const IGNORE_BLOB: &str = "1d28b52ffd0058f50000a808ff0000010000000669676e6f72650202000a000002000000b09700b0";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn decodes_the_all_ignore_block() {
        let blob = hex(IGNORE_BLOB);
        let b = Block::decode(&blob).unwrap();
        assert_eq!(b.version, 29);
        assert_eq!(b.flags, FLAG_NOT_GENERATED);
        assert_eq!(b.timestamp, 0xffff_ffff);
        assert_eq!(b.mapping, vec![MappingEntry { id: 0, name: b"ignore".to_vec() }]);
        assert!(b.param0.iter().all(|&p| p == 0));
        assert_eq!(uncompressed(&blob).unwrap(), b.encode_uncompressed().unwrap());
        // our zstd output differs from the engine's, but decodes the same
        assert_eq!(Block::decode(&b.encode().unwrap()).unwrap(), b);
    }

    fn sample(version: u8) -> Block {
        let mut b = Block::new_air(version);
        b.mapping.push(MappingEntry { id: 1, name: b"default:chest".to_vec() });
        b.param0[node_index(1, 2, 3)] = 1;
        b.param2[node_index(1, 2, 3)] = 3;
        b.metadata.entries.push(MetaEntry {
            pos: node_index(1, 2, 3) as u16,
            vars: vec![MetaVar { key: b"infotext".to_vec(), value: b"a\0b\nc".to_vec(), private: version >= 28 }],
            inventory: b"List main 1\nWidth 0\nItem default:dirt 5\nEndInventoryList\nEndInventory\n".to_vec(),
        });
        b.metadata.version = b.metadata.version_for(version);
        b.objects.objects.push(StaticObject { kind: 7, pos: [1000, -2000, 3000], data: vec![1, 2, 3] });
        b.timers.push(NodeTimer { pos: 5, timeout: 30000, elapsed: 1500 });
        b.timestamp = 1234;
        b
    }

    #[test]
    fn every_writable_version_round_trips() {
        for v in MIN_WRITE_VERSION..=MAX_VERSION {
            let mut b = sample(v);
            if v < 27 {
                b.lighting_complete = 0xffff;
            }
            let blob = b.encode().unwrap();
            assert_eq!(blob[0], v);
            let back = Block::decode(&blob).unwrap();
            assert_eq!(back, b, "version {v}");
            assert_eq!(uncompressed(&blob).unwrap(), b.encode_uncompressed().unwrap());
        }
    }

    #[test]
    fn content_width_one_uses_the_high_id_trick() {
        let mut b = sample(27);
        b.content_width = 1;
        b.mapping.push(MappingEntry { id: 2048, name: b"test:two".to_vec() });
        b.param0[7] = 2048;
        b.param2[7] = 0x0c;
        assert!(b.fits_content_width());
        let back = Block::decode(&b.encode().unwrap()).unwrap();
        assert_eq!(back.param0[7], 2048);
        assert_eq!(back.param2[7], 0x0c);
        b.param0[8] = 300; // not representable with one byte
        assert!(b.encode().is_err());
    }

    /// Versions 22 and 23 cannot be written, so build them from the v25
    /// sections: 23 has an unused byte after the metadata and no timers;
    /// 22 has the legacy metadata list.
    fn legacy_blob(b: &Block, version: u8, meta: &[u8]) -> Vec<u8> {
        let mut v25 = b.clone();
        v25.version = 25;
        v25.timers.clear();
        let parts = v25.encode_parts().unwrap();
        let (mut head, nodes, mut tail) = (parts[0].clone(), &parts[1], parts[3].clone());
        head[0] = version;
        tail.truncate(tail.len() - 3); // the v25 timer header: 0a 00 00
        let mut blob = [head, compress::deflate_zlib(nodes), compress::deflate_zlib(meta)].concat();
        if version == 23 {
            blob.push(0);
        }
        blob.extend_from_slice(&tail);
        blob
    }

    #[test]
    fn versions_22_and_23_decode() {
        let b = sample(25);
        let mut meta = Vec::new();
        b.metadata.encode(25, &mut meta);
        let v23 = Block::decode(&legacy_blob(&b, 23, &meta)).unwrap();
        assert_eq!(v23.version, 23);
        assert_eq!(v23.metadata, b.metadata);
        assert!(v23.timers.is_empty());
        assert_eq!((v23.param0.clone(), v23.mapping.clone()), (b.param0.clone(), b.mapping.clone()));
        // v22: a legacy sign at node 5.
        let mut legacy = Vec::new();
        legacy.put_u16(1);
        legacy.put_u16(1);
        legacy.put_u16(5);
        legacy.put_i16(14);
        let mut body = Vec::new();
        body.put_string16(b"old sign");
        legacy.put_string16(&body);
        let v22 = Block::decode(&legacy_blob(&b, 22, &legacy)).unwrap();
        assert_eq!(v22.version, 22);
        assert_eq!(v22.metadata.entries[0].get(b"text").unwrap().value, b"old sign");
        assert_eq!(v22.objects, b.objects);
        assert_eq!(v22.timestamp, b.timestamp);
    }

    #[test]
    fn truncations_are_errors_with_offsets() {
        let blob = sample(28).encode().unwrap();
        // The header is read field by field: the error names the offset of
        // the field the cut falls in (version 0, flags 1, lighting 2..4).
        for (cut, field_at) in [(0, 0), (1, 1), (3, 2)] {
            let e = Block::decode(&blob[..cut]).unwrap_err();
            assert_eq!((e.region, e.offset), (Region::Blob, field_at), "cut at {cut}: {e}");
            assert!(e.message.starts_with("truncated "), "cut at {cut}: {e}");
            assert!(e.to_string().contains(&format!("(at byte {field_at} of the blob)")), "{e}");
        }
        // Further in, the error is no later than the cut.
        for cut in [10, blob.len() / 2, blob.len() - 1] {
            let e = Block::decode(&blob[..cut]).unwrap_err();
            assert!(!e.message.is_empty());
            assert!(e.region != Region::Blob || e.offset <= cut, "cut at {cut}: {e}");
        }
        let blob = sample(29).encode().unwrap();
        let e = Block::decode(&blob[..blob.len() - 4]).unwrap_err();
        assert!(e.to_string().contains("zstd") || e.to_string().contains("truncated"), "{e}");
        let e = Block::decode(&[30, 0, 0]).unwrap_err();
        assert!(e.message.contains("version 30"));
    }
}
