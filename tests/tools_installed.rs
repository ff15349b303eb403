//! Every program a test runs is one contrib/test.sh installs (its lists are
//! in contrib/test-tools.sh), so that a missing install step fails here
//! rather than on a user's fresh machine: the programs named in the tests
//! (`Command::new("X")`, `which("X")`, the commands of the shell lines the
//! tests run), the Python modules they import and the npm packages their
//! scripts load are each mapped to what provides them (a Debian package,
//! pip, npm), and that package must be in test-tools.sh (or be part of
//! every Debian system). Where dpkg knows the program's file, the map's
//! package must be the one that owns it. Every tool name a test can skip
//! for is required under root.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What provides a program the tests run (Python modules and npm
/// packages: PYTHON_PIP and NPM).
#[derive(Clone, Copy, Debug)]
enum Provider {
    /// A Debian package every system has (Essential, or priority required).
    Base(&'static str),
    /// A Debian package test.sh installs; the owner of the program's file
    /// starts with `owner` (a dependency of it, for some).
    Apt { install: &'static str, owner: &'static str },
    /// A program the tests take when there, in place of another one's
    /// (which test.sh installs).
    InsteadOf(&'static str),
    /// Part of the Rust toolchain that builds and runs the tests.
    Rust,
}

use Provider::*;

const fn apt(p: &'static str) -> Provider {
    Apt { install: p, owner: p }
}

/// Every program the tests run.
const PROGRAMS: &[(&str, Provider)] = &[
    ("bash", Base("bash")),
    ("sh", Base("dash")),
    ("sed", Base("sed")),
    ("grep", Base("grep")),
    ("find", Base("findutils")),
    ("xargs", Base("findutils")),
    ("dpkg", Base("dpkg")),
    ("dpkg-query", Base("dpkg")),
    ("rustc", Rust),
    ("cmp", Base("diffutils")),
    ("diff", Base("diffutils")),
    ("perl", Base("perl-base")),
    ("script", Base("bsdutils")),
    ("mount", Base("mount")),
    ("umount", Base("mount")),
    ("runuser", Base("util-linux")),
    ("setpriv", Base("util-linux")),
    ("fusermount3", apt("fuse3")),
    ("python3", apt("python3")),
    ("vim", apt("vim")),
    ("nano", apt("nano")),
    ("tmux", apt("tmux")),
    ("sqlite3", apt("sqlite3")),
    ("systemd-analyze", apt("systemd")),
    ("man", apt("man-db")),
    ("redis-server", apt("redis-server")),
    ("initdb", Apt { install: "postgresql", owner: "postgresql-" }),
    ("pg_ctl", Apt { install: "postgresql", owner: "postgresql-" }),
    ("postgres", Apt { install: "postgresql", owner: "postgresql-" }),
    ("psql", Apt { install: "postgresql", owner: "postgresql-client-" }),
    ("chromium", apt("chromium")),
    ("chromium-browser", InsteadOf("chromium")),
    ("minetestmapper", apt("minetestmapper")),
    ("minetestserver", apt("minetest-server")),
    ("minetest", apt("minetest")),
    ("xvfb-run", apt("xvfb")),
    ("lua5.1", apt("lua5.1")),
    ("lua5.4", InsteadOf("lua5.1")),
    ("luacheck", apt("lua-check")),
    ("java", Apt { install: "default-jdk-headless", owner: "openjdk-" }),
    ("node", apt("nodejs")),
    ("gdb", apt("gdb")),
];

/// The coreutils the tests run (Essential in every Debian system).
const COREUTILS: &[&str] = &[
    "cat",
    "chmod",
    "chown",
    "cp",
    "dd",
    "head",
    "id",
    "ls",
    "mkdir",
    "mktemp",
    "mv",
    "od",
    "readlink",
    "rm",
    "rmdir",
    "seq",
    "sha256sum",
    "sleep",
    "sort",
    "stat",
    "tail",
    "tee",
    "timeout",
    "touch",
    "tr",
    "truncate",
    "wc",
];

/// Shell builtins and keywords: no program behind them.
const SHELL: &[&str] = &[
    "cd", "echo", "printf", "test", "true", "false", "read", "set", "export", "exit", "return", "local", "if", "then",
    "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "trap", "wait", "kill", "source",
    "eval", "exec", "shift", "ulimit", "umask", "type", "command", "in", "break", "continue", "unset",
];

/// Words the scan of shell lines takes for commands but which are words
/// of the Python, Lua or data inside those lines (`file`: a format
/// argument, `> $MNT/{file}`).
const NOT_COMMANDS: &[&str] = &["as", "dir", "file"];

/// The Python modules the tests' scripts import: the standard library, the
/// scripts' own, and pip packages.
const PYTHON_STDLIB: &[&str] = &[
    "errno",
    "fcntl",
    "gzip",
    "hashlib",
    "json",
    "mmap",
    "os",
    "re",
    "shutil",
    "sqlite3",
    "struct",
    "subprocess",
    "sys",
    "time",
    "zlib",
];
const PYTHON_LOCAL: &[&str] = &["mc_region_read"];
const PYTHON_PIP: &[(&str, &str)] =
    &[("anvil", "anvil-parser2"), ("amulet_nbt", "amulet-nbt"), ("twmap", "twmap"), ("numpy", "numpy")];

/// The npm packages the tests' scripts load from target/npm-oracle.
const NPM: &[&str] = &[
    "prismarine-chunk",
    "vec3",
    "minecraft-data",
    "bedrock-provider",
    "leveldb-zlib",
    "prismarine-nbt",
    "prismarine-registry",
    "prismarine-block",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files of `dir` whose names end in one of `exts`, sorted.
fn files(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| exts.iter().any(|x| p.to_string_lossy().ends_with(x)))
        .collect();
    v.sort();
    v
}

/// The test sources: tests/*.rs and tests/common/*.rs, with their names;
/// not this file, which names programs as data.
fn test_sources() -> Vec<(String, String)> {
    let mut v = files(&root().join("tests"), &[".rs"]);
    v.extend(files(&root().join("tests/common"), &[".rs"]));
    v.retain(|p| !p.ends_with("tools_installed.rs"));
    v.into_iter().map(|p| (p.display().to_string(), std::fs::read_to_string(&p).unwrap())).collect()
}

/// The string literal right after each `needle` in `src`, where only
/// blanks or `&format!(` stand between: `Command::new("X")`,
/// `.ok(&format!("..."`.
fn literals_after(src: &str, needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = src[at..].find(needle) {
        let start = at + i + needle.len();
        at = start;
        let Some(q) = src[start..].find('"') else { break };
        if ["", "&", "format!(", "&format!("].contains(&src[start..start + q].trim()) {
            out.push(string_literal(&src[start + q + 1..]));
        }
    }
    out
}

/// The text of a Rust string literal whose body starts `body` (escapes
/// `\"`, `\\`, `\n` and line continuations undone).
fn string_literal(body: &str) -> String {
    let mut out = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('\n') => {
                    while chars.peek().is_some_and(|c| c.is_whitespace()) {
                        chars.next();
                    }
                }
                Some(c) => out.push(c),
                None => break,
            },
            c => out.push(c),
        }
    }
    out
}

