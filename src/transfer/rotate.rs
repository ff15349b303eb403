//! Turning a build around the vertical axis the way the engine's
//! `place_schematic` does (`Schematic::blitToVManip` and
//! `MapNode::rotateAlongYAxis`): positions, and param2 by the node's
//! `paramtype2`, which only the game knows (see [`NodeDefs`]).

use std::collections::HashMap;

/// A quarter-turn count, anticlockwise seen from above: 0, 90, 180, 270
/// degrees are 0..=3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rotation(pub u8);

impl Rotation {
    pub(crate) fn from_degrees(deg: i64) -> Result<Rotation, String> {
        match deg {
            0 | 90 | 180 | 270 => Ok(Rotation((deg / 90) as u8)),
            _ => Err(format!("rotation {deg} is not 0, 90, 180 or 270")),
        }
    }

    pub(crate) fn degrees(self) -> u16 {
        self.0 as u16 * 90
    }

    /// The size of the turned box: 90 and 270 swap X and Z.
    pub fn turned_size(self, size: [usize; 3]) -> [usize; 3] {
        if self.0 % 2 == 1 { [size[2], size[1], size[0]] } else { size }
    }

    /// The node of the unturned box (size `size`) that lands at `(x, z)`
    /// of the turned box. With 90, what was on the +Z (north) side ends
    /// up on +X (east), and +X ends up on -Z.
    pub(crate) fn source(self, size: [usize; 3], x: usize, z: usize) -> (usize, usize) {
        let [sx, _, sz] = size;
        match self.0 {
            1 => (sx - 1 - z, x),
            2 => (sx - 1 - x, sz - 1 - z),
            3 => (z, sz - 1 - x),
            _ => (x, z),
        }
    }
}

/// How a node uses param2 (the `paramtype2` of its definition), for the
/// kinds that turn with the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType2 {
    Facedir,
    ColorFacedir,
    FourDir,
    ColorFourDir,
    Wallmounted,
    ColorWallmounted,
    Degrotate,
    ColorDegrotate,
    /// Any other paramtype2 (none, color, leveled, meshoptions, ...):
    /// param2 does not turn.
    Other,
}

impl ParamType2 {
    /// From the name a node definition uses (`paramtype2 = "facedir"`).
    pub(crate) fn from_name(s: &str) -> ParamType2 {
        match s {
            "facedir" => ParamType2::Facedir,
            "colorfacedir" => ParamType2::ColorFacedir,
            "4dir" => ParamType2::FourDir,
            "color4dir" => ParamType2::ColorFourDir,
            "wallmounted" => ParamType2::Wallmounted,
            "colorwallmounted" => ParamType2::ColorWallmounted,
            "degrotate" => ParamType2::Degrotate,
            "colordegrotate" => ParamType2::ColorDegrotate,
            _ => ParamType2::Other,
        }
    }
}

/// The engine's table: facedir f turned by r quarter turns is
/// `FACEDIR[f * 4 + r]` (a fact of the rotation group of the cube).
const FACEDIR: [u8; 96] = [
    0, 1, 2, 3, 1, 2, 3, 0, 2, 3, 0, 1, 3, 0, 1, 2, //
    4, 13, 10, 19, 5, 14, 11, 16, 6, 15, 8, 17, 7, 12, 9, 18, //
    8, 17, 6, 15, 9, 18, 7, 12, 10, 19, 4, 13, 11, 16, 5, 14, //
    12, 9, 18, 7, 13, 10, 19, 4, 14, 11, 16, 5, 15, 8, 17, 6, //
    16, 5, 14, 11, 17, 6, 15, 8, 18, 7, 12, 9, 19, 4, 13, 10, //
    20, 23, 22, 21, 21, 20, 23, 22, 22, 21, 20, 23, 23, 22, 21, 20,
];

/// param2 of a node turned by `rot`. Wallmounted values 0 and 1 (floor,
/// ceiling) do not turn; 6 and 7 are left as they are (the engine reads
/// past its table for them).
pub(crate) fn rotate_param2(p2: u8, kind: ParamType2, rot: Rotation) -> u8 {
    let r = rot.0 as usize;
    if r == 0 {
        return p2;
    }
    match kind {
        ParamType2::Facedir | ParamType2::ColorFacedir => {
            let f = ((p2 & 31) % 24) as usize;
            (p2 & !31) | FACEDIR[f * 4 + r]
        }
        ParamType2::FourDir | ParamType2::ColorFourDir => (p2 & !3) | FACEDIR[(p2 & 3) as usize * 4 + r],
        ParamType2::Wallmounted | ParamType2::ColorWallmounted => {
            let face = p2 & 7;
            if !(2..=5).contains(&face) {
                return p2;
            }
            // Faces 2..5 (+X, -X, +Z, -Z) as quarter turns, and back.
            const TO_ROT: [u8; 4] = [0, 2, 1, 3];
            const FROM_ROT: [u8; 4] = [2, 4, 3, 5];
            let old = TO_ROT[(face - 2) as usize];
            (p2 & !7) | FROM_ROT[(old.wrapping_sub(rot.0) & 3) as usize]
        }
        ParamType2::Degrotate => ((p2 as u32 + 60 * r as u32) % 240) as u8,
        ParamType2::ColorDegrotate => (p2 & 0xe0) | (((p2 & 0x1f) as u32 + 6 * r as u32) % 24) as u8,
        ParamType2::Other => p2,
    }
}

