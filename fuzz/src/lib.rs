//! The bodies of the fuzz targets, as plain functions.
//!
//! Each `fuzz_targets/<name>.rs` is one line that hands libFuzzer's input to
//! the function of the same name here. Keeping the bodies in a library lets
//! a stable toolchain type-check and exercise them (`./check.sh`, which runs
//! `cargo test`: a few thousand pseudo-random and mutated inputs per target,
//! plus every file under `corpus/<target>/` and `artifacts/<target>/`).
//!
//! Every function must never panic on any input; a panic is either a bug in
//! worldfs or a broken property, and the message says which.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::OnceLock;
use worldfs_codec::luanti::block::{self, Block, MAX_VERSION, MIN_WRITE_VERSION, MappingEntry, NODE_COUNT};
use worldfs_codec::bytes::{Reader, Region};
use worldfs_codec::compress;
use worldfs_codec::luanti::inventory::{self, Inventory};
use worldfs_codec::luanti::itemstring::ItemStack;
use worldfs_codec::jsonish::{self, HighBytes};
use worldfs_codec::luanti::legacy_meta;
use worldfs_codec::luanti::nodemeta::{MetaEntry, MetaList, MetaVar};
use worldfs_codec::luanti::objects::{LUA_ENTITY, LuaEntity, NodeTimer, StaticObject, StaticObjects};
use worldfs_store::BlockPos;
use worldfs::view::{MetaFile, decimal, escape, parse, render};

#[cfg(test)]
mod smoke;

mod schematic;
pub use schematic::{mts_decode, mts_view, we_decode, we_view};

mod records;
pub use records::records;

mod cubeset;
pub use cubeset::cubeset;

mod pictures;
pub use pictures::pictures;

mod mcchunk;
pub use mcchunk::mcchunk;

mod bedrock;
pub use bedrock::{bedrock_biomes, bedrock_keys, bedrock_nbt, bedrock_subchunk, subchunk_seeds};

mod minecraft;
pub use minecraft::{mc_lz4, mc_nbt, mc_player_files, mc_player_seeds, mc_region, mc_view_files, mc_view_seeds};

pub const STYLES: [HighBytes; 2] = [HighBytes::Raw, HighBytes::Escaped];

/// `WORLDFS_FUZZ_LOSSLESS=1` adds the strongest block property: the input's
/// uncompressed form equals the re-encoded uncompressed form (what
/// tests/codec_real_worlds.rs asserts for every real block). Off by
/// default: a blob no engine writes can legitimately decode to a block
/// that is written back differently (see README.md).
pub fn lossless() -> bool {
    static L: OnceLock<bool> = OnceLock::new();
    *L.get_or_init(|| std::env::var_os("WORLDFS_FUZZ_LOSSLESS").is_some_and(|v| v != "0" && !v.is_empty()))
}

/// Bytes for a panic message: escaped, and cut after 400 bytes.
pub fn show(b: &[u8]) -> String {
    let mut s: String = b.iter().take(400).flat_map(|c| c.escape_ascii()).map(char::from).collect();
    if b.len() > 400 {
        let _ = write!(s, "... ({} bytes)", b.len());
    }
    s
}

/// Which fields of two blocks differ, with the first difference of each.
pub fn diff_blocks(a: &Block, b: &Block) -> String {
    let mut out = String::new();
    macro_rules! field {
        ($f:ident) => {
            if a.$f != b.$f {
                let _ = write!(out, "\n  {}: {:?}\n   vs {:?}", stringify!($f), a.$f, b.$f);
            }
        };
    }
    macro_rules! array {
        ($f:ident) => {
            if let Some(i) = (0..a.$f.len().max(b.$f.len())).find(|&i| a.$f.get(i) != b.$f.get(i)) {
                let _ = write!(out, "\n  {}[{i}]: {:?} vs {:?}", stringify!($f), a.$f.get(i), b.$f.get(i));
            }
        };
    }
    field!(version);
    field!(flags);
    field!(lighting_complete);
    field!(timestamp);
    field!(mapping);
    field!(content_width);
    array!(param0);
    array!(param1);
    array!(param2);
    field!(metadata);
    field!(objects);
    field!(timers);
    field!(trailing);
    out
}

// ------------------------------------------------------------------ blocks

/// A copy of `fs::commit::normalize` (private there): what the mount does
/// to an edited block before encoding it.
pub fn normalize(b: &mut Block) {
    if b.version < MIN_WRITE_VERSION {
        b.version = 25;
    }
    if !b.fits_content_width() {
        b.content_width = 2;
    }
    b.metadata.version = b.metadata.version_for(b.version);
}

