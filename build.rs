//! The commit worldfs is built from, for `worldfs --version`.

fn main() {
    let commit = git(&["describe", "--always", "--dirty", "--abbrev=12"]).unwrap_or_else(|| "commit unknown".into());
    println!("cargo:rustc-env=WORLDFS_COMMIT={commit}");
    // Rebuilt when the commit changes: HEAD (another branch) and the ref
    // it names (a commit on it), asked of git since in a worktree `.git`
    // is a file; a watched path that does not exist would rebuild on every
    // call. Not the index: `git status` rewrites it, and each rewrite
    // rebuilt the whole crate. So "-dirty" is as of the last build.
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    for file in ["HEAD"].into_iter().chain(branch.as_deref()).chain(["packed-refs"]) {
        if let Some(path) = git(&["rev-parse", "--path-format=absolute", "--git-path", file])
            .filter(|p| std::path::Path::new(p).exists())
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}

/// What `git ARGS` prints, trimmed, if it succeeds.
fn git(args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}
