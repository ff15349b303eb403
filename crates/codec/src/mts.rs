//! The `.mts` file (Luanti schematic) <-> [`Schematic`]. Pure: no I/O.
//!
//! Layout (big-endian; details verified against the engine's
//! `Schematic::deserializeFromMts` and `serializeToMts` in
//! src/mapgen/mg_schematic.cpp of <https://github.com/luanti-org/luanti>):
//!
//! ```text
//! "MTSM" | u16 version (1-4 read, 4 written) | s16 size X, Y, Z
//! | [version >= 3] one slice probability byte per Y
//! | u16 name count | per name: u16 length, bytes
//! | zlib { u16 content id per node | u8 param1 per node | u8 param2 per node }
//! ```
//!
//! Nodes run x fastest, then y, then z (index `z*Y*X + y*X + x`: Z is not
//! mirrored, the order of a mapblock's nodes). In version 4, param1 is the
//! placement probability (bits 0-6, 0 = never, 127 = always) plus the
//! force-placement flag (bit 7). Older versions are upgraded on decode the
//! way the engine upgrades them, so a [`Schematic`] always holds version-4
//! values; [`Schematic::version`] keeps the version the file had:
//! * 1: param1 0 means "always" (becomes 255 before the halving below), and
//!   nodes named `ignore` get probability 0;
//! * 1-2: no slice bytes (every slice 255 before the halving);
//! * 1-3: probabilities are 0-255 and are halved (slices and nodes).
//!
//! Round trip: for a version-4 file, `encode(decode(f))` has the same
//! header and name table bytes, and its zlib stream inflates to the same
//! node data (the compressed bytes differ: the engine uses zlib, we use
//! miniz at the same level). Older versions come back as the version-4
//! file the engine would write after loading them.
//!
//! Bytes after the zlib stream are ignored, as the engine ignores them
//! (the document of a mounted file still gives them back while the
//! schematic is unchanged).
//!
//! Names are kept as stored, `ignore` included (the engine reads an
//! `ignore` name as `air`; placing treats it so, see `transfer`).

use crate::compress;
use std::fmt;

/// The signature every `.mts` file starts with.
pub const MAGIC: &[u8; 4] = b"MTSM";
/// The version written (the engine's MTSCHEM_FILE_VER_HIGHEST_WRITE).
pub const WRITE_VERSION: u16 = 4;
/// The newest version read (MTSCHEM_FILE_VER_HIGHEST_READ).
pub const MAX_READ_VERSION: u16 = 4;
/// Probability bits of param1 and the force-placement bit.
pub const PROB_MASK: u8 = 0x7f;
/// Probability 127: always placed.
pub const PROB_ALWAYS: u8 = 0x7f;
/// param1 bit 7: placed even over nodes that are not air.
pub const FORCE_PLACE: u8 = 0x80;
/// The most nodes a schematic may hold here: 16 777 216 (256 x 256 x 256),
/// 64 MiB of node data. The format allows 32767 per axis, but nothing that
/// large is a build, and a hostile size must not allocate gigabytes.
pub const MAX_NODES: usize = 1 << 24;
/// The largest size on one axis: sizes are signed 16-bit numbers.
pub const MAX_AXIS: u16 = i16::MAX as u16;
/// The most names the table can hold (a u16 count).
pub const MAX_NAMES: usize = u16::MAX as usize;

/// A schematic as the engine holds it after loading.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schematic {
    /// The version of the file it was read from (encode writes 4).
    pub version: u16,
    /// Nodes along X, Y, Z; each 1..=32767, volume at most [`MAX_NODES`].
    pub size: [u16; 3],
    /// One probability byte per Y slice (0-127; bit 7 is reserved).
    pub slices: Vec<u8>,
    /// The name table: content id N is `names[N]`.
    pub names: Vec<Vec<u8>>,
    /// Content id of every node (index [`Schematic::index`]).
    pub param0: Vec<u16>,
    /// Probability (bits 0-6) and force-placement flag (bit 7) of every node.
    pub param1: Vec<u8>,
    /// param2 of every node (facedir, wallmounted, ...), as a map block's.
    pub param2: Vec<u8>,
}

