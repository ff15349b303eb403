//! A stable-toolchain stand-in for libFuzzer: every target body gets its
//! built-in seeds, every file of `corpus/<target>/` and `artifacts/<target>/`
//! (if present), and then pseudo-random inputs: fresh bytes and mutated
//! seeds from a fixed-seed PRNG. `WORLDFS_FUZZ_SMOKE_ITERS` (default 3000)
//! sets how many per target; `WORLDFS_FUZZ_SMOKE_SEED` changes the PRNG
//! seed. A failing input is printed in hex.

use super::*;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use worldfs_codec::bytes::WriteBe;

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// Bytes that matter to the parsers, for insertion by the mutator.
const TOKENS: &[&[u8]] = &[
    b"\n",
    b" ",
    b"\"",
    b"\\",
    b"\\u00",
    b"\\u0001",
    b"\\u0002",
    b"\\u0003",
    b"\x01",
    b"\x02",
    b"\x03",
    b"\xff",
    b"\xe2\x82\xac",
    b"%",
    b"%2F",
    b".",
    b"-",
    b",",
    b"=",
    b"0",
    b"65535",
    b"65536",
    b"2147483648",
    b"-2147483648",
    b"List ",
    b"Width ",
    b"Item ",
    b"Empty",
    b"EndInventoryList",
    b"EndInventory",
    b"end",
    b"lua_entity ",
    b"object type=",
    b" hp=",
    b" guid=",
    b" staticdata=",
    b" data=",
    b"?1",
    b"version = ",
    b"lighting_complete = 0x",
];

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = v.len();
        match rng.below(8) {
            0 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                v[i] = rng.next() as u8;
            }
            2 => {
                let i = rng.below(len + 1);
                let n = 1 + rng.below(8);
                let b = rng.bytes(n);
                v.splice(i..i, b);
            }
            3 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(64));
                v.drain(i..i + n);
            }
            4 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(64));
                let part = v[i..i + n].to_vec();
                let at = rng.below(len + 1);
                v.splice(at..at, part);
            }
            5 => v.truncate(rng.below(len + 1)),
            6 if len > 0 => {
                // Big-endian length fields: set a u16/u32 to an edge value.
                let i = rng.below(len);
                let edge = [0u8, 0xff, 0x7f, 0x80][rng.below(4)];
                for c in v.iter_mut().skip(i).take(1 + rng.below(4)) {
                    *c = edge;
                }
            }
            _ => {
                let i = rng.below(len + 1);
                v.splice(i..i, TOKENS[rng.below(TOKENS.len())].iter().copied());
            }
        }
    }
    v
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|c| format!("{c:02x}")).collect()
}

fn files_in(dir: &Path) -> Vec<Vec<u8>> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut paths: Vec<_> = rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
    paths.sort();
    paths.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

pub(crate) fn run(target: &str, f: fn(&[u8]), mut seeds: Vec<Vec<u8>>) {
    let call = |input: &[u8], origin: &str| {
        if catch_unwind(AssertUnwindSafe(|| f(input))).is_err() {
            panic!("{target}: failing input ({origin}, {} bytes): {}", input.len(), hex(input));
        }
    };
    for s in &seeds {
        call(s, "built-in seed");
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = files_in(&root.join("corpus").join(target));
    for s in &corpus {
        call(s, "corpus file");
    }
    for s in files_in(&root.join("artifacts").join(target)) {
        call(&s, "artifact file");
    }
    // Inputs that once failed, kept in git.
    for s in files_in(&root.join("regressions").join(target)) {
        call(&s, "regression file");
    }
    // Mutate the corpus too, but not all of a large one.
    seeds.extend(corpus.into_iter().take(200));
    let iters = env_num("WORLDFS_FUZZ_SMOKE_ITERS", 3000);
    let mut rng = Rng(env_num("WORLDFS_FUZZ_SMOKE_SEED", 0x5eed) ^ target.len() as u64);
    for _ in 0..iters {
        let input = if seeds.is_empty() || rng.below(4) == 0 {
            let n = rng.below(80);
            rng.bytes(n)
        } else {
            let s = &seeds[rng.below(seeds.len())];
            mutate(&mut rng, s)
        };
        call(&input, "generated");
    }
}

pub(crate) fn sample_blobs() -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = (MIN_WRITE_VERSION..=MAX_VERSION).map(|v| view_base(v).encode().unwrap()).collect();
    let mut one = view_base(27);
    one.content_width = 1;
    one.mapping.push(MappingEntry { id: 2048, name: b"x:high".to_vec() });
    one.param0[9] = 2048;
    out.push(one.encode().unwrap());
    // The engine's all-`ignore` block (see crates/codec/src/luanti/block.rs).
    let ignore = "1d28b52ffd0058f50000a808ff0000010000000669676e6f72650202000a000002000000b09700b0";
    out.push((0..ignore.len()).step_by(2).map(|i| u8::from_str_radix(&ignore[i..i + 2], 16).unwrap()).collect());
    out
}

