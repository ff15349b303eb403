//! The real Luanti server as an oracle: run Debian's `minetestserver` on a
//! world with a probe mod (tests/fixtures/probe) that reports nodes,
//! metadata, inventories, timers and objects as the server sees them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub fn minetestserver() -> Option<PathBuf> {
    ["/usr/games/minetestserver", "/usr/bin/minetestserver"].iter().map(PathBuf::from).find(|p| p.is_file())
}

/// Skip the calling test when the server is not installed.
#[macro_export]
macro_rules! require_server {
    ($test:expr) => {
        if common::probe::minetestserver().is_none() {
            eprintln!("SKIP {}: minetestserver not installed (apt install minetest-server minetest-data)", $test);
            return;
        }
    };
}

/// An inventory list as the server sees it: (size, width, item strings by slot).
pub type List = (usize, u32, Vec<Vec<u8>>);

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    pub fields: BTreeMap<Vec<u8>, Vec<u8>>,
    pub lists: BTreeMap<Vec<u8>, List>,
}

#[derive(Clone, Debug, Default)]
pub struct Facts {
    pub nodes: BTreeMap<[i32; 3], (String, u8, u8)>,
    pub meta: BTreeMap<[i32; 3], Meta>,
    /// (timeout, elapsed, started)
    pub timers: BTreeMap<[i32; 3], (f64, f64, bool)>,
    /// per request center: (entity name, item string for dropped items)
    pub objects: BTreeMap<[i32; 3], Vec<(String, String)>>,
}

