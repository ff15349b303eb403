//! Mapblock positions ([`BlockPos`]): the legacy integer key the sqlite3,
//! LevelDB and Redis backends store a block under (PostgreSQL keeps x, y
//! and z as columns), and the text `X,Y,Z` the mount names blocks by.

use std::fmt;
use std::str::FromStr;

/// A mapblock position in block coordinates (node coordinate / 16).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockPos {
    /// Block x (west-east), -2048..=2047 when stored.
    pub x: i16,
    /// Block y (down-up), -2048..=2047 when stored.
    pub y: i16,
    /// Block z (south-north), -2048..=2047 when stored.
    pub z: i16,
}

/// Block coordinates the legacy key can hold: -2048..=2047 on each axis.
pub const KEY_MIN: i16 = -2048;
pub const KEY_MAX: i16 = 2047;

impl BlockPos {
    /// The block at (x, y, z).
    pub const fn new(x: i16, y: i16, z: i16) -> Self {
        BlockPos { x, y, z }
    }

    /// The block holding a node.
    pub fn of_node(x: i32, y: i32, z: i32) -> Option<BlockPos> {
        let b = |n: i32| i16::try_from(n.div_euclid(16)).ok();
        let p = BlockPos::new(b(x)?, b(y)?, b(z)?);
        p.in_range().then_some(p)
    }

    /// Whether the position can be stored (all axes in -2048..=2047).
    pub fn in_range(&self) -> bool {
        [self.x, self.y, self.z].iter().all(|c| (KEY_MIN..=KEY_MAX).contains(c))
    }

    /// The legacy sqlite/leveldb/redis key: z*2^24 + y*2^12 + x.
    pub fn legacy_key(&self) -> i64 {
        (self.z as i64) * 0x100_0000 + (self.y as i64) * 0x1000 + self.x as i64
    }

    /// The position a legacy key stands for (the engine's `getIntegerAsBlock`).
    pub fn from_legacy_key(key: i64) -> BlockPos {
        let v = key.wrapping_add(0x8_0080_0800);
        let axis = |shift: u32| (((v >> shift) & 0xfff) - 0x800) as i16;
        BlockPos::new(axis(0), axis(12), axis(24))
    }

    /// The world node coordinates of this block's minimum corner.
    pub fn origin(&self) -> (i32, i32, i32) {
        (self.x as i32 * 16, self.y as i32 * 16, self.z as i32 * 16)
    }

    /// A compact number for this position (36 bits), used for inodes and
    /// directory cookies.
    pub fn packed(&self) -> u64 {
        let a = |c: i16| (c as i64 + 2048) as u64 & 0xfff;
        (a(self.x) << 24) | (a(self.y) << 12) | a(self.z)
    }

    /// The position [`BlockPos::packed`] made `v` from.
    pub fn unpack(v: u64) -> BlockPos {
        let a = |shift: u32| (((v >> shift) & 0xfff) as i64 - 2048) as i16;
        BlockPos::new(a(24), a(12), a(0))
    }
}

impl fmt::Display for BlockPos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{},{}", self.x, self.y, self.z)
    }
}

/// Parse "X,Y,Z" exactly as Display writes it (no spaces, no "+", no
/// leading zeros), so that every position has one name.
pub fn parse_triple<T: FromStr + fmt::Display + PartialEq>(s: &str) -> Option<(T, T, T)> {
    let mut it = s.split(',');
    let mut next = || {
        let t = it.next()?;
        let v: T = t.parse().ok()?;
        (v.to_string() == t).then_some(v)
    };
    let r = (next()?, next()?, next()?);
    it.next().is_none().then_some(r)
}

impl FromStr for BlockPos {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        let (x, y, z) = parse_triple::<i16>(s).ok_or(())?;
        let p = BlockPos::new(x, y, z);
        if p.in_range() { Ok(p) } else { Err(()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_keys_match_the_spec_examples() {
        let cases: [((i16, i16, i16), i64); 11] = [
            ((0, 0, 0), 0),
            ((1, 0, 0), 1),
            ((0, 1, 0), 4096),
            ((0, 0, 1), 16777216),
            ((-1, 0, 0), -1),
            ((0, 0, -1), -16777216),
            ((-1, -1, -1), -16781313),
            ((1, 2, 3), 50339841),
            ((-8, -3, -8), -134230024),
            ((2047, 2047, 2047), 0x7FF7FF7FF),
            ((-123, 456, -789), -0x314e3807b),
        ];
        for ((x, y, z), key) in cases {
            let p = BlockPos::new(x, y, z);
            assert_eq!(p.legacy_key(), key, "{p}");
            assert_eq!(BlockPos::from_legacy_key(key), p);
        }
        let min = BlockPos::new(-2048, -2048, -2048);
        assert_eq!(BlockPos::from_legacy_key(min.legacy_key()), min);
    }

    #[test]
    fn names_parse_only_in_canonical_form() {
        assert_eq!("-3,0,12".parse(), Ok(BlockPos::new(-3, 0, 12)));
        for bad in ["+3,0,12", "03,0,12", "3, 0,12", "3,0", "3,0,1,2", "3,0,2048", "x,0,0", "-0,0,0"] {
            assert!(bad.parse::<BlockPos>().is_err(), "{bad}");
        }
    }

    #[test]
    fn packing_round_trips_and_node_lookup() {
        for p in [BlockPos::new(-2048, 0, 2047), BlockPos::new(5, -7, 9)] {
            assert_eq!(BlockPos::unpack(p.packed()), p);
        }
        assert_eq!(BlockPos::of_node(-1, 15, 16), Some(BlockPos::new(-1, 0, 1)));
    }
}
