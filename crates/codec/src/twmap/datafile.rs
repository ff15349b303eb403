//! The Teeworlds/DDNet datafile container (`.map`): bytes <-> items and
//! data, pure.
//!
//! Layout (all integers little-endian i32): magic `DATA` (or `ATAD`, from an
//! old big-endian writer), version 3 or 4, then size, swaplen, the counts of
//! item types, items and data, and the byte sizes of the item and data
//! sections; the item types `(type, start, num)`; the item offsets; the data
//! offsets; (v4 only) each data item's inflated size; the items (`type << 16
//! | id`, payload size, payload ints); the data (raw in v3, one zlib stream
//! per data item in v4).
//!
//! [`Datafile::decode`] makes every check DDNet's loader
//! (`CDataFileReader::Open` and `Validate` in src/engine/shared/datafile.cpp
//! of <https://github.com/ddnet/ddnet>) makes, plus the check it makes
//! when a data item is used (inflating to exactly the recorded size), which
//! it records per data item instead of failing (DDNet loads such a file and
//! fails only when that data is read). Two things DDNet accepts are refused:
//! a data section with bytes but no data items (nothing could keep those
//! bytes), and data sizes over [`MAX_DATA_SIZE`] / [`MAX_TOTAL_DATA`] (the
//! allocation caps).
//!
//! [`Datafile::encode`] writes DDNet's layout (`CDataFileWriter::Finish`):
//! item types sorted by type id, the items of a type in their order, data in
//! index order, header sizes computed. Unchanged data items are written with
//! the bytes they were read with; changed ones are compressed with zlib at
//! the default level, as DDNet does. The magic and version are kept (a v3
//! file stays v3, with raw data). So an unchanged file encodes to its own
//! bytes whenever it was in DDNet's layout; the differences otherwise are
//! the ones DDNet's loader does not see: item types put in type order, and
//! the header size and swaplen of old v4 files (which left out the size
//! table) written correctly.

use std::collections::HashSet;
use std::fmt;
use std::io::Read;
use std::sync::Arc;

/// The largest inflated size of one data item we allocate (a 4096x4096
/// RGBA image is 64 MiB).
pub const MAX_DATA_SIZE: usize = 256 << 20;
/// The largest inflated size of all data items together.
pub const MAX_TOTAL_DATA: usize = 1 << 30;

const HEADER_SIZE: usize = 36;
/// The bytes of the header not counted by `size` and `swaplen`.
const SIZE_OFFSET: usize = 16;
/// The type of the UUID index items (`ITEMTYPE_EX`); DDNet allows duplicate
/// ids among them (old tools wrote some).
pub const ITEMTYPE_EX: u16 = 0xFFFF;

/// Why a datafile could not be read: what and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatafileError {
    /// Byte offset in the file, when the problem has one.
    pub offset: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl DatafileError {
    fn at(offset: usize, message: impl Into<String>) -> DatafileError {
        DatafileError { offset: Some(offset), message: message.into() }
    }
    fn whole(message: impl Into<String>) -> DatafileError {
        DatafileError { offset: None, message: message.into() }
    }
}

impl fmt::Display for DatafileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(o) => write!(f, "at byte {o}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for DatafileError {}

/// The signature at the start of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Magic {
    /// `DATA`, what every writer writes on little-endian machines.
    Data,
    /// `ATAD`, from an old writer bug on big-endian machines.
    Atad,
}

/// One item: a type, an id unique within the type, and i32 payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// The item type (see [`crate::twmap::items::types`]; above 0x8000: a
    /// UUID-typed item).
    pub type_id: u16,
    /// The item's id, unique within its type (except for [`ITEMTYPE_EX`] items).
    pub id: u16,
    /// The payload, little-endian i32s as stored.
    pub data: Vec<i32>,
}

