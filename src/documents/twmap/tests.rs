//! The map document on a small map built here: edits through its files,
//! and bad maps and bad writes with their exact errors. (The real maps are
//! in tests/twmap_real.rs and tests/twmap_oracle.rs.)

use super::*;
use worldfs_codec::twmap::datafile::Datafile;

use worldfs_codec::twmap::example::{H, W, example as build};

fn doc() -> TwMap {
    TwMap::decode(&build().encode().unwrap(), &Context::default()).unwrap()
}

fn decode_err(df: &Datafile) -> String {
    TwMap::decode(&df.encode().unwrap(), &Context::default()).unwrap_err().to_string()
}

const GAME: &str = "groups/00_Game/layers/00_Game";
const TELE: &str = "groups/00_Game/layers/01_Tele";
const BACK: &str = "groups/01_Back/layers/00_deco";

#[test]
fn the_tree() {
    let d = doc();
    let listed: Vec<String> = d
        .entries()
        .iter()
        .map(|e| format!("{}{}{}", e.path, if e.dir { "/" } else { "" }, if e.writable { " w" } else { "" }))
        .collect();
    assert_eq!(
        listed,
        [
            "info w",
            "images/",
            "images/00_img.png w",
            "images/01_grass_main.external",
            "envelopes/",
            "envelopes/00_fade",
            "groups/",
            "groups/00_Game/",
            "groups/00_Game/group w",
            "groups/00_Game/layers/",
            "groups/00_Game/layers/00_Game/",
            "groups/00_Game/layers/00_Game/info w",
            "groups/00_Game/layers/00_Game/tiles w",
            "groups/00_Game/layers/00_Game/tiles.raw w",
            "groups/00_Game/layers/01_Tele/",
            "groups/00_Game/layers/01_Tele/info w",
            "groups/00_Game/layers/01_Tele/tiles w",
            "groups/00_Game/layers/01_Tele/tiles.raw w",
            "groups/00_Game/layers/02_sky/",
            "groups/00_Game/layers/02_sky/info w",
            "groups/00_Game/layers/02_sky/quads w",
            "groups/01_Back/",
            "groups/01_Back/group w",
            "groups/01_Back/layers/",
            "groups/01_Back/layers/00_deco/",
            "groups/01_Back/layers/00_deco/info w",
            "groups/01_Back/layers/00_deco/tiles w",
            "groups/01_Back/layers/00_deco/tiles.raw w",
            "sounds/",
            "items/",
            "items/automapper-config_0",
            "items/uuid-index_65534",
        ]
    );
    let r = |p: &str| String::from_utf8(d.render(p).unwrap()).unwrap();
    assert_eq!(r("info"), "author = me\nversion = \"\"\ncredits = \"\"\nlicense = \"\"\n\n[settings]\n");
    assert_eq!(r(&format!("{GAME}/tiles")), "1 0 0 0\n0 2 0 0\n0 0 0 0\n");
    assert_eq!(r(&format!("{TELE}/tiles")), "0 7:26 0 0\n0 0 0 0\n0 0 0 0\n");
    assert_eq!(r(&format!("{BACK}/tiles")), "0 0 0 5:8\n0 0 0 0\n0 0 0 0\n");
    assert_eq!(
        r("groups/00_Game/layers/02_sky/quads"),
        "pos 0,0 1024,0 0,1024 1024,1024 pivot 512,512 color 255,255,255,255 255,255,255,255 255,255,255,255 255,255,255,255 \
         uv 0,0 1024,0 0,1024 1024,1024 pos_env -1,0 color_env 0,0\n"
    );
    assert_eq!(
        r(&format!("{BACK}/info")),
        "# the cells of `tiles` are index:flags (trailing zeros left out)\nkind = tiles\nwidth = 4\nheight = 3\nname = deco\n\
         detail = 0\nimage = 0\ncolor = 255 255 255 255\ncolor_env = -1\ncolor_env_offset = 0\n"
    );
    assert!(r("envelopes/00_fade").ends_with("0 linear 1024 1024 1024 1024\n1000 linear 1024 1024 1024 0\n"));
    assert_eq!(r("images/01_grass_main.external").lines().next(), Some("name = grass_main"));
    assert_eq!(
        d.render("items/automapper-config_0").unwrap(),
        [1, 1, 0, -1, 0, 0].iter().flat_map(|v: &i32| v.to_le_bytes()).collect::<Vec<u8>>()
    );
    // The PNG holds the pixels.
    let png = d.render("images/00_img.png").unwrap();
    assert_eq!(view::decode_png(&png, 2, 2, 4).unwrap(), (0..16).collect::<Vec<u8>>());
}

