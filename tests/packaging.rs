//! What shipping worldfs needs (issue 38): a licence, every file of test
//! data listed with its source and licence, a `rust-version` that is the
//! true minimum, and a crates.io package without test data or pictures.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The value of `key = "..."` in Cargo.toml's [package] section.
/// The worldfs package's `key` as cargo reads it (a workspace's
/// `key.workspace = true` resolved).
fn package_field(key: &str) -> String {
    let out = Command::new(env!("CARGO")).args(["metadata", "--no-deps", "--format-version", "1"]).output().unwrap();
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let package = meta["packages"].as_array().unwrap().iter().find(|p| p["name"] == "worldfs").unwrap();
    package[key.replace('-', "_").as_str()].as_str().unwrap_or_else(|| panic!("no {key} in [package]")).to_string()
}

#[test]
fn the_code_is_mit_or_apache_2_0() {
    assert_eq!(package_field("license"), "MIT OR Apache-2.0");
    assert!(read("LICENSE-MIT").contains("Permission is hereby granted, free of charge"));
    assert!(read("LICENSE-MIT").contains("Copyright (c) 2026 the worldfs developers"));
    assert!(read("LICENSE-APACHE").contains("Apache License\n                           Version 2.0, January 2004"));
    let debian = read("contrib/debian/copyright");
    assert!(debian.starts_with("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"));
    assert!(debian.contains("License: MIT or Apache-2.0\n") && debian.contains("\nLicense: MIT\n"));
    assert!(debian.contains("\nLicense: Apache-2.0\n"));
}

/// Every file under `dir`, relative to it, sorted.
fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, base, out);
        } else {
            out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
        }
    }
}

#[test]
fn every_file_under_tests_data_is_listed_with_its_source_and_licence() {
    let data = common::data_dir();
    let mut files = Vec::new();
    walk(&data, &data, &mut files);
    files.sort();
    let sources = std::fs::read_to_string(data.join("SOURCES.md")).unwrap();
    // Table rows: | `FILE` | SOURCE | LICENCE |
    let rows: Vec<Vec<&str>> = sources
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect();
    let listed: BTreeSet<&str> = rows.iter().map(|r| r[0].trim_matches('`')).collect();
    let mut problems = Vec::new();
    for f in &files {
        match rows.iter().find(|r| r[0].trim_matches('`') == f) {
            None => problems.push(format!("{f} is not in tests/data/SOURCES.md")),
            Some(r) if r.len() < 3 || r[1].is_empty() || r[2].is_empty() => {
                problems.push(format!("{f}: its row lacks the source or the licence: {r:?}"))
            }
            Some(_) => {}
        }
    }
    for l in &listed {
        if !files.iter().any(|f| f == l) {
            problems.push(format!("SOURCES.md lists {l}, which is not there"));
        }
    }
    // The licences that need their text beside the data have it.
    for text in ["licenses/cuberite-LICENSE", "licenses/prismarine-chunk-LICENSE", "licenses/Querz-NBT-LICENSE"] {
        assert!(files.iter().any(|f| f == text), "{text} is missing");
    }
    for world in ["minetest-world_4bit-input-7-segment-display", "minetest-mesecons-circuits"] {
        let licence = std::fs::read_to_string(data.join("luanti").join(world).join("LICENSE")).unwrap();
        assert!(licence.contains("Copyright (c) 2017, Brett O'Donnell") && licence.contains("Redistribution and use"));
    }
    assert!(files.len() > 70, "{} files", files.len());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `major.minor` of a version like "1.89" or "1.88.0".
fn minor(v: &str) -> (u32, u32) {
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap());
    (parts.next().unwrap(), parts.next().unwrap_or(0))
}

