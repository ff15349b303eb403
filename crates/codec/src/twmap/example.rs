//! A small map made in code, for tests and fuzzing: an embedded 2x2 image,
//! an external image, an envelope, a game group (game layer, tele layer,
//! quads layer), a background group (a tile layer using the image) and an
//! auto-mapper item.

#![allow(clippy::unwrap_used, reason = "a fixed map made in code for tests and fuzzing; its names fit")]

use super::datafile::{Datafile, Item};
use super::items::{name_to_ints, types};

/// The width of the example's tile layers, in tiles.
pub const W: usize = 4;
/// The height of the example's tile layers, in tiles.
pub const H: usize = 3;

fn tile_layer(flags: i32, image: i32, data: i32, name: &[u8], tail: [i32; 5]) -> Vec<i32> {
    let mut v = vec![0, 2, 0, 3, W as i32, H as i32, flags, 255, 255, 255, 255, -1, 0, image, data];
    v.extend(name_to_ints(name, 3).unwrap());
    v.extend(tail);
    v
}

/// The example map's datafile (encode it for the file's bytes).
pub fn example() -> Datafile {
    let mut df = Datafile::new();
    let author = df.add_data(b"me\0".to_vec()) as i32; // 0
    let img_name = df.add_data(b"img\0".to_vec()) as i32; // 1
    let pixels: Vec<u8> = (0..16).collect();
    let img_data = df.add_data(pixels) as i32; // 2
    let ext_name = df.add_data(b"grass_main\0".to_vec()) as i32; // 3
    let mut game = vec![0u8; W * H * 4];
    game[0] = 1; // tile (0,0) solid
    game[(W + 1) * 4] = 2;
    let game = df.add_data(game) as i32; // 4
    let tele_zero = df.add_data(vec![0; W * H * 4]) as i32; // 5
    let mut tele = vec![0u8; W * H * 2];
    tele[2] = 7; // (1,0) number 7
    tele[3] = 26; // type tele-in
    let tele = df.add_data(tele) as i32; // 6
    let quad = super::items::Quad {
        points: [[0, 0], [1024, 0], [0, 1024], [1024, 1024], [512, 512]],
        colors: [[255, 255, 255, 255]; 4],
        texcoords: [[0, 0], [1024, 0], [0, 1024], [1024, 1024]],
        pos_env: -1,
        pos_env_offset: 0,
        color_env: 0,
        color_env_offset: 0,
    };
    let quads = df.add_data(quad.to_bytes()) as i32; // 7
    let mut back = vec![0u8; W * H * 4];
    back[4 * 3] = 5;
    back[4 * 3 + 1] = 8; // rotated
    let back = df.add_data(back) as i32; // 8

    let it = |type_id: u16, id: u16, data: Vec<i32>| Item { type_id, id, data };
    df.items.push(it(types::VERSION, 0, vec![1]));
    df.items.push(it(types::INFO, 0, vec![1, author, -1, -1, -1, -1]));
    df.items.push(it(types::IMAGE, 0, vec![1, 2, 2, 0, img_name, img_data]));
    df.items.push(it(types::IMAGE, 1, vec![1, 1024, 1024, 1, ext_name, -1]));
    let mut env = vec![1, 4, 0, 2];
    env.extend(name_to_ints(b"fade", 8).unwrap());
    env.push(0);
    df.items.push(it(types::ENVELOPE, 0, env));
    df.items.push(it(types::ENVPOINTS, 0, vec![0, 1, 1024, 1024, 1024, 1024, 1000, 1, 1024, 1024, 1024, 0]));
    let group = |start: i32, num: i32, name: &[u8]| {
        let mut g = vec![3, 0, 0, 100, 100, start, num, 0, 0, 0, 0, 0];
        g.extend(name_to_ints(name, 3).unwrap());
        g
    };
    df.items.push(it(types::GROUP, 0, group(0, 3, b"Game")));
    df.items.push(it(types::GROUP, 1, group(3, 1, b"Back")));
    df.items.push(it(types::LAYER, 0, tile_layer(1, -1, game, b"Game", [-1; 5])));
    df.items.push(it(types::LAYER, 1, tile_layer(2, -1, tele_zero, b"Tele", [tele, -1, -1, -1, -1])));
    let mut q = vec![0, 3, 0, 2, 1, quads, -1];
    q.extend(name_to_ints(b"sky", 3).unwrap());
    df.items.push(it(types::LAYER, 2, q));
    df.items.push(it(types::LAYER, 3, tile_layer(0, 0, back, b"deco", [-1; 5])));
    // The auto-mapper config of layer 0 of group 1, and its UUID index item.
    df.items.push(it(0xFFFE, 0, vec![1, 1, 0, -1, 0, 0]));
    let uuid = super::items::uuid_to_ints(&super::items::uuids::AUTOMAPPER_CONFIG);
    df.items.push(it(types::EX, 0xFFFE, uuid.to_vec()));
    df
}