/// Apply, encode, decode: the document as DDNet would next read it.
fn edit(d: &mut TwMap, path: &str, content: &[u8]) -> TwMap {
    d.apply(path, content).unwrap_or_else(|e| panic!("{path}: {e}"));
    TwMap::decode(&d.encode().unwrap(), &Context::default()).unwrap()
}

#[test]
fn edits_reach_the_file() {
    let mut d = doc();
    let tiles = format!("{GAME}/tiles");
    let back = edit(&mut d, &tiles, b"1 0 0 1:2\n0 2 0 0\n0 0 0 9\n");
    assert_eq!(back.render(&tiles).unwrap(), b"1 0 0 1:2\n0 2 0 0\n0 0 0 9\n");
    let raw = back.render(&format!("{GAME}/tiles.raw")).unwrap();
    assert_eq!(&raw[12..16], [1, 2, 0, 0]);

    let back = edit(&mut d, &format!("{TELE}/tiles"), b"0 7:26 0 0\n0 0 0 0\n0 0 3:27 0\n");
    assert_eq!(back.render(&format!("{TELE}/tiles")).unwrap(), b"0 7:26 0 0\n0 0 0 0\n0 0 3:27 0\n");

    let back = edit(&mut d, "info", b"author = someone else\nlicense = CC0\n[settings]\nsv_deepfly 0\n\"  odd \"\n");
    assert_eq!(
        back.render("info").unwrap(),
        b"author = someone else\nversion = \"\"\ncredits = \"\"\nlicense = CC0\n\n[settings]\nsv_deepfly 0\n\"  odd \"\n"
    );
    // Keys left out keep their value; an empty [settings] clears them.
    let back = edit(&mut d, "info", b"[settings]\n");
    assert!(back.render("info").unwrap().starts_with(b"author = someone else\n"));
    assert!(back.render("info").unwrap().ends_with(b"[settings]\n"));
    assert_eq!(back.map().info().unwrap().settings, Some(-1));

    let back = edit(&mut d, "groups/01_Back/group", b"parallax_x = 50\nclipping = 1\nclip_w = 640\n");
    let g = back.map().group(1);
    assert_eq!((g.parallax_x, g.parallax_y, g.clip()), (50, 100, [1, 0, 0, 640, 0]));

    let back = edit(&mut d, &format!("{BACK}/info"), b"color = 10 20 30 40\ndetail = 1\nimage = -1\n");
    let worldfs_codec::twmap::items::Layer::Tiles(t) = back.map().layer(1, 0) else { panic!() };
    assert_eq!((t.color, t.header.flags, t.image), ([10, 20, 30, 40], 1, -1));

    // Renaming a group or a layer renames its directory.
    let mut back = edit(&mut d, "groups/01_Back/group", b"name = Far\n");
    assert!(back.entries().iter().any(|e| e.path == "groups/01_Far/layers/00_deco/tiles"));
    let back = edit(&mut back, "groups/01_Far/layers/00_deco/info", b"name = near\n");
    assert!(back.entries().iter().any(|e| e.path == "groups/01_Far/layers/00_near/tiles"));
}

#[test]
fn an_image_is_replaced_by_a_png_of_its_size() {
    let mut d = doc();
    let px: Vec<u8> = (100..116).collect();
    let back = edit(&mut d, "images/00_img.png", &png(2, 2, &px));
    let im = back.map().image(0);
    assert_eq!(back.map().data(im.data), px);
    // A grey PNG is widened to RGBA.
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, 2, 2);
    enc.set_color(png::ColorType::Grayscale);
    enc.write_header().unwrap().write_image_data(&[0, 50, 100, 255]).unwrap();
    let back = edit(&mut d, "images/00_img.png", &out);
    assert_eq!(back.map().data(back.map().image(0).data)[4..8], [50, 50, 50, 255]);
}

fn png(w: u32, h: u32, px: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgba);
    enc.write_header().unwrap().write_image_data(px).unwrap();
    out
}