/// The first word of each command of a shell line: split at `&&`, `||`,
/// `;`, `|`, `$(`, parentheses, braces and newlines; assignments and
/// `timeout N`, `!`, `exec` skipped.
fn shell_commands(line: &str) -> Vec<String> {
    let mut text = line.to_string();
    for sep in ["&&", "||", "$(", ";", "|", "(", ")", "{", "}", "`", "\n", " then ", " do ", " else "] {
        text = text.replace(sep, "\u{0}");
    }
    let mut out = Vec::new();
    for part in text.split('\u{0}') {
        let mut words = part.split_whitespace().peekable();
        while let Some(w) = words.peek() {
            let skip = w.contains('=') || ["!", "exec", "timeout"].contains(w) || w.parse::<f64>().is_ok();
            if !skip {
                break;
            }
            words.next();
        }
        if let Some(w) = words.next() {
            let command_like = w.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && w.chars().all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c));
            if command_like {
                out.push(w.to_string());
            }
        }
    }
    out
}

/// Where `program` is on this machine's PATH (and /usr/games), if it is.
fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    path.split(':')
        .chain(["/usr/games", "/usr/sbin", "/sbin"])
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file())
}

/// The programs the tests run: named literally (`Command::new`, `which`),
/// or as commands of their shell lines when they are programs here or in
/// the map. Each with the first file naming it.
fn programs_the_tests_run() -> BTreeMap<String, String> {
    let known: BTreeSet<&str> = PROGRAMS.iter().map(|(p, _)| *p).chain(COREUTILS.iter().copied()).collect();
    let mut found = BTreeMap::new();
    for (file, src) in test_sources() {
        for name in literals_after(&src, "Command::new(").into_iter().chain(literals_after(&src, "which(")) {
            found.entry(name).or_insert_with(|| file.clone());
        }
        let mut lines = Vec::new();
        for call in [".ok(", ".sh(", "\"-c\", ", "\"-c\").arg("] {
            lines.extend(literals_after(&src, call));
        }
        for word in lines.iter().flat_map(|l| shell_commands(l)) {
            let is_program = known.contains(word.as_str()) || on_path(&word).is_some();
            if is_program && !SHELL.contains(&word.as_str()) && !NOT_COMMANDS.contains(&word.as_str()) {
                found.entry(word).or_insert_with(|| file.clone());
            }
        }
    }
    found
}

