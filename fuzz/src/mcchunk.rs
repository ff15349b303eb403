//! Minecraft chunk data: the codec on any bytes in both layouts (what it
//! accepts re-encodes byte for byte), and edits of a section's files.

use worldfs_codec::minecraft::packet::{Chunk, Layout, Shape};

/// `mcchunk`: byte 0 picks the layout, byte 1 the bit mask; the rest is
/// the chunk data.
pub fn mcchunk(data: &[u8]) {
    let [l, mask, rest @ ..] = data else { return };
    let layout = if l & 1 == 0 { Layout::Spanning } else { Layout::Padded };
    let shape = Shape { layout, bitmap: *mask as u32 & 0x3f, sky_light: l & 2 == 0, biomes: l & 4 == 0 };
    if let Ok(c) = Chunk::decode(rest, shape) {
        assert_eq!(c.encode(shape).expect("a decoded chunk encodes"), rest, "re-encoding changed the bytes");
        let mut c2 = c.clone();
        for s in c2.sections.iter_mut() {
            let states: Vec<u32> = s.states.iter().map(|&x| x.wrapping_add(16) % (4096 * 16)).collect();
            if s.set_states(states.clone(), layout, |st| st == 0).is_ok() {
                assert_eq!(s.states, states);
            }
        }
        let again = Chunk::decode(&c2.encode(shape).unwrap(), shape).expect("what we write reads back");
        assert_eq!(again.sections.len(), c.sections.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcchunk_smoke() {
        // One 4-bit section of air with light, no biomes.
        let mut one = vec![6u8, 1, 4, 1, 0, 0x80, 0x02];
        one.extend(std::iter::repeat_n(0u8, 256 * 8 + 2048));
        crate::smoke::run("mcchunk", mcchunk, vec![one]);
    }
}
