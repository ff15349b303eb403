//! The companion mods (contrib/worldfs_live, contrib/worldfs_nodedefs) as
//! ContentDB packages: mod.conf with title, description, author, licence
//! and minimum version; LICENSE, README.md, .cdb.json; worldfs_live's
//! screenshot; luacheck finds nothing; and worldfs_nodedefs, run by the
//! real server, writes the file `worldfs import --nodedefs` reads.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const MODS: [&str; 2] = ["worldfs_live", "worldfs_nodedefs"];

fn mod_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("contrib").join(name)
}

/// The `key = value` lines of a mod.conf.
fn conf(name: &str) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(mod_dir(name).join("mod.conf")).unwrap();
    text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.trim().to_string(), v.trim().to_string())).collect()
}

#[test]
fn each_mod_has_what_contentdb_asks_for() {
    for name in MODS {
        let c = conf(name);
        assert_eq!(c["name"], name);
        for key in ["title", "description", "author"] {
            assert!(c.get(key).is_some_and(|v| !v.is_empty()), "{name}/mod.conf: no {key}");
        }
        assert_eq!(c["license"], "MIT OR Apache-2.0", "{name}");
        // The server the mods are tested with is 5.6.1.
        assert_eq!(c["min_minetest_version"], "5.6", "{name}");
        let licence = std::fs::read_to_string(mod_dir(name).join("LICENSE")).unwrap();
        assert!(licence.contains("MIT License") && licence.contains("Apache License"), "{name}/LICENSE");
        let readme = std::fs::read_to_string(mod_dir(name).join("README.md")).unwrap();
        assert!(readme.contains("MIT OR Apache-2.0"), "{name}/README.md names no licence");
        let cdb: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(mod_dir(name).join(".cdb.json")).unwrap()).unwrap();
        assert_eq!(cdb["type"], "MOD");
        assert_eq!(cdb["name"], name);
        assert_eq!(cdb["title"].as_str(), c.get("title").map(String::as_str), "{name}: the titles differ");
        for key in ["short_description", "license", "media_license"] {
            assert!(cdb[key].as_str().is_some_and(|v| !v.is_empty()), "{name}/.cdb.json: no {key}");
        }
        assert!(cdb["tags"].as_array().is_some_and(|t| !t.is_empty()), "{name}/.cdb.json: no tags");
    }
    // worldfs_live's README says that it needs the daemon and names every
    // setting of settingtypes.txt.
    let readme = std::fs::read_to_string(mod_dir("worldfs_live").join("README.md")).unwrap();
    assert!(readme.contains("needs the worldfs daemon"));
    let settings = std::fs::read_to_string(mod_dir("worldfs_live").join("settingtypes.txt")).unwrap();
    for setting in settings.lines().filter(|l| l.starts_with("worldfs_live.")) {
        let key = setting.split_whitespace().next().unwrap();
        assert!(readme.contains(&format!("`{key}`")), "README.md does not name {key}");
    }
}

#[test]
fn the_screenshot_is_a_png_contentdb_takes() {
    let file = std::fs::File::open(mod_dir("worldfs_live").join("screenshot.png")).unwrap();
    let reader = png::Decoder::new(std::io::BufReader::new(file)).read_info().unwrap();
    let (w, h) = (reader.info().width, reader.info().height);
    assert!(w >= 300 && h >= 200, "{w}x{h}: ContentDB wants at least 300x200");
    assert_eq!(w * 2, h * 3, "{w}x{h}: ContentDB wants 3:2");
}

#[test]
fn luacheck_finds_nothing_in_either_mod() {
    if common::mount::which("luacheck").is_none() {
        common::skip("luacheck_finds_nothing_in_either_mod", "luacheck", "no luacheck (apt install lua-check)");
        return;
    }
    for name in MODS {
        // Run in the mod's folder, so that its .luacheckrc applies.
        let out = Command::new("luacheck").args(["--no-color", "."]).current_dir(mod_dir(name)).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "luacheck {name}:\n{text}");
        assert!(text.contains("0 warnings / 0 errors"), "luacheck {name}:\n{text}");
    }
}

/// Copy the mod `name` into `world`'s worldmods, as an admin would.
fn install_mod(world: &Path, name: &str) {
    common::copy_dir(&mod_dir(name), &world.join("worldmods").join(name));
}

#[test]
fn the_nodedefs_mod_run_by_the_server_writes_what_import_reads() {
    let test = "the_nodedefs_mod_run_by_the_server_writes_what_import_reads";
    require_minetestserver!(test);
    let world = common::demo_world();
    install_mod(world.path(), "worldfs_nodedefs");
    // A second mod stops the server once every mod is loaded.
    let stop = "core.register_on_mods_loaded(function() core.after(0, core.request_shutdown) end)\n";
    let (status, log) = common::server::run_with_mod(world.path(), "worldfs_stop", stop, "");
    assert!(status.success(), "{}", common::server::tail(&log, 30));
    let text = std::fs::read_to_string(world.path().join("worldfs_nodedefs.txt")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted, "sorted by name");
    for line in ["default:chest facedir", "default:torch_wall wallmounted", "default:stone none", "air none"] {
        assert!(lines.contains(&line), "no '{line}' in {} lines", lines.len());
    }
    use worldfs::transfer::rotate::{NodeDefs, ParamType2};
    let defs = NodeDefs::parse(&text).unwrap();
    assert_eq!(defs.get(b"default:chest"), ParamType2::Facedir);
    assert_eq!(defs.get(b"default:torch_wall"), ParamType2::Wallmounted);
    assert_eq!(defs.paramtype2.len(), lines.len());
    let server_log = std::fs::read_to_string(&log).unwrap();
    assert!(
        server_log.contains(&format!("[worldfs_nodedefs] wrote {} node definitions", lines.len())),
        "{}",
        common::server::tail(&log, 20)
    );
}

#[test]
fn the_nodedefs_mod_logs_a_file_it_cannot_write() {
    let test = "the_nodedefs_mod_logs_a_file_it_cannot_write";
    require_minetestserver!(test);
    let world = common::demo_world();
    install_mod(world.path(), "worldfs_nodedefs");
    // A directory where the file would go: the write fails.
    std::fs::create_dir(world.path().join("worldfs_nodedefs.txt")).unwrap();
    let stop = "core.register_on_mods_loaded(function() core.after(0, core.request_shutdown) end)\n";
    let (status, log) = common::server::run_with_mod(world.path(), "worldfs_stop", stop, "");
    assert!(status.success(), "the server failed: {}", common::server::tail(&log, 30));
    let server_log = std::fs::read_to_string(&log).unwrap();
    assert!(server_log.contains("[worldfs_nodedefs] cannot write"), "{}", common::server::tail(&log, 20));
}
