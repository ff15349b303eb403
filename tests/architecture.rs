//! The layers of docs/design.md hold: no circle among the files or the
//! folders of the workspace's crates, no import running up from a layer to
//! one above it (`contrib/import-graph.py`), and the filesystem core names
//! no kind of world and no store.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn import_graph(args: &[&str]) -> Output {
    Command::new("python3")
        .arg(root().join("contrib/import-graph.py"))
        .args(args)
        .output()
        .expect("python3 runs contrib/import-graph.py")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn the_import_graph_has_no_circle_and_no_import_running_up() {
    let o = import_graph(&["--check"]);
    let out = text(&o);
    assert!(o.status.success(), "contrib/import-graph.py --check:\n{out}");
    assert!(out.contains("0 circles, 0 imports running up, 0 files in no layer"), "{out}");
    assert!(out.contains(" 0 folder circles"), "{out}");
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `grep -r 'crate::worlds\|crate::documents' src/fs`, and the stores: the
/// core is handed a tree by the layer above and knows nothing else.
#[test]
fn the_core_names_no_kind_of_world_and_no_store() {
    let mut files = Vec::new();
    rust_files(&root().join("src/fs"), &mut files);
    assert!(files.len() > 5, "the core's files: {files:?}");
    let mut found = Vec::new();
    for f in &files {
        for (n, line) in std::fs::read_to_string(f).unwrap().lines().enumerate() {
            if ["crate::worlds", "crate::documents", "worldfs_store", "crate::open", "crate::transfer"]
                .iter()
                .any(|name| line.contains(name))
            {
                found.push(format!("{}:{}: {line}", f.display(), n + 1));
            }
        }
    }
    assert!(found.is_empty(), "the core names a kind of world or a store:\n{}", found.join("\n"));
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// The check fails where it should: a circle between two files of a
/// layer, an import from the codecs up to the views, however it is written
/// (`use crate::`, a path in code, `super::`, through a `pub use`, from
/// another crate), and a circle between two folders.
#[test]
fn the_script_finds_circles_and_imports_running_up() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let run = || {
        let o = import_graph(&["--check", "--root", root.to_str().unwrap()]);
        (o.status.success(), text(&o))
    };
    write(root, "crates/codec/src/lib.rs", "pub mod a;\npub mod b;\npub use a::Thing;\n");
    write(
        root,
        "crates/codec/src/a.rs",
        "use super::b::Other; // crate::view::Nothing in a comment\npub struct Thing;\n",
    );
    write(root, "crates/codec/src/b.rs", "pub struct Other;\nfn f() { let _ = crate::Thing; }\n");
    write(root, "crates/store/src/lib.rs", "use worldfs_codec::a::Thing;\n");
    write(root, "src/lib.rs", "pub mod view;\npub mod worlds;\n");
    write(root, "src/view/mod.rs", "pub fn shown() {}\n#[cfg(test)]\nmod tests { use super::shown; }\n");
    write(root, "src/worlds/mod.rs", "pub mod one;\npub mod two;\n");
    write(root, "src/worlds/one/mod.rs", "pub fn a() {}\n");
    write(root, "src/worlds/two/mod.rs", "pub fn b() {}\n");
    let (ok, out) = run();
    assert!(!ok, "{out}");
    assert!(out.contains("circle of 2 files: crates/codec/src/a.rs, crates/codec/src/b.rs"), "{out}");
    assert!(out.contains("0 imports running up"), "the comment is no import: {out}");
    assert!(out.contains(" 0 folder circles"), "{out}");

    write(root, "crates/codec/src/b.rs", "pub struct Other;\n");
    write(root, "src/view/mod.rs", "pub fn shown() {}\nfn f() { crate::worlds::one::a(); }\n");
    let (ok, out) = run();
    assert!(!ok, "{out}");
    assert!(out.contains("0 circles, 1 imports running up"), "{out}");
    assert!(
        out.contains("up: src/view/mod.rs (view) -> src/worlds/one/mod.rs (worlds) via crate::worlds::one::a"),
        "{out}"
    );

    write(root, "src/view/mod.rs", "pub fn shown() {}\n");
    write(root, "src/worlds/one/mod.rs", "pub fn a() { crate::worlds::two::b() }\n");
    write(root, "src/worlds/two/mod.rs", "pub fn b() {}\npub fn c() { super::one::a() }\n");
    let (ok, out) = run();
    assert!(!ok, "{out}");
    assert!(out.contains("circle of 2 folders: src/worlds/one/, src/worlds/two/"), "{out}");

    write(root, "src/worlds/two/mod.rs", "pub fn b() {}\n");
    let (ok, out) = run();
    assert!(ok, "{out}");
}

/// The dependencies of a workspace crate (`cargo tree`, normal edges).
fn dependency_tree(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO"))
        .args(["tree", "--offline", "-e", "normal", "--prefix", "none", "--format", "{p}"])
        .args(args)
        .current_dir(root())
        .output()
        .expect("cargo tree runs");
    assert!(o.status.success(), "cargo tree {args:?}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The codec crate is usable without FUSE or any database client, and the
/// store crate without its features builds no database server's client.
#[test]
fn the_codecs_need_no_fuse_and_no_database_and_the_store_s_clients_are_features() {
    let clients = ["fuser ", "rusqlite ", "postgres ", "redis ", "rusty-leveldb "];
    let codec = dependency_tree(&["-p", "worldfs-codec"]);
    assert!(codec.contains("zstd "), "{codec}");
    for c in clients {
        assert!(!codec.lines().any(|l| l.starts_with(c)), "worldfs-codec depends on {c}:\n{codec}");
    }
    let store = dependency_tree(&["-p", "worldfs-store", "--no-default-features"]);
    assert!(store.contains("rusqlite "), "{store}");
    for c in ["fuser ", "postgres ", "redis ", "rusty-leveldb "] {
        assert!(!store.lines().any(|l| l.starts_with(c)), "worldfs-store without features depends on {c}:\n{store}");
    }
    let full = dependency_tree(&["-p", "worldfs-store"]);
    for c in ["postgres ", "redis ", "rusty-leveldb "] {
        assert!(full.lines().any(|l| l.starts_with(c)), "worldfs-store's default features build {c}:\n{full}");
    }
}