/// One data item: its inflated bytes (or why it cannot be inflated), and
/// the bytes the file stored for it while it is unchanged.
#[derive(Clone, Debug)]
pub struct DataItem {
    // Shared: a document is cloned before an edit, and data is most of it.
    content: Result<Arc<Vec<u8>>, String>,
    stored: Option<Arc<Stored>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Stored {
    /// The bytes in the data section (zlib in v4).
    bytes: Vec<u8>,
    /// The recorded inflated size (v4).
    recorded: i32,
}

impl PartialEq for DataItem {
    /// Equal content (what a reader gets); how it is stored does not matter.
    fn eq(&self, other: &DataItem) -> bool {
        match (&self.content, &other.content) {
            (Ok(a), Ok(b)) => Arc::ptr_eq(a, b) || a == b,
            (Err(_), Err(_)) => self.stored == other.stored,
            _ => false,
        }
    }
}

impl DataItem {
    /// New content, stored compressed when the file is encoded.
    pub fn new(bytes: Vec<u8>) -> DataItem {
        DataItem { content: Ok(Arc::new(bytes)), stored: None }
    }

    /// The inflated bytes, or why they cannot be had (the message names no
    /// index: the caller knows it).
    pub fn bytes(&self) -> Result<&[u8], &str> {
        match &self.content {
            Ok(b) => Ok(b.as_slice()),
            Err(e) => Err(e),
        }
    }

    /// Whether the item is written with the bytes it was read with.
    pub fn is_stored(&self) -> bool {
        self.stored.is_some()
    }
}

/// A decoded datafile.
#[derive(Clone, Debug, PartialEq)]
pub struct Datafile {
    /// The signature it was read with, written back as it was.
    pub magic: Magic,
    /// 3 or 4.
    pub version: i32,
    /// In file order (the items of a type are contiguous).
    pub items: Vec<Item>,
    /// The data items, by index (items refer to them by index).
    pub data: Vec<DataItem>,
}

/// Where each part of a decoded file starts (byte offsets), for messages.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Offsets {
    /// Where each item (its `type << 16 | id` int) starts, in [`Datafile::items`] order.
    pub items: Vec<usize>,
    /// Where each data item's stored bytes start, by index.
    pub data: Vec<usize>,
}