#[derive(Clone, Debug)]
pub enum Ask {
    Node([i32; 3]),
    Meta([i32; 3]),
    Timer([i32; 3]),
    /// Forceload the block of the node and list entities within the radius.
    Objects([i32; 3], u32),
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn free_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Run the server on `world` (which it may modify: pass a copy) and return
/// what the probe saw.
pub fn ask(world: &Path, asks: &[Ask]) -> Facts {
    let server = minetestserver().expect("minetestserver");
    let mods = world.join("worldmods/worldfs_probe");
    std::fs::create_dir_all(&mods).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/probe");
    for f in ["init.lua", "mod.conf"] {
        std::fs::copy(fixture.join(f), mods.join(f)).unwrap();
    }
    // Mods that the world names but that are not installed would stop the
    // server; the map data does not depend on them.
    let mt = world.join("world.mt");
    if let Ok(text) = std::fs::read_to_string(&mt) {
        let kept: Vec<&str> = text.lines().filter(|l| !l.trim_start().starts_with("load_mod_")).collect();
        std::fs::write(&mt, kept.join("\n") + "\n").unwrap();
    }
    let mut req = String::new();
    for a in asks {
        let line = match a {
            Ask::Node([x, y, z]) => format!("node {x} {y} {z}"),
            Ask::Meta([x, y, z]) => format!("meta {x} {y} {z}"),
            Ask::Timer([x, y, z]) => format!("timer {x} {y} {z}"),
            Ask::Objects([x, y, z], r) => format!("objects {x} {y} {z} {r}"),
        };
        req.push_str(&line);
        req.push('\n');
    }
    std::fs::write(world.join("probe_in.txt"), req).unwrap();
    let _ = std::fs::remove_file(world.join("probe_out.txt"));
    let conf = world.join("probe.conf");
    std::fs::write(&conf, "server_announce = false\nbind_address = 127.0.0.1\nenable_rollback_recording = false\n")
        .unwrap();
    let log = world.join("probe_server.log");
    let mut child = std::process::Command::new(&server)
        .arg("--world")
        .arg(world)
        .arg("--config")
        .arg(&conf)
        .arg("--port")
        .arg(free_port().to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(world.join("probe_server.err")).unwrap())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("server did not finish; log:\n{}", std::fs::read_to_string(&log).unwrap_or_default());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = std::fs::read_to_string(world.join("probe_out.txt")).unwrap_or_default();
    assert!(
        status.success() && out.ends_with("done\n"),
        "server failed ({status}); log:\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    parse(&out)
}

fn parse(out: &str) -> Facts {
    let mut f = Facts::default();
    for line in out.lines() {
        let w: Vec<&str> = line.split(' ').collect();
        let pos = || -> [i32; 3] { [w[1].parse().unwrap(), w[2].parse().unwrap(), w[3].parse().unwrap()] };
        match w[0] {
            "node" => {
                let name = String::from_utf8(unhex(w[4])).unwrap();
                f.nodes.insert(pos(), (name, w[5].parse().unwrap(), w[6].parse().unwrap()));
            }
            "field" => {
                f.meta.entry(pos()).or_default().fields.insert(unhex(w[4]), unhex(w[5]));
            }
            "list" => {
                let l = (w[5].parse().unwrap(), w[6].parse().unwrap(), Vec::new());
                f.meta.entry(pos()).or_default().lists.insert(unhex(w[4]), l);
            }
            "item" => {
                let m = f.meta.entry(pos()).or_default();
                m.lists.get_mut(&unhex(w[4])).unwrap().2.push(unhex(w.get(6).copied().unwrap_or("")));
            }
            "metaend" => {
                f.meta.entry(pos()).or_default();
            }
            "timer" => {
                f.timers.insert(pos(), (w[4].parse().unwrap(), w[5].parse().unwrap(), w[6] == "true"));
            }
            "object" => {
                let name = String::from_utf8(unhex(w[4])).unwrap();
                let item = String::from_utf8(unhex(w.get(5).copied().unwrap_or(""))).unwrap();
                f.objects.entry(pos()).or_default().push((name, item));
            }
            "done" => {}
            other => panic!("unexpected probe output {other}"),
        }
    }
    f
}

/// Lua run after generation: chests with inventories (stacks, a worn tool,
/// an item with metadata and non-ASCII text), signs with multi-line text,
/// furnaces with fuel, node timers, a private field.
const FURNISH: &str = r#"
function furnish()
  for i = 0, 7 do
    local p = {x = i * 5 - 20, y = 3, z = (i * 7) % 30 - 15}
    minetest.set_node(p, {name = "default:chest"})
    local meta = minetest.get_meta(p)
    local inv = meta:get_inventory()
    inv:add_item("main", "default:dirt " .. (i + 1))
    inv:add_item("main", ItemStack("default:pick_steel 1 " .. (i * 1000)))
    local named = ItemStack("default:apple 2")
    named:get_meta():set_string("description", 'Grüße "apple" ' .. i)
    inv:add_item("main", named)
    meta:set_string("owner", "player" .. i)
    meta:mark_as_private("owner")
    local q = {x = p.x + 1, y = p.y, z = p.z}
    minetest.set_node(q, {name = "default:sign_wall_wood", param2 = 3})
    minetest.get_meta(q):set_string("text", "sign " .. i .. "\nsecond line")
    minetest.get_meta(q):set_string("infotext", '"sign ' .. i .. '"')
    local f = {x = p.x + 2, y = p.y, z = p.z}
    minetest.set_node(f, {name = "default:furnace"})
    minetest.get_meta(f):get_inventory():add_item("fuel", "default:coal_lump 5")
    minetest.get_node_timer(f):start(10 + i)
  end
end
"#;

/// Generate a real world with the server: mapgen v7 with a fixed seed over
/// [-r, r] x [-h, h] x [-r, r] nodes, stored in the legacy sqlite schema
/// (what the 5.6.1 server writes).
pub fn generate_world(dir: &Path, r: i32, h: i32) {
    std::fs::create_dir_all(dir.join("worldmods/worldfs_gen")).unwrap();
    std::fs::write(
        dir.join("world.mt"),
        "gameid = minetest\nbackend = sqlite3\nplayer_backend = sqlite3\nauth_backend = sqlite3\n\
         mod_storage_backend = sqlite3\n",
    )
    .unwrap();
    std::fs::write(dir.join("worldmods/worldfs_gen/mod.conf"), "name = worldfs_gen\n").unwrap();
    std::fs::write(
        dir.join("worldmods/worldfs_gen/init.lua"),
        format!(
            "{FURNISH}\nminetest.register_on_mods_loaded(function() minetest.after(0.2, function()\n\
             minetest.emerge_area({{x=-{r},y=-{h},z=-{r}}}, {{x={r},y={h},z={r}}}, function(bp, action, left)\n\
             if left == 0 then furnish() minetest.request_shutdown('generated') end end) end) end)\n"
        ),
    )
    .unwrap();
    let conf = dir.join("gen.conf");
    std::fs::write(
        &conf,
        "fixed_map_seed = 1234567\nmg_name = v7\nserver_announce = false\nbind_address = 127.0.0.1\n\
         enable_rollback_recording = false\n",
    )
    .unwrap();
    let log = dir.join("gen.log");
    let st = std::process::Command::new(minetestserver().expect("minetestserver"))
        .arg("--world")
        .arg(dir)
        .arg("--config")
        .arg(&conf)
        .arg("--port")
        .arg(free_port().to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(dir.join("gen.err")).unwrap())
        .status()
        .unwrap();
    assert!(
        st.success(),
        "generation failed: {}{}",
        std::fs::read_to_string(&log).unwrap_or_default(),
        std::fs::read_to_string(dir.join("gen.err")).unwrap_or_default()
    );
    std::fs::remove_dir_all(dir.join("worldmods/worldfs_gen")).unwrap();
}