/// Why an `.mts` could not be decoded or encoded, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MtsError {
    /// Byte offset in the file (or in the inflated node data when the
    /// message says so), if the problem is at one place.
    pub offset: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl MtsError {
    fn at(offset: usize, message: impl Into<String>) -> MtsError {
        MtsError { offset: Some(offset), message: message.into() }
    }
    /// An error at no one place.
    pub fn new(message: impl Into<String>) -> MtsError {
        MtsError { offset: None, message: message.into() }
    }
}

impl fmt::Display for MtsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(o) => write!(f, "{} (at byte {o})", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for MtsError {}

/// Check a size: every axis 1..=32767 and the volume within [`MAX_NODES`].
/// Returns the volume.
pub fn check_size(size: [i64; 3]) -> Result<usize, String> {
    for (axis, &s) in ["X", "Y", "Z"].iter().zip(&size) {
        if s < 1 || s > MAX_AXIS as i64 {
            return Err(format!("size {axis} = {s} is outside 1..{MAX_AXIS}"));
        }
    }
    let volume = (size[0] * size[1] * size[2]) as usize;
    if volume > MAX_NODES {
        return Err(format!(
            "size {} x {} x {} is {volume} nodes; at most {MAX_NODES} (256 x 256 x 256) are allowed",
            size[0], size[1], size[2]
        ));
    }
    Ok(volume)
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], MtsError> {
        if self.data.len() - self.pos < n {
            return Err(MtsError::at(
                self.pos,
                format!("truncated: {what} needs {n} byte(s), the file has {} left", self.data.len() - self.pos),
            ));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u16(&mut self, what: &str) -> Result<u16, MtsError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
}

impl Schematic {
    /// An all-air schematic (probability 127, slices 127) of `size`.
    pub fn new_air(size: [u16; 3]) -> Result<Schematic, String> {
        let n = check_size(size.map(i64::from))?;
        Ok(Schematic {
            version: WRITE_VERSION,
            size,
            slices: vec![PROB_ALWAYS; size[1] as usize],
            names: vec![b"air".to_vec()],
            param0: vec![0; n],
            param1: vec![PROB_ALWAYS; n],
            param2: vec![0; n],
        })
    }

    /// How many nodes: X × Y × Z.
    pub fn volume(&self) -> usize {
        self.size.iter().map(|&s| s as usize).product()
    }

    /// The index of node (x, y, z): x fastest, then y, then z.
    pub fn index(&self, x: usize, y: usize, z: usize) -> usize {
        let [sx, sy, _] = self.size.map(|s| s as usize);
        (z * sy + y) * sx + x
    }

    /// (x, y, z) of a node index.
    pub fn xyz(&self, i: usize) -> [usize; 3] {
        let [sx, sy, _] = self.size.map(|s| s as usize);
        [i % sx, (i / sx) % sy, i / (sx * sy)]
    }

    /// Reads an `.mts` file of version 1 to 4 (older versions upgraded as the
    /// module doc says).
    pub fn decode(file: &[u8]) -> Result<Schematic, MtsError> {
        let mut c = Cursor { data: file, pos: 0 };
        if c.take(4, "the signature")? != MAGIC {
            return Err(MtsError::at(0, "not a schematic: the file does not start with MTSM"));
        }
        let at = c.pos;
        let version = c.u16("the version")?;
        if version == 0 || version > MAX_READ_VERSION {
            return Err(MtsError::at(at, format!("unsupported schematic version {version} (readable: 1-4)")));
        }
        let at = c.pos;
        let mut size = [0i64; 3];
        for s in &mut size {
            *s = c.u16("the size")? as i16 as i64;
        }
        let volume = check_size(size).map_err(|m| MtsError::at(at, m))?;
        let size = size.map(|s| s as u16);
        let mut slices = if version >= 3 {
            c.take(size[1] as usize, "the slice probabilities")?.to_vec()
        } else {
            vec![0xff; size[1] as usize]
        };
        let count = c.u16("the name count")?;
        // A name takes at least 2 bytes: a lying count reserves nothing more.
        let mut names = Vec::with_capacity((count as usize).min((file.len() - c.pos) / 2));
        for i in 0..count {
            let len = c.u16(&format!("the length of name {i}"))?;
            names.push(c.take(len as usize, &format!("name {i}"))?.to_vec());
        }
        let start = c.pos;
        let data = inflate_node_data(file, start, volume, size)?;
        let param0: Vec<u16> = data[..volume * 2].chunks_exact(2).map(|p| u16::from_be_bytes([p[0], p[1]])).collect();
        if let Some(i) = param0.iter().position(|&id| id as usize >= names.len()) {
            return Err(MtsError::new(format!(
                "node {i} (x {}, y {}, z {}) has content id {} but the name table has {} name(s)",
                i % size[0] as usize,
                (i / size[0] as usize) % size[1] as usize,
                i / (size[0] as usize * size[1] as usize),
                param0[i],
                names.len()
            )));
        }
        let mut param1 = data[volume * 2..volume * 3].to_vec();
        let param2 = data[volume * 3..].to_vec();
        if version < 2 {
            let ignore = names.iter().position(|n| n == b"ignore");
            for (p1, &id) in param1.iter_mut().zip(&param0) {
                if *p1 == 0 {
                    *p1 = 0xff;
                }
                if Some(id as usize) == ignore {
                    *p1 = 0;
                }
            }
        }
        if version < 4 {
            slices.iter_mut().for_each(|s| *s >>= 1);
            param1.iter_mut().for_each(|p| *p >>= 1);
        }
        Ok(Schematic { version, size, slices, names, param0, param1, param2 })
    }

    /// Check that the parts agree (sizes, ids, counts) before encoding.
    pub fn check(&self) -> Result<(), MtsError> {
        let n = check_size(self.size.map(i64::from)).map_err(MtsError::new)?;
        if self.slices.len() != self.size[1] as usize {
            return Err(MtsError::new(format!(
                "{} slice probabilities for {} Y levels",
                self.slices.len(),
                self.size[1]
            )));
        }
        if self.param0.len() != n || self.param1.len() != n || self.param2.len() != n {
            return Err(MtsError::new(format!("node arrays must hold {n} entries (the volume)")));
        }
        if self.names.len() > MAX_NAMES {
            return Err(MtsError::new(format!(
                "{} names; a schematic holds at most {MAX_NAMES} (the count is 16-bit)",
                self.names.len()
            )));
        }
        if let Some(n) = self.names.iter().find(|n| n.len() > u16::MAX as usize) {
            return Err(MtsError::new(format!("a name of {} bytes; at most 65535", n.len())));
        }
        if let Some(id) = self.param0.iter().find(|&&id| id as usize >= self.names.len()) {
            return Err(MtsError::new(format!(
                "content id {id} is used but the name table has {} name(s)",
                self.names.len()
            )));
        }
        Ok(())
    }

    /// The inflated node data: ids, then param1, then param2.
    pub fn node_data(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.volume() * 4);
        for &id in &self.param0 {
            out.extend_from_slice(&id.to_be_bytes());
        }
        out.extend_from_slice(&self.param1);
        out.extend_from_slice(&self.param2);
        out
    }

    /// The header and name table: everything before the compressed node data.
    pub fn head(&self) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(16 + self.slices.len() + self.names.iter().map(|n| n.len() + 2).sum::<usize>());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&WRITE_VERSION.to_be_bytes());
        for s in self.size {
            out.extend_from_slice(&s.to_be_bytes());
        }
        out.extend_from_slice(&self.slices);
        out.extend_from_slice(&(self.names.len() as u16).to_be_bytes());
        for n in &self.names {
            out.extend_from_slice(&(n.len() as u16).to_be_bytes());
            out.extend_from_slice(n);
        }
        out
    }

    /// The version-4 file.
    pub fn encode(&self) -> Result<Vec<u8>, MtsError> {
        self.check()?;
        let mut out = self.head();
        out.extend_from_slice(&compress::deflate_zlib(&self.node_data()));
        Ok(out)
    }

    /// The file with its node data left inflated: the form in which a
    /// version-4 file and its re-encoding are byte-identical.
    pub fn encode_uncompressed(&self) -> Result<Vec<u8>, MtsError> {
        self.check()?;
        Ok([self.head(), self.node_data()].concat())
    }

    /// The name of a node's content id.
    pub fn name_at(&self, i: usize) -> &[u8] {
        &self.names[self.param0[i] as usize]
    }

    /// The id of `name`, adding it to the table when it is new.
    pub fn id_for(&mut self, name: &[u8]) -> Result<u16, String> {
        if let Some(i) = self.names.iter().position(|n| n == name) {
            return Ok(i as u16);
        }
        if self.names.len() >= MAX_NAMES {
            return Err(format!("more than {MAX_NAMES} names (the count is 16-bit)"));
        }
        self.names.push(name.to_vec());
        Ok((self.names.len() - 1) as u16)
    }

    /// Drop names no node uses and renumber in order of first use, as the
    /// engine's writer condenses ids. A name the table holds twice gets one
    /// id: the engine resolves both to the same node before it writes.
    pub fn condense(&mut self) {
        let mut map: Vec<Option<u16>> = vec![None; self.names.len()];
        let mut by_name: std::collections::HashMap<&[u8], u16> = std::collections::HashMap::new();
        let mut order = Vec::new();
        for id in &mut self.param0 {
            let slot = &mut map[*id as usize];
            let new = *slot.get_or_insert_with(|| {
                let name = &self.names[*id as usize][..];
                *by_name.entry(name).or_insert_with(|| {
                    order.push(*id as usize);
                    (order.len() - 1) as u16
                })
            });
            *id = new;
        }
        self.names = order.into_iter().map(|old| std::mem::take(&mut self.names[old])).collect();
    }
}