fn read_i32(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The fixed header of a datafile, as stored.
struct Header {
    magic: Magic,
    version: i32,
    size: i32,
    swaplen: i32,
    num_types: i32,
    num_items: i32,
    num_data: i32,
    item_size: i32,
    data_size: i32,
}

/// Where the tables and sections start (byte offsets).
struct Layout {
    types: usize,
    item_offsets: usize,
    data_offsets: usize,
    data_sizes: usize,
    items: usize,
}

impl Header {
    /// The header's fields: a known magic and version, no negative count.
    fn read(bytes: &[u8]) -> Result<Header, DatafileError> {
        let file_len = bytes.len();
        if file_len < HEADER_SIZE {
            return Err(DatafileError::whole(format!(
                "truncated: the file has {file_len} bytes, a datafile header needs {HEADER_SIZE}"
            )));
        }
        let magic = match &bytes[0..4] {
            b"DATA" => Magic::Data,
            b"ATAD" => Magic::Atad,
            m => {
                return Err(DatafileError::at(
                    0,
                    format!("not a datafile: the magic is {}, not DATA (or ATAD)", show_bytes(m)),
                ));
            }
        };
        let version = read_i32(bytes, 4);
        if version != 3 && version != 4 {
            return Err(DatafileError::at(4, format!("unsupported datafile version {version} (3 and 4 are)")));
        }
        let header = Header {
            magic,
            version,
            size: read_i32(bytes, 8),
            swaplen: read_i32(bytes, 12),
            num_types: read_i32(bytes, 16),
            num_items: read_i32(bytes, 20),
            num_data: read_i32(bytes, 24),
            item_size: read_i32(bytes, 28),
            data_size: read_i32(bytes, 32),
        };
        let counts = [
            (16, "number of item types", header.num_types),
            (20, "number of items", header.num_items),
            (24, "number of data items", header.num_data),
            (28, "item section size", header.item_size),
            (32, "data section size", header.data_size),
        ];
        for (at, what, v) in counts {
            if v < 0 {
                return Err(DatafileError::at(at, format!("the {what} is negative ({v})")));
            }
        }
        if header.num_types > 0x10000 {
            return Err(DatafileError::at(16, format!("{} item types: at most 65536 can exist", header.num_types)));
        }
        if header.item_size % 4 != 0 {
            return Err(DatafileError::at(
                28,
                format!("the item section size {} is not a multiple of 4", header.item_size),
            ));
        }
        Ok(header)
    }

    /// The sizes the counts imply, in i64: they are checked against the
    /// file's length before anything is allocated from them.
    fn check_sizes(&self, file_len: usize) -> Result<(), DatafileError> {
        let (num_types, num_items, num_data) = (self.num_types, self.num_items, self.num_data);
        let (item_size, data_size) = (self.item_size, self.data_size);
        let (nt, ni, nd) = (num_types as i64, num_items as i64, num_data as i64);
        let size_fix = if self.version == 4 { nd * 4 } else { 0 };
        let tables = nt * 12 + ni * 4 + nd * 4 + size_fix;
        let expected = HEADER_SIZE as i64 + tables + item_size as i64 + data_size as i64;
        if expected != file_len as i64 {
            let what = if expected > file_len as i64 { "truncated" } else { "bytes after the end" };
            return Err(DatafileError::whole(format!(
                "{what}: the header describes {expected} bytes ({num_types} item types, {num_items} items, \
                 {num_data} data items, {item_size} bytes of items, {data_size} bytes of data), the file has {file_len}"
            )));
        }
        let header_file_size = self.size as i64 + SIZE_OFFSET as i64;
        if header_file_size != file_len as i64 && !(size_fix != 0 && header_file_size + size_fix == file_len as i64) {
            return Err(DatafileError::at(
                8,
                format!("the header's size field says the file has {header_file_size} bytes, it has {file_len}"),
            ));
        }
        let data_start = file_len - data_size as usize;
        let header_swaplen = self.swaplen as i64 + SIZE_OFFSET as i64;
        if header_swaplen != data_start as i64
            && !(self.swaplen % 4 == 0 && size_fix != 0 && header_swaplen + size_fix == data_start as i64)
        {
            return Err(DatafileError::at(
                12,
                format!(
                    "the header's swaplen says the data section starts at byte {header_swaplen}, it starts at {data_start}"
                ),
            ));
        }
        if num_data == 0 && data_size != 0 {
            return Err(DatafileError::at(
                32,
                format!("the data section has {data_size} bytes but there are no data items"),
            ));
        }
        Ok(())
    }

    /// Where the parts start; only after `check_sizes`.
    fn layout(&self) -> Layout {
        let (nt, ni, nd) = (self.num_types as usize, self.num_items as usize, self.num_data as usize);
        let types = HEADER_SIZE;
        let item_offsets = types + nt * 12;
        let data_offsets = item_offsets + ni * 4;
        let data_sizes = data_offsets + nd * 4;
        let items = data_sizes + if self.version == 4 { nd * 4 } else { 0 };
        Layout { types, item_offsets, data_offsets, data_sizes, items }
    }
}

/// The item types `(type, first item, number of items)`: contiguous, each
/// type once, covering the `ni` items exactly.
fn read_item_types(
    bytes: &[u8],
    types_at: usize,
    nt: usize,
    ni: usize,
) -> Result<Vec<(u16, usize, usize)>, DatafileError> {
    let mut types = Vec::with_capacity(nt);
    let mut counted: i64 = 0;
    let mut seen_types = std::collections::HashSet::new();
    for i in 0..nt {
        let at = types_at + i * 12;
        let (t, start, num) = (read_i32(bytes, at), read_i32(bytes, at + 4), read_i32(bytes, at + 8));
        if !(0..=0xFFFF).contains(&t) {
            return Err(DatafileError::at(at, format!("item type {i} has type id {t}, outside 0..=65535")));
        }
        if !seen_types.insert(t) {
            return Err(DatafileError::at(at, format!("item type {i}: type id {t} is listed twice")));
        }
        if num <= 0 {
            return Err(DatafileError::at(at + 8, format!("item type {i} (type id {t}) has {num} items")));
        }
        if start as i64 != counted {
            return Err(DatafileError::at(
                at + 4,
                format!(
                    "item type {i} (type id {t}) starts at item {start}, expected {counted} (types follow each other)"
                ),
            ));
        }
        counted += num as i64;
        if counted > ni as i64 {
            break;
        }
        types.push((t as u16, start as usize, num as usize));
    }
    if counted != ni as i64 {
        return Err(DatafileError::at(types_at, format!("the item types count {counted} items, the header says {ni}")));
    }
    Ok(types)
}

/// The `n` offsets of a table at `table_at` into a section of
/// `section_size` bytes: the first 0, increasing, inside the section.
/// `section` is "item" or "data" (for messages).
fn read_offsets(
    bytes: &[u8],
    table_at: usize,
    n: usize,
    section_size: i32,
    section: &str,
) -> Result<Vec<usize>, DatafileError> {
    let one = if section == "item" { "item" } else { "data item" };
    let mut offsets: Vec<usize> = Vec::with_capacity(n);
    for i in 0..n {
        let at = table_at + i * 4;
        let o = read_i32(bytes, at);
        if i == 0 && o != 0 {
            return Err(DatafileError::at(at, format!("the first {section} offset is {o}, not 0")));
        }
        if i > 0 && o <= offsets[i - 1] as i32 {
            return Err(DatafileError::at(
                at,
                format!("{one} {i}: offset {o} is not greater than the previous one ({})", offsets[i - 1]),
            ));
        }
        if o as i64 >= section_size as i64 {
            return Err(DatafileError::at(
                at,
                format!("{one} {i}: offset {o} is past the {section} section ({section_size} bytes)"),
            ));
        }
        offsets.push(o as usize);
    }
    Ok(offsets)
}

/// The items, type by type, and where each starts in the file.
fn read_items(
    bytes: &[u8],
    types: &[(u16, usize, usize)],
    item_offsets: &[usize],
    items_at: usize,
    item_size: usize,
) -> Result<(Vec<Item>, Vec<usize>), DatafileError> {
    let mut items = Vec::with_capacity(item_offsets.len());
    let mut item_starts = Vec::with_capacity(item_offsets.len());
    for (ti, &(t, start, num)) in types.iter().enumerate() {
        let mut ids = HashSet::new();
        for index in start..start + num {
            let begin = item_offsets[index];
            let end = item_offsets.get(index + 1).copied().unwrap_or(item_size);
            let at = items_at + begin;
            items.push(read_item(bytes, at, end - begin, index, (ti, t), &mut ids)?);
            item_starts.push(at);
        }
    }
    Ok((items, item_starts))
}

/// Item `index` at `at`, `gap` bytes long, listed by item type `ti` of
/// type id `t`: its type matches, its id is not in `ids` (the ids of its
/// type so far; UUID index items may repeat), its payload fills the gap.
fn read_item(
    bytes: &[u8],
    at: usize,
    gap: usize,
    index: usize,
    (ti, t): (usize, u16),
    ids: &mut HashSet<u16>,
) -> Result<Item, DatafileError> {
    if gap < 8 {
        return Err(DatafileError::at(
            at,
            format!("item {index} (type id {t}): {gap} bytes between its offset and the next, an item header needs 8"),
        ));
    }
    let type_and_id = read_i32(bytes, at) as u32;
    let (stored_type, id) = ((type_and_id >> 16) as u16, (type_and_id & 0xFFFF) as u16);
    if stored_type != t {
        return Err(DatafileError::at(
            at,
            format!("item {index} has type id {stored_type}, but item type {ti} (type id {t}) lists it"),
        ));
    }
    if t != ITEMTYPE_EX && !ids.insert(id) {
        return Err(DatafileError::at(at, format!("item {index} (type id {t}): id {id} is used twice")));
    }
    Ok(Item { type_id: t, id, data: read_payload(bytes, at, gap, index, (t, id))? })
}

/// The i32 payload of the item at `at` (header checked): its recorded size
/// must be the `gap - 8` bytes its offsets leave.
fn read_payload(
    bytes: &[u8],
    at: usize,
    gap: usize,
    index: usize,
    (t, id): (u16, u16),
) -> Result<Vec<i32>, DatafileError> {
    let psize = read_i32(bytes, at + 4);
    if psize < 0 || psize % 4 != 0 || psize as usize != gap - 8 {
        return Err(DatafileError::at(
            at + 4,
            format!(
                "item {index} (type id {t}, id {id}): payload size {psize} does not match the {} bytes its offsets leave",
                gap - 8
            ),
        ));
    }
    Ok((0..psize as usize / 4).map(|k| read_i32(bytes, at + 8 + k * 4)).collect())
}

/// The inflated sizes (v4) of the `nd` data items: within the caps.
fn read_data_sizes(bytes: &[u8], data_sizes_at: usize, nd: usize) -> Result<Vec<i32>, DatafileError> {
    let mut recorded = Vec::new();
    let mut total: usize = 0;
    for i in 0..nd {
        let at = data_sizes_at + i * 4;
        let s = read_i32(bytes, at);
        if s < 0 {
            return Err(DatafileError::at(at, format!("data item {i}: inflated size {s} is negative")));
        }
        if s as usize > MAX_DATA_SIZE {
            return Err(DatafileError::at(
                at,
                format!("data item {i}: inflated size {s} is over the cap of {MAX_DATA_SIZE} bytes"),
            ));
        }
        total += s as usize;
        if total > MAX_TOTAL_DATA {
            return Err(DatafileError::at(
                at,
                format!("data items 0..={i} inflate to {total} bytes, over the cap of {MAX_TOTAL_DATA} bytes"),
            ));
        }
        recorded.push(s);
    }
    Ok(recorded)
}

/// The data items (raw in v3, inflated in v4, keeping the stored bytes)
/// and where each starts in the file.
fn read_data(
    bytes: &[u8],
    version: i32,
    data_offsets: &[usize],
    recorded: &[i32],
    data_at: usize,
    data_size: usize,
) -> (Vec<DataItem>, Vec<usize>) {
    let mut data = Vec::with_capacity(data_offsets.len());
    let mut data_starts = Vec::with_capacity(data_offsets.len());
    for (i, &begin) in data_offsets.iter().enumerate() {
        let end = data_offsets.get(i + 1).copied().unwrap_or(data_size);
        let at = data_at + begin;
        let raw = &bytes[at..data_at + end];
        data_starts.push(at);
        if version == 3 {
            data.push(DataItem { content: Ok(Arc::new(raw.to_vec())), stored: None });
            continue;
        }
        let content = inflate(raw, recorded[i] as usize).map(Arc::new);
        let stored = Stored { bytes: raw.to_vec(), recorded: recorded[i] };
        data.push(DataItem { content, stored: Some(Arc::new(stored)) });
    }
    (data, data_starts)
}

impl Datafile {
    /// An empty version 4 datafile.
    pub fn new() -> Datafile {
        Datafile { magic: Magic::Data, version: 4, items: Vec::new(), data: Vec::new() }
    }

    /// Reads a datafile; see the module doc for what is checked.
    pub fn decode(bytes: &[u8]) -> Result<Datafile, DatafileError> {
        Self::decode_with_offsets(bytes).map(|(d, _)| d)
    }

    /// Decode, and say where each item and data item starts in `bytes`.
    pub fn decode_with_offsets(bytes: &[u8]) -> Result<(Datafile, Offsets), DatafileError> {
        let header = Header::read(bytes)?;
        header.check_sizes(bytes.len())?;
        let at = header.layout();
        let types = read_item_types(bytes, at.types, header.num_types as usize, header.num_items as usize)?;
        let item_offsets = read_offsets(bytes, at.item_offsets, header.num_items as usize, header.item_size, "item")?;
        let (items, item_starts) = read_items(bytes, &types, &item_offsets, at.items, header.item_size as usize)?;
        let data_offsets = read_offsets(bytes, at.data_offsets, header.num_data as usize, header.data_size, "data")?;
        let recorded = match header.version {
            4 => read_data_sizes(bytes, at.data_sizes, header.num_data as usize)?,
            _ => Vec::new(),
        };
        let data_at = at.items + header.item_size as usize;
        let (data, data_starts) =
            read_data(bytes, header.version, &data_offsets, &recorded, data_at, header.data_size as usize);
        let df = Datafile { magic: header.magic, version: header.version, items, data };
        Ok((df, Offsets { items: item_starts, data: data_starts }))
    }

    /// The file's bytes, in DDNet's layout (see the module documentation).
    pub fn encode(&self) -> Result<Vec<u8>, String> {
        if self.version != 3 && self.version != 4 {
            return Err(format!("cannot write datafile version {}", self.version));
        }
        let mut order: Vec<usize> = (0..self.items.len()).collect();
        order.sort_by_key(|&i| self.items[i].type_id); // stable: a type keeps its order
        let mut types: Vec<(u16, usize, usize)> = Vec::new();
        for (pos, &i) in order.iter().enumerate() {
            let t = self.items[i].type_id;
            match types.last_mut() {
                Some(last) if last.0 == t => last.2 += 1,
                _ => types.push((t, pos, 1)),
            }
        }
        let mut ids = std::collections::HashSet::new();
        for it in &self.items {
            if it.type_id != ITEMTYPE_EX && !ids.insert((it.type_id, it.id)) {
                return Err(format!("two items have type id {} and id {}", it.type_id, it.id));
            }
        }

        let mut blobs: Vec<(std::borrow::Cow<[u8]>, i32)> = Vec::with_capacity(self.data.len());
        for (i, d) in self.data.iter().enumerate() {
            match (&d.stored, &d.content) {
                (Some(s), _) if self.version == 4 => blobs.push((std::borrow::Cow::Borrowed(&s.bytes), s.recorded)),
                (_, Ok(b)) => {
                    let len = i32::try_from(b.len()).map_err(|_| format!("data item {i} is too large"))?;
                    if self.version == 4 {
                        blobs.push((std::borrow::Cow::Owned(deflate(b)), len));
                    } else {
                        blobs.push((std::borrow::Cow::Borrowed(b), len));
                    }
                }
                (_, Err(e)) => return Err(format!("data item {i} cannot be written: {e}")),
            }
        }

        let item_size: usize = self.items.iter().map(|it| 8 + it.data.len() * 4).sum();
        let data_size: usize = blobs.iter().map(|(b, _)| b.len()).sum();
        let sizes_table = if self.version == 4 { self.data.len() * 4 } else { 0 };
        let swap_size =
            HEADER_SIZE + types.len() * 12 + self.items.len() * 4 + self.data.len() * 4 + sizes_table + item_size;
        let file_size = swap_size + data_size;
        let as_i32 = |v: usize, what: &str| {
            i32::try_from(v).map_err(|_| format!("the {what} ({v}) is too large for a datafile"))
        };
        as_i32(file_size, "file size")?;

        let mut out = Vec::with_capacity(file_size);
        out.extend_from_slice(match self.magic {
            Magic::Data => b"DATA",
            Magic::Atad => b"ATAD",
        });
        let put = |out: &mut Vec<u8>, v: i32| out.extend_from_slice(&v.to_le_bytes());
        put(&mut out, self.version);
        put(&mut out, as_i32(file_size - SIZE_OFFSET, "file size")?);
        put(&mut out, as_i32(swap_size - SIZE_OFFSET, "swaplen")?);
        put(&mut out, types.len() as i32);
        put(&mut out, self.items.len() as i32);
        put(&mut out, self.data.len() as i32);
        put(&mut out, item_size as i32);
        put(&mut out, data_size as i32);
        for &(t, start, num) in &types {
            put(&mut out, t as i32);
            put(&mut out, start as i32);
            put(&mut out, num as i32);
        }
        let mut offset = 0;
        for &i in &order {
            put(&mut out, offset as i32);
            offset += 8 + self.items[i].data.len() * 4;
        }
        let mut offset = 0;
        for (b, _) in &blobs {
            put(&mut out, offset as i32);
            offset += b.len();
        }
        if self.version == 4 {
            for (_, recorded) in &blobs {
                put(&mut out, *recorded);
            }
        }
        for &i in &order {
            let it = &self.items[i];
            put(&mut out, ((it.type_id as u32) << 16 | it.id as u32) as i32);
            put(&mut out, (it.data.len() * 4) as i32);
            for &v in &it.data {
                put(&mut out, v);
            }
        }
        for (b, _) in &blobs {
            out.extend_from_slice(b);
        }
        debug_assert_eq!(out.len(), file_size);
        Ok(out)
    }

    /// The items of a type, with their indices in `items`.
    pub fn items_of(&self, type_id: u16) -> impl Iterator<Item = (usize, &Item)> {
        self.items.iter().enumerate().filter(move |(_, it)| it.type_id == type_id)
    }

    /// The index in `items` of the item with this type and id.
    pub fn find(&self, type_id: u16, id: u16) -> Option<usize> {
        self.items.iter().position(|it| it.type_id == type_id && it.id == id)
    }

    /// Replace a data item's content (it is compressed anew when encoded,
    /// unless the content is what was read).
    pub fn set_data(&mut self, index: usize, bytes: Vec<u8>) {
        let d = &mut self.data[index];
        if matches!(&d.content, Ok(b) if b.as_slice() == bytes.as_slice()) {
            return;
        }
        *d = DataItem::new(bytes);
    }

    /// Add a data item; returns its index.
    pub fn add_data(&mut self, bytes: Vec<u8>) -> usize {
        self.data.push(DataItem::new(bytes));
        self.data.len() - 1
    }
}

impl Default for Datafile {
    fn default() -> Self {
        Datafile::new()
    }
}

/// Inflate a zlib stream that must give exactly `recorded` bytes (as
/// DDNet's `uncompress` into a buffer of that size). Memory grows with the
/// output, never past `recorded + 1` bytes.
fn inflate(raw: &[u8], recorded: usize) -> Result<Vec<u8>, String> {
    if recorded == 0 {
        return Err("its recorded inflated size is 0 (DDNet refuses to read it)".into());
    }
    let mut out = Vec::new();
    let mut dec = flate2::read::ZlibDecoder::new(raw).take(recorded as u64 + 1);
    if let Err(e) = dec.read_to_end(&mut out) {
        return Err(format!("it does not inflate (zlib: {e}) to its recorded {recorded} bytes"));
    }
    if out.len() > recorded {
        return Err(format!("it inflates to more than its recorded {recorded} bytes"));
    }
    if out.len() < recorded {
        return Err(format!("it inflates to {} bytes, the file records {recorded}", out.len()));
    }
    Ok(out)
}

#[allow(clippy::expect_used, reason = "compressing into memory fails only when memory does, which aborts anyway")]
fn deflate(b: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).expect("writing to a Vec cannot fail");
    e.finish().expect("writing to a Vec cannot fail")
}

fn show_bytes(b: &[u8]) -> String {
    b.iter().map(|c| if c.is_ascii_graphic() { (*c as char).to_string() } else { format!("\\x{c:02x}") }).collect()
}

#[cfg(test)]
mod tests;
