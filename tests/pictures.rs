//! A world you can look at: `top.png` in every block directory, the tile
//! pyramid and page under `MNT/map/`, and `worldfs map`, checked against
//! minetestmapper (Debian's, with the same colors.txt) and in a real
//! browser (headless chromium).

use crate::common;

use common::mount::{Mounted, which};
use std::path::Path;
use std::process::Command;
use worldfs::view::picture::{Colors, decode_png, shade};

const COLORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/view/colors.txt");

fn worldfs(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_worldfs")).args(args).output().unwrap();
    assert!(out.status.success(), "worldfs {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn png_file(p: &Path) -> (u32, u32, Vec<u8>) {
    decode_png(&std::fs::read(p).unwrap()).unwrap()
}

/// Every `top.png` of the first `max` blocks against the highest visible
/// node of each column read from `nodes` (another view); the names of the
/// nodes seen on top.
fn tops_match_nodes(m: &Mounted, max: usize) -> std::collections::BTreeSet<String> {
    let colors = Colors::builtin();
    let mut seen = std::collections::BTreeSet::new();
    for block in m.ok("ls $MNT/blocks").lines().take(max) {
        let (w, h, px) = decode_png(&std::fs::read(m.path(&format!("blocks/{block}/top.png"))).unwrap()).unwrap();
        assert_eq!((w, h), (16, 16));
        let nodes = m.ok(&format!("cat $MNT/blocks/{block}/nodes"));
        let mut top: std::collections::HashMap<(i64, i64), (i64, String)> = Default::default();
        for line in nodes.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            let (x, y, z) = (f[0].parse::<i64>().unwrap(), f[1].parse::<i64>().unwrap(), f[2].parse::<i64>().unwrap());
            if colors.of(f[3].as_bytes())[3] == 0 {
                continue;
            }
            let e = top.entry((x, z)).or_insert((y, f[3].to_string()));
            if y > e.0 {
                *e = (y, f[3].to_string());
            }
        }
        let (bx, bz) = {
            let v: Vec<i64> = block.split(',').map(|s| s.parse().unwrap()).collect();
            (v[0] * 16, v[2] * 16)
        };
        for lz in 0..16 {
            for lx in 0..16 {
                let p = (((15 - lz) * 16 + lx) * 4) as usize;
                let got = &px[p..p + 4];
                match top.get(&(bx + lx as i64, bz + lz as i64)) {
                    None => assert_eq!(got[3], 0, "block {block}: column {lx},{lz} shows something"),
                    Some((y, name)) => {
                        let ly = y.rem_euclid(16) as i32;
                        assert_eq!(
                            got,
                            shade(colors.of(name.as_bytes()), ly * 2 - 16),
                            "block {block}: {lx},{lz} ({name})"
                        );
                        seen.insert(name.clone());
                    }
                }
            }
        }
    }
    seen
}

#[test]
fn top_png_of_a_generated_world() {
    require_fuse!("top_png_of_a_generated_world");
    require_minetestserver!("top_png_of_a_generated_world");
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("w");
    common::server::generate_world(&world, 32, 16);
    let m = Mounted::new(&world, &["ro", &format!("colors={COLORS}")]);
    let seen = tops_match_nodes(&m, 40);
    // mapgen v7's surface: its known nodes have the colours of colors.txt.
    eprintln!("nodes on top: {seen:?}");
    let known: Vec<&String> = seen.iter().filter(|n| Colors::builtin().has(n.as_bytes())).collect();
    assert!(known.len() >= 5, "few known nodes on top: {seen:?}");
    for name in ["default:dirt_with_grass", "default:stone"] {
        assert!(seen.contains(name), "no {name} on top: {seen:?}");
    }
}

#[test]
fn top_png_shows_the_highest_node_of_each_column() {
    require_fuse!("top_png_shows_the_highest_node_of_each_column");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &["ro", &format!("colors={COLORS}")]);
    assert!(!tops_match_nodes(&m, usize::MAX).is_empty());
    // The tiles: every level lists tiles, the coarsest is one tile for the
    // world, and each is a 256 x 256 picture with something in it.
    assert_eq!(m.ok("ls $MNT/map/0"), "0,0.png\n");
    let detail: Vec<String> = m.ok("ls $MNT/map/8").lines().map(String::from).collect();
    assert!(!detail.is_empty());
    for t in ["0/0,0.png".to_string(), format!("8/{}", detail[0])] {
        let (w, h, px) = png_file(&m.path(&format!("map/{t}")));
        assert_eq!((w, h), (256, 256));
        assert!(px.chunks(4).any(|p| p[3] > 0), "map/{t} is empty");
    }
    assert!(m.ok("cat $MNT/map/index.html").contains("<title>worldfs map</title>"));
    let (code, _, _) = m.sh("echo x > $MNT/map/index.html");
    assert_ne!(code, 0);
}