fn legacy_meta_sample() -> Vec<u8> {
    let mut d = Vec::new();
    d.put_u16(1);
    d.put_u16(3);
    let mut sign = Vec::new();
    sign.put_string16(b"hi");
    for (pos, kind, body) in [
        (1u16, 14i16, sign),
        (2, 15, b"List 0 2\nWidth 0\nItem default:dirt 3\nEmpty\nEndInventoryList\nEndInventory\n".to_vec()),
        (3, 16, b"List fuel 1\nWidth 0\nEmpty\nEndInventoryList\nEndInventory\n15 7 0 30".to_vec()),
    ] {
        d.put_u16(pos);
        d.put_i16(kind);
        d.put_string16(&body);
    }
    d
}

const INVENTORIES: &[&[u8]] = &[
    b"List main 4\nWidth 0\nItem default:dirt 42\nItem default:pick_steel\nEmpty\nEmpty\nEndInventoryList\nEndInventory\n",
    b"EndInventory\n",
    b"List a 1\nWidth 3\nItem \"odd name\" 2 7 \"\\u0001k\\u0002v\\u0003\"\nEndInventoryList\nList b 0\nWidth 0\nEndInventoryList\nEndInventory\n",
];

const ITEMS: &[&[u8]] = &[
    b"default:dirt 42",
    b"default:pick_steel 1 1234",
    b"\"foo bar\" 3",
    b"default:pick_steel 1 1234 \"\\u0001color\\u0002#ff0000\\u0003description\\u0002FUSE pick\\u0003\"",
    b"default:dirt 5 0 \"\\u0001description\\u0002Gr\\u00c3\\u00bc\\u00c3\\u009fe\\u0003\"",
    "default:dirt 5 0 \"\\u0001description\\u0002Grüße\\u0003\"".as_bytes(),
];

#[test]
fn block_decode_smoke() {
    run("block_decode", block_decode, sample_blobs());
}

#[test]
fn block_body_smoke() {
    let flats = sample_blobs().iter().map(|b| block::uncompressed(b).unwrap()).collect();
    run("block_body", block_body, flats);
}

#[test]
fn compress_flat_inverts_uncompressed() {
    for blob in sample_blobs() {
        let flat = block::uncompressed(&blob).unwrap();
        assert_eq!(block::uncompressed(&compress_flat(&flat)).unwrap(), flat);
        assert_eq!(Block::decode(&compress_flat(&flat)).unwrap(), Block::decode(&blob).unwrap());
    }
}

#[test]
fn zlib_stored_inflates() {
    let mut rng = Rng(1);
    for n in [0, 1, 5552, 65535, 65536, 200_000] {
        let data = rng.bytes(n);
        let z = zlib_stored(&data);
        let tail = b"after";
        let blob = [&z[..], tail].concat();
        let (back, used) = worldfs_codec::compress::inflate_zlib(&blob, 0, "test", 0).unwrap();
        assert_eq!(back, data);
        assert_eq!(used, z.len());
    }
}

#[test]
fn block_sections_smoke() {
    let b = view_base(29);
    let mut meta = vec![0];
    b.metadata.encode(29, &mut meta);
    let mut objs = vec![2];
    b.objects.encode(&mut objs);
    let lua = [&[3u8][..], &b.objects.objects[0].data].concat();
    run("block_sections", block_sections, vec![meta, [&[1u8][..], &legacy_meta_sample()].concat(), objs, lua]);
}