/// `block_decode`: arbitrary bytes as a stored blob.
pub fn block_decode(data: &[u8]) {
    check_blob(data, true);
}

/// `b.encode()`, or with `real == false` the same blob but with its zlib
/// sections stored instead of compressed (see [`zlib_stored`]): deflate
/// at level 6 under coverage instrumentation would take most of the time
/// of `block_body`, and `block_decode` checks the real compression.
fn encode(b: &Block, real: bool) -> Result<Vec<u8>, block::EncodeError> {
    if real { b.encode() } else { b.encode_uncompressed().map(|flat| compress_flat(&flat)) }
}

/// The checks on one blob; returns the block when it decodes. `real`: see
/// [`encode`].
pub fn check_blob(blob: &[u8], real: bool) -> Option<Block> {
    let flat = block::uncompressed(blob);
    let counts = worldfs_codec::luanti::NodeCounts::of(blob);
    let decoded = Block::decode(blob);
    assert_eq!(
        counts.is_ok(),
        decoded.is_ok(),
        "NodeCounts::of and Block::decode disagree on whether the blob is good"
    );
    let b = decoded.ok()?;
    let counts = counts.unwrap();
    assert_eq!(counts.mapping, b.mapping, "NodeCounts::of reads another mapping");
    for (id, &n) in counts.by_id.iter().enumerate() {
        assert_eq!(n as usize, b.param0.iter().filter(|&&p| p as usize == id).count(), "nodes of id {id}");
    }
    assert_eq!(counts.by_id.iter().map(|&n| n as usize).sum::<usize>(), NODE_COUNT);
    let ids = worldfs_codec::luanti::NodeIds::of(blob).expect("NodeIds::of fails where Block::decode does not");
    assert!(ids.mapping == b.mapping && ids.param0 == b.param0, "NodeIds::of reads other node ids");
    let flat = flat.unwrap_or_else(|e| panic!("Block::decode is Ok but block::uncompressed fails: {e}"));
    assert_eq!(b.version, blob[0], "decoded version differs from the version byte");
    assert!(
        b.param0.len() == NODE_COUNT && b.param1.len() == NODE_COUNT && b.param2.len() == NODE_COUNT,
        "node arrays of a decoded block must hold 4096 entries"
    );
    assert!(b.content_width == 1 || b.content_width == 2, "decoded content_width {}", b.content_width);

    if (MIN_WRITE_VERSION..=MAX_VERSION).contains(&b.version) {
        let enc = encode(&b, real).unwrap_or_else(|e| panic!("a decoded v{} block does not encode: {e}", b.version));
        let enc_flat = b.encode_uncompressed().unwrap_or_else(|e| panic!("encode_uncompressed fails: {e}"));
        let back = Block::decode(&enc).unwrap_or_else(|e| panic!("our own v{} blob does not decode: {e}", b.version));
        if back != b {
            panic!("decode(encode(b)) != b (v{}):{}", b.version, diff_blocks(&b, &back));
        }
        let again = block::uncompressed(&enc).unwrap_or_else(|e| panic!("uncompressed(encode(b)) fails: {e}"));
        assert!(again == enc_flat, "uncompressed(encode(b)) != encode_uncompressed(b)");
        if lossless() && flat != enc_flat {
            let at = flat.iter().zip(&enc_flat).position(|(x, y)| x != y).unwrap_or(flat.len().min(enc_flat.len()));
            panic!(
                "lossy decode (v{}): uncompressed(blob) ({} bytes) != encode_uncompressed(decode(blob)) ({} bytes), \
                 first difference at offset {at}: {} vs {}",
                b.version,
                flat.len(),
                enc_flat.len(),
                show(&flat[at.min(flat.len())..(at + 16).min(flat.len())]),
                show(&enc_flat[at.min(enc_flat.len())..(at + 16).min(enc_flat.len())]),
            );
        }
    } else if !(MIN_WRITE_VERSION..=MAX_VERSION).contains(&b.version) {
        assert!(b.encode().is_err(), "version {} must not be writable", b.version);
    }

    // What the mount does when a block is edited: normalize, encode, and
    // refuse with "internal error" unless it decodes back the same. Blocks
    // that `validate` would refuse first are skipped.
    let private = b.metadata.entries.iter().any(|e| e.vars.iter().any(|v| v.private));
    let mut n = b.clone();
    normalize(&mut n);
    if n != b && !(n.version < 28 && private) {
        let enc = encode(&n, real).unwrap_or_else(|e| panic!("a normalized decoded block does not encode: {e}"));
        let back = Block::decode(&enc).unwrap_or_else(|e| panic!("a normalized block's blob does not decode: {e}"));
        if back != n {
            panic!("decode(encode(normalize(b))) != normalize(b) (v{}):{}", b.version, diff_blocks(&n, &back));
        }
    }
    Some(b)
}

