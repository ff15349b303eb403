//! An inventory (a chest's `Items`, a player's `Inventory`) as text, one
//! item a line: `SLOT COUNT ID [TAG]`, the tag (before 1.20.5 `tag`, after
//! `components`) in one-line SNBT:
//!
//! ```text
//! # slot count item [tag or components as SNBT]
//! 0 64 minecraft:cobblestone
//! 3 1 minecraft:diamond_sword {Damage: 5}
//! ```
//!
//! Pure. A line's item keeps the keys the text does not show (an item
//! moved to another slot keeps them too only when its slot is unchanged).

use crate::documents::{DocError, DocResult};
use worldfs_codec::minecraft::nbt::{Compound, List, Tag};
use worldfs_codec::minecraft::snbt;

/// How the version stores an item's count and extra data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ItemForm {
    /// `Count` a byte, extras in `tag` (to 1.20.4).
    Classic,
    /// `count` an int up to `max_count`, extras in `components` (1.20.5+,
    /// DataVersion 3837; from 1.21, 3953, the game's codec takes counts of
    /// 1 to 99 and drops an item with more).
    Components { max_count: i64 },
}

impl ItemForm {
    pub(crate) fn of_data_version(v: i64) -> ItemForm {
        match v {
            3953.. => ItemForm::Components { max_count: 99 },
            3837.. => ItemForm::Components { max_count: 127 },
            _ => ItemForm::Classic,
        }
    }
    fn count_key(self) -> &'static str {
        match self {
            ItemForm::Classic => "Count",
            ItemForm::Components { .. } => "count",
        }
    }
    fn extra_key(self) -> &'static str {
        match self {
            ItemForm::Classic => "tag",
            ItemForm::Components { .. } => "components",
        }
    }
    fn max_count(self) -> i64 {
        match self {
            ItemForm::Classic => 127,
            ItemForm::Components { max_count } => max_count,
        }
    }
}

const HEADER: &str = "# slot count item [tag or components as SNBT]\n";

/// The slots the game keeps when it loads an inventory. It reads a slot
/// as `Slot & 255` and drops an item in any other slot without a word
/// (`Inventory.load`, `ContainerHelper.loadAllItems`), so a new item there
/// is refused rather than lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slots {
    /// A player's `Inventory`: 0-35, armour 100-103, off hand 150
    /// (written -106: the byte is signed).
    Player,
    /// A container (its block entity id) of this many slots from 0.
    Container(&'static str, u8),
    /// A kind the table below does not know: every slot.
    Any,
}

/// Containers' sizes, by block entity id (1.11+ ids and the older ones).
const CONTAINER_SLOTS: &[(&str, u8)] = &[
    ("minecraft:chest", 27),
    ("minecraft:trapped_chest", 27),
    ("minecraft:barrel", 27),
    ("minecraft:shulker_box", 27),
    ("minecraft:dispenser", 9),
    ("minecraft:dropper", 9),
    ("minecraft:crafter", 9),
    ("minecraft:chiseled_bookshelf", 6),
    ("minecraft:hopper", 5),
    ("minecraft:brewing_stand", 5),
    ("minecraft:campfire", 4),
    ("minecraft:soul_campfire", 4),
    ("minecraft:furnace", 3),
    ("minecraft:blast_furnace", 3),
    ("minecraft:smoker", 3),
    ("Chest", 27),
    ("Trap", 9),
    ("Dropper", 9),
    ("Hopper", 5),
    ("Cauldron", 5),
    ("Furnace", 3),
];

impl Slots {
    pub(crate) fn of_block_entity(id: &str) -> Slots {
        match CONTAINER_SLOTS.iter().find(|(known, _)| *known == id) {
            Some(&(known, n)) => Slots::Container(known, n),
            None => Slots::Any,
        }
    }

    fn keeps(self, slot: i8) -> bool {
        let u = slot as u8;
        match self {
            Slots::Player => u < 36 || (100..104).contains(&u) || u == 150,
            Slots::Container(_, n) => u < n,
            Slots::Any => true,
        }
    }