#[test]
fn quads_can_be_added_and_removed() {
    let mut d = doc();
    let path = "groups/00_Game/layers/02_sky/quads";
    let one = d.render(path).unwrap();
    let two = [one.clone(), one.clone()].concat();
    let back = edit(&mut d, path, &two);
    assert_eq!(back.render(path).unwrap(), two);
    assert!(back.render("groups/00_Game/layers/02_sky/info").unwrap().windows(9).any(|w| w == b"quads = 2"));
    let back = edit(&mut d, path, b"");
    assert_eq!(back.render(path).unwrap(), b"");
}

/// Apply must fail with `expect`, and leave the document as it was.
fn refused(d: &mut TwMap, path: &str, content: &[u8], expect: &str) {
    let before = d.encode().unwrap();
    let entries = d.entries();
    let e = d.apply(path, content).unwrap_err();
    assert_eq!(e.to_string(), expect, "{path}");
    assert!(d.encode().unwrap() == before, "{path}: a refused write changed the map");
    assert_eq!(d.entries(), entries);
}

#[test]
fn bad_tile_and_image_writes_are_refused_with_file_line_and_column() {
    let mut d = doc();
    let tiles = format!("{GAME}/tiles");
    refused(
        &mut d,
        &tiles,
        b"1 0 0 0\n0 2 0\n0 0 0 0\n",
        &format!("{tiles}: line 2, column 6: the line ends after 3 cells, the layer is 4 wide"),
    );
    refused(
        &mut d,
        &tiles,
        b"1 0 0 0\n0 2 x 0\n0 0 0 0\n",
        &format!("{tiles}: line 2, column 5: cell 3: index \"x\" is not a number (game cells are index:flags)"),
    );
    refused(&mut d, &tiles, b"1 0 0 0\n0 2 0 0\n", &format!("{tiles}: line 2: 2 lines, the layer has 3 rows"));
    let raw = format!("{GAME}/tiles.raw");
    refused(&mut d, &raw, &[0; 47], &format!("{raw}: 47 bytes, the layer needs 48 (4 x 3 tiles of 4 bytes)"));
    let mut bad = vec![0u8; 48];
    bad[4 * 5 + 3] = 1;
    refused(&mut d, &raw, &bad, &format!("{raw}: tile 5 (x 1, y 1, byte 20): padding byte 1 (must be 0)"));
    refused(
        &mut d,
        "images/00_img.png",
        &png(3, 2, &[0; 24]),
        "images/00_img.png: the PNG is 3 x 2 pixels, the image is 2 x 2 (replacing an image needs the same size)",
    );
    refused(
        &mut d,
        "images/00_img.png",
        b"GIF89a",
        "images/00_img.png: not a PNG file this view can read: Invalid PNG signature.",
    );
    refused(&mut d, "envelopes/00_fade", b"name = x\n", "envelopes/00_fade: this file is read-only");
    refused(&mut d, "nope", b"", "nope: no such file in the map");
}

#[test]
fn bad_info_writes_are_refused_with_file_line_and_column() {
    let mut d = doc();
    refused(&mut d, "info", b"author = x\nauthor = y\n", "info: line 2, column 1: author is given twice");
    refused(
        &mut d,
        "info",
        b"title = x\n",
        "info: line 1, column 1: unknown key \"title\" (known: author, version, credits, license, or a [settings] line)",
    );
    refused(
        &mut d,
        "info",
        b"author = 12345678901234567890123456789012\n",
        "info: line 1, column 10: author: 32 bytes, DDNet's editor keeps at most 31",
    );
    refused(
        &mut d,
        "info",
        b"[settings]\n\"a\\u0000b\"\n",
        "info: line 2, column 1: setting: a NUL byte cannot be stored",
    );
}

