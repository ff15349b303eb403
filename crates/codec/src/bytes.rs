//! Big-endian byte reading and writing with errors that say what was being
//! read and at which offset of which region of the blob.

use std::fmt;

/// The part of a block a byte offset refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    /// The stored blob itself (offsets count from the version byte).
    Blob,
    /// The zstd-decompressed body of a version 29 block (offsets count from
    /// the first byte after the version byte).
    Body,
    /// The inflated node data (first zlib stream) of a version < 29 block.
    NodeData,
    /// The inflated node metadata (second zlib stream) of a version < 29 block.
    Metadata,
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Region::Blob => "blob",
            Region::Body => "decompressed body",
            Region::NodeData => "inflated node data",
            Region::Metadata => "inflated node metadata",
        })
    }
}

/// Why a blob (or part of one) could not be decoded, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// The part of the block `offset` counts in.
    pub region: Region,
    /// The byte offset, within `region`, where decoding failed.
    pub offset: usize,
    /// What was wrong, e.g. "truncated param1 array: need 4096 bytes, 12 left".
    pub message: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {} of the {})", self.message, self.offset, self.region)
    }
}

impl std::error::Error for DecodeError {}

/// A cursor over a byte slice. Every read names the field it reads so that
/// a failure can say "truncated param1 array" rather than "unexpected EOF".
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    region: Region,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `data`; errors name `region`.
    pub fn new(data: &'a [u8], region: Region) -> Self {
        Reader { data, pos: 0, region }
    }

    /// A reader already positioned at `pos`, so that offsets in errors count
    /// from the start of `data` (the blob) rather than from `pos`.
    pub fn at(data: &'a [u8], pos: usize, region: Region) -> Self {
        Reader { data, pos, region }
    }

    /// The offset of the next byte to read.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// How many bytes are left to read.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// The bytes not read yet (the reader does not move).
    pub fn rest(&self) -> &'a [u8] {
        &self.data[self.pos..]
    }

    /// Moves `n` bytes on, stopping at the end of the data.
    pub fn skip(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.data.len());
    }

    /// An error at the current offset.
    pub fn error(&self, message: impl Into<String>) -> DecodeError {
        self.error_at(self.pos, message)
    }

    /// An error at `offset` (e.g. the start of a field whose value is bad).
    pub fn error_at(&self, offset: usize, message: impl Into<String>) -> DecodeError {
        DecodeError { region: self.region, offset, message: message.into() }
    }

    /// The next `n` bytes; an error naming `what` if fewer are left.
    pub fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(self.error(format!("truncated {what}: need {n} bytes, {} left", self.remaining())));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// The next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], DecodeError> {
        let b = self.bytes(N, what)?;
        b.first_chunk::<N>().copied().ok_or_else(|| self.error(format!("truncated {what}")))
    }

    /// The next byte.
    pub fn u8(&mut self, what: &str) -> Result<u8, DecodeError> {
        Ok(self.bytes(1, what)?[0])
    }

    /// The next 2 bytes as a big-endian u16.
    pub fn u16(&mut self, what: &str) -> Result<u16, DecodeError> {
        let b = self.bytes(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// The next 2 bytes as a big-endian i16.
    pub fn i16(&mut self, what: &str) -> Result<i16, DecodeError> {
        Ok(self.u16(what)? as i16)
    }

    /// The next 4 bytes as a big-endian u32.
    pub fn u32(&mut self, what: &str) -> Result<u32, DecodeError> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The next 4 bytes as a big-endian i32.
    pub fn i32(&mut self, what: &str) -> Result<i32, DecodeError> {
        Ok(self.u32(what)? as i32)
    }

    /// u16 length + bytes.
    pub fn string16(&mut self, what: &str) -> Result<&'a [u8], DecodeError> {
        let n = self.u16(what)? as usize;
        self.bytes(n, what)
    }

    /// u32 length + bytes; lengths over 64 MiB are refused as the engine does.
    pub fn string32(&mut self, what: &str) -> Result<&'a [u8], DecodeError> {
        let start = self.pos;
        let n = self.u32(what)? as usize;
        if n > LONG_STRING_MAX {
            return Err(self.error_at(start, format!("{what} length {n} exceeds 64 MiB")));
        }
        self.bytes(n, what)
    }
}

/// The engine's limit for string32 values.
pub const LONG_STRING_MAX: usize = 64 << 20;

/// Appending big-endian writers.
pub trait WriteBe {
    /// Appends one byte.
    fn put_u8(&mut self, v: u8);
    /// Appends `v` as 2 big-endian bytes.
    fn put_u16(&mut self, v: u16);
    /// Appends `v` as 4 big-endian bytes.
    fn put_u32(&mut self, v: u32);
    /// Appends `v` as 4 big-endian bytes (two's complement).
    fn put_i32(&mut self, v: i32) {
        self.put_u32(v as u32)
    }
    /// Appends `v` as 2 big-endian bytes (two's complement).
    fn put_i16(&mut self, v: i16) {
        self.put_u16(v as u16)
    }
    /// Appends a u16 length and the bytes (the caller keeps `s` under 64 KiB).
    fn put_string16(&mut self, s: &[u8]);
    /// Appends a u32 length and the bytes.
    fn put_string32(&mut self, s: &[u8]);
}

impl WriteBe for Vec<u8> {
    fn put_u8(&mut self, v: u8) {
        self.push(v)
    }
    fn put_u16(&mut self, v: u16) {
        self.extend_from_slice(&v.to_be_bytes())
    }
    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_be_bytes())
    }
    fn put_string16(&mut self, s: &[u8]) {
        self.put_u16(s.len() as u16);
        self.extend_from_slice(s)
    }
    fn put_string32(&mut self, s: &[u8]) {
        self.put_u32(s.len() as u32);
        self.extend_from_slice(s)
    }
}