#[test]
fn colours_come_from_the_usual_places() {
    let world = common::demo_world();
    // A colors.txt in the world directory wins over the built-in colours.
    std::fs::write(world.path().join("colors.txt"), "default:stone 1 2 3\n").unwrap();
    let (c, from) = worldfs::view::picture::choose(world.path(), None).unwrap();
    assert_eq!(c.of(b"default:stone"), [1, 2, 3, 255]);
    assert!(from.ends_with("colors.txt"));
    let (c, _) = worldfs::view::picture::choose(world.path(), Some(Path::new(COLORS))).unwrap();
    assert_eq!(c.of(b"default:stone"), Colors::builtin().of(b"default:stone"));
    std::fs::write(world.path().join("colors.txt"), "default:stone 1 2\n").unwrap();
    let e = worldfs::view::picture::choose(world.path(), None).unwrap_err();
    assert!(e.contains("colors.txt") && e.contains("line 1"), "{e}");
}

#[test]
fn worldfs_map_agrees_with_minetestmapper() {
    let Some(mapper) = which("minetestmapper")
        .or_else(|| Some("/usr/games/minetestmapper".into()).filter(|p: &std::path::PathBuf| p.exists()))
    else {
        common::skip(
            "worldfs_map_agrees_with_minetestmapper",
            "minetestmapper",
            "no minetestmapper (apt install minetestmapper)",
        );
        return;
    };
    require_minetestserver!("worldfs_map_agrees_with_minetestmapper");
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("w");
    common::server::generate_world(&world, 48, 24);
    let (x1, z1, w, h) = (-48i64, -48i64, 96usize, 96usize);
    let ours = dir.path().join("ours.png");
    worldfs(&[
        "map",
        world.to_str().unwrap(),
        ours.to_str().unwrap(),
        "--area",
        &format!("{x1},{z1}"),
        &format!("{},{}", x1 + w as i64 - 1, z1 + h as i64 - 1),
        "--flat",
        "--colors",
        COLORS,
    ]);
    let theirs = dir.path().join("theirs.png");
    let out = Command::new(mapper)
        .arg("-i")
        .arg(&world)
        .arg("-o")
        .arg(&theirs)
        .args(["--colors", COLORS, "--noshading", "--bgcolor", "#000000"])
        .args(["--geometry", &format!("{x1}:{z1}+{w}+{h}")])
        .output()
        .unwrap();
    assert!(out.status.success(), "minetestmapper: {}", String::from_utf8_lossy(&out.stderr));
    let (ow, oh, o) = png_file(&ours);
    let (tw, th, t) = png_file(&theirs);
    assert_eq!((ow, oh), (w as u32, h as u32));
    assert_eq!((tw, th), (ow, oh), "minetestmapper drew another size");
    let (mut same, mut drawn) = (0, 0);
    for i in 0..w * h {
        let a = &o[i * 4..i * 4 + 4];
        let b = &t[i * 4..i * 4 + 4];
        let ours_rgb = if a[3] == 0 { [0, 0, 0] } else { [a[0], a[1], a[2]] };
        if b[..3] != [0, 0, 0] || a[3] > 0 {
            drawn += 1;
            if ours_rgb == [b[0], b[1], b[2]] {
                same += 1;
            }
        }
    }
    eprintln!("{same} of {drawn} drawn pixels agree with minetestmapper");
    assert!(drawn > w * h / 2, "little was drawn: {drawn}");
    assert!(same * 100 >= drawn * 99, "only {same} of {drawn} pixels agree with minetestmapper");
}

