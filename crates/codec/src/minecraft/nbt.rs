//! Minecraft's NBT (Named Binary Tag) in both editions' byte forms
//! ([`Flavor`]): Java's (big-endian, strings in Java's modified UTF-8) and
//! Bedrock's (little-endian, strings in UTF-8), one tree of tags for both.
//! Pure and strict: a root that is not a compound,
//! a length past the end, an unknown tag type, a bad string or bytes left
//! after the root are errors naming the byte offset. Compounds keep their
//! order, so decoding then encoding gives back the same bytes.

/// Which edition's byte form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// Java Edition: big-endian numbers, modified UTF-8 strings.
    Java,
    /// Bedrock Edition's files and database: little-endian numbers, UTF-8
    /// strings.
    Bedrock,
}

/// One tag's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Tag {
    /// Type 1: a signed byte (also booleans).
    Byte(i8),
    /// Type 2: a 16-bit integer.
    Short(i16),
    /// Type 3: a 32-bit integer.
    Int(i32),
    /// Type 4: a 64-bit integer.
    Long(i64),
    /// Type 5: a 32-bit float.
    Float(f32),
    /// Type 6: a 64-bit float.
    Double(f64),
    /// Type 7: an array of signed bytes.
    ByteArray(Vec<i8>),
    /// Type 8: a string (stored in modified UTF-8).
    String(String),
    /// Type 9: a list of unnamed tags of one type.
    List(List),
    /// Type 10: named tags.
    Compound(Compound),
    /// Type 11: an array of 32-bit integers.
    IntArray(Vec<i32>),
    /// Type 12: an array of 64-bit integers.
    LongArray(Vec<i64>),
}

/// A list: its element type is kept even when it is empty (the game writes
/// empty lists with different types, and a rewrite must not change them).
#[derive(Clone, Debug, PartialEq)]
pub struct List {
    /// The element type id ([`Tag::type_id`]; 0 in most empty lists).
    pub elem: u8,
    /// The elements, all of type `elem`.
    pub items: Vec<Tag>,
}

/// A compound's entries in stored order.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Compound(pub Vec<(String, Tag)>);

impl Compound {
    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&Tag> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
    /// The value of `key`, to change, if present.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Tag> {
        self.0.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
    }
    /// Set `key` (in place if present, else appended).
    pub fn insert(&mut self, key: &str, value: Tag) {
        match self.get_mut(key) {
            Some(v) => *v = value,
            None => self.0.push((key.to_string(), value)),
        }
    }
    /// Removes `key`, returning its value if it was present.
    pub fn remove(&mut self, key: &str) -> Option<Tag> {
        let i = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(i).1)
    }
    /// The compound at `key` (None if absent or of another type).
    pub fn compound(&self, key: &str) -> Option<&Compound> {
        match self.get(key) {
            Some(Tag::Compound(c)) => Some(c),
            _ => None,
        }
    }
    /// The compound at `key`, to change (None if absent or of another type).
    pub fn compound_mut(&mut self, key: &str) -> Option<&mut Compound> {
        match self.get_mut(key) {
            Some(Tag::Compound(c)) => Some(c),
            _ => None,
        }
    }
    /// The list at `key` (None if absent or of another type).
    pub fn list(&self, key: &str) -> Option<&List> {
        match self.get(key) {
            Some(Tag::List(l)) => Some(l),
            _ => None,
        }
    }
    /// The string at `key` (None if absent or of another type).
    pub fn string(&self, key: &str) -> Option<&str> {
        match self.get(key) {
            Some(Tag::String(s)) => Some(s),
            _ => None,
        }
    }
    /// An integer tag of any width.
    pub fn int(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(Tag::as_int)
    }
}

impl Tag {
    /// The type id written before it.
    pub fn type_id(&self) -> u8 {
        match self {
            Tag::Byte(_) => 1,
            Tag::Short(_) => 2,
            Tag::Int(_) => 3,
            Tag::Long(_) => 4,
            Tag::Float(_) => 5,
            Tag::Double(_) => 6,
            Tag::ByteArray(_) => 7,
            Tag::String(_) => 8,
            Tag::List(_) => 9,
            Tag::Compound(_) => 10,
            Tag::IntArray(_) => 11,
            Tag::LongArray(_) => 12,
        }
    }
    /// The value of a Byte, Short, Int or Long tag, widened.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Tag::Byte(v) => Some(*v as i64),
            Tag::Short(v) => Some(*v as i64),
            Tag::Int(v) => Some(*v as i64),
            Tag::Long(v) => Some(*v),
            _ => None,
        }
    }
}

