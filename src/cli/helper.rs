//! worldfs as mount(8)'s helper, so that fstab lines work:
//!
//! ```text
//! /srv/luanti/worlds/main  /mnt/main  fuse.worldfs  ro,allow_other,nofail  0 0
//! ```
//!
//! For type `fuse.worldfs`, mount(8) runs `/sbin/mount.fuse.worldfs SOURCE
//! MOUNTPOINT [-sfnvrw] [-o OPTIONS]` (a link to the worldfs binary); when
//! only `mount.fuse3` is found, it runs `worldfs SOURCE MOUNTPOINT -o
//! OPTIONS`. Both forms end here. Options only mount(8), systemd or fstab
//! care about (nofail, _netdev, auto, user, x-systemd.*, ...) are dropped;
//! the rest are worldfs's `-o` options. The mount detaches into the
//! background once it is ready, as mount(8) expects.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Options for mount(8), fstab and systemd, not for the filesystem.
fn for_mount_only(opt: &str) -> bool {
    const PLAIN: [&str; 16] = [
        "defaults", "auto", "noauto", "nofail", "_netdev", "user", "users", "nouser", "owner", "group", "exec",
        "noexec", "suid", "nosuid", "dev", "nodev",
    ];
    PLAIN.contains(&opt)
        || ["atime", "noatime", "relatime", "strictatime", "nodiratime", "sync", "async", "loud", "silent"]
            .contains(&opt)
        || opt.starts_with("x-")
        || opt.starts_with("comment=")
        || opt.starts_with("helper=")
}

/// Whether this process was started by mount(8): as `mount.fuse.worldfs`
/// (or `mount.worldfs`), or as `worldfs SOURCE MOUNTPOINT ...` by
/// mount.fuse3.
pub(crate) fn called_as_helper() -> bool {
    let args: Vec<OsString> = std::env::args_os().collect();
    let name = args.first().map(|a| Path::new(a).file_name().unwrap_or_default().to_string_lossy().into_owned());
    if name.is_some_and(|n| n.starts_with("mount.")) {
        return true;
    }
    // `worldfs SOURCE MOUNTPOINT`: two paths where a subcommand would be.
    args.len() >= 3 && [&args[1], &args[2]].iter().all(|a| a.to_string_lossy().contains('/'))
}

#[derive(Debug)]
struct Helped {
    source: PathBuf,
    mountpoint: PathBuf,
    options: Vec<String>,
    fake: bool,
    verbose: bool,
}

fn parse(args: &[String]) -> Result<Helped, String> {
    let mut positional = Vec::new();
    let (mut options, mut fake, mut verbose) = (Vec::new(), false, false);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-o" => options.extend(
                it.next()
                    .ok_or("-o needs options")?
                    .split(',')
                    .filter(|o| !o.is_empty() && !for_mount_only(o))
                    .map(str::to_string),
            ),
            "-t" | "-N" => {
                it.next();
            }
            "-f" => fake = true,
            "-v" => verbose = true,
            "-r" => options.push("ro".into()),
            "-w" => options.push("rw".into()),
            "-s" | "-n" => {}
            s if s.starts_with('-') => return Err(format!("unknown mount helper flag '{s}'")),
            _ => positional.push(a.clone()),
        }
    }
    let [source, mountpoint] = <[String; 2]>::try_from(positional)
        .map_err(|p| format!("expected SOURCE MOUNTPOINT, got {} arguments: {}", p.len(), p.join(" ")))?;
    Ok(Helped { source: source.into(), mountpoint: mountpoint.into(), options, fake, verbose })
}

pub(crate) fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let h = match parse(&args) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("mount.fuse.worldfs: {e}");
            return ExitCode::from(1);
        }
    };
    super::init_log(h.verbose as u8, false);
    if h.fake {
        return ExitCode::SUCCESS;
    }
    // mount(8) treats any failure as status 32 ("mount failure").
    match super::mount::mount(h.source, None, h.mountpoint, vec![h.options.join(",")], false, None, false) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mount.fuse.worldfs: {e}");
            ExitCode::from(32)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn fstab_options_are_sorted_out() {
        let h =
            parse(&args("/srv/w /mnt/w -o rw,nofail,_netdev,x-systemd.requires=a.service,noauto,allow_other,ttl=5"))
                .unwrap();
        assert_eq!((h.source, h.mountpoint), (PathBuf::from("/srv/w"), PathBuf::from("/mnt/w")));
        assert_eq!(h.options, ["rw", "allow_other", "ttl=5"]);
        let h = parse(&args("/srv/w /mnt/w -s -n -r -t fuse.worldfs")).unwrap();
        assert_eq!(h.options, ["ro"]);
        assert!(parse(&args("/srv/w /mnt/w -f")).unwrap().fake);
        assert!(parse(&args("/srv/w")).unwrap_err().contains("expected SOURCE MOUNTPOINT"));
        assert!(parse(&args("/a /b -q")).unwrap_err().contains("unknown mount helper flag '-q'"));
    }
}