/// A zlib stream of `data` in stored (uncompressed) deflate blocks, written
/// by hand: valid for any inflater, and nearly free, where deflating (even
/// at level 0) under coverage instrumentation would take most of the time.
pub fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / 65535 * 5 + 16);
    out.extend_from_slice(&[0x78, 0x01]);
    if data.is_empty() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    let mut chunks = data.chunks(65535).peekable();
    while let Some(c) = chunks.next() {
        out.push(chunks.peek().is_none() as u8); // BFINAL, BTYPE 00 (stored)
        let n = c.len() as u16;
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&(!n).to_le_bytes());
        out.extend_from_slice(c);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += u32::from(x);
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    out.extend_from_slice(&((b << 16) | a).to_be_bytes());
    out
}

/// Turn the uncompressed form of a blob (what [`block::uncompressed`]
/// returns) back into a blob, compressing the sections (zlib sections as
/// stored blocks, see [`zlib_stored`]). Version < 29: the head and
/// node-data sizes follow from the header; the metadata section ends where
/// the metadata parser stops (all the rest if it fails).
pub fn compress_flat(flat: &[u8]) -> Vec<u8> {
    let Some(&v) = flat.first() else { return Vec::new() };
    if !(block::MIN_READ_VERSION..=MAX_VERSION).contains(&v) {
        return flat.to_vec();
    }
    if v >= 29 {
        return [&[v][..], &compress::zstd(&flat[1..])].concat();
    }
    let head = if v >= 27 { 6 } else { 4 };
    if flat.len() < head {
        return flat.to_vec();
    }
    let cw = flat[head - 2] as usize;
    let nodes_end = (head + NODE_COUNT * (cw + 2)).min(flat.len());
    let rest = &flat[nodes_end..];
    let mut r = Reader::new(rest, Region::Metadata);
    let ok = if v >= 23 { MetaList::decode(&mut r).is_ok() } else { legacy_meta::decode(&mut r).is_ok() };
    let meta = if ok { r.pos() } else { rest.len() };
    [&flat[..head], &zlib_stored(&flat[head..nodes_end]), &zlib_stored(&rest[..meta]), &rest[meta..]].concat()
}

/// `block_body`: the input is a blob's *uncompressed* form (the seed corpus
/// holds those of real blocks), compressed here, so that the mutations
/// reach the parsers behind zlib/zstd instead of breaking the compression.
pub fn block_body(data: &[u8]) {
    let blob = compress_flat(data);
    if blob.len() != data.len() || blob != data {
        // The harness itself: inflating what we compressed gives the input.
        if let Ok(flat) = block::uncompressed(&blob) {
            assert!(flat == data, "harness: uncompressed(compress_flat(x)) != x");
        }
    }
    check_blob(&blob, false);
}

/// `block_sections`: the sections of a block alone. The first byte picks
/// the parser: 0 node metadata list, 1 legacy (v22) metadata, 2 static
/// objects (and their `objects` file), 3 one Lua entity.
pub fn block_sections(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else { return };
    match sel % 4 {
        0 => metadata_list(rest),
        1 => legacy_metadata(rest),
        2 => static_objects(rest),
        _ => {
            if let Some(e) = LuaEntity::decode(rest) {
                assert!(e.encode() == rest, "LuaEntity::decode is Some but does not encode back");
            }
        }
    }
}

fn check_entries(entries: &[MetaEntry]) {
    let mut seen = HashSet::new();
    for e in entries {
        assert!(e.pos < 4096, "metadata position {} outside the block", e.pos);
        assert!(seen.insert(e.pos), "metadata position {} twice", e.pos);
        assert_eq!(
            inventory::scan_end(&e.inventory),
            Some(e.inventory.len()),
            "a decoded inventory does not end where scan_end says: {}",
            show(&e.inventory)
        );
    }
}

fn metadata_list(data: &[u8]) {
    let mut r = Reader::new(data, Region::Metadata);
    let Ok(m) = MetaList::decode(&mut r) else { return };
    let used = r.pos();
    check_entries(&m.entries);
    // A block version in which the stored list version is kept.
    let bv = if m.version == 2 { 29 } else { 25 };
    assert_eq!(m.version_for(bv), m.version, "list version {} not kept in a v{bv} block", m.version);
    let mut out = Vec::new();
    m.encode(bv, &mut out);
    let mut r2 = Reader::new(&out, Region::Metadata);
    let back = MetaList::decode(&mut r2).unwrap_or_else(|e| panic!("re-encoded metadata does not decode: {e}"));
    assert_eq!(back, m, "metadata decode(encode(m)) != m");
    assert_eq!(r2.pos(), out.len(), "re-encoded metadata not read to its end");
    if lossless() {
        assert!(out == data[..used], "metadata re-encoded differently: {} vs {}", show(&out), show(&data[..used]));
    }
}

