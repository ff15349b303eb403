//! Rendering a decoded block into file contents.

use super::{BlockFile, MetaFile, decimal, escape, quote_always, quote_text};
use std::io::Write;
use worldfs_codec::luanti::block::{Block, NODE_COUNT, index_xyz};
use worldfs_codec::luanti::nodemeta::MetaEntry;
use worldfs_codec::luanti::objects::{LUA_ENTITY, LuaEntity, StaticObject};
use worldfs_store::BlockPos;

/// The content of one file of a decodable block directory; None for
/// `schematic.mts`, which the layer that knows schematics makes
/// (`crate::worlds::luanti::cache::render_block_file`).
pub(crate) fn render_block_file(pos: BlockPos, block: &Block, blob: &[u8], file: BlockFile) -> Option<Vec<u8>> {
    Some(match file {
        BlockFile::Info => render_info(block, blob.len()),
        BlockFile::Names => render_names(block),
        BlockFile::Nodes => render_nodes(pos, block),
        BlockFile::Layers => render_layers(pos, block),
        BlockFile::Param0 => block.param0.iter().flat_map(|id| id.to_be_bytes()).collect(),
        BlockFile::Param1 => block.param1.clone(),
        BlockFile::Param2 => block.param2.clone(),
        BlockFile::Timers => render_timers(pos, block),
        BlockFile::Objects => render_objects(block),
        BlockFile::Raw => blob.to_vec(),
        BlockFile::Schematic => return None,
        BlockFile::Top => super::picture::block_top_png(block, super::picture::colors()),
        BlockFile::Error => Vec::new(),
    })
}

fn yes_no(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

pub fn render_info(b: &Block, blob_len: usize) -> Vec<u8> {
    format!(
        "version = {}\nunderground = {}\ngenerated = {}\nday_night_differs = {}\n\
         lighting_complete = 0x{:04x}\ntimestamp = {}\ncontent_width = {}\nparams_width = 2\n\
         names = {}\nmetadata = {}\ntimers = {}\nobjects = {}\nblob_bytes = {}\n",
        b.version,
        yes_no(b.is_underground()),
        yes_no(b.is_generated()),
        yes_no(b.day_night_differs()),
        b.lighting_complete,
        b.timestamp,
        b.content_width,
        b.mapping.len(),
        b.metadata.entries.len(),
        b.timers.len(),
        b.objects.objects.len(),
        blob_len,
    )
    .into_bytes()
}

#[allow(clippy::unwrap_used, reason = "writing into a Vec<u8> cannot fail")]
pub fn render_names(b: &Block) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.mapping.len() * 20);
    for m in &b.mapping {
        write!(out, "{} ", m.id).unwrap();
        out.extend_from_slice(&quote_text(&m.name));
        out.push(b'\n');
    }
    out
}

/// The name shown for a content id with no mapping entry.
pub(crate) fn unmapped_name(id: u16) -> String {
    format!("?{id}")
}

/// The name column of `nodes`, indexed by content id (ids are dense in
/// practice, so a table beats hashing 4096 lookups).
fn node_names(b: &Block) -> Vec<Vec<u8>> {
    let max = b.param0.iter().copied().max().unwrap_or(0) as usize;
    let mut names: Vec<Option<Vec<u8>>> = vec![None; max + 1];
    for &id in &b.param0 {
        let slot = &mut names[id as usize];
        if slot.is_none() {
            *slot = Some(match b.name_of(id) {
                Some(n) => quote_text(n),
                None => unmapped_name(id).into_bytes(),
            });
        }
    }
    names.into_iter().map(Option::unwrap_or_default).collect()
}

fn label_of(b: &Block, id: u16, param2: u8) -> String {
    let name = match b.name_of(id) {
        Some(n) => String::from_utf8_lossy(&quote_text(n)).into_owned(),
        None => unmapped_name(id),
    };
    match param2 {
        0 => name,
        p2 => format!("{name} param2={p2}"),
    }
}

/// The label of every node of a block, as an index into a list of the
/// distinct labels (made once per distinct id and param2).
pub(crate) fn layers_labels(b: &Block) -> (Vec<String>, Vec<u32>) {
    let mut distinct: Vec<String> = Vec::new();
    let mut seen: std::collections::HashMap<(u16, u8), u32> = std::collections::HashMap::new();
    let mut of_node = vec![0u32; NODE_COUNT];
    for (slot, key) in of_node.iter_mut().zip(b.param0.iter().copied().zip(b.param2.iter().copied())) {
        *slot = *seen.entry(key).or_insert_with(|| {
            distinct.push(label_of(b, key.0, key.1));
            distinct.len() as u32 - 1
        });
    }
    (distinct, of_node)
}

