//! worldfs as the system runs filesystems: an /etc/fstab line of type
//! `fuse.worldfs` mounted with mount(8) and unmounted with umount(8)
//! (through the `mount.fuse.worldfs` helper), the form mount.fuse3 uses,
//! the systemd unit, `--version`, completions and man pages.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_worldfs");

fn is_mounted(mnt: &Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let m = mnt.to_string_lossy();
    mounts.lines().any(|l| l.split(' ').nth(1) == Some(&m))
}

fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < Duration::from_secs(20), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Undoes what the fstab test changed in the system, whatever happens.
struct SystemChanges {
    helper: PathBuf,
    fstab_marker: String,
    mnt: PathBuf,
}

impl Drop for SystemChanges {
    fn drop(&mut self) {
        if is_mounted(&self.mnt) {
            let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
        }
        let _ = std::fs::remove_file(&self.helper);
        if let Ok(text) = std::fs::read_to_string("/etc/fstab") {
            let kept: String =
                text.lines().filter(|l| !l.contains(&self.fstab_marker)).map(|l| format!("{l}\n")).collect();
            let _ = std::fs::write("/etc/fstab", kept);
        }
    }
}

#[test]
fn an_fstab_line_mounts_with_mount_and_unmounts_with_umount() {
    const TEST: &str = "an_fstab_line_mounts_with_mount_and_unmounts_with_umount";
    require_fuse!(TEST);
    if !common::is_root() {
        common::skip(TEST, "root", "needs root (it edits /etc/fstab and installs a mount helper)");
        return;
    }
    let helper = PathBuf::from("/sbin/mount.fuse.worldfs");
    if helper.exists() && std::fs::read_link(&helper).ok().as_deref() != Some(Path::new(BIN)) {
        common::skip(TEST, "root", "/sbin/mount.fuse.worldfs exists already (installed worldfs?)");
        return;
    }
    let world = common::demo_world();
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let marker = format!("worldfs-test-{}", std::process::id());
    let _undo = SystemChanges { helper: helper.clone(), fstab_marker: marker.clone(), mnt: mnt.clone() };
    let _ = std::fs::remove_file(&helper);
    std::os::unix::fs::symlink(BIN, &helper).unwrap();
    let mut fstab = std::fs::read_to_string("/etc/fstab").unwrap_or_default();
    if !fstab.is_empty() && !fstab.ends_with('\n') {
        fstab.push('\n');
    }
    fstab.push_str(&format!(
        "{}  {}  fuse.worldfs  ro,allow_other,nofail,x-systemd.after=network.target  0 0  # {marker}\n",
        world.path().display(),
        mnt.display()
    ));
    std::fs::write("/etc/fstab", fstab).unwrap();

    let out = Command::new("mount").arg(&mnt).output().unwrap();
    assert!(out.status.success(), "mount: {}", String::from_utf8_lossy(&out.stderr));
    wait_for("the mount", || mnt.join("README").exists());
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let line = mounts.lines().find(|l| l.split(' ').nth(1) == Some(&mnt.to_string_lossy())).unwrap().to_string();
    // Source "worldfs", type fuse (as root the kernel is not told the
    // subtype), read-only as the fstab line says.
    let fields: Vec<&str> = line.split(' ').collect();
    assert!(fields[0] == "worldfs" && fields[2].starts_with("fuse") && fields[3].starts_with("ro,"), "{line}");
    assert!(fields[3].contains("allow_other"), "{line}");
    assert_eq!(std::fs::read_dir(mnt.join("blocks")).unwrap().count(), 18);
    assert!(std::fs::read_to_string(mnt.join("node/3,1,3")).unwrap().starts_with("default:chest"));

    let out = Command::new("umount").arg(&mnt).output().unwrap();
    assert!(out.status.success(), "umount: {}", String::from_utf8_lossy(&out.stderr));
    wait_for("the unmount", || !is_mounted(&mnt));
}

/// mount.fuse3 runs `worldfs SOURCE MOUNTPOINT -o OPTIONS` for type
/// fuse.worldfs when there is no mount.fuse.worldfs helper.
#[test]
fn the_mount_fuse3_form_mounts_in_the_background() {
    const TEST: &str = "the_mount_fuse3_form_mounts_in_the_background";
    require_fuse!(TEST);
    let world = common::demo_world();
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let out = Command::new(BIN)
        .arg(world.path())
        .arg(&mnt)
        .args(["-o", "ro,nofail,_netdev,dev,suid"])
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(mnt.join("README").exists(), "the command returns once mounted");
    let out = Command::new("fusermount3").arg("-u").arg(&mnt).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // A fake mount (-f) checks nothing and mounts nothing.
    let out = Command::new(BIN).arg(world.path()).arg(&mnt).args(["-f", "-o", "ro"]).output().unwrap();
    assert!(out.status.success());
    assert!(!mnt.join("README").exists());
}