fn legacy_metadata(data: &[u8]) {
    let mut r = Reader::new(data, Region::Metadata);
    let Ok((entries, timers)) = legacy_meta::decode(&mut r) else { return };
    check_entries(&entries);
    for t in &timers {
        assert!(entries.iter().any(|e| e.pos == t.pos), "furnace timer without its entry");
    }
    // An edited v22 block is written as v25: list version 1.
    let m = MetaList { version: if entries.is_empty() { 0 } else { 1 }, entries };
    let mut out = Vec::new();
    m.encode(25, &mut out);
    let back = MetaList::decode(&mut Reader::new(&out, Region::Metadata))
        .unwrap_or_else(|e| panic!("converted legacy metadata does not decode as v25: {e}"));
    assert_eq!(back, m, "converted legacy metadata: decode(encode(m)) != m");
}

fn static_objects(data: &[u8]) {
    let mut r = Reader::new(data, Region::Blob);
    let Ok(objs) = StaticObjects::decode(&mut r) else { return };
    let used = r.pos();
    let mut out = Vec::new();
    objs.encode(&mut out);
    assert!(out == data[..used], "static objects re-encoded differently");
    for o in &objs.objects {
        if o.kind == LUA_ENTITY
            && let Some(e) = LuaEntity::decode(&o.data)
        {
            assert!(e.encode() == o.data, "LuaEntity::decode is Some but does not encode back");
        }
    }
    // The `objects` file of any decoded block must parse back to the same
    // objects (else editing one line fails on another, untouched one).
    let mut b = Block::new_air(29);
    b.objects = objs.clone();
    let text = render::render_objects(&b);
    let mut c = b.clone();
    match parse::apply_objects(&mut c, &text) {
        Ok(()) => assert!(c.objects.objects == objs.objects, "objects file: parse(render(objects)) != objects"),
        Err(e) => panic!("the objects file of decoded objects does not parse: {e}\nfile: {}", show(&text)),
    }
}

// -------------------------------------------------------- inventory, items

/// `inventory_parse`: strict parsing, serializing in both styles, and the
/// scanner that finds an inventory's end inside a metadata stream.
pub fn inventory_parse(data: &[u8]) {
    if let Some(n) = inventory::scan_end(data) {
        assert!(n <= data.len(), "scan_end returned {n} for {} bytes", data.len());
    }
    let Ok(inv) = Inventory::parse_strict(data) else { return };
    assert_eq!(inventory::scan_end(data), Some(data.len()), "scan_end disagrees with parse_strict on the end");
    for high in STYLES {
        let text = inv.serialize(high);
        match Inventory::parse_strict(&text) {
            Ok(back) => assert!(back == inv, "{high:?}: parse_strict(serialize(inv)) != inv\ntext: {}", show(&text)),
            Err(e) => panic!("{high:?}: serialized inventory does not parse: {e}\ntext: {}", show(&text)),
        }
        // Inside a metadata stream the inventory is followed by more data.
        let mut stream = text.clone();
        stream.extend_from_slice(data);
        assert_eq!(
            inventory::scan_end(&stream),
            Some(text.len()),
            "{high:?}: scan_end does not stop at the end of a serialized inventory"
        );
    }
}

fn has_blank_pair(st: &ItemStack) -> bool {
    st.meta.iter().any(|(k, v)| k.is_empty() && v.is_empty())
}

/// `itemstring_parse`: strict parsing and serializing in both styles.
pub fn itemstring_parse(data: &[u8]) {
    let Ok(st) = ItemStack::parse_strict(data) else { return };
    assert!(st.count >= 1, "parsed a count of 0");
    assert!(!has_blank_pair(&st), "parse_strict accepted an empty metadata pair, which the engine drops");
    for high in STYLES {
        let s = st.serialize(high);
        assert!(!s.contains(&b'\n') && !s.contains(&b'\r'), "{high:?}: serialized item has a line break");
        match ItemStack::parse_strict(&s) {
            Ok(back) => {
                assert!(back == st, "{high:?}: parse(serialize(x)) != x: {st:?} vs {back:?}; text {}", show(&s))
            }
            Err(e) => panic!("{high:?}: serialized item does not parse: {}: {}", e.message, show(&s)),
        }
        // The form that goes into an inventory line.
        let line = [&b"List main 1\nWidth 0\nItem "[..], &s, b"\nEndInventoryList\nEndInventory\n"].concat();
        let inv = Inventory::parse_strict(&line)
            .unwrap_or_else(|e| panic!("{high:?}: an inventory holding the item does not parse: {e}"));
        assert!(inv.lists[0].slots[0].as_ref() == Some(&st), "{high:?}: item changed inside an inventory");
    }
}