#[test]
fn bad_layer_info_writes_are_refused_with_file_line_and_column() {
    let mut d = doc();
    let binfo = format!("{BACK}/info");
    refused(
        &mut d,
        &binfo,
        b"width = 5\n",
        &format!("{binfo}: line 1, column 9: width cannot be changed (resizing a layer is not supported)"),
    );
    refused(
        &mut d,
        &binfo,
        b"kind = game\n",
        &format!("{binfo}: line 1, column 8: kind cannot be changed (a layer's kind is fixed)"),
    );
    refused(&mut d, &binfo, b"image = 2\n", &format!("{binfo}: line 1, column 9: image: 2 is outside -1..=1"));
    refused(
        &mut d,
        &binfo,
        b"color = 1 2 3\n",
        &format!("{binfo}: line 1, column 9: color: expected 4 numbers, found 3"),
    );
    refused(
        &mut d,
        &binfo,
        b"color = 1 2 3 256\n",
        &format!("{binfo}: line 1, column 9: color: 256 is outside 0..=255"),
    );
    refused(
        &mut d,
        &binfo,
        b"name = twelve bytes\n",
        &format!("{binfo}: line 1, column 8: name: the name has 12 bytes, at most 11 fit"),
    );
    let tinfo = format!("{TELE}/info");
    refused(
        &mut d,
        &tinfo,
        b"name = Teleport\n",
        &format!("{tinfo}: line 1, column 8: the name of a tele layer cannot be changed (DDNet resets it)"),
    );
    refused(
        &mut d,
        &tinfo,
        b"detail = 1\n",
        &format!("{tinfo}: line 1, column 10: detail of a tele layer cannot be changed (DDNet resets it)"),
    );
}

#[test]
fn bad_quad_and_group_writes_are_refused_with_file_line_and_column() {
    let mut d = doc();
    let quads = "groups/00_Game/layers/02_sky/quads";
    refused(&mut d, quads, b"pos 0,0\n", &format!("{quads}: line 1, column 8: pos needs 4 groups of 2 numbers"));
    let q = String::from_utf8(d.render(quads).unwrap()).unwrap().replace("color_env 0,0", "color_env 3,0");
    refused(
        &mut d,
        quads,
        q.as_bytes(),
        &format!("{quads}: line 1, column 171: color_env: envelope 3 does not exist (-1 for none, the map has 1)"),
    );
    refused(
        &mut d,
        "groups/00_Game/group",
        b"name = Play\n",
        "groups/00_Game/group: line 1, column 8: the name of the game group cannot be changed (DDNet's editor names it Game)",
    );
    refused(
        &mut d,
        "groups/00_Game/group",
        b"offset_x = 1.5\n",
        "groups/00_Game/group: line 1, column 12: offset_x: \"1.5\" is not a number",
    );
}

/// Found by fuzzing (fuzz/regressions/twmap_map): values DDNet's editor
/// would reset (an envelope or image index that does not exist) are taken
/// back as they are, and checked only when they change.
#[test]
fn out_of_range_indices_the_map_holds_are_taken_back() {
    let mut df = build();
    let mut quad = df.data[7].bytes().unwrap().to_vec();
    quad[36 * 4..36 * 4 + 4].copy_from_slice(&5i32.to_le_bytes()); // color_env 5
    df.set_data(7, quad);
    df.items[11].data[13] = 9; // image 9 of 2
    let mut d = TwMap::decode(&df.encode().unwrap(), &Context::default()).unwrap();
    let quads = "groups/00_Game/layers/02_sky/quads";
    for path in [quads, "groups/01_Back/layers/00_deco/info"] {
        let shown = d.render(path).unwrap();
        edit(&mut d, path, &shown);
    }
    let changed = String::from_utf8(d.render(quads).unwrap()).unwrap().replace("pivot 512,512", "pivot 0,0");
    refused(
        &mut d,
        quads,
        changed.as_bytes(),
        &format!("{quads}: line 1, column 167: color_env: envelope 5 does not exist (-1 for none, the map has 1)"),
    );
    let info = format!("{BACK}/info");
    edit(&mut d, &info, b"image = 9\ncolor_env = -1\n");
    refused(&mut d, &info, b"image = 8\n", &format!("{info}: line 1, column 9: image: 8 is outside -1..=1"));
}