/// Characters a label would like in `layers`: `.` for air, `?` for ignore,
/// else the first letter of the item name, in both cases.
pub(crate) fn layers_preferred(label: &str) -> Vec<char> {
    let name = label.split(' ').next().unwrap_or(label);
    match name {
        "air" => vec!['.'],
        "ignore" => vec!['?'],
        _ => {
            let item = name.rsplit(':').next().unwrap_or(name);
            item.chars().take(1).flat_map(|c| [c.to_ascii_lowercase(), c.to_ascii_uppercase()]).collect()
        }
    }
}

/// The drawing of a block's box in world coordinates (`layers`).
pub(crate) fn layers_frame(pos: BlockPos) -> super::layers::Frame {
    let (ox, oy, oz) = pos.origin();
    super::layers::Frame {
        size: [16, 16, 16],
        origin: [ox as i64, oy as i64, oz as i64],
        rows: super::layers::Rows::ZDescending,
    }
}

/// The legend of a block's `layers` and each node's entry in it.
fn layers_legend(b: &Block) -> (Vec<super::layers::LegendEntry>, Vec<usize>) {
    use super::layers::LegendBuilder;
    let (labels, of_node) = layers_labels(b);
    let mut legend = LegendBuilder::new();
    let mut char_of: Vec<Option<usize>> = vec![None; labels.len()];
    let mut cells = vec![0usize; NODE_COUNT];
    // Labels in first-use order along the file (bottom level first).
    for y in 0..16 {
        for z in (0..16).rev() {
            for x in 0..16 {
                let i = worldfs_codec::luanti::block::node_index(x, y, z);
                let l = of_node[i] as usize;
                cells[i] = *char_of[l].get_or_insert_with(|| legend.index(&labels[l], &layers_preferred(&labels[l])));
            }
        }
    }
    (legend.into_entries(), cells)
}

/// `layers`: the block drawn as text, one character per node (see
/// `view::layers`); legend labels are names with param2 when not 0.
pub fn render_layers(pos: BlockPos, b: &Block) -> Vec<u8> {
    let (legend, cells) = layers_legend(b);
    super::layers::render(&layers_frame(pos), &legend, |x, y, z| {
        cells[worldfs_codec::luanti::block::node_index(x, y, z)]
    })
    .into_bytes()
}

/// The size of `layers` without drawing it (`ls -l` of many blocks).
pub(crate) fn layers_size(pos: BlockPos, b: &Block) -> usize {
    let (legend, cells) = layers_legend(b);
    let mut per_entry = vec![0usize; legend.len()];
    for c in cells {
        per_entry[c] += 1;
    }
    super::layers::rendered_len(&layers_frame(pos), &legend, &per_entry)
}

/// Decimal text of 0..=255, for param1 and param2.
fn byte_texts() -> &'static [String; 256] {
    static T: std::sync::OnceLock<[String; 256]> = std::sync::OnceLock::new();
    T.get_or_init(|| std::array::from_fn(|i| i.to_string()))
}

/// The nodes file: 4096 lines, so it is assembled from precomputed pieces
/// (coordinate and parameter texts) rather than formatted number by number.
pub fn render_nodes(pos: BlockPos, b: &Block) -> Vec<u8> {
    let names = node_names(b);
    let (ox, oy, oz) = pos.origin();
    let axis = |o: i32| -> Vec<String> { (0..16).map(|d| format!("{} ", o + d)).collect() };
    let (xs, ys, zs) = (axis(ox), axis(oy), axis(oz));
    let bytes = byte_texts();
    let mut out = Vec::with_capacity(nodes_size(pos, b));
    for i in 0..NODE_COUNT {
        let (x, y, z) = index_xyz(i);
        out.extend_from_slice(xs[x].as_bytes());
        out.extend_from_slice(ys[y].as_bytes());
        out.extend_from_slice(zs[z].as_bytes());
        out.extend_from_slice(&names[b.param0[i] as usize]);
        out.push(b' ');
        out.extend_from_slice(bytes[b.param1[i] as usize].as_bytes());
        out.push(b' ');
        out.extend_from_slice(bytes[b.param2[i] as usize].as_bytes());
        out.push(b'\n');
    }
    out
}