// ------------------------------------------------------------------ jsonish

/// `jsonish_unquote`: the first byte picks strictness for the reading of
/// the rest; the rest also goes through quote -> unquote in both styles.
pub fn jsonish_unquote(data: &[u8]) {
    let Some((&flags, s)) = data.split_first() else { return };
    let strict = flags & 1 == 1;
    if let Ok((out, used)) = jsonish::unquote(s, strict) {
        assert!(used >= 2 && used <= s.len(), "unquote used {used} of {} bytes", s.len());
        assert_eq!(s[used - 1], b'"', "unquote stopped after a byte that is not a closing quote");
        if strict {
            let lenient = jsonish::unquote(s, false);
            assert!(lenient == Ok((out.clone(), used)), "strict and lenient unquote disagree");
        }
        for high in STYLES {
            let q = jsonish::quote(&out, high);
            assert!(jsonish::unquote(&q, true) == Ok((out.clone(), q.len())), "requoting changes the bytes");
        }
    }
    for high in STYLES {
        let q = jsonish::quote(s, high);
        match jsonish::unquote(&q, true) {
            Ok((back, used)) => {
                assert!(back == s, "{high:?}: unquote(quote(s)) != s");
                assert_eq!(used, q.len(), "{high:?}: unquote(quote(s)) did not use the whole string");
            }
            Err(e) => panic!("{high:?}: quote(s) does not unquote: {} at {}", e.message, e.offset),
        }
        let q = jsonish::quote_if_needed(s, high);
        if jsonish::needs_quoting(s) {
            assert!(q.first() == Some(&b'"'), "quote_if_needed did not quote");
        } else {
            assert!(q == s, "quote_if_needed changed a string that needs no quoting");
        }
    }
}

// ------------------------------------------------------------- view layer

/// `escape_names`: metadata keys <-> field file names.
pub fn escape_names(data: &[u8]) {
    let name = escape::key_to_name(data);
    assert!(!name.is_empty(), "empty file name");
    assert!(!name.contains(&b'/') && !name.contains(&0), "file name with '/' or NUL: {}", show(&name));
    assert!(name.first() != Some(&b'.'), "file name starting with '.': {}", show(&name));
    assert!(escape::name_to_key(&name).as_deref() == Some(data), "name_to_key(key_to_name(k)) != k");
    if let Some(k) = escape::name_to_key(data) {
        assert!(escape::key_to_name(&k) == data, "name_to_key(n) = k but key_to_name(k) != n");
    }
    // A new file is refused exactly when it is no key's name and not a
    // dot-name, and the name the refusal offers is a key's.
    let is_key = escape::name_to_key(data).is_some();
    match escape::refuse_key_name(data) {
        Some((offered, _)) => {
            assert!(!is_key && data.first() != Some(&b'.'), "refused a key's name: {}", show(data));
            assert!(escape::name_to_key(&offered).is_some(), "offered {} which is no key's", show(&offered));
        }
        None => assert!(is_key || data.first() == Some(&b'.'), "{} neither a key nor refused", show(data)),
    }
}

/// `decimal`: the first byte picks the scale (10^0 .. 10^9); eight bytes
/// after it are a value for format -> parse; the rest (as text, if it is
/// UTF-8) goes to parse.
pub fn decimal(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else { return };
    let scale = 10i64.pow(u32::from(sel % 10));
    if let Some(v) = rest.get(..8) {
        let v = i64::from_le_bytes(v.try_into().unwrap());
        for v in [v, v as i32 as i64] {
            let s = decimal::format(v, scale);
            assert_eq!(decimal::parse(&s, scale), i32::try_from(v).ok(), "parse(format({v}, {scale})) = parse({s:?})");
        }
    }
    if let Ok(s) = std::str::from_utf8(rest) {
        if let Some(v) = decimal::parse(s, scale) {
            let f = decimal::format(v.into(), scale);
            assert_eq!(decimal::parse(&f, scale), Some(v), "parse({s:?}) = {v} but parse(format) differs");
        }
    }
}

