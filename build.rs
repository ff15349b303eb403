//! The commit worldfs is built from, for `worldfs --version`.

fn main() {
    let commit = std::process::Command::new("git")
        .args(["describe", "--always", "--dirty", "--abbrev=12"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "commit unknown".into());
    println!("cargo:rustc-env=WORLDFS_COMMIT={commit}");
    // In a git worktree `.git` is a file, and a watched path that does not
    // exist makes cargo rebuild the crate on every call: ask git where
    // HEAD and the index are.
    for file in ["HEAD", "index"] {
        if let Some(path) = git_path(file) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}

/// Where git keeps `file` of this checkout, if git knows and it exists.
fn git_path(file: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--path-format=absolute", "--git-path", file])
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && std::path::Path::new(&path).exists()).then_some(path)
}