#[test]
fn inventory_parse_smoke() {
    run("inventory_parse", inventory_parse, INVENTORIES.iter().map(|s| s.to_vec()).collect());
}

#[test]
fn itemstring_parse_smoke() {
    run("itemstring_parse", itemstring_parse, ITEMS.iter().map(|s| s.to_vec()).collect());
}

#[test]
fn jsonish_unquote_smoke() {
    let seeds = ITEMS.iter().flat_map(|s| [[&[1u8][..], s].concat(), [&[0u8][..], s].concat()]);
    let quoted = [&b"\x01\"a\\u00ff\\n\\\"b\"rest"[..], b"\x00\"\\q\\u0141\""].map(|s| s.to_vec());
    run("jsonish_unquote", jsonish_unquote, seeds.chain(quoted).collect());
}

#[test]
fn escape_names_smoke() {
    let seeds = [&b"infotext"[..], b"", b".hidden", b"a/b", b"50%", b"x\ny\0", b"%2Ea.b", b"%41", b"%"];
    run("escape_names", escape_names, seeds.iter().map(|s| s.to_vec()).collect());
}

#[test]
fn decimal_smoke() {
    let mut seeds: Vec<Vec<u8>> = ["1.5", "-1.5", "0", "0.001", "-0.03", "30", "12.5", "2147483.647", "-2147483.648"]
        .map(|s| [&[3u8][..], s.as_bytes()].concat())
        .to_vec();
    seeds.push([&[4u8][..], &1_500i64.to_le_bytes()[..]].concat());
    seeds.push([&[9u8][..], &i64::MIN.to_le_bytes()[..]].concat());
    run("decimal", decimal, seeds);
}

#[test]
fn view_files_smoke() {
    let pos = BlockPos::new(1, -2, 3);
    let mut seeds = Vec::new();
    for v25 in [false, true] {
        let b = view_base(if v25 { 25 } else { 29 });
        let e = &b.metadata.entries[0];
        let files: [Vec<u8>; 12] = [
            render::render_info(&b, 100),
            render::render_names(&b),
            render::render_nodes(pos, &b),
            render::render_node(&b, 5),
            b.param0.iter().flat_map(|id| id.to_be_bytes()).collect(),
            b.param1.clone(),
            b.param2.clone(),
            render::render_timers(pos, &b),
            render::render_objects(&b),
            render::render_meta_file(e, MetaFile::Private),
            render::render_meta_file(e, MetaFile::Inventory),
            render::render_field(b"hello\n"),
        ];
        for (kind, f) in files.iter().enumerate() {
            seeds.push([&view_header(kind, v25, pos)[..], f].concat());
        }
    }
    // Every rendered file applies as it is.
    for s in &seeds {
        view_files(s);
    }
    run("view_files", view_files, seeds);
}

/// The example map, as DDNet writes it (v4) and with raw data (v3).
fn twmap_seeds() -> Vec<Vec<u8>> {
    let df = worldfs_codec::twmap::example::example();
    let mut v3 = df.clone();
    v3.version = 3;
    vec![df.encode().unwrap(), v3.encode().unwrap()]
}

#[test]
fn twmap_datafile_smoke() {
    run("twmap_datafile", twmap_datafile, twmap_seeds());
}

#[test]
fn twmap_map_smoke() {
    run("twmap_map", twmap_map, twmap_seeds());
}

#[test]
fn twmap_view_files_smoke() {
    use worldfs::documents::twmap::TwMap;
    use worldfs::documents::{Context, Document};
    let doc = TwMap::decode(&twmap_seeds()[0], &Context::default()).unwrap();
    let seeds: Vec<Vec<u8>> =
        twmap_writable().iter().enumerate().map(|(i, p)| [&[i as u8][..], &doc.render(p).unwrap()].concat()).collect();
    // Every rendered file applies as it is.
    for s in &seeds {
        twmap_view_files(s);
    }
    run("twmap_view_files", twmap_view_files, seeds);
}