fn digits(v: i32) -> usize {
    (v < 0) as usize + v.unsigned_abs().checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// The exact length of [`render_nodes`], computed without rendering.
pub fn nodes_size(pos: BlockPos, b: &Block) -> usize {
    let names = node_names(b);
    let (ox, oy, oz) = pos.origin();
    // Coordinates: each of the 16 values of an axis appears 256 times.
    let axis = |o: i32| (0..16).map(|d| digits(o + d)).sum::<usize>() * 256;
    let coords = axis(ox) + axis(oy) + axis(oz);
    let rest: usize = (0..NODE_COUNT)
        .map(|i| names[b.param0[i] as usize].len() + digits(b.param1[i] as i32) + digits(b.param2[i] as i32))
        .sum();
    coords + rest + NODE_COUNT * 6
}

/// The file `node/X,Y,Z`: "<name> <param1> <param2>".
pub fn render_node(b: &Block, i: usize) -> Vec<u8> {
    let id = b.param0[i];
    let mut out = match b.name_of(id) {
        Some(n) => quote_text(n),
        None => unmapped_name(id).into_bytes(),
    };
    out.extend_from_slice(format!(" {} {}\n", b.param1[i], b.param2[i]).as_bytes());
    out
}

/// World node coordinates of an in-block position.
pub fn node_coords(pos: BlockPos, p16: u16) -> (i32, i32, i32) {
    let (ox, oy, oz) = pos.origin();
    let (x, y, z) = index_xyz(p16 as usize);
    (ox + x as i32, oy + y as i32, oz + z as i32)
}

#[allow(clippy::unwrap_used, reason = "writing into a Vec<u8> cannot fail")]
pub fn render_timers(pos: BlockPos, b: &Block) -> Vec<u8> {
    let mut out = Vec::new();
    for t in &b.timers {
        let (x, y, z) = node_coords(pos, t.pos);
        writeln!(
            out,
            "{x} {y} {z} {} {}",
            decimal::format(t.timeout as i64, 1000),
            decimal::format(t.elapsed as i64, 1000)
        )
        .unwrap();
    }
    out
}

/// Node coordinates of an object position (world units x1000; 10 world
/// units per node).
fn object_pos(p: [i32; 3]) -> String {
    let c = |v: i32| decimal::format(v as i64, 10_000);
    format!("{},{},{}", c(p[0]), c(p[1]), c(p[2]))
}

#[allow(clippy::unwrap_used, reason = "writing into a Vec<u8> cannot fail")]
pub(crate) fn render_object(o: &StaticObject) -> Vec<u8> {
    let mut out = Vec::new();
    let entity = if o.kind == LUA_ENTITY { LuaEntity::decode(&o.data) } else { None };
    match entity {
        Some(e) => {
            let deg = |v: i32| decimal::format(v as i64, 1000);
            let vel = |v: i32| decimal::format(v as i64, 10_000);
            write!(out, "lua_entity {} ", object_pos(o.pos)).unwrap();
            out.extend_from_slice(&quote_text(&e.name));
            write!(
                out,
                " hp={} velocity={},{},{} yaw={}",
                e.hp,
                vel(e.velocity[0]),
                vel(e.velocity[1]),
                vel(e.velocity[2]),
                deg(e.yaw)
            )
            .unwrap();
            if let Some((p, r)) = e.pitch_roll {
                write!(out, " pitch={} roll={}", deg(p), deg(r)).unwrap();
            }
            if let Some(g) = e.guid {
                out.extend_from_slice(b" guid=");
                for b in g {
                    write!(out, "{b:02x}").unwrap();
                }
            }
            out.extend_from_slice(b" staticdata=");
            out.extend_from_slice(&quote_always(&e.staticdata));
        }
        None => {
            write!(out, "object type={} {} data=", o.kind, object_pos(o.pos)).unwrap();
            out.extend_from_slice(&quote_always(&o.data));
        }
    }
    out.push(b'\n');
    out
}

pub fn render_objects(b: &Block) -> Vec<u8> {
    b.objects.objects.iter().flat_map(render_object).collect()
}

/// The name of the directory of a metadata entry: world node coordinates.
pub fn meta_dir_name(pos: BlockPos, p16: u16) -> String {
    let (x, y, z) = node_coords(pos, p16);
    format!("{x},{y},{z}")
}

/// The content of a metadata file.
pub fn render_meta_file(entry: &MetaEntry, file: MetaFile) -> Vec<u8> {
    match file {
        MetaFile::Inventory => entry.inventory.clone(),
        MetaFile::Private => {
            let mut out = Vec::new();
            for v in entry.vars.iter().filter(|v| v.private) {
                out.extend_from_slice(&escape::key_to_name(&v.key));
                out.push(b'\n');
            }
            out
        }
    }
}

/// A field file: the value plus one newline.
pub fn render_field(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() + 1);
    out.extend_from_slice(value);
    out.push(b'\n');
    out
}