#[test]
fn version_completions_and_man_pages() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    let v = String::from_utf8(out.stdout).unwrap();
    assert!(v.starts_with(&format!("worldfs {} (", env!("CARGO_PKG_VERSION"))), "{v}");
    for shell in ["bash", "zsh", "fish"] {
        let out = Command::new(BIN).args(["completions", shell]).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(out.status.success() && text.contains("mount") && text.contains("undo"), "{shell}");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN).arg("man").arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = std::fs::read_to_string(dir.path().join("worldfs.1")).unwrap();
    assert!(page.contains(".TH worldfs 1") && page.contains("mount"), "{page}");
    assert!(dir.path().join("worldfs-mount.1").exists());
    let Some(man) = common::mount::which("man") else {
        common::skip("version_completions_and_man_pages", "man", "man is not installed");
        return;
    };
    let out = Command::new(man).arg("-l").arg(dir.path().join("worldfs-mount.1")).env("MANPAGER", "cat").output();
    let out = out.unwrap_or_else(|e| panic!("man -l: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "man -l failed: {}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("MOUNTPOINT"), "{text}");
}

#[test]
fn the_systemd_unit_is_valid() {
    let unit = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/worldfs@.service");
    let text = std::fs::read_to_string(&unit).unwrap();
    assert!(text.contains("ExecStart=") && text.contains("ExecStop="), "{text}");
    let Some(analyze) = common::mount::which("systemd-analyze") else {
        common::skip("the_systemd_unit_is_valid", "systemd", "systemd-analyze is not installed");
        return;
    };
    // Verify an instance of the template, with the binary it names present.
    let dir = tempfile::tempdir().unwrap();
    let instance = dir.path().join("worldfs@main.service");
    std::fs::write(&instance, text.replace("/usr/local/bin/worldfs", BIN)).unwrap();
    let out = Command::new(analyze).arg("verify").arg(&instance).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let problems: Vec<&str> = err.lines().filter(|l| l.contains("worldfs@")).collect();
    assert!(problems.is_empty(), "{err}");
    assert!(out.status.success(), "systemd-analyze verify: {}\n{err}", out.status);
}

#[test]
fn the_demo_world_stays_and_the_commands_it_suggests_work() {
    let dir = tempfile::tempdir().unwrap();
    // A name with a space: the suggested commands quote it.
    let world = dir.path().join("my demo");
    let out = Command::new(BIN).arg("demo").arg(&world).current_dir(dir.path()).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(world.join("map.sqlite").is_file() && world.join("world.mt").is_file(), "the world is gone");
    assert!(text.contains(&format!("'{}'", world.display())), "the world is not named: {text}");
    let tries: Vec<&str> = text.lines().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(tries.len(), 3, "three commands to try: {text}");
    // Each as a user pastes it, with worldfs on the PATH.
    let path = format!("{}:{}", Path::new(BIN).parent().unwrap().display(), std::env::var("PATH").unwrap());
    let run = |line: &str| {
        let out = Command::new("bash").args(["-c", line]).env("PATH", &path).current_dir(dir.path()).output().unwrap();
        assert!(out.status.success(), "{line}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let picture = tries.iter().find(|l| l.contains("worldfs map")).expect("a map command");
    run(picture);
    let png = std::fs::read(dir.path().join("demo.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "demo.png is no PNG");
    if let Some(why) = common::mount::fuse_unavailable() {
        common::skip("the_demo_world_stays_... (the mount commands)", "fuse", &why);
        return;
    }
    let mnt = dir.path().join("demo-mnt");
    let listed = run(tries[0]);
    assert!(listed.contains("blocks") && is_mounted(&mnt), "{listed}");
    let chest = run(tries[1]);
    assert!(chest.contains("Item default:apple 12"), "{chest}");
    wait_for("the demo's unmount", || !is_mounted(&mnt));
}

#[test]
fn mount_help_names_every_kind_of_world_it_mounts() {
    let out = Command::new(BIN).args(["mount", "--help"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Luanti (Minetest) world directory"), "{text}");
    assert!(text.contains("Minecraft Java world directory"), "{text}");
    let names = worldfs::open::WorldKind::ALL.map(|k| k.name());
    for name in names.into_iter().chain(worldfs::open::document_kinds().iter().map(|k| k.name)) {
        assert!(text.contains(name), "mount --help does not name the kind {name}:\n{text}");
    }
}