/// Deepest nesting accepted (the game's own limit is 512).
pub const MAX_DEPTH: usize = 512;

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
    flavor: Flavor,
}

/// A number read in the flavor's byte order.
macro_rules! read_num {
    ($r:expr, $t:ty) => {{
        let a = $r.array()?;
        match $r.flavor {
            Flavor::Java => <$t>::from_be_bytes(a),
            Flavor::Bedrock => <$t>::from_le_bytes(a),
        }
    }};
}

/// A number's bytes in the flavor's byte order.
macro_rules! num_bytes {
    ($flavor:expr, $v:expr) => {
        match $flavor {
            Flavor::Java => $v.to_be_bytes(),
            Flavor::Bedrock => $v.to_le_bytes(),
        }
    };
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.b.len());
        let end =
            end.ok_or_else(|| format!("byte {}: the data ends inside a tag ({n} more bytes needed)", self.pos))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let b = self.take(N)?;
        b.first_chunk::<N>().copied().ok_or_else(|| format!("byte {}: {N} bytes expected", self.pos))
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    /// A length: non-negative, and `size` bytes each must still be there
    /// (so a corrupt length cannot make us allocate gigabytes).
    fn len(&mut self, size: usize) -> Result<usize, String> {
        let at = self.pos;
        let n = read_num!(self, i32);
        let n = usize::try_from(n).map_err(|_| format!("byte {at}: negative length {n}"))?;
        if n.saturating_mul(size) > self.b.len() - self.pos {
            return Err(format!("byte {at}: length {n} runs past the end of the data"));
        }
        Ok(n)
    }
    fn string(&mut self) -> Result<String, String> {
        let at = self.pos;
        let n = read_num!(self, u16) as usize;
        let bytes = self.take(n)?;
        match self.flavor {
            Flavor::Java => from_mutf8(bytes).map_err(|e| format!("byte {at}: {e}")),
            Flavor::Bedrock => {
                String::from_utf8(bytes.to_vec()).map_err(|e| format!("byte {at}: a string that is not UTF-8 ({e})"))
            }
        }
    }

    fn payload(&mut self, t: u8, depth: usize) -> Result<Tag, String> {
        if depth > MAX_DEPTH {
            return Err(format!("byte {}: nested deeper than {MAX_DEPTH}", self.pos));
        }
        Ok(match t {
            1 => Tag::Byte(self.u8()? as i8),
            2 => Tag::Short(read_num!(self, i16)),
            3 => Tag::Int(read_num!(self, i32)),
            4 => Tag::Long(read_num!(self, i64)),
            5 => Tag::Float(read_num!(self, f32)),
            6 => Tag::Double(read_num!(self, f64)),
            7 => {
                let n = self.len(1)?;
                Tag::ByteArray(self.take(n)?.iter().map(|b| *b as i8).collect())
            }
            8 => Tag::String(self.string()?),
            9 => {
                let at = self.pos;
                let elem = self.u8()?;
                if elem > 12 {
                    return Err(format!("byte {at}: unknown list element type {elem}"));
                }
                let n = self.len(if elem == 0 { 0 } else { 1 })?;
                if elem == 0 && n > 0 {
                    return Err(format!("byte {at}: a list of {n} end tags"));
                }
                let items = (0..n).map(|_| self.payload(elem, depth + 1)).collect::<Result<_, _>>()?;
                Tag::List(List { elem, items })
            }
            10 => Tag::Compound(self.compound(depth + 1)?),
            11 => {
                let n = self.len(4)?;
                Tag::IntArray((0..n).map(|_| Ok(read_num!(self, i32))).collect::<Result<_, String>>()?)
            }
            12 => {
                let n = self.len(8)?;
                Tag::LongArray((0..n).map(|_| Ok(read_num!(self, i64))).collect::<Result<_, String>>()?)
            }
            _ => return Err(format!("byte {}: unknown tag type {t}", self.pos - 1)),
        })
    }

    fn compound(&mut self, depth: usize) -> Result<Compound, String> {
        let start = self.pos;
        let mut c = Compound::default();
        loop {
            let t = self.u8()?;
            if t == 0 {
                return match repeated_key(&c) {
                    // The game keeps only the last of them (a map), so what
                    // is shown could not be written back as it is read.
                    Some(k) => Err(format!("byte {start}: a compound holds the key '{k}' twice")),
                    None => Ok(c),
                };
            }
            if t > 12 {
                return Err(format!("byte {}: unknown tag type {t}", self.pos - 1));
            }
            let name = self.string()?;
            let v = self.payload(t, depth)?;
            c.0.push((name, v));
        }
    }
}

