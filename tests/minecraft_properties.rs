//! Property tests of the Minecraft codecs: random NBT trees encode, decode
//! and go through SNBT text back to the same bytes; random region files
//! (chunks at random places, every compression the game writes, random
//! timestamps) read back as built, and a damaged header is refused or read,
//! never a panic.

use proptest::prelude::*;
use worldfs_codec::minecraft::nbt::{self, Compound, List, Tag};
use worldfs_codec::minecraft::{region, snbt};

/// Any text, including NUL and characters beyond the BMP (which modified
/// UTF-8 stores as surrogate pairs).
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z_:.]{0,12}",
        proptest::collection::vec(any::<char>(), 0..8).prop_map(|c| c.into_iter().collect()),
        Just("\0\"'\\\n{}[],:;".to_string()),
    ]
}

/// Finite floats (SNBT has one NaN, so NaN payloads cannot come back).
fn leaf() -> impl Strategy<Value = Tag> {
    prop_oneof![
        any::<i8>().prop_map(Tag::Byte),
        any::<i16>().prop_map(Tag::Short),
        any::<i32>().prop_map(Tag::Int),
        any::<i64>().prop_map(Tag::Long),
        any::<f32>().prop_filter("finite", |f| f.is_finite()).prop_map(Tag::Float),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Tag::Double),
        proptest::collection::vec(any::<i8>(), 0..20).prop_map(Tag::ByteArray),
        text().prop_map(Tag::String),
        proptest::collection::vec(any::<i32>(), 0..10).prop_map(Tag::IntArray),
        proptest::collection::vec(any::<i64>(), 0..6).prop_map(Tag::LongArray),
    ]
}

fn compound_of(entries: Vec<(String, Tag)>) -> Compound {
    let mut c = Compound::default();
    for (k, v) in entries {
        if c.get(&k).is_none() {
            c.0.push((k, v));
        }
    }
    c
}

fn tag() -> impl Strategy<Value = Tag> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec((text(), inner.clone()), 0..6).prop_map(|e| Tag::Compound(compound_of(e))),
            // A list holds one type: the first item's, the others of it kept.
            (proptest::collection::vec(inner, 0..6), 0u8..=12).prop_map(|(items, empty_elem)| {
                let elem = items.first().map_or(empty_elem, Tag::type_id);
                let items: Vec<Tag> = items.into_iter().filter(|t| t.type_id() == elem).collect();
                Tag::List(List { elem: if items.is_empty() { empty_elem } else { elem }, items })
            }),
        ]
    })
}

fn root() -> impl Strategy<Value = (String, Compound)> {
    (text(), proptest::collection::vec((text(), tag()), 0..8)).prop_map(|(n, e)| (n, compound_of(e)))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn nbt_encodes_and_decodes_back((name, root) in root()) {
        let bytes = nbt::encode(&name, &root).unwrap();
        let (name2, root2) = nbt::decode(&bytes).unwrap();
        prop_assert_eq!(&name2, &name);
        prop_assert_eq!(nbt::encode(&name2, &root2).unwrap(), bytes);
    }

    #[test]
    fn snbt_text_reads_back_to_the_same_tags((name, root) in root()) {
        let text = snbt::to_snbt(&root);
        let mut back = snbt::parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        snbt::keep_compound_list_types(&mut back, &root);
        prop_assert_eq!(nbt::encode(&name, &back).unwrap(), nbt::encode(&name, &root).unwrap(), "{}", text);
    }

    #[test]
    fn region_files_read_back_as_built(
        chunks in proptest::collection::btree_map(
            0usize..1024,
            (1u8..=3, proptest::collection::vec(any::<u8>(), 1..9000), any::<u32>()),
            0..12,
        ),
        damage in proptest::collection::vec((0usize..8192, any::<u8>()), 0..4),
    ) {
        let chunks: Vec<(usize, region::RawChunk)> = chunks
            .into_iter()
            .map(|(i, (compression, data, timestamp))| {
                (i, region::RawChunk { compression, external: false, data, timestamp })
            })
            .collect();
        let (file, external) = region::build(&chunks);
        prop_assert!(external.is_empty());
        prop_assert_eq!(file.len() % region::SECTOR, 0);
        prop_assert_eq!(&region::all_chunks(&file).unwrap(), &chunks);
        // Locations in sector order do not overlap and lie in the file.
        let mut at = region::locations(&file).unwrap();
        at.sort_by_key(|l| l.1);
        prop_assert!(at.windows(2).all(|w| w[0].1 + w[0].2 <= w[1].1));
        prop_assert!(at.iter().all(|l| l.1 >= 2 && (l.1 + l.2) * region::SECTOR <= file.len()));
        // A damaged header: refused or read, never a panic; what reads
        // builds again to the same chunks.
        let mut bad = file.clone();
        for (i, b) in damage {
            bad[i] = b;
        }
        if let Ok(read) = region::all_chunks(&bad) {
            let (again, _) = region::build(&read);
            prop_assert_eq!(region::all_chunks(&again).unwrap(), read);
        }
    }
}