#[test]
fn bad_maps_are_refused_with_what_and_where() {
    // Tile data shorter than width x height.
    let mut df = build();
    df.set_data(4, vec![0; W * H * 4 - 4]);
    assert_eq!(
        decode_err(&df),
        "layer 0 of group 0 (item 7 at byte 576): tile data (data item 4 at byte 1102) is truncated: 11 tiles, the layer has 12 (4 x 3)"
    );
    // An embedded image whose data is too small.
    let mut df = build();
    df.set_data(2, vec![0; 15]);
    assert_eq!(
        decode_err(&df),
        "image 0 \"img\" (item 2 at byte 316): 2 x 2 RGBA needs 16 bytes, data item 2 at byte 1059 has 15"
    );
    // Data that does not inflate to its recorded size.
    let bytes = build().encode().unwrap();
    let mut b = bytes.clone();
    // 9 item types, 14 items, 9 data items.
    let sizes_at = 36 + 9 * 12 + 14 * 4 + 9 * 4;
    b[sizes_at + 4 * 4..sizes_at + 4 * 4 + 4].copy_from_slice(&49i32.to_le_bytes());
    assert_eq!(
        TwMap::decode(&b, &Context::default()).unwrap_err().to_string(),
        "layer 0 of group 0 (item 7 at byte 576): tiles: data item 4 cannot be read: it inflates to 48 bytes, the file records 49"
    );
    // An item whose size disagrees with the offsets: the container says so.
    let mut b = bytes.clone();
    let item1_size_at = sizes_at + 9 * 4 + 12 + 4;
    b[item1_size_at..item1_size_at + 4].copy_from_slice(&20i32.to_le_bytes());
    assert_eq!(
        TwMap::decode(&b, &Context::default()).unwrap_err().to_string(),
        format!(
            "datafile: at byte {item1_size_at}: item 1 (type id 1, id 0): payload size 20 does not match the 24 bytes its offsets leave"
        )
    );
    // Truncated anywhere: an error, never a panic.
    for n in (0..bytes.len()).step_by(7) {
        assert!(TwMap::decode(&bytes[..n], &Context::default()).unwrap_err().to_string().contains("truncated"), "{n}");
    }
    // The checks of DDNet's loader.
    let with = |item: usize, f: &dyn Fn(&mut Vec<i32>)| {
        let mut df = build();
        f(&mut df.items[item].data);
        decode_err(&df)
    };
    assert_eq!(with(0, &|v| v[0] = 2), "map version (item 0 at byte 272): version 2 is not supported (only 1 is)");
    assert_eq!(with(6, &|v| v[6] = 5), "group 0 (item 5 at byte 440): uses layers 0 to 4 (the map has 4 layers)");
    assert_eq!(with(7, &|v| v[5] = 2), "layer 0 of group 1 (item 9 at byte 776): is also used by another group");
    assert_eq!(
        with(8, &|v| v[6] = 3),
        "layer 0 of group 0 (item 7 at byte 576): tile layer flags 3: at most one physics flag (game, tele, speedup, front, switch, tune) may be set"
    );
    assert_eq!(with(8, &|v| v[6] = 0), "the map has no game layer (a tile layer with the game flag)");
    assert_eq!(
        with(8, &|v| v[3] = 5),
        "layer 0 of group 0 (item 7 at byte 576): tile layer version 5 is not supported (2 to 4 are)"
    );
    assert_eq!(
        with(11, &|v| v[14] = 4),
        "layer 0 of group 1 (item 10 at byte 824): tile data index 4 is used by another layer too"
    );
    assert_eq!(
        with(11, &|v| v[10] = 256),
        "layer 0 of group 1 (item 10 at byte 824): colour (255, 255, 255, 256) is outside 0..=255"
    );
    assert_eq!(
        with(9, &|v| v.truncate(18)),
        "layer 1 of group 0 (item 8 at byte 676): a tele layer whose item has no tele data index (version 3, 18 ints)"
    );
    assert_eq!(
        with(10, &|v| v[4] = 2),
        "layer 2 of group 0 (item 9 at byte 776): 2 quads need 304 bytes, data item 7 at byte 1161 has 152"
    );
    let mut df = build();
    let mut tiles = vec![0u8; W * H * 4];
    tiles[9] = 0;
    tiles[10] = 3; // skip byte in an unpacked layer
    df.set_data(8, tiles);
    assert_eq!(
        decode_err(&df),
        "layer 0 of group 1 (item 10 at byte 824): tile 2 (x 2, y 0) of data item 8 at byte 1201: skip byte 3 (must be 0 in unpacked tiles)"
    );
}