/// A key that `c` holds more than once, if any.
fn repeated_key(c: &Compound) -> Option<&str> {
    let mut keys: Vec<&str> = c.0.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    keys.windows(2).find(|w| w[0] == w[1]).map(|w| w[0])
}

/// A whole NBT file of Java Edition (uncompressed): the root's name and
/// compound.
pub fn decode(bytes: &[u8]) -> Result<(String, Compound), String> {
    decode_as(bytes, Flavor::Java)
}

/// A whole NBT file in `flavor`'s byte form: one root compound and nothing
/// after it.
pub fn decode_as(bytes: &[u8], flavor: Flavor) -> Result<(String, Compound), String> {
    let (name, c, used) = decode_prefix(bytes, flavor)?;
    if used != bytes.len() {
        return Err(format!("byte {used}: {} bytes after the root tag", bytes.len() - used));
    }
    Ok((name, c))
}

/// The root compound at the start of `bytes` and how many bytes it takes
/// (Bedrock's database values hold several roots one after another).
pub fn decode_prefix(bytes: &[u8], flavor: Flavor) -> Result<(String, Compound, usize), String> {
    let mut r = Reader { b: bytes, pos: 0, flavor };
    let t = r.u8()?;
    if t != 10 {
        return Err(format!("byte 0: the root tag is type {t}, not a compound (10)"));
    }
    let name = r.string()?;
    let c = r.compound(1)?;
    Ok((name, c, r.pos))
}

/// Root compounds one after another until the end (a Bedrock chunk's block
/// entities, its legacy entities, a subchunk's palette); the offsets in
/// errors count from the start of `bytes`.
pub fn decode_all(bytes: &[u8], flavor: Flavor) -> Result<Vec<(String, Compound)>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let (name, c, used) = decode_prefix(&bytes[at..], flavor).map_err(|e| shift_offset(&e, at))?;
        out.push((name, c));
        at += used;
    }
    Ok(out)
}

/// An error message "byte N: ..." with N counted from `by` bytes earlier.
pub fn shift_offset(e: &str, by: usize) -> String {
    let parsed = e
        .strip_prefix("byte ")
        .and_then(|r| r.split_once(':'))
        .and_then(|(n, rest)| Some((n.parse::<usize>().ok()?, rest)));
    match parsed {
        Some((n, rest)) => format!("byte {}:{rest}", n + by),
        None => e.to_string(),
    }
}

/// The bytes of a whole NBT file of Java Edition (uncompressed). Fails only
/// on a string longer than NBT's 65535 bytes or a list whose items differ
/// in type.
pub fn encode(name: &str, root: &Compound) -> Result<Vec<u8>, String> {
    encode_as(name, root, Flavor::Java)
}

/// The bytes of one root compound in `flavor`'s byte form.
pub fn encode_as(name: &str, root: &Compound, flavor: Flavor) -> Result<Vec<u8>, String> {
    let mut out = vec![10];
    put_string(&mut out, name, flavor)?;
    put_compound(&mut out, root, flavor)?;
    Ok(out)
}

fn put_string(out: &mut Vec<u8>, s: &str, f: Flavor) -> Result<(), String> {
    let b = match f {
        Flavor::Java => to_mutf8(s),
        Flavor::Bedrock => s.as_bytes().to_vec(),
    };
    let n = u16::try_from(b.len()).map_err(|_| format!("a string of {} bytes: NBT strings hold 65535", b.len()))?;
    out.extend(num_bytes!(f, n));
    out.extend(b);
    Ok(())
}

fn put_len(out: &mut Vec<u8>, n: usize, f: Flavor) -> Result<(), String> {
    let n = i32::try_from(n).map_err(|_| format!("{n} items: more than NBT can count"))?;
    out.extend(num_bytes!(f, n));
    Ok(())
}

fn put_compound(out: &mut Vec<u8>, c: &Compound, f: Flavor) -> Result<(), String> {
    for (k, v) in &c.0 {
        out.push(v.type_id());
        put_string(out, k, f)?;
        put_payload(out, v, f)?;
    }
    out.push(0);
    Ok(())
}