/// What the game says about its nodes: `paramtype2` by node name. A name
/// it does not list turns like a node without a paramtype2 (param2 kept),
/// as the engine treats unknown nodes.
#[derive(Clone, Debug, Default)]
pub struct NodeDefs {
    pub paramtype2: HashMap<Vec<u8>, ParamType2>,
}

impl NodeDefs {
    pub fn get(&self, name: &[u8]) -> ParamType2 {
        self.paramtype2.get(name).copied().unwrap_or(ParamType2::Other)
    }

    /// Read a node-definition dump: one `<name> <paramtype2>` per line
    /// (`#` comments and blank lines skipped), as written by
    /// the `worldfs_nodedefs` mod (`contrib/worldfs_nodedefs/init.lua`).
    pub fn parse(text: &str) -> Result<NodeDefs, String> {
        let mut d = NodeDefs::default();
        for (i, line) in text.lines().enumerate() {
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let mut w = l.split_whitespace();
            let (Some(name), Some(kind), None) = (w.next(), w.next(), w.next()) else {
                return Err(format!("line {}: expected '<node name> <paramtype2>'", i + 1));
            };
            d.paramtype2.insert(name.as_bytes().to_vec(), ParamType2::from_name(kind));
        }
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_turn_like_blit_to_vmanip() {
        // A 3 x 1 x 2 box: (2, 0, 1) is the north-east corner.
        let size = [3, 1, 2];
        let r90 = Rotation(1);
        assert_eq!(r90.turned_size(size), [2, 1, 3]);
        // After 90: north (+Z) side goes east (+X): source z = 1 lands on x = 1.
        assert_eq!(r90.source(size, 1, 0), (2, 1));
        assert_eq!(r90.source(size, 1, 2), (0, 1));
        assert_eq!(Rotation(2).source(size, 0, 0), (2, 1));
        assert_eq!(Rotation(3).source(size, 0, 0), (0, 1));
        // Every turn is a bijection.
        for r in 0..4 {
            let rot = Rotation(r);
            let t = rot.turned_size(size);
            let mut seen = std::collections::HashSet::new();
            for z in 0..t[2] {
                for x in 0..t[0] {
                    assert!(seen.insert(rot.source(size, x, z)));
                }
            }
            assert_eq!(seen.len(), 6);
        }
        assert_eq!(Rotation::from_degrees(45).unwrap_err(), "rotation 45 is not 0, 90, 180 or 270");
    }

    #[test]
    fn param2_turns_by_paramtype2() {
        use ParamType2::*;
        let r = |p2, k, q| rotate_param2(p2, k, Rotation(q));
        assert_eq!(r(0, Facedir, 1), 1);
        assert_eq!(r(3, Facedir, 1), 0);
        assert_eq!(r(4, Facedir, 1), 13);
        assert_eq!(r(0x20 | 4, ColorFacedir, 2), 0x20 | 10);
        assert_eq!(r(2, FourDir, 3), 1);
        // Wallmounted: +X (2) by 90 becomes -Z (5).
        assert_eq!(r(2, Wallmounted, 1), 5);
        assert_eq!(r(4, Wallmounted, 1), 2);
        assert_eq!(r(1, Wallmounted, 1), 1);
        assert_eq!(r(200, Degrotate, 1), 20);
        assert_eq!(r(0xe0 | 20, ColorDegrotate, 1), 0xe0 | 2);
        assert_eq!(r(7, Other, 1), 7);
        // Four quarter turns give back every value.
        for k in [Facedir, ColorFacedir, FourDir, Wallmounted, ColorWallmounted, Degrotate, ColorDegrotate] {
            for p2 in 0..=255u8 {
                if k == Degrotate && p2 >= 240 {
                    continue;
                }
                let mut v = p2;
                for _ in 0..4 {
                    v = r(v, k, 1);
                }
                let facedir_over = matches!(k, Facedir | ColorFacedir) && (p2 & 31) >= 24;
                let colordeg_over = k == ColorDegrotate && (p2 & 31) >= 24;
                if !facedir_over && !colordeg_over {
                    assert_eq!(v, p2, "{k:?} {p2}");
                }
            }
        }
    }

    #[test]
    fn node_defs_parse() {
        let d = NodeDefs::parse("# dump\ndefault:chest facedir\n\ndefault:torch wallmounted\n").unwrap();
        assert_eq!(d.get(b"default:chest"), ParamType2::Facedir);
        assert_eq!(d.get(b"x:y"), ParamType2::Other);
        assert_eq!(NodeDefs::parse("a b c\n").unwrap_err(), "line 1: expected '<node name> <paramtype2>'");
    }
}