/// The field file names of an entry, in stored order, without duplicates
/// (for a duplicated key the engine uses the last value).
pub(crate) fn field_names(entry: &MetaEntry) -> Vec<Vec<u8>> {
    let mut seen = std::collections::HashSet::new();
    let mut names = Vec::new();
    for v in &entry.vars {
        if seen.insert(v.key.as_slice()) {
            let n = escape::key_to_name(&v.key);
            if n.len() <= 255 {
                names.push(n);
            } else {
                log::warn!("metadata key of {} bytes cannot be shown as a file name", v.key.len());
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldfs_codec::luanti::block::{MappingEntry, node_index};
    use worldfs_codec::luanti::nodemeta::MetaVar;

    fn block() -> Block {
        let mut b = Block::new_air(29);
        b.mapping.push(MappingEntry { id: 1, name: b"default:chest".to_vec() });
        b.param0[node_index(1, 2, 3)] = 1;
        b.param0[node_index(2, 2, 3)] = 9;
        b
    }

    #[test]
    fn nodes_are_world_coordinates_x_fastest() {
        let pos = BlockPos::new(-1, 0, 2);
        let text = String::from_utf8(render_nodes(pos, &block())).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4096);
        assert_eq!(lines[0], "-16 0 32 air 15 0");
        assert_eq!(lines[1], "-15 0 32 air 15 0");
        assert_eq!(lines[16], "-16 1 32 air 15 0");
        assert_eq!(lines[node_index(1, 2, 3)], "-15 2 35 default:chest 15 0");
        assert_eq!(lines[node_index(2, 2, 3)], "-14 2 35 ?9 15 0");
    }

    #[test]
    fn nodes_size_is_exact() {
        let mut b = block();
        b.param1[5] = 200;
        b.param2[4095] = 17;
        for pos in [BlockPos::new(0, 0, 0), BlockPos::new(-1, -700, 2047), BlockPos::new(-2048, 1, 99)] {
            assert_eq!(nodes_size(pos, &b), render_nodes(pos, &b).len(), "{pos}");
        }
    }

    #[test]
    fn layers_size_is_exact() {
        let mut b = block();
        b.param2[4] = 9;
        // Enough labels to need characters of other scripts (2 bytes).
        for i in 0..200u16 {
            b.mapping.push(worldfs_codec::luanti::MappingEntry { id: 100 + i, name: format!("m:n{i}").into_bytes() });
            b.param0[1000 + i as usize] = 100 + i;
        }
        for pos in [BlockPos::new(0, 0, 0), BlockPos::new(-1, -700, 2047)] {
            assert_eq!(layers_size(pos, &b), render_layers(pos, &b).len(), "{pos}");
        }
    }

    #[test]
    fn names_info_and_meta_files() {
        let mut b = block();
        assert_eq!(render_names(&b), b"0 air\n1 default:chest\n");
        b.mapping.push(MappingEntry { id: 2, name: b"odd name".to_vec() });
        assert!(render_names(&b).ends_with(b"2 \"odd name\"\n"));
        let info = String::from_utf8(render_info(&b, 99)).unwrap();
        assert!(info.contains("version = 29\n") && info.contains("generated = true\n"));
        assert!(info.contains("lighting_complete = 0xffff\n") && info.contains("blob_bytes = 99\n"));
        let mut e = MetaEntry::new(5);
        e.vars.push(MetaVar { key: b"owner".to_vec(), value: b"sam".to_vec(), private: true });
        e.vars.push(MetaVar { key: b".x".to_vec(), value: b"1".to_vec(), private: true });
        assert_eq!(render_meta_file(&e, MetaFile::Private), b"owner\n%2Ex\n");
        assert_eq!(render_meta_file(&e, MetaFile::Inventory), b"EndInventory\n");
        assert_eq!(meta_dir_name(BlockPos::new(1, -1, 0), 5 + 16 + 256), "21,-15,1");
    }

    #[test]
    fn objects_and_timers() {
        let mut b = block();
        let e = LuaEntity {
            name: b"mobs:sheep".to_vec(),
            staticdata: b"{hp=3}".to_vec(),
            hp: 10,
            velocity: [0, -10000, 5000],
            yaw: 90000,
            pitch_roll: Some((0, 0)),
            guid: None,
        };
        b.objects.objects.push(StaticObject { kind: 7, pos: [125000, 0, -10000], data: e.encode() });
        b.objects.objects.push(StaticObject { kind: 1, pos: [0, 0, 0], data: b"\x00\x01".to_vec() });
        let text = String::from_utf8(render_objects(&b)).unwrap();
        assert_eq!(
            text,
            "lua_entity 12.5,0,-1 mobs:sheep hp=10 velocity=0,-1,0.5 yaw=90 pitch=0 roll=0 staticdata=\"{hp=3}\"\n\
             object type=1 0,0,0 data=\"\\u0000\\u0001\"\n"
        );
        b.timers.push(worldfs_codec::luanti::objects::NodeTimer { pos: 1, timeout: 30000, elapsed: 1500 });
        assert_eq!(render_timers(BlockPos::new(0, 0, 0), &b), b"1 0 0 30 1.5\n");
    }
}