/// The file with its zlib stream inflated (for a version-4 file; the
/// round-trip form of [`Schematic::encode_uncompressed`]).
pub fn uncompressed(file: &[u8]) -> Result<Vec<u8>, MtsError> {
    let s = Schematic::decode(file)?;
    let head_len = s.head().len();
    Ok([&file[..head_len.min(file.len())], &s.node_data()].concat())
}

/// The node data (4 bytes a node) from the zlib stream at `start`, read as
/// the engine reads it: a longer stream is cut to what the size needs.
fn inflate_node_data(file: &[u8], start: usize, volume: usize, size: [u16; 3]) -> Result<Vec<u8>, MtsError> {
    let want = volume * 4;
    // The engine inflates the whole stream and reads the `want` bytes it
    // needs, ignoring the rest: so is a longer stream read here (its
    // extra bytes stay in the file until the schematic is changed).
    let limit = want.max(compress::MAX_INFLATED);
    let inflated = compress::inflate_zlib_limited(file, start, "node data", want, limit).or_else(|e| {
        // The engine reads a stream whose adler32 is missing at the end
        // of the file (its zlib loop stops when the input does).
        let lenient = e.message.starts_with("truncated zlib").then(|| {
            compress::inflate_zlib_without_trailer(&file[start..], limit).map(|data| (data, file.len() - start))
        });
        lenient.flatten().ok_or(e)
    });
    let (mut data, _used) = inflated.map_err(|e| {
        let msg = if e.message.contains("inflates to more than") {
            format!(
                "the node data inflates to more than {limit} bytes; size {} x {} x {} needs {want} (4 per node)",
                size[0], size[1], size[2]
            )
        } else if e.message.starts_with("missing zlib") {
            "truncated: the compressed node data is missing".to_string()
        } else if e.message.starts_with("truncated zlib") {
            "truncated: the compressed node data ends early".to_string()
        } else {
            e.message
        };
        MtsError::at(start, msg)
    })?;
    data.truncate(want);
    if data.len() != want {
        return Err(MtsError::at(
            start,
            format!(
                "the node data inflates to {} bytes; size {} x {} x {} needs exactly {want} (4 per node)",
                data.len(),
                size[0],
                size[1],
                size[2]
            ),
        ));
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Luanti reads a schematic whose zlib trailer (the adler32 after the
    /// node data) is missing or cut short, since its zlib loop stops when
    /// the input does; so does worldfs (and the document keeps the file as
    /// it was until it is changed). Data cut inside the deflate stream is refused.
    #[test]
    fn a_missing_adler32_at_the_end_is_read_as_the_engine_reads_it() {
        let s = sample();
        let whole = s.encode().unwrap();
        for cut in 1..=4 {
            let file = &whole[..whole.len() - cut];
            let back = Schematic::decode(file).unwrap_or_else(|e| panic!("cut {cut}: {e}"));
            assert_eq!(back, s, "cut {cut}");
        }
        let e = Schematic::decode(&whole[..whole.len() - 6]).unwrap_err().to_string();
        assert!(e.contains("truncated"), "{e}");
    }

    /// Luanti inflates a schematic's whole node data and reads the 4 bytes
    /// a node it needs, ignoring the rest; so does worldfs, keeping the
    /// file as it was until it is changed (the document's tests).
    #[test]
    fn node_data_longer_than_the_size_needs_is_read_as_the_engine_reads_it() {
        let s = sample();
        let data = [s.node_data(), b"extra bytes the engine ignores".to_vec()].concat();
        let file = [s.head(), compress::deflate_zlib(&data)].concat();
        assert_eq!(Schematic::decode(&file).unwrap(), s);
    }

    fn sample() -> Schematic {
        let mut s = Schematic::new_air([3, 2, 4]).unwrap();
        s.names.push(b"default:stone".to_vec());
        s.names.push(b"default:chest".to_vec());
        let i = s.index(2, 1, 3);
        s.param0[i] = 2;
        s.param2[i] = 3;
        s.param1[i] = FORCE_PLACE | 100;
        s.param0[0] = 1;
        s.slices[1] = 63;
        s
    }

    #[test]
    fn round_trips_and_indexes_x_fastest() {
        let s = sample();
        let f = s.encode().unwrap();
        assert_eq!(&f[..6], b"MTSM\x00\x04");
        assert_eq!(&f[6..12], &[0, 3, 0, 2, 0, 4]);
        assert_eq!(&f[12..14], &[127, 63]);
        let back = Schematic::decode(&f).unwrap();
        assert_eq!(back, s);
        assert_eq!(s.index(2, 1, 3), 3 * 6 + 3 + 2);
        assert_eq!(s.xyz(s.index(2, 1, 3)), [2, 1, 3]);
        assert_eq!(uncompressed(&f).unwrap(), s.encode_uncompressed().unwrap());
    }

    /// A file of an older version, built by hand from a version-4 one.
    fn old_file(s: &Schematic, version: u16, p1: &[u8], slices: &[u8]) -> Vec<u8> {
        let mut f = MAGIC.to_vec();
        f.extend_from_slice(&version.to_be_bytes());
        for v in s.size {
            f.extend_from_slice(&v.to_be_bytes());
        }
        if version >= 3 {
            f.extend_from_slice(slices);
        }
        f.extend_from_slice(&(s.names.len() as u16).to_be_bytes());
        for n in &s.names {
            f.extend_from_slice(&(n.len() as u16).to_be_bytes());
            f.extend_from_slice(n);
        }
        let mut data = Vec::new();
        s.param0.iter().for_each(|id| data.extend_from_slice(&id.to_be_bytes()));
        data.extend_from_slice(p1);
        data.extend_from_slice(&s.param2);
        f.extend_from_slice(&compress::deflate_zlib(&data));
        f
    }

    #[test]
    fn old_versions_are_upgraded_like_the_engine() {
        let mut s = sample();
        s.names.push(b"ignore".to_vec());
        s.param0[1] = 3;
        let n = s.volume();
        // v3: 0-255 scale, halved.
        let p1: Vec<u8> = (0..n).map(|i| (i * 10) as u8).collect();
        let v3 = Schematic::decode(&old_file(&s, 3, &p1, &[255, 100])).unwrap();
        assert_eq!(v3.version, 3);
        assert_eq!(v3.slices, vec![127, 50]);
        assert!((0..n).all(|i| v3.param1[i] == p1[i] >> 1));
        // v2: no slices (255 -> 127).
        let v2 = Schematic::decode(&old_file(&s, 2, &p1, &[])).unwrap();
        assert_eq!(v2.slices, vec![127, 127]);
        // v1: param1 0 is "always"; ignore nodes never.
        let v1 = Schematic::decode(&old_file(&s, 1, &vec![0; n], &[])).unwrap();
        assert_eq!(v1.param1[0], 127);
        assert_eq!(v1.param1[1], 0, "the ignore node");
        // Re-encoded as version 4 with the upgraded values.
        let f = v1.encode().unwrap();
        let again = Schematic::decode(&f).unwrap();
        assert_eq!((again.version, &again.param1, &again.slices), (4, &v1.param1, &v1.slices));
    }

    #[test]
    fn bad_files_say_what_and_where() {
        let f = sample().encode().unwrap();
        let err = |b: &[u8]| Schematic::decode(b).unwrap_err().to_string();
        assert_eq!(err(b"MTSX"), "not a schematic: the file does not start with MTSM (at byte 0)");
        assert_eq!(err(&f[..3]), "truncated: the signature needs 4 byte(s), the file has 3 left (at byte 0)");
        assert_eq!(err(&f[..9]), "truncated: the size needs 2 byte(s), the file has 1 left (at byte 8)");
        let mut v = f.clone();
        v[5] = 5;
        assert_eq!(err(&v), "unsupported schematic version 5 (readable: 1-4) (at byte 4)");
        // The name table ends early.
        assert_eq!(err(&f[..20]), "truncated: name 0 needs 3 byte(s), the file has 2 left (at byte 18)");
        // Cut inside the zlib stream.
        let head = sample().head().len();
        assert_eq!(err(&f[..f.len() - 5]), format!("truncated: the compressed node data ends early (at byte {head})"));
        assert_eq!(err(&f[..head]), format!("truncated: the compressed node data is missing (at byte {head})"));
        // Size whose volume does not match the data.
        let mut v = f.clone();
        v[7] = 4; // X = 4 instead of 3
        assert_eq!(
            err(&v),
            format!(
                "the node data inflates to 96 bytes; size 4 x 2 x 4 needs exactly 128 (4 per node) (at byte {head})"
            )
        );
        // X = 2: more data than the size needs is read as the engine reads
        // it: the first 64 bytes.
        let mut v = f.clone();
        v[7] = 2;
        assert_eq!(Schematic::decode(&v).unwrap().size, [2, 2, 4]);
        // Over the limit, negative, zero.
        let mut v = f.clone();
        v[6..12].copy_from_slice(&[0x7f, 0xff, 0x7f, 0xff, 0x01, 0x00]);
        assert_eq!(
            err(&v),
            "size 32767 x 32767 x 256 is 274861129984 nodes; at most 16777216 (256 x 256 x 256) are allowed (at byte 6)"
        );
        v[6..8].copy_from_slice(&[0xff, 0xff]);
        assert_eq!(err(&v), "size X = -1 is outside 1..32767 (at byte 6)");
        v[6..8].copy_from_slice(&[0, 0]);
        assert_eq!(err(&v), "size X = 0 is outside 1..32767 (at byte 6)");
        // An id beyond the name table.
        let mut s = sample();
        s.param0[5] = 7;
        let mut data = s.node_data();
        data[10..12].copy_from_slice(&7u16.to_be_bytes());
        let f = [s.head(), compress::deflate_zlib(&data)].concat();
        assert_eq!(err(&f), "node 5 (x 2, y 1, z 0) has content id 7 but the name table has 3 name(s)");
        assert_eq!(s.encode().unwrap_err().to_string(), "content id 7 is used but the name table has 3 name(s)");
    }

    #[test]
    fn too_many_names_cannot_be_written() {
        let mut s = sample();
        s.names = (0..65536).map(|i| format!("m:n{i}").into_bytes()).collect();
        assert_eq!(
            s.encode().unwrap_err().to_string(),
            "65536 names; a schematic holds at most 65535 (the count is 16-bit)"
        );
        s.names.truncate(65535);
        assert!(s.encode().is_ok());
        assert!(s.id_for(b"m:new").is_err());
    }

    #[test]
    fn condense_orders_names_by_first_use() {
        let mut s = sample();
        s.names.push(b"unused:x".to_vec());
        s.condense();
        assert_eq!(s.names, vec![b"default:stone".to_vec(), b"air".to_vec(), b"default:chest".to_vec()]);
        assert_eq!(s.name_at(s.index(2, 1, 3)), b"default:chest");
    }

    #[test]
    fn condense_gives_a_repeated_name_one_id() {
        let mut s = sample();
        s.names.push(b"default:stone".to_vec());
        s.param0[3] = 3;
        s.condense();
        assert_eq!(s.names, vec![b"default:stone".to_vec(), b"air".to_vec(), b"default:chest".to_vec()]);
        assert_eq!((s.param0[0], s.param0[3]), (0, 0));
    }
}