fn put_payload(out: &mut Vec<u8>, t: &Tag, f: Flavor) -> Result<(), String> {
    match t {
        Tag::Byte(v) => out.push(*v as u8),
        Tag::Short(v) => out.extend(num_bytes!(f, v)),
        Tag::Int(v) => out.extend(num_bytes!(f, v)),
        Tag::Long(v) => out.extend(num_bytes!(f, v)),
        Tag::Float(v) => out.extend(num_bytes!(f, v)),
        Tag::Double(v) => out.extend(num_bytes!(f, v)),
        Tag::ByteArray(v) => {
            put_len(out, v.len(), f)?;
            out.extend(v.iter().map(|b| *b as u8));
        }
        Tag::String(s) => put_string(out, s, f)?,
        Tag::List(l) => {
            if let Some(bad) = l.items.iter().find(|i| i.type_id() != l.elem) {
                return Err(format!("a list of type {} holds a tag of type {}", l.elem, bad.type_id()));
            }
            out.push(l.elem);
            put_len(out, l.items.len(), f)?;
            for i in &l.items {
                put_payload(out, i, f)?;
            }
        }
        Tag::Compound(c) => put_compound(out, c, f)?,
        Tag::IntArray(v) => {
            put_len(out, v.len(), f)?;
            v.iter().for_each(|i| out.extend(num_bytes!(f, i)));
        }
        Tag::LongArray(v) => {
            put_len(out, v.len(), f)?;
            v.iter().for_each(|i| out.extend(num_bytes!(f, i)));
        }
    }
    Ok(())
}

/// Java's modified UTF-8: NUL as C0 80, characters past U+FFFF as two
/// 3-byte surrogates. An unpaired surrogate has no Rust string: refused.
/// So is a form Java's `writeUTF` never writes (an overlong one such as C0
/// BE for `>`, or a 4-byte UTF-8 sequence, which Java cannot read): its
/// string would be written back as other bytes.
pub fn from_mutf8(b: &[u8]) -> Result<String, String> {
    if let Ok(s) = std::str::from_utf8(b)
        && !s.contains('\0')
        && s.chars().all(|c| (c as u32) < 0x10000)
    {
        return Ok(s.to_string());
    }
    let mut units: Vec<u16> = Vec::with_capacity(b.len());
    let mut i = 0;
    let bad = |i: usize| format!("bad modified UTF-8 at string byte {i}");
    while i < b.len() {
        let c = b[i];
        let cont = |k: usize| b.get(i + k).filter(|x| *x & 0xC0 == 0x80).map(|x| (*x & 0x3F) as u16);
        let (unit, n) = match c {
            0x01..=0x7F => (c as u16, 1),
            0xC0..=0xDF => (((c & 0x1F) as u16) << 6 | cont(1).ok_or_else(|| bad(i))?, 2),
            0xE0..=0xEF => {
                (((c & 0x0F) as u16) << 12 | cont(1).ok_or_else(|| bad(i))? << 6 | cont(2).ok_or_else(|| bad(i))?, 3)
            }
            _ => return Err(bad(i)),
        };
        units.push(unit);
        i += n;
    }
    let s = String::from_utf16(&units).map_err(|_| "a string with an unpaired surrogate".to_string())?;
    if to_mutf8(&s) != b {
        return Err("modified UTF-8 in a form Java does not write (an overlong or 4-byte sequence)".into());
    }
    Ok(s)
}

