//! `worldfs live install WORLD`: put the worldfs_live mod (the copy in
//! contrib/worldfs_live/, built into the binary) into WORLD/worldmods/,
//! where the server loads it without it being enabled in world.mt.

use std::path::{Path, PathBuf};

/// The mod's files, as `worldfs live install` writes them.
const FILES: [(&str, &str); 2] = [
    ("mod.conf", include_str!("../../contrib/worldfs_live/mod.conf")),
    ("init.lua", include_str!("../../contrib/worldfs_live/init.lua")),
];

/// Install (or update) the mod in `world`; the lines to print.
pub fn install(world: &Path) -> Result<Vec<String>, String> {
    if !world.join("world.mt").is_file() {
        return Err(format!("{}: not a Luanti world (no world.mt)", world.display()));
    }
    let dir: PathBuf = world.join("worldmods").join("worldfs_live");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut changed = false;
    for (name, text) in FILES {
        let path = dir.join(name);
        if std::fs::read(&path).ok().as_deref() == Some(text.as_bytes()) {
            continue;
        }
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))?;
        changed = true;
    }
    let what = if changed { "installed" } else { "already installed (unchanged)" };
    Ok(vec![
        format!("worldfs_live {what} in {}", dir.display()),
        "the server loads it at its next start (worldmods need no enabling); once it runs, a writable \
         `worldfs mount` of this world sends its changes through the server"
            .to_string(),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installs_into_worldmods_and_refuses_a_non_world() {
        let d = tempfile::tempdir().unwrap();
        assert!(install(d.path()).unwrap_err().contains("no world.mt"));
        std::fs::write(d.path().join("world.mt"), "gameid = minetest\n").unwrap();
        let said = install(d.path()).unwrap();
        assert!(said[0].contains("installed in"), "{said:?}");
        let init = std::fs::read_to_string(d.path().join("worldmods/worldfs_live/init.lua")).unwrap();
        assert!(init.contains("worldfs-live 1"));
        assert!(install(d.path()).unwrap()[0].contains("unchanged"));
    }
}