    fn refusal(self, slot: i8) -> String {
        let which = match self {
            Slots::Player => "a player's inventory keeps slots 0 to 35, armour 100 to 103 and the off hand -106".into(),
            Slots::Container(id, n) => format!("a {id} has slots 0 to {}", n - 1),
            Slots::Any => String::new(),
        };
        format!("slot {slot}: {which}; the game would drop an item there when it loads")
    }
}

pub(crate) fn render(items: &List, form: ItemForm) -> String {
    let mut s = HEADER.to_string();
    for t in &items.items {
        let Tag::Compound(c) = t else { continue };
        let slot = c.int("Slot").unwrap_or(-1);
        let count = c.int("Count").or_else(|| c.int("count")).unwrap_or(1);
        let id = c.string("id").unwrap_or("?");
        s.push_str(&format!("{slot} {count} {id}"));
        if let Some(extra) = c.get(form.extra_key()) {
            s.push(' ');
            s.push_str(&snbt::tag_inline(extra));
        }
        s.push('\n');
    }
    s
}

/// The new `Items` from text; `old`: the list it replaces (its items'
/// other keys and its order of keys are kept); `slots`: where the game
/// keeps items (a slot `old` already uses is taken as it is);
/// `data_version`: the version whose item ids a new id must be one of (an
/// id `old` already holds is taken as it is).
pub(crate) fn parse(text: &str, old: &List, form: ItemForm, slots: Slots, data_version: i64) -> DocResult<List> {
    let old_of = |slot: i64| {
        old.items.iter().find_map(|t| match t {
            Tag::Compound(c) if c.int("Slot") == Some(slot) => Some(c.clone()),
            _ => None,
        })
    };
    let mut items = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let at = |m: String| DocError::at_line(i + 1, m);
        let mut f = t.splitn(4, ' ');
        let (slot, count, id) = (f.next().unwrap_or(""), f.next().unwrap_or(""), f.next().unwrap_or(""));
        let slot: i8 = slot.parse().map_err(|_| at(format!("'{slot}' is not a slot number (-128 to 127)")))?;
        if !seen.insert(slot) {
            return Err(at(format!("slot {slot} is given twice")));
        }
        if !slots.keeps(slot) && old_of(slot as i64).is_none() {
            return Err(at(slots.refusal(slot)));
        }
        let max = form.max_count();
        let count: i64 = count
            .parse()
            .ok()
            .filter(|c| (1..=max).contains(c))
            .ok_or_else(|| at(format!("'{count}' is not a count from 1 to {max}")))?;
        let id_ok =
            !id.is_empty() && id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-./:".contains(c));
        if !id_ok {
            return Err(at(format!("'{id}' is not an item id (like minecraft:stone)")));
        }
        let was_air = || old_of(slot as i64).is_some_and(|c| c.string("id").is_some_and(|i| i == id));
        if (id == "minecraft:air" || id == "air") && !was_air() {
            return Err(at(format!(
                "slot {slot}: {id} is no item (the game drops it); leave the slot out to empty it"
            )));
        }
        if !holds_id(old, id) {
            super::registry::check_item(id, data_version).map_err(|m| at(format!("slot {slot}: {m}")))?;
        }
        let extra = match f.next().map(str::trim).filter(|e| !e.is_empty()) {
            Some(e) => Some(snbt::parse_tag(e).map_err(|m| at(format!("the tag: {m}")))?),
            None => None,
        };
        let mut c = old_of(slot as i64).unwrap_or_default();
        c.insert("Slot", Tag::Byte(slot));
        c.insert("id", Tag::String(id.to_string()));
        c.insert(
            form.count_key(),
            match form {
                ItemForm::Classic => Tag::Byte(count as i8),
                ItemForm::Components { .. } => Tag::Int(count as i32),
            },
        );
        match extra {
            Some(mut e) => {
                if let Some(o) = c.get(form.extra_key()) {
                    snbt::keep_empty_list_types(&mut e, o);
                }
                c.insert(form.extra_key(), e)
            }
            None => drop(c.remove(form.extra_key())),
        }
        items.push(Tag::Compound(order_like(c, form)));
    }
    Ok(List { elem: if items.is_empty() { old.elem } else { 10 }, items })
}