/// What contrib/test-tools.sh installs: the words of its `apt_need+=`,
/// `pip_need+=` and `npm_need+=` lines.
fn installed_by_test_sh() -> (BTreeSet<String>, BTreeSet<String>, BTreeSet<String>) {
    let text = std::fs::read_to_string(root().join("contrib/test-tools.sh")).unwrap();
    let words = |key: &str| -> BTreeSet<String> {
        text.lines()
            .filter_map(|l| l.split_once(&format!("{key}+=(")).map(|(_, rest)| rest))
            .flat_map(|rest| rest.split(')').next().unwrap_or("").split_whitespace())
            .map(|w| w.split('@').next().unwrap().to_string())
            .collect()
    };
    (words("apt_need"), words("pip_need"), words("npm_need"))
}

#[test]
fn every_program_the_tests_run_is_one_test_sh_installs() {
    let run = programs_the_tests_run();
    for must in ["python3", "vim", "sed", "fusermount3", "xvfb-run", "java"] {
        assert!(run.contains_key(must), "the scan of the tests lost {must}: {run:?}");
    }
    let (apt, _, _) = installed_by_test_sh();
    let mut problems = Vec::new();
    for (program, file) in &run {
        if COREUTILS.contains(&program.as_str()) {
            continue;
        }
        match PROGRAMS.iter().find(|(p, _)| p == program) {
            None => problems.push(format!(
                "{program} (run in {file}) is in no list: add it to PROGRAMS here and its package to contrib/test-tools.sh"
            )),
            Some((_, Apt { install, .. })) if !apt.contains(*install) => {
                problems.push(format!("{program}: contrib/test-tools.sh does not install {install}"))
            }
            Some((_, InsteadOf(other))) if !PROGRAMS.iter().any(|(p, _)| p == other) => {
                problems.push(format!("{program} stands in for {other}, which is in no list"))
            }
            Some(_) => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The Debian package that owns `path` (also as its /bin or /sbin alias,
/// on a merged /usr), if dpkg knows it.
fn dpkg_owner(path: &Path) -> Option<String> {
    let real = std::fs::canonicalize(path).ok()?;
    let mut candidates = Vec::new();
    // The name first (a link such as redis-server is its package's own),
    // then the file it leads to (vim through the alternatives).
    for p in [path.to_path_buf(), real] {
        candidates.push(p.clone());
        for (usr, alias) in [("/usr/bin/", "/bin/"), ("/usr/sbin/", "/sbin/")] {
            if let Ok(rest) = p.strip_prefix(usr) {
                candidates.push(Path::new(alias).join(rest));
            }
        }
    }
    candidates.into_iter().find_map(|c| {
        let out = std::process::Command::new("dpkg").arg("-S").arg(&c).output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // "diversion by dash from: /bin/sh" lines come before "dash: /bin/sh".
        let owner = text.lines().find(|l| !l.starts_with("diversion by "))?.split(':').next()?.trim().to_string();
        (out.status.success() && !owner.is_empty()).then_some(owner)
    })
}

#[test]
fn the_map_names_the_package_that_owns_each_program_here() {
    if on_path("dpkg").is_none() {
        common::skip("the_map_names_the_package_that_owns_each_program_here", "dpkg", "not a Debian system");
        return;
    }
    let mut problems = Vec::new();
    let mut checked = 0;
    for (program, provider) in PROGRAMS {
        let Some(path) = on_path(program) else { continue };
        let Some(owner) = dpkg_owner(&path) else {
            // Not a Debian package's file here (python3 of pyenv, say).
            eprintln!("{program}: {} belongs to no Debian package here", path.display());
            continue;
        };
        checked += 1;
        let ok = match provider {
            Base(p) => owner == *p && base_package(p),
            Apt { owner: o, .. } => owner.starts_with(o),
            InsteadOf(_) | Rust => true,
        };
        if !ok {
            problems.push(format!("{program}: {} is {owner}'s, the map says {provider:?}", path.display()));
        }
    }
    for program in COREUTILS {
        if let Some(owner) = on_path(program).and_then(|p| dpkg_owner(&p)) {
            checked += 1;
            if owner != "coreutils" {
                problems.push(format!("{program}: {owner}'s, not coreutils'"));
            }
        }
    }
    assert!(checked > 20, "only {checked} programs found here");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Whether Debian package `p` is on every system (Essential, or priority
/// required).
fn base_package(p: &str) -> bool {
    let out = std::process::Command::new("dpkg-query").args(["-W", "-f", "${Essential} ${Priority}", p]).output();
    out.is_ok_and(|o| {
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        text.starts_with("yes") || text.ends_with("required")
    })
}

/// The modules `import`ed in Python code: `import a, b`, `import a as b`,
/// `from a import ...`, where the statement ends (a line end, `;`, a
/// quote or `\n` of a Rust string).
fn python_imports(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for stmt in line.split([';', '"']).flat_map(|s| s.split("\\n")) {
            let stmt = stmt.trim();
            let names = if let Some(rest) = stmt.strip_prefix("import ") {
                rest.split(" as ").next().unwrap_or("").to_string()
            } else if let Some((module, _)) = stmt.strip_prefix("from ").and_then(|r| r.split_once(" import")) {
                module.to_string()
            } else {
                continue;
            };
            for n in names.split(',').map(str::trim) {
                let identifier = n.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                    && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if identifier {
                    out.insert(n.to_string());
                }
            }
        }
    }
    out
}

#[test]
fn every_python_module_and_npm_package_the_tests_load_is_installed_by_test_sh() {
    let (_, pip, npm) = installed_by_test_sh();
    let mut texts: Vec<(String, String)> = test_sources();
    for dir in ["tests/scripts", "tests/fixtures"] {
        for p in files(&root().join(dir), &[".py", ".js"]) {
            texts.push((p.display().to_string(), std::fs::read_to_string(&p).unwrap()));
        }
    }
    let mut problems = Vec::new();
    let mut modules = BTreeSet::new();
    for (file, text) in &texts {
        for m in python_imports(text) {
            if PYTHON_STDLIB.contains(&m.as_str()) || PYTHON_LOCAL.contains(&m.as_str()) {
                continue;
            }
            match PYTHON_PIP.iter().find(|(module, _)| *module == m) {
                Some((_, package)) if pip.contains(*package) => {}
                Some((_, package)) => {
                    problems.push(format!("{m} ({file}): contrib/test-tools.sh does not pip install {package}"))
                }
                None => problems.push(format!("Python module {m} ({file}) is in no list here")),
            }
            modules.insert(m);
        }
        // tests/fixtures/*.js load their packages with need('NAME').
        // A file inside a package (`need('prismarine-chunk/src/...')`) is
        // that package's.
        for path in literals_after(&text.replace('\'', "\""), "need(") {
            let name = path.split('/').next().unwrap_or_default().to_string();
            if !NPM.contains(&name.as_str()) {
                problems.push(format!("npm package {name} ({file}) is in no list here"));
            }
            modules.insert(name);
        }
    }
    for package in NPM {
        if !npm.contains(*package) {
            problems.push(format!("contrib/test-tools.sh does not npm install {package}"));
        }
    }
    for must in ["anvil", "amulet_nbt", "twmap", "prismarine-chunk", "leveldb-zlib"] {
        assert!(modules.contains(must), "the scan lost {must}: {modules:?}");
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_tool_a_test_skips_for_is_required_under_root() {
    let text = std::fs::read_to_string(root().join("contrib/test-tools.sh")).unwrap();
    let required: BTreeSet<&str> = text
        .lines()
        .find_map(|l| l.strip_prefix("REQUIRE_AS_ROOT="))
        .expect("REQUIRE_AS_ROOT in contrib/test-tools.sh")
        .split(',')
        .collect();
    let mut problems = Vec::new();
    let mut names = BTreeSet::new();
    for (file, src) in test_sources() {
        for call in src.split("common::skip(").skip(1) {
            // skip(TEST, "WHAT", WHY): WHAT is the second argument.
            let args = arguments(call);
            let Some(what) = args.get(1).and_then(|a| a.strip_prefix('"')?.strip_suffix('"')) else {
                continue;
            };
            names.insert(what.to_string());
            if !required.contains(what) && what != "shared" {
                problems.push(format!("{file}: skips for {what:?}, which WORLDFS_REQUIRE under root does not name"));
            }
        }
    }
    for must in ["fuse", "server", "vim", "pg", "shared"] {
        assert!(names.contains(must), "the scan lost {must}: {names:?}");
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The top-level arguments of a call whose text (after the opening
/// parenthesis) is `call`, trimmed: commas inside strings, parentheses and
/// brackets do not split.
fn arguments(call: &str) -> Vec<String> {
    let (mut args, mut current, mut depth, mut in_string, mut escaped) = (Vec::new(), String::new(), 0, false, false);
    for c in call.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            _ if in_string => {}
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth == 0 => break,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                args.push(current.trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    args.push(current.trim().to_string());
    args
}