/// The block the `view_files` target edits: a bit of everything the files
/// show.
pub fn view_base(version: u8) -> Block {
    let mut b = Block::new_air(version);
    b.mapping.push(MappingEntry { id: 1, name: b"default:stone".to_vec() });
    b.mapping.push(MappingEntry { id: 7, name: b"odd name/\xff".to_vec() });
    for i in 0..300 {
        b.param0[i] = 1;
    }
    b.param0[4000] = 7;
    b.param2[5] = 3;
    let mut e = MetaEntry::new(5);
    for (k, v, p) in [(&b"infotext"[..], &b"Chest"[..], false), (b"owner", b"sam", true), (b".a/b%", b"x\ny", false)] {
        e.vars.push(MetaVar { key: k.to_vec(), value: v.to_vec(), private: p && version >= 28 });
    }
    e.inventory = b"List main 2\nWidth 0\nItem default:dirt 5\nEmpty\nEndInventoryList\nEndInventory\n".to_vec();
    b.metadata.entries.push(e);
    b.metadata.version = b.metadata.version_for(version);
    b.timers.push(NodeTimer { pos: 5, timeout: 1500, elapsed: 250 });
    let lua = LuaEntity {
        name: b"mobs:sheep".to_vec(),
        staticdata: b"return {}".to_vec(),
        hp: 10,
        velocity: [0, -5, 1],
        yaw: 90000,
        pitch_roll: None,
        guid: None,
    };
    b.objects.objects.push(StaticObject { kind: LUA_ENTITY, pos: [1000, -2000, 30000], data: lua.encode() });
    b.objects.objects.push(StaticObject { kind: 3, pos: [0, 5, -5], data: vec![0, 1, 2, 255] });
    b.timestamp = 1234;
    b
}

/// The kinds of file `view_files` writes, in selector order.
pub const VIEW_FILES: [&str; 12] = [
    "info",
    "names",
    "nodes",
    "node",
    "param0",
    "param1",
    "param2",
    "timers",
    "objects",
    "private",
    "inventory",
    "field",
];

/// The 7-byte header of a `view_files` input: the file kind (bit 7: base
/// block version 25 instead of 29) and the block position (three
/// big-endian u16, taken modulo 4096 minus 2048; the first also picks the
/// node of `node`).
pub fn view_header(kind: usize, v25: bool, pos: BlockPos) -> [u8; 7] {
    let c = |v: i16| ((v as i32 + 2048) as u16).to_be_bytes();
    let (x, y, z) = (c(pos.x), c(pos.y), c(pos.z));
    [kind as u8 | if v25 { 0x80 } else { 0 }, x[0], x[1], y[0], y[1], z[0], z[1]]
}

fn view_base_cached(v25: bool) -> &'static Block {
    static B: OnceLock<[Block; 2]> = OnceLock::new();
    &B.get_or_init(|| [view_base(29), view_base(25)])[v25 as usize]
}

/// After an accepted write: render the file again and apply it to the
/// result: nothing may change. Then the block must survive the mount's
/// normalize -> encode -> decode.
fn view_fixed_point(what: &str, b1: &Block, rendered: &[u8], apply: impl Fn(&mut Block, &[u8]) -> parse::Result<()>) {
    let mut b2 = b1.clone();
    if let Err(e) = apply(&mut b2, rendered) {
        panic!("{what}: the file rendered from an accepted write does not parse: {e}\nfile: {}", show(rendered));
    }
    if b2 != *b1 {
        panic!("{what}: parse(render(b)) != b:{}", diff_blocks(b1, &b2));
    }
    view_block_ok(what, b1);
}

fn view_block_ok(what: &str, b: &Block) {
    let named: HashSet<u16> = b.mapping.iter().map(|m| m.id).collect();
    if let Some(id) = b.param0.iter().find(|id| !named.contains(id)) {
        panic!("{what}: accepted write leaves content id {id} without a name");
    }
    let mut n = b.clone();
    normalize(&mut n);
    // decode(encode(n)) with the sections compressed cheaply: the block
    // targets check that the compression itself is transparent.
    let flat = n
        .encode_uncompressed()
        .unwrap_or_else(|e| panic!("{what}: accepted write gives a block that does not encode: {e}"));
    let back = Block::decode(&compress_flat(&flat))
        .unwrap_or_else(|e| panic!("{what}: accepted write's blob does not decode: {e}"));
    if back != n {
        panic!("{what}: accepted write does not decode back:{}", diff_blocks(&n, &back));
    }
}

