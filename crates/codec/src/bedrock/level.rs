//! `level.dat` of a Bedrock world: a little-endian u32 (the storage
//! version, 10 for worlds of 1.18 and later), a little-endian u32 (the
//! length of what follows), then one little-endian NBT compound.

use crate::minecraft::nbt::{self, Compound, Flavor};

/// A decoded `level.dat`.
#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    /// The header's storage version.
    pub storage_version: u32,
    /// The name of the NBT root (kept for a rewrite).
    pub root_name: String,
    /// The NBT compound.
    pub root: Compound,
}

/// Decode `level.dat`; the header's length must be what follows.
pub fn decode(bytes: &[u8]) -> Result<Level, String> {
    if bytes.len() < 8 {
        return Err(format!("{} bytes: level.dat starts with an 8-byte header", bytes.len()));
    }
    let storage_version = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let len = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
    if len != bytes.len() - 8 {
        return Err(format!("the header says {len} bytes of NBT follow, {} do", bytes.len() - 8));
    }
    let (root_name, root) = nbt::decode_as(&bytes[8..], Flavor::Bedrock).map_err(|e| nbt::shift_offset(&e, 8))?;
    Ok(Level { storage_version, root_name, root })
}

/// The bytes of `level.dat`.
pub fn encode(level: &Level) -> Result<Vec<u8>, String> {
    let body = nbt::encode_as(&level.root_name, &level.root, Flavor::Bedrock)?;
    let len = u32::try_from(body.len()).map_err(|_| "level.dat of 4 GiB or more".to_string())?;
    let mut out = Vec::with_capacity(body.len() + 8);
    out.extend(level.storage_version.to_le_bytes());
    out.extend(len.to_le_bytes());
    out.extend(body);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::minecraft::nbt::Tag;

    #[test]
    fn header_and_body_round_trip_and_lies_are_refused() {
        let level = Level {
            storage_version: 10,
            root_name: String::new(),
            root: Compound(vec![("LevelName".into(), Tag::String("A".into()))]),
        };
        let bytes = encode(&level).unwrap();
        assert_eq!(&bytes[..4], &[10, 0, 0, 0]);
        assert_eq!(decode(&bytes).unwrap(), level);
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).unwrap_err().contains("header says"));
        assert!(decode(&bytes[..5]).unwrap_err().contains("8-byte header"));
        let mut bad = bytes.clone();
        bad[8] = 8;
        assert!(decode(&bad).unwrap_err().starts_with("byte 8"));
    }
}
