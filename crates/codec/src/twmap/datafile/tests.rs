//! The datafile container on small datafiles built here: round trips,
//! and damaged files refused with their exact errors.

use super::*;

/// A small datafile: two item types (given out of order), three data items.
fn sample() -> Datafile {
    let mut df = Datafile::new();
    df.items.push(Item { type_id: 5, id: 0, data: vec![1, 2, 3] });
    df.items.push(Item { type_id: 0, id: 0, data: vec![1] });
    df.items.push(Item { type_id: 5, id: 1, data: vec![] });
    df.add_data(b"hello\0".to_vec());
    df.add_data(vec![7; 1000]);
    df.add_data(vec![1]);
    df
}

fn put(b: &mut [u8], at: usize, v: i32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn err(b: &[u8]) -> String {
    Datafile::decode(b).unwrap_err().to_string()
}

#[test]
fn encodes_in_ddnet_layout_and_decodes_back() {
    let df = sample();
    let b = df.encode().unwrap();
    assert_eq!(&b[..8], b"DATA\x04\0\0\0");
    // size and swaplen leave out the first 16 bytes.
    assert_eq!(read_i32(&b, 8) as usize, b.len() - 16);
    let back = Datafile::decode(&b).unwrap();
    // Types in order, a type's items in their order.
    let order: Vec<(u16, u16)> = back.items.iter().map(|i| (i.type_id, i.id)).collect();
    assert_eq!(order, [(0, 0), (5, 0), (5, 1)]);
    assert_eq!(back.data, df.data);
    // What was read is written back as it was read.
    assert!(back.data.iter().all(DataItem::is_stored));
    assert_eq!(back.encode().unwrap(), b);
    // A swaplen pointing at the data section.
    let data_start = b.len() - read_i32(&b, 32) as usize;
    assert_eq!(read_i32(&b, 12) as usize + 16, data_start);
}

#[test]
fn version_3_keeps_raw_data() {
    let mut df = sample();
    df.version = 3;
    let b = df.encode().unwrap();
    let back = Datafile::decode(&b).unwrap();
    assert_eq!(back.version, 3);
    assert_eq!(back.data, df.data);
    assert!(b.windows(6).any(|w| w == b"hello\0"), "v3 data is not compressed");
    assert_eq!(back.encode().unwrap(), b);
}

#[test]
fn atad_magic_is_read_and_kept() {
    let mut b = sample().encode().unwrap();
    b[..4].copy_from_slice(b"ATAD");
    let df = Datafile::decode(&b).unwrap();
    assert_eq!(df.magic, Magic::Atad);
    assert_eq!(df.encode().unwrap(), b);
}

#[test]
fn old_v4_size_fields_are_fixed_as_ddnet_does() {
    // Before DDNet 3dd1ea0d, size and swaplen left out the size table.
    let mut b = sample().encode().unwrap();
    let good = b.clone();
    put(&mut b, 8, read_i32(&good, 8) - 12);
    put(&mut b, 12, read_i32(&good, 12) - 12);
    let df = Datafile::decode(&b).unwrap();
    assert_eq!(df.encode().unwrap(), good);
}

#[test]
fn truncated_at_every_length_is_refused_without_panic() {
    let b = sample().encode().unwrap();
    for n in 0..b.len() {
        let e = err(&b[..n]);
        assert!(e.contains("truncated"), "{n}: {e}");
    }
    assert_eq!(err(&b[..20]), "truncated: the file has 20 bytes, a datafile header needs 36");
    assert_eq!(
        err(&b[..100]),
        format!(
            "truncated: the header describes {} bytes (2 item types, 3 items, 3 data items, 40 bytes of items, {} bytes of data), the file has 100",
            b.len(),
            read_i32(&b, 32)
        )
    );
    let mut long = b.clone();
    long.push(0);
    assert!(err(&long).starts_with("bytes after the end: "), "{}", err(&long));
}

#[test]
fn header_errors_name_their_byte() {
    let b = sample().encode().unwrap();
    let with = |at: usize, v: i32| {
        let mut c = b.clone();
        put(&mut c, at, v);
        err(&c)
    };
    let mut c = b.clone();
    c[..4].copy_from_slice(b"DAT\x01");
    assert_eq!(err(&c), "at byte 0: not a datafile: the magic is DAT\\x01, not DATA (or ATAD)");
    assert_eq!(with(4, 5), "at byte 4: unsupported datafile version 5 (3 and 4 are)");
    assert_eq!(with(20, -1), "at byte 20: the number of items is negative (-1)");
    assert_eq!(with(28, 43), "at byte 28: the item section size 43 is not a multiple of 4");
    assert_eq!(
        with(8, 7),
        format!("at byte 8: the header's size field says the file has 23 bytes, it has {}", b.len())
    );
    assert!(with(12, 8).starts_with("at byte 12: the header's swaplen says the data section starts at byte 24"));
}

#[test]
fn table_and_item_errors_name_index_and_byte() {
    let b = sample().encode().unwrap();
    let with = |at: usize, v: i32| {
        let mut c = b.clone();
        put(&mut c, at, v);
        err(&c)
    };
    // Item types at 36: (0, 0, 1), (5, 1, 2).
    assert_eq!(with(48, 0), "at byte 48: item type 1: type id 0 is listed twice");
    assert_eq!(with(36, 70000), "at byte 36: item type 0 has type id 70000, outside 0..=65535");
    assert_eq!(
        with(52, 2),
        "at byte 52: item type 1 (type id 5) starts at item 2, expected 1 (types follow each other)"
    );
    assert_eq!(with(56, 3), "at byte 36: the item types count 4 items, the header says 3");
    assert_eq!(with(44, 0), "at byte 44: item type 0 (type id 0) has 0 items");
    // Item offsets at 60: 0, 12, 32.
    assert_eq!(with(60, 4), "at byte 60: the first item offset is 4, not 0");
    assert_eq!(with(64, 0), "at byte 64: item 1: offset 0 is not greater than the previous one (0)");
    assert_eq!(with(68, 44), "at byte 68: item 2: offset 44 is past the item section (40 bytes)");
    // Items start at 60 + 12 + 12 + 12 = 96: item 1 (type 5, id 0) at 108.
    assert_eq!(
        with(64, 16),
        "at byte 100: item 0 (type id 0, id 0): payload size 4 does not match the 8 bytes its offsets leave"
    );
    assert_eq!(
        with(112, 8),
        "at byte 112: item 1 (type id 5, id 0): payload size 8 does not match the 12 bytes its offsets leave"
    );
    assert_eq!(with(108, 5 << 16 | 1), "at byte 128: item 2 (type id 5): id 1 is used twice");
    assert_eq!(with(108, 6 << 16), "at byte 108: item 1 has type id 6, but item type 1 (type id 5) lists it");
    assert_eq!(
        with(68, 36),
        "at byte 112: item 1 (type id 5, id 0): payload size 12 does not match the 16 bytes its offsets leave"
    );
    let mut one = Datafile::new();
    one.items.push(Item { type_id: 1, id: 0, data: vec![] });
    one.items.push(Item { type_id: 1, id: 1, data: vec![] });
    let mut c = one.encode().unwrap();
    put(&mut c, 36 + 12 + 4, 4);
    assert_eq!(
        err(&c),
        "at byte 56: item 0 (type id 1): 4 bytes between its offset and the next, an item header needs 8"
    );
}

#[test]
fn data_errors() {
    let b = sample().encode().unwrap();
    let with = |at: usize, v: i32| {
        let mut c = b.clone();
        put(&mut c, at, v);
        c
    };
    // Data offsets at 72, sizes at 84.
    assert_eq!(err(&with(72, 1)), "at byte 72: the first data offset is 1, not 0");
    assert_eq!(
        err(&with(80, 1)),
        format!("at byte 80: data item 2: offset 1 is not greater than the previous one ({})", read_i32(&b, 76))
    );
    assert_eq!(err(&with(88, -5)), "at byte 88: data item 1: inflated size -5 is negative");
    assert_eq!(
        err(&with(88, MAX_DATA_SIZE as i32 + 1)),
        format!(
            "at byte 88: data item 1: inflated size {} is over the cap of {MAX_DATA_SIZE} bytes",
            MAX_DATA_SIZE + 1
        )
    );
    // A wrong recorded size is found when the data is used (as in DDNet).
    let df = Datafile::decode(&with(88, 999)).unwrap();
    assert_eq!(df.data[1].bytes().unwrap_err(), "it inflates to more than its recorded 999 bytes");
    let df = Datafile::decode(&with(88, 1001)).unwrap();
    assert_eq!(df.data[1].bytes().unwrap_err(), "it inflates to 1000 bytes, the file records 1001");
    let df = Datafile::decode(&with(88, 0)).unwrap();
    assert_eq!(df.data[1].bytes().unwrap_err(), "its recorded inflated size is 0 (DDNet refuses to read it)");
    // Such a file is kept byte for byte.
    assert_eq!(df.encode().unwrap(), with(88, 0));
    // Damaged zlib.
    let mut c = b.clone();
    let last = c.len() - 3;
    c[last] ^= 0xff;
    let df = Datafile::decode(&c).unwrap();
    assert!(df.data[2].bytes().unwrap_err().starts_with("it does not inflate (zlib: "), "{:?}", df.data[2].bytes());
    // No data items but data bytes.
    let mut df = sample();
    df.data.clear();
    let mut c = df.encode().unwrap();
    c.extend_from_slice(b"xx");
    put(&mut c, 32, 2);
    let size = read_i32(&c, 8);
    put(&mut c, 8, size + 2);
    assert_eq!(err(&c), "at byte 32: the data section has 2 bytes but there are no data items");
}

#[test]
fn the_total_inflated_size_is_capped() {
    let mut df = Datafile::new();
    for _ in 0..5 {
        df.add_data(vec![0; 16]);
    }
    let mut b = df.encode().unwrap();
    let sizes_at = 36 + 5 * 4;
    for i in 0..5 {
        put(&mut b, sizes_at + i * 4, MAX_DATA_SIZE as i32);
    }
    assert_eq!(
        err(&b),
        format!(
            "at byte {}: data items 0..=4 inflate to {} bytes, over the cap of {MAX_TOTAL_DATA} bytes",
            sizes_at + 16,
            5 * MAX_DATA_SIZE
        )
    );
}

#[test]
fn changed_data_is_compressed_anew() {
    let b = sample().encode().unwrap();
    let mut df = Datafile::decode(&b).unwrap();
    df.set_data(0, b"hello\0".to_vec());
    assert!(df.data[0].is_stored(), "the same content keeps the stored bytes");
    df.set_data(0, b"bye\0".to_vec());
    assert!(!df.data[0].is_stored());
    let back = Datafile::decode(&df.encode().unwrap()).unwrap();
    assert_eq!(back.data[0].bytes().unwrap(), b"bye\0");
    assert_eq!(back.data[1..], df.data[1..]);
}

proptest::proptest! {
    #[test]
    fn any_datafile_round_trips(
        items in proptest::collection::vec((0u16..4, proptest::collection::vec(proptest::num::i32::ANY, 0..6)), 0..12),
        data in proptest::collection::vec(proptest::collection::vec(0u8..4, 1..300), 0..5),
        v3 in proptest::bool::ANY,
    ) {
        let mut df = Datafile::new();
        if v3 { df.version = 3; }
        for (n, (t, ints)) in items.into_iter().enumerate() {
            df.items.push(Item { type_id: t, id: n as u16, data: ints });
        }
        for d in data { df.add_data(d); }
        let b = df.encode().unwrap();
        let back = Datafile::decode(&b).unwrap();
        let mut sorted = df.items.clone();
        sorted.sort_by_key(|i| i.type_id);
        proptest::prop_assert_eq!(&back.items, &sorted);
        proptest::prop_assert_eq!(&back.data, &df.data);
        proptest::prop_assert_eq!(back.encode().unwrap(), b);
    }

    #[test]
    fn any_bytes_decode_or_fail_cleanly(mut bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..400), head in proptest::bool::ANY) {
        if head && bytes.len() >= 8 {
            bytes[..8].copy_from_slice(b"DATA\x04\0\0\0");
        }
        if let Ok(df) = Datafile::decode(&bytes) {
            let again = Datafile::decode(&df.encode().unwrap()).unwrap();
            proptest::prop_assert_eq!(again, df);
        }
    }
}