#[test]
fn rust_version_is_the_highest_any_dependency_needs() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let host = String::from_utf8(Command::new("rustc").arg("-vV").output().unwrap().stdout).unwrap();
    let host = host.lines().find_map(|l| l.strip_prefix("host: ")).unwrap().to_string();
    let out = Command::new(&cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--filter-platform", &host])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let in_build: BTreeSet<&str> =
        meta["resolve"]["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
    // Edition 2024 alone needs 1.85.
    let mut need = ((1, 85), "edition 2024".to_string());
    for p in meta["packages"].as_array().unwrap() {
        let (Some(id), Some(v)) = (p["id"].as_str(), p["rust_version"].as_str()) else { continue };
        if p["name"] != "worldfs" && in_build.contains(id) && minor(v) > need.0 {
            need = (minor(v), format!("{} {}", p["name"].as_str().unwrap(), p["version"].as_str().unwrap()));
        }
    }
    let ours = minor(&package_field("rust-version"));
    assert_eq!(ours, need.0, "rust-version says {ours:?}; {} needs {:?}", need.1, need.0);
}

#[test]
fn the_crates_io_package_holds_the_code_and_no_test_data() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(&cargo)
        .args(["package", "--list", "--allow-dirty", "--locked"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo package --list: {}", String::from_utf8_lossy(&out.stderr));
    let list = String::from_utf8(out.stdout).unwrap();
    let files: BTreeSet<&str> = list.lines().collect();
    for must in [
        "Cargo.toml",
        "Cargo.lock",
        "README.md",
        "CHANGELOG.md",
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "build.rs",
        "src/main.rs",
        "src/lib.rs",
        "docs/layout.md",
        "contrib/worldfs_live/init.lua",
        "contrib/worldfs_live/LICENSE",
    ] {
        assert!(files.contains(must), "{must} is not in the package:\n{list}");
    }
    let unwanted: Vec<&&str> = files
        .iter()
        .filter(|f| f.starts_with("tests/") || f.starts_with("fuzz/") || f.ends_with(".png") || f.ends_with(".sqlite"))
        .collect();
    assert!(unwanted.is_empty(), "in the package: {unwanted:?}");
    // Every file the code includes at build time is in the package.
    for (file, src) in sources_under(&root().join("src")) {
        for rel in src.split("include_str!(\"").skip(1).chain(src.split("include_bytes!(\"").skip(1)) {
            let rel = rel.split('"').next().unwrap();
            let path = file.parent().unwrap().join(rel);
            let path = std::fs::canonicalize(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let in_crate = path.strip_prefix(root()).unwrap().to_string_lossy().into_owned();
            assert!(files.contains(in_crate.as_str()), "{} includes {in_crate}, not in the package", file.display());
        }
    }
}

/// Every .rs file under `dir` with its text.
fn sources_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    files
        .into_iter()
        .filter(|f| f.ends_with(".rs"))
        .map(|f| (dir.join(&f), std::fs::read_to_string(dir.join(&f)).unwrap()))
        .collect()
}

#[test]
fn the_changelog_keeps_a_changelog_and_names_this_version() {
    let log = read("CHANGELOG.md");
    assert!(log.starts_with("# Changelog\n"), "{log}");
    assert!(log.contains("## [Unreleased]"), "no Unreleased section");
    let version = package_field("version");
    assert!(log.contains(&format!("## [{version}]")), "no section for {version}");
    let deb = read("contrib/debian/changelog");
    assert!(deb.starts_with(&format!("worldfs ({version}-1) ")), "{deb}");
}

#[test]
fn the_test_data_is_byte_for_byte_what_sources_md_lists() {
    let data = common::data_dir();
    let sources = std::fs::read_to_string(data.join("SOURCES.md")).unwrap();
    let sums = sources.split("## sha256").nth(1).expect("a sha256 section in SOURCES.md");
    // "HASH  PATH" lines: 64 hex digits, two blanks.
    let is_sum = |l: &&str| l.len() > 66 && l[..64].bytes().all(|b| b.is_ascii_hexdigit()) && &l[64..66] == "  ";
    let list: String = sums.lines().filter(is_sum).map(|l| format!("{l}\n")).collect();
    let mut files = Vec::new();
    walk(&data, &data, &mut files);
    assert_eq!(list.lines().count(), files.len() - 1, "every file but SOURCES.md has its sha256");
    let mut child = Command::new("sha256sum")
        .args(["--check", "--quiet", "-"])
        .current_dir(&data)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(list.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "tests/data differs from its sha256 list:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
