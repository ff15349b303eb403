//! What the Minecraft tests share: their worlds in tests/data/minecraft
//! and the Python readers they compare the mount with (anvil-parser2 and
//! amulet-nbt, installed by contrib/test.sh).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A world or file of tests/data/minecraft.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/minecraft").join(name)
}

/// Why anvil-parser2 and amulet-nbt cannot run here, if they cannot.
pub fn oracle_missing() -> Option<String> {
    let ok = Command::new("python3").args(["-c", "import anvil, amulet_nbt"]).output().map(|o| o.status.success());
    (!ok.unwrap_or(false)).then(|| "python3 with anvil-parser2 and amulet-nbt (contrib/test.sh)".to_string())
}

/// Skip (with the reason) unless anvil-parser2 and amulet-nbt are there.
macro_rules! require_mc_oracle {
    ($test:expr) => {
        if let Some(why) = $crate::common::minecraft::oracle_missing() {
            $crate::common::skip($test, "python3", &why);
            return;
        }
    };
}

/// Skip (with the reason) unless FUSE, anvil-parser2 and amulet-nbt are there.
macro_rules! require_fuse_and_mc_oracle {
    ($test:expr) => {
        require_fuse!($test);
        require_mc_oracle!($test);
    };
}