/// `view_files`: write a file of a block directory (the `parse::apply_*`
/// parsers of what users write). Input: [`view_header`], then the content.
pub fn view_files(data: &[u8]) {
    if data.len() < 7 {
        return;
    }
    let (h, content) = data.split_at(7);
    let v25 = h[0] & 0x80 != 0;
    let version = if v25 { 25 } else { 29 };
    let coord = |hi: u8, lo: u8| (u16::from_be_bytes([hi, lo]) % 4096) as i16 - 2048;
    let pos = BlockPos::new(coord(h[1], h[2]), coord(h[3], h[4]), coord(h[5], h[6]));
    let index = u16::from_be_bytes([h[1], h[2]]) as usize % NODE_COUNT;
    let base = view_base_cached(v25);
    let mut b = base.clone();
    let kind = (h[0] & 0x7f) as usize % VIEW_FILES.len();
    let what = VIEW_FILES[kind];
    match kind {
        0 => {
            if parse::apply_info(&mut b, content).is_ok() {
                assert!(
                    b.version >= 27 || b.lighting_complete == 0xffff,
                    "info: lighting_complete accepted in v{}",
                    b.version
                );
                view_fixed_point(what, &b, &render::render_info(&b, 0), |b, c| parse::apply_info(b, c));
            }
        }
        1 => {
            if parse::apply_names(&mut b, content).is_ok() {
                view_fixed_point(what, &b, &render::render_names(&b), |b, c| parse::apply_names(b, c));
            }
        }
        2 => {
            if parse::apply_nodes(pos, &mut b, content).is_ok() {
                let text = render::render_nodes(pos, &b);
                assert_eq!(render::nodes_size(pos, &b), text.len(), "nodes_size differs from the rendered size");
                view_fixed_point(what, &b, &text, |b, c| parse::apply_nodes(pos, b, c));
            }
        }
        3 => {
            if parse::apply_node(&mut b, index, content).is_ok() {
                view_fixed_point(what, &b, &render::render_node(&b, index), |b, c| parse::apply_node(b, index, c));
            }
        }
        4 => {
            if parse::apply_param0(&mut b, content).is_ok() {
                view_block_ok(what, &b);
            }
        }
        5 | 6 => {
            let target = if kind == 5 { &mut b.param1 } else { &mut b.param2 };
            if parse::apply_param(target, content, what).is_ok() {
                view_block_ok(what, &b);
            }
        }
        7 => {
            if parse::apply_timers(pos, &mut b, content).is_ok() {
                view_fixed_point(what, &b, &render::render_timers(pos, &b), |b, c| parse::apply_timers(pos, b, c));
            }
        }
        8 => {
            if parse::apply_objects(&mut b, content).is_ok() {
                view_fixed_point(what, &b, &render::render_objects(&b), |b, c| parse::apply_objects(b, c));
            }
        }
        9 => {
            let e = &mut b.metadata.entries[0];
            if parse::apply_private(e, content, version).is_ok() {
                let text = render::render_meta_file(e, MetaFile::Private);
                let mut e2 = e.clone();
                match parse::apply_private(&mut e2, &text, version) {
                    Ok(()) => assert!(e2 == *e, "private: parse(render(e)) != e"),
                    Err(err) => panic!("private: the rendered file does not parse: {err}\nfile: {}", show(&text)),
                }
                view_block_ok(what, &b);
            }
        }
        10 => {
            let e = &mut b.metadata.entries[0];
            if parse::apply_inventory(e, content).is_ok() {
                let text = e.inventory.clone();
                assert_eq!(inventory::scan_end(&text), Some(text.len()), "stored inventory not delimited by scan_end");
                let mut e2 = e.clone();
                match parse::apply_inventory(&mut e2, &text) {
                    Ok(()) => assert!(e2 == *e, "inventory: parse(render(e)) != e"),
                    Err(err) => panic!("inventory: the stored text does not parse: {err}\nfile: {}", show(&text)),
                }
                view_block_ok(what, &b);
            }
        }
        _ => {
            let key: &[u8] = if h[1] & 1 == 1 { b"infotext" } else { b"new key" };
            if let Ok(v) = parse::field_value(content) {
                let e = &mut b.metadata.entries[0];
                if parse::set_field(e, key, v.clone()).is_ok() {
                    assert!(e.get(key).map(|x| &x.value) == Some(&v), "field: value not set");
                    assert!(
                        parse::field_value(&render::render_field(&v)).as_ref() == Ok(&v),
                        "field: parse(render(v)) != v"
                    );
                    view_block_ok(what, &b);
                }
            }
        }
    }
}

// ------------------------------------------------- Teeworlds/DDNet maps

use worldfs::documents::twmap::TwMap;
use worldfs_codec::twmap::datafile::Datafile;
use worldfs::documents::{Context, Document};

