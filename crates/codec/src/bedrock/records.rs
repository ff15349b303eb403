//! Values that are little-endian NBT compounds one after another (a
//! chunk's block entities, tag 49; its entities before 1.18.30, tag 50; an
//! entity of `actorprefix`) and actor digests (`digp`: 8-byte entity ids
//! one after another).

use crate::minecraft::nbt::{self, Compound, Flavor};

/// Every compound of a value, in order (an empty value holds none).
pub fn decode(bytes: &[u8]) -> Result<Vec<Compound>, String> {
    Ok(nbt::decode_all(bytes, Flavor::Bedrock)?.into_iter().map(|(_, c)| c).collect())
}

/// The value holding `compounds` (each with an empty root name, as the game
/// writes them).
pub fn encode(compounds: &[Compound]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for c in compounds {
        out.extend(nbt::encode_as("", c, Flavor::Bedrock)?);
    }
    Ok(out)
}

/// The entity ids of a `digp` value.
pub fn digest(bytes: &[u8]) -> Result<Vec<[u8; 8]>, String> {
    if !bytes.len().is_multiple_of(8) {
        return Err(format!("{} bytes: an actor digest is 8-byte ids", bytes.len()));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| {
            let mut id = [0u8; 8];
            id.copy_from_slice(c);
            id
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::minecraft::nbt::Tag;

    #[test]
    fn compounds_follow_each_other() {
        let a = Compound(vec![("id".into(), Tag::String("Chest".into())), ("x".into(), Tag::Int(-3))]);
        let b = Compound(vec![("id".into(), Tag::String("Sign".into()))]);
        let bytes = encode(&[a.clone(), b.clone()]).unwrap();
        assert_eq!(decode(&bytes).unwrap(), vec![a, b]);
        assert_eq!(decode(&[]).unwrap(), Vec::<Compound>::new());
        assert!(decode(&bytes[..bytes.len() - 1]).is_err());
        assert_eq!(digest(&[1; 16]).unwrap().len(), 2);
        assert!(digest(&[1; 9]).unwrap_err().contains("8-byte"));
    }
}