#[test]
fn teeworlds_07_packed_layers_are_unpacked_and_packed_again() {
    let mut df = build();
    // Layer 3 as a version 4 (0.7) layer: 12 tiles stored as 3 runs.
    df.items[11].data[3] = 4;
    df.set_data(8, vec![0, 0, 2, 0, 5, 8, 0, 0, 0, 0, 7, 0]);
    let mut d = TwMap::decode(&df.encode().unwrap(), &Context::default()).unwrap();
    let tiles = format!("{BACK}/tiles");
    assert_eq!(d.render(&tiles).unwrap(), b"0 0 0 5:8\n0 0 0 0\n0 0 0 0\n");
    refused(
        &mut d,
        "info",
        b"[settings]\nsv_x 1\n",
        "info: line 1: settings are a DDNet feature, and this map is in Teeworlds 0.7's format (a tile layer is an item of version 4), which has none",
    );
    let back = edit(&mut d, &tiles, b"0 0 0 5:8\n0 0 0 0\n0 0 0 1\n");
    assert_eq!(back.map().data(8), [0, 0, 2, 0, 5, 8, 0, 0, 0, 0, 6, 0, 1, 0, 0, 0]);
    // Too many stored tiles.
    df.set_data(8, vec![0, 0, 2, 0, 5, 8, 0, 0, 0, 0, 7, 0, 1, 0, 0, 0]);
    assert_eq!(
        decode_err(&df),
        "layer 0 of group 1 (item 10 at byte 824): tile data (data item 8 at byte 1201): too much tile data: 12 tiles are reached at stored tile 3 of 4"
    );
    // Packing is for tiles and game layers only.
    let mut df = build();
    df.items[9].data[3] = 4;
    assert_eq!(
        decode_err(&df),
        "layer 1 of group 0 (item 8 at byte 676): a tele layer of version 4 (tile skip packing is only for tiles and game layers)"
    );
}

#[test]
fn a_version_2_layer_gets_a_name_by_becoming_version_3() {
    let mut df = build();
    // Layer 3 as DDRace's version 2: no name, the tail right after data.
    let mut v = df.items[11].data[..15].to_vec();
    v[3] = 2;
    v.extend([-1, -1]);
    df.items[11].data = v;
    let mut d = TwMap::decode(&df.encode().unwrap(), &Context::default()).unwrap();
    assert!(d.entries().iter().any(|e| e.path == "groups/01_Back/layers/00/info"));
    let back = edit(&mut d, "groups/01_Back/layers/00/info", b"name = named\n");
    let worldfs_codec::twmap::items::Layer::Tiles(t) = back.map().layer(1, 0) else { panic!() };
    assert_eq!((t.version, t.name(), t.ddnet.clone()), (3, b"named".to_vec(), vec![-1, -1]));
}

#[test]
fn a_map_without_info_gets_one_when_written() {
    let mut df = build();
    df.items.remove(1);
    let mut d = TwMap::decode(&df.encode().unwrap(), &Context::default()).unwrap();
    assert_eq!(
        d.render("info").unwrap(),
        b"author = \"\"\nversion = \"\"\ncredits = \"\"\nlicense = \"\"\n\n[settings]\n"
    );
    let back = edit(&mut d, "info", b"credits = thanks\n[settings]\nsv_x 1\n");
    assert!(back.render("info").unwrap().starts_with(b"author = \"\"\nversion = \"\"\ncredits = thanks\n"));
    assert!(back.render("info").unwrap().ends_with(b"[settings]\nsv_x 1\n"));
}

#[test]
fn sniffing() {
    let b = build().encode().unwrap();
    assert!(TwMap::sniff(Path::new("x.map"), &b[..64]));
    assert!(!TwMap::sniff(Path::new("x.map"), b"DATA\x05\0\0\0"));
    assert!(!TwMap::sniff(Path::new("x.map"), b"SQLite format 3\0"));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    #[test]
    fn tile_edits_read_back(cells in proptest::collection::vec((0u8..=255, 0u8..16), W * H), layer in 0usize..2) {
        let mut d = doc();
        let path = if layer == 0 { format!("{BACK}/tiles") } else { format!("{TELE}/tiles") };
        let mut text = String::new();
        for (i, (a, b)) in cells.iter().enumerate() {
            text.push_str(&format!("{a}:{b}{}", if i % W == W - 1 { "\n" } else { " " }));
        }
        let back = edit(&mut d, &path, text.as_bytes());
        let raw = back.render(&format!("{path}.raw")).unwrap();
        let size = raw.len() / (W * H);
        for (i, (a, b)) in cells.iter().enumerate() {
            proptest::prop_assert_eq!((raw[i * size], raw[i * size + 1]), (*a, *b));
        }
        // Writing back what is shown changes nothing.
        let shown = back.render(&path).unwrap();
        let mut again = back.clone();
        again.apply(&path, &shown).unwrap();
        proptest::prop_assert!(again.encode().unwrap() == back.encode().unwrap());
    }
}