/// `twmap_datafile`: a `.map` file read by the container codec. When it
/// decodes: it encodes, the encoding decodes to the same datafile, and
/// encoding that again gives the same bytes (DDNet's layout is a fixed
/// point).
pub fn twmap_datafile(data: &[u8]) {
    let Ok(df) = Datafile::decode(data) else { return };
    let bytes = df.encode().unwrap_or_else(|e| panic!("a decoded datafile does not encode: {e}"));
    let back = Datafile::decode(&bytes).unwrap_or_else(|e| panic!("our encoding does not decode: {e}"));
    assert!(back == df, "decode(encode(df)) != df");
    assert!(back.encode().unwrap() == bytes, "encode is not a fixed point");
}

/// Tile layers at most this large are rendered by `twmap_map` (rendering a
/// huge layer is slow, not wrong).
const RENDER_TILES: i64 = 1 << 20;

/// `twmap_map`: a `.map` file read as a map (items, the loader's checks,
/// tile unpacking). Seeded with the real maps in version 3 form (raw data)
/// as well, so mutations reach the items behind zlib. When it decodes:
/// every file renders, writing back any writable file's content changes
/// nothing, and the map encodes to a file that decodes to the same map.
pub fn twmap_map(data: &[u8]) {
    let Ok(doc) = TwMap::decode(data, &Context::default()) else { return };
    let bytes = doc.encode().unwrap_or_else(|e| panic!("a decoded map does not encode: {e}"));
    let back =
        TwMap::decode(&bytes, &Context::default()).unwrap_or_else(|e| panic!("our encoding does not decode: {e}"));
    assert!(back.map().df == doc.map().df, "decode(encode(map)) != map");
    assert_eq!(back.entries(), doc.entries(), "the tree changed through encoding");
    let m = doc.map();
    let large = (0..m.index.groups.len()).any(|g| {
        (0..m.index.groups[g].layers.len()).any(|l| match m.layer(g, l) {
            worldfs_codec::twmap::items::Layer::Tiles(t) => t.width as i64 * t.height as i64 > RENDER_TILES,
            _ => false,
        })
    });
    if large {
        return;
    }
    for e in doc.entries().into_iter().filter(|e| !e.dir) {
        let content = doc.render(&e.path).unwrap_or_else(|err| panic!("{} does not render: {err}", e.path));
        if e.writable {
            let mut d = doc.clone();
            if let Err(err) = d.apply(&e.path, &content) {
                panic!("{}: writing back what it shows is refused: {err}\nfile: {}", e.path, show(&content));
            }
            assert!(d.encode().unwrap() == bytes, "{}: writing back what it shows changed the map", e.path);
        }
    }
}

fn twmap_example() -> &'static TwMap {
    static DOC: OnceLock<TwMap> = OnceLock::new();
    DOC.get_or_init(|| {
        let bytes = worldfs_codec::twmap::example::example().encode().unwrap();
        TwMap::decode(&bytes, &Context::default()).unwrap()
    })
}

/// The writable files of the example map, in order (byte 0 of a
/// `twmap_view_files` input picks one).
pub fn twmap_writable() -> Vec<String> {
    twmap_example().entries().into_iter().filter(|e| e.writable).map(|e| e.path).collect()
}

/// `twmap_view_files`: byte 0 picks a writable file of the example map
/// (`twmap_writable`), the rest is written to it. When the write is
/// accepted: the map encodes and decodes to the same map, the file then
/// shows content that writes back without change, and a refused write left
/// the document as it was.
pub fn twmap_view_files(data: &[u8]) {
    let Some((&pick, content)) = data.split_first() else { return };
    let files = twmap_writable();
    let path = &files[pick as usize % files.len()];
    let base = twmap_example();
    let mut doc = base.clone();
    match doc.apply(path, content) {
        Err(_) => {
            assert!(doc.map().df == base.map().df, "{path}: a refused write changed the map");
        }
        Ok(()) => {
            let bytes = doc.encode().unwrap_or_else(|e| panic!("{path}: an accepted write does not encode: {e}"));
            let back = TwMap::decode(&bytes, &Context::default())
                .unwrap_or_else(|e| panic!("{path}: an accepted write gives a map that does not decode: {e}"));
            assert!(back.map().df == doc.map().df, "{path}: decode(encode(map)) != map");
            for e in back.entries().into_iter().filter(|e| e.writable) {
                let shown = back.render(&e.path).unwrap();
                let mut again = back.clone();
                again.apply(&e.path, &shown).unwrap_or_else(|err| panic!("{}: refuses what it shows: {err}", e.path));
                assert!(again.encode().unwrap() == bytes, "{}: writing back what it shows changed the map", e.path);
            }
        }
    }
}