/// Whether a list of items holds one of id `id`.
pub(crate) fn holds_id(items: &List, id: &str) -> bool {
    items.items.iter().any(|t| matches!(t, Tag::Compound(c) if c.string("id") == Some(id)))
}

/// The first item of `new` whose id neither `old` holds nor the game of
/// `data_version` knows: its slot and why.
pub(crate) fn unknown_id(new: &List, old: &List, data_version: i64) -> Option<String> {
    new.items.iter().find_map(|t| {
        let Tag::Compound(c) = t else { return None };
        let id = c.string("id").filter(|id| !holds_id(old, id))?;
        let why = super::registry::check_item(id, data_version).err()?;
        Some(format!("slot {}: {why}", c.int("Slot").map_or("?".into(), |s| s.to_string())))
    })
}

/// A new item's keys in the game's order (Slot, id, count, extras); an old
/// item's as they were.
fn order_like(c: Compound, form: ItemForm) -> Compound {
    let known = ["Slot", "id", form.count_key(), form.extra_key()];
    if c.0.len() <= 4 && c.0.iter().all(|(k, _)| known.contains(&k.as_str())) {
        let mut out = Compound::default();
        for k in known {
            if let Some(v) = c.get(k) {
                out.0.push((k.to_string(), v.clone()));
            }
        }
        // Keep an old item's own order when it had exactly these keys.
        if out.0.iter().map(|(k, _)| k).eq(c.0.iter().map(|(k, _)| k)) { c } else { out }
    } else {
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chest() -> List {
        let item = |slot: i8, id: &str, n: i8| {
            Tag::Compound(Compound(vec![
                ("Slot".into(), Tag::Byte(slot)),
                ("id".into(), Tag::String(id.into())),
                ("Count".into(), Tag::Byte(n)),
            ]))
        };
        List { elem: 10, items: vec![item(0, "minecraft:dirt", 5), item(3, "minecraft:stick", 1)] }
    }

    #[test]
    fn unchanged_text_gives_the_same_items() {
        let text = render(&chest(), ItemForm::Classic);
        assert_eq!(text, format!("{HEADER}0 5 minecraft:dirt\n3 1 minecraft:stick\n"));
        assert_eq!(parse(&text, &chest(), ItemForm::Classic, Slots::Any, 0).unwrap(), chest());
    }

    #[test]
    fn edits_and_bad_lines() {
        let new =
            parse("0 64 minecraft:diamond {display: {Name: \"x\"}}\n", &chest(), ItemForm::Classic, Slots::Any, 0)
                .unwrap();
        let Tag::Compound(c) = &new.items[0] else { panic!() };
        assert_eq!((c.int("Count"), c.string("id")), (Some(64), Some("minecraft:diamond")));
        assert!(c.compound("tag").is_some());
        for bad in ["x 1 minecraft:a", "0 0 minecraft:a", "0 1 Bad", "0 1 minecraft:a {x", "0 1 a:b\n0 1 a:c"] {
            assert!(parse(bad, &chest(), ItemForm::Classic, Slots::Any, 0).is_err(), "{bad}");
        }
    }

    /// The game drops an item in a slot it does not keep; a slot the old
    /// list already uses is taken as it is (a no-op write of another
    /// tool's inventory is not refused).
    #[test]
    fn slots_the_game_would_drop_are_refused() {
        let chest27 = Slots::of_block_entity("minecraft:chest");
        let hopper = Slots::of_block_entity("minecraft:hopper");
        let empty = List { elem: 0, items: Vec::new() };
        for (slots, good, bad) in [
            (Slots::Player, &["0", "35", "100", "103", "-106"][..], &["36", "99", "104", "-105", "-1", "127"][..]),
            (chest27, &["0", "26"], &["27", "-1", "100"]),
            (hopper, &["4"], &["5"]),
            (Slots::of_block_entity("mymod:crate"), &["-128", "127"], &[]),
        ] {
            for slot in good {
                assert!(
                    parse(&format!("{slot} 1 minecraft:dirt\n"), &empty, ItemForm::Classic, slots, 0).is_ok(),
                    "{slots:?} {slot}"
                );
            }
            for slot in bad {
                let err =
                    parse(&format!("{slot} 1 minecraft:dirt\n"), &empty, ItemForm::Classic, slots, 0).unwrap_err();
                assert!(err.to_string().contains("the game would drop an item there"), "{slots:?} {slot}: {err}");
            }
        }
        let mut odd = chest();
        let Tag::Compound(c) = &mut odd.items[1] else { panic!() };
        c.insert("Slot", Tag::Byte(40));
        let text = render(&odd, ItemForm::Classic);
        assert_eq!(parse(&text, &odd, ItemForm::Classic, chest27, 0).unwrap(), odd, "kept as it was");
    }

    /// An id the game of the DataVersion does not know is refused (it
    /// drops the item); one the list already holds, or a mod's, is taken.
    #[test]
    fn ids_the_game_does_not_know_are_refused_unless_held() {
        let empty = List { elem: 0, items: Vec::new() };
        let err = parse("3 1 minecraft:not_an_item\n", &empty, ItemForm::Classic, Slots::Any, 2865).unwrap_err();
        assert!(err.to_string().contains("slot 3: minecraft:not_an_item is no item in 1.18"), "{err}");
        assert!(parse("3 1 mymod:wand\n", &empty, ItemForm::Classic, Slots::Any, 2865).is_ok());
        let mut odd = chest();
        let Tag::Compound(c) = &mut odd.items[1] else { panic!() };
        c.insert("id", Tag::String("minecraft:old_stick".into()));
        let text = render(&odd, ItemForm::Classic);
        assert_eq!(parse(&text, &odd, ItemForm::Classic, Slots::Any, 2865).unwrap(), odd, "kept as it was");
        assert_eq!(
            unknown_id(&odd, &chest(), 2865).unwrap(),
            "slot 3: minecraft:old_stick is no item in 1.18 (DataVersion 2865); the game would drop it when it loads"
        );
        assert_eq!(unknown_id(&odd, &odd, 2865), None);
    }

    /// From 1.21 the game takes counts of 1 to 99; an air item is an empty
    /// slot it drops.
    #[test]
    fn counts_past_the_games_codec_and_air_are_refused() {
        let empty = List { elem: 0, items: Vec::new() };
        let v1_21 = ItemForm::of_data_version(3953);
        assert!(parse("0 99 minecraft:dirt\n", &empty, v1_21, Slots::Any, 0).is_ok());
        let err = parse("0 100 minecraft:dirt\n", &empty, v1_21, Slots::Any, 0).unwrap_err();
        assert!(err.to_string().contains("'100' is not a count from 1 to 99"), "{err}");
        assert!(parse("0 127 minecraft:dirt\n", &empty, ItemForm::of_data_version(3839), Slots::Any, 0).is_ok());
        for form in [ItemForm::Classic, v1_21] {
            let err = parse("0 1 minecraft:air\n", &empty, form, Slots::Any, 0).unwrap_err();
            assert!(err.to_string().contains("minecraft:air is no item"), "{err}");
        }
        let mut with_air = chest();
        let Tag::Compound(c) = &mut with_air.items[0] else { panic!() };
        c.insert("id", Tag::String("minecraft:air".into()));
        let text = render(&with_air, ItemForm::Classic);
        assert_eq!(parse(&text, &with_air, ItemForm::Classic, Slots::Any, 0).unwrap(), with_air, "kept as it was");
    }
}