pub(crate) fn to_mutf8(s: &str) -> Vec<u8> {
    if !s.contains('\0') && s.chars().all(|c| (c as u32) < 0x10000) {
        return s.as_bytes().to_vec();
    }
    let mut out = Vec::with_capacity(s.len() + 8);
    for unit in s.encode_utf16() {
        match unit {
            0x01..=0x7F => out.push(unit as u8),
            0 | 0x80..=0x7FF => {
                out.push(0xC0 | (unit >> 6) as u8);
                out.push(0x80 | (unit & 0x3F) as u8);
            }
            _ => {
                out.push(0xE0 | (unit >> 12) as u8);
                out.push(0x80 | ((unit >> 6) & 0x3F) as u8);
                out.push(0x80 | (unit & 0x3F) as u8);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Compound {
        Compound(vec![
            ("b".into(), Tag::Byte(-3)),
            ("s".into(), Tag::Short(300)),
            ("l".into(), Tag::Long(-1)),
            ("f".into(), Tag::Float(0.5)),
            ("n\0ul 😀".into(), Tag::String("é\0😀".into())),
            ("e".into(), Tag::List(List { elem: 10, items: vec![] })),
            ("la".into(), Tag::LongArray(vec![1, i64::MIN])),
            ("c".into(), Tag::Compound(Compound(vec![("ia".into(), Tag::IntArray(vec![7]))]))),
        ])
    }

    #[test]
    fn round_trip_keeps_order_types_and_modified_utf8() {
        let bytes = encode("root", &sample()).unwrap();
        let (name, c) = decode(&bytes).unwrap();
        assert_eq!((name.as_str(), &c), ("root", &sample()));
        assert_eq!(encode("root", &c).unwrap(), bytes);
        // NUL is C0 80 on disk, the emoji two 3-byte surrogates.
        assert!(bytes.windows(2).any(|w| w == [0xC0, 0x80]));
        assert!(bytes.windows(3).any(|w| w == [0xED, 0xA0, 0xBD]));
    }

    #[test]
    fn bad_input_is_refused_with_its_offset() {
        let bytes = encode("", &sample()).unwrap();
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(decode(&extra).unwrap_err().contains("after the root"));
        assert!(decode(&[8, 0, 0]).unwrap_err().contains("not a compound"));
        // A list claiming 2^31-1 longs in a few bytes.
        let huge = [10, 0, 0, 12, 0, 1, b'x', 0x7f, 0xff, 0xff, 0xff, 0];
        assert!(decode(&huge).unwrap_err().contains("past the end"));
        let unpaired = [10, 0, 0, 8, 0, 1, b'x', 0, 3, 0xED, 0xA0, 0xBD, 0];
        assert!(decode(&unpaired).unwrap_err().contains("surrogate"));
    }

    /// Found by the mc_nbt fuzz target: a key `a2` + C0 BE (an overlong
    /// `>`) + `&` decoded and was written back as other bytes. Forms Java
    /// never writes are refused; NUL's C0 80 and surrogate pairs are read.
    #[test]
    fn modified_utf8_forms_java_does_not_write_are_refused() {
        for name in [&[b'a', b'2', 0xC0, 0xBE, b'&'][..], &[0xE0, 0x80, 0x80], &[0xF0, 0x9F, 0x98, 0x80]] {
            let mut bytes = vec![10, 0, 0, 9, 0, name.len() as u8];
            bytes.extend(name);
            bytes.extend([3, 0, 0, 0, 1, 0, 0, 0, 5, 0]);
            let err = decode(&bytes).unwrap_err();
            assert!(err.contains("modified UTF-8"), "{name:x?}: {err}");
        }
        assert_eq!(from_mutf8(&[b'a', 0xC0, 0x80]).unwrap(), "a\0");
        assert_eq!(from_mutf8(&[0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80]).unwrap(), "😀");
    }

    #[test]
    fn bedrock_is_little_endian_utf8_and_roots_follow_each_other() {
        let bytes = encode_as("root", &sample(), Flavor::Bedrock).unwrap();
        assert_eq!(decode_as(&bytes, Flavor::Bedrock).unwrap(), ("root".to_string(), sample()));
        // The name's length little-endian, the emoji as plain UTF-8.
        assert_eq!(&bytes[..3], &[10, 4, 0]);
        assert!(bytes.windows(4).any(|w| w == "😀".as_bytes()));
        // A short of 300 is 2C 01.
        assert!(bytes.windows(2).any(|w| w == [0x2C, 0x01]));
        let mut two = bytes.clone();
        two.extend(encode_as("", &Compound::default(), Flavor::Bedrock).unwrap());
        assert_eq!(decode_all(&two, Flavor::Bedrock).unwrap().len(), 2);
        let e = decode_all(&two[..two.len() - 1], Flavor::Bedrock).unwrap_err();
        assert!(e.starts_with(&format!("byte {}", bytes.len() + 3)), "{e}");
        for cut in 0..bytes.len() {
            assert!(decode_as(&bytes[..cut], Flavor::Bedrock).is_err(), "cut at {cut}");
        }
        // Modified UTF-8's NUL (C0 80) is not UTF-8.
        let mutf = [10, 0, 0, 8, 1, 0, b'x', 2, 0, 0xC0, 0x80, 0];
        assert!(decode_as(&mutf, Flavor::Bedrock).unwrap_err().contains("not UTF-8"));
    }
}