#[test]
fn the_map_page_shows_the_world_in_a_browser() {
    require_fuse!("the_map_page_shows_the_world_in_a_browser");
    let Some(chromium) = which("chromium").or_else(|| which("chromium-browser")) else {
        common::skip("the_map_page_shows_the_world_in_a_browser", "chromium", "no chromium (apt install chromium)");
        return;
    };
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &["ro"]);
    let page = format!("file://{}", m.path("map/index.html").display());
    let profile = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        let out = Command::new(&chromium)
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files"])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(["--virtual-time-budget=10000", "--window-size=800,600"])
            .args(extra)
            .arg(&page)
            .output()
            .unwrap();
        assert!(out.status.success(), "chromium: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let page_dom = run(&["--dump-dom"]);
    let dom = page_dom.clone();
    let title = dom.split("<title>").nth(1).and_then(|t| t.split("</title>").next()).unwrap_or_default().to_string();
    assert!(title.starts_with("worldfs map: ") && title.ends_with(" loaded"), "title {title:?}");
    let n: usize = title.split_whitespace().nth(2).and_then(|v| v.parse().ok()).unwrap_or(0);
    assert!(n > 0, "no tile loaded: {title:?}");
    // A link to a place opens there, at the zoom it names (3: the demo world
    // is small, so the page alone would open at 8).
    let block = m.ok("ls $MNT/blocks").lines().next().unwrap().to_string();
    let b: Vec<i64> = block.split(',').map(|v| v.parse().unwrap()).collect();
    let place = format!("{page}#{},{},3", b[0] * 16 + 8, b[2] * 16 + 8);
    let out = Command::new(&chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--virtual-time-budget=10000", "--window-size=800,600", "--dump-dom"])
        .arg(&place)
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium at {place}: {}", String::from_utf8_lossy(&out.stderr));
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(dom.contains("src=\"3/"), "{place} did not open at zoom 3: {dom}");
    assert!(!dom.contains("src=\"8/"), "{place} opened at the page's own zoom");
    let shot = profile.path().join("shot.png");
    run(&[&format!("--screenshot={}", shot.display())]);
    let (w, h, px) = png_file(&shot);
    assert_eq!((w, h), (800, 600));
    // The world is drawn: a good part of the screenshot has the colours of
    // the tiles the page loaded (a blank or broken page has none of them).
    let tiles: Vec<&str> = page_dom.split("src=\"").skip(1).filter_map(|t| t.split('"').next()).collect();
    assert!(!tiles.is_empty(), "no tile in the page: {page_dom}");
    let mut tile_colours = std::collections::HashSet::new();
    for t in &tiles {
        let (_, _, tp) = png_file(&m.path(&format!("map/{t}")));
        tile_colours.extend(tp.chunks(4).map(<[u8]>::to_vec));
    }
    // At least a pixel per node column of the world (16 x 16 per block
    // column), in exactly the tiles' colours.
    let columns: std::collections::BTreeSet<(i64, i64)> = m
        .ok("ls $MNT/blocks")
        .lines()
        .map(|b| b.split(',').map(|v| v.parse().unwrap()).collect::<Vec<i64>>())
        .map(|b| (b[0], b[2]))
        .collect();
    let drawn = px.chunks(4).filter(|c| tile_colours.contains(*c)).count();
    assert!(
        drawn >= columns.len() * 256,
        "{drawn} of {} pixels have the colours of the {} tiles, fewer than the world's {} node columns",
        px.len() / 4,
        tiles.len(),
        columns.len() * 256
    );
}

#[test]
fn worldfs_map_scales_and_refuses_bad_arguments() {
    let world = common::demo_world();
    let dir = tempfile::tempdir().unwrap();
    let (one, three) = (dir.path().join("one.png"), dir.path().join("three.png"));
    let w = world.path().to_str().unwrap();
    worldfs(&["map", w, one.to_str().unwrap()]);
    worldfs(&["map", w, three.to_str().unwrap(), "--scale", "3"]);
    let (w1, h1, p1) = png_file(&one);
    let (w3, h3, p3) = png_file(&three);
    assert_eq!((w3, h3), (w1 * 3, h1 * 3));
    assert!(p1.chunks(4).any(|p| p[3] > 0), "nothing drawn");
    for y in 0..h3 as usize {
        for x in 0..w3 as usize {
            let a = ((y / 3) * w1 as usize + x / 3) * 4;
            let b = (y * w3 as usize + x) * 4;
            assert_eq!(p3[b..b + 4], p1[a..a + 4], "pixel {x},{y} of --scale 3");
        }
    }
    // Bad arguments: a clear reason, no picture written.
    let bad = dir.path().join("bad.png");
    for (args, why) in [
        (vec!["--scale", "0"], "1 to 16"),
        (vec!["--scale", "17"], "1 to 16"),
        (vec!["--area", "1,2", "x,3"], "'x,3' is not X,Z"),
        (vec!["--area", "-40000,-40000", "40000,40000"], "too large"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_worldfs"))
            .args(["map", w, bad.to_str().unwrap()])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(why), "{args:?}: {err}");
        assert!(!bad.exists(), "{args:?} wrote a picture");
    }
}

#[test]
fn colours_from_the_installed_games_textures() {
    use worldfs::view::game_textures::GameTextures;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("world.mt"), "gameid = no_such_game\n").unwrap();
    assert!(GameTextures::of_world(dir.path()).is_none());
    std::fs::write(dir.path().join("world.mt"), "gameid = minetest\nbackend = sqlite3\n").unwrap();
    let Some(game) = GameTextures::of_world(dir.path()) else {
        common::skip(
            "colours_from_the_installed_games_textures",
            "server",
            "minetest_game not installed (minetest-data)",
        );
        return;
    };
    // An empty table: every colour comes from a texture, and agrees with
    // colors.txt, which contrib/make-colors.sh made from the same textures
    // with the real server's node list.
    let colors = Colors::parse("").unwrap().with_textures(game);
    let builtin = Colors::builtin();
    for name in ["default:stone", "default:cobble", "default:sand", "default:gravel", "default:wood", "default:brick"] {
        assert_eq!(colors.of(name.as_bytes()), builtin.of(name.as_bytes()), "{name}");
        assert_eq!(colors.of(name.as_bytes()), builtin.of(name.as_bytes()), "{name}, asked again");
    }
    // No texture of that name: the colour made from the name.
    assert_eq!(colors.of(b"nomod:nothing"), Colors::parse("").unwrap().of(b"nomod:nothing"));
    assert_eq!(colors.of(b"air"), [0, 0, 0, 0]);
}
