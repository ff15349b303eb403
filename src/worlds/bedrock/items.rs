//! A Bedrock inventory (a chest's `Items`, a player's `Inventory`) as
//! text, one item a line: `SLOT COUNT NAME [DAMAGE] [SNBT]`; the damage
//! (a short) shown when it is not 0, the SNBT holding the item's other
//! keys (`tag`, `Block`, `CanPlaceOn`, ...) except `WasPickedUp`:
//!
//! ```text
//! # slot count item [damage] [other keys as SNBT]
//! 0 64 minecraft:cobblestone
//! 3 1 minecraft:diamond_sword 5 {tag: {Unbreakable: 1b}}
//! ```
//!
//! A line's item keeps the keys the line does not show when its slot is
//! unchanged. New names must be items of the game (minecraft-data's
//! Bedrock items); counts are 1 to 64; slots those the container keeps.

use super::tables;
use crate::documents::{DocError, DocResult};
use worldfs_codec::minecraft::nbt::{Compound, List, Tag};
use worldfs_codec::minecraft::snbt;

const HEADER: &str = "# slot count item [damage] [other keys as SNBT]\n";

/// Keys the line's fields show; `WasPickedUp` is kept, never shown.
const FIELDS: &[&str] = &["Slot", "Count", "Name", "Damage", "WasPickedUp"];

/// The slots an inventory keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slots {
    /// This many slots from 0 (what, for messages).
    Count(&'static str, u8),
    /// A kind this table does not know: any slot.
    Any,
}

const CONTAINERS: &[(&str, u8)] = &[
    ("Chest", 27),
    ("Barrel", 27),
    ("ShulkerBox", 27),
    ("Dispenser", 9),
    ("Dropper", 9),
    ("Crafter", 9),
    ("Hopper", 5),
    ("BrewingStand", 5),
    ("Furnace", 3),
    ("BlastFurnace", 3),
    ("Smoker", 3),
];

impl Slots {
    pub(crate) fn of_block_entity(id: &str) -> Slots {
        CONTAINERS.iter().find(|(k, _)| *k == id).map_or(Slots::Any, |&(k, n)| Slots::Count(k, n))
    }
    /// Why the game would drop an item in `slot`, if it would.
    fn refusal(self, slot: i8) -> Option<String> {
        match self {
            Slots::Count(what, n) if (slot as u8) >= n => {
                Some(format!("slot {slot}: a {what} has slots 0 to {}; the game drops an item in any other", n - 1))
            }
            _ => None,
        }
    }
}

/// The items of `list` as text.
pub(crate) fn render(list: &List) -> String {
    let mut s = String::from(HEADER);
    for t in &list.items {
        let Tag::Compound(c) = t else { continue };
        let name = c.string("Name").unwrap_or("");
        if name.is_empty() && c.int("Count").unwrap_or(0) == 0 {
            continue; // an empty slot (the game writes them in players' lists)
        }
        s.push_str(&format!("{} {} {}", c.int("Slot").unwrap_or(0), c.int("Count").unwrap_or(0), name));
        if let Some(d) = c.int("Damage").filter(|d| *d != 0) {
            s.push_str(&format!(" {d}"));
        }
        let rest = Compound(c.0.iter().filter(|(k, _)| !FIELDS.contains(&k.as_str())).cloned().collect());
        if !rest.0.is_empty() {
            s.push(' ');
            s.push_str(&snbt::tag_inline(&Tag::Compound(rest)));
        }
        s.push('\n');
    }
    s
}

fn line_item(line: &str, old: &List, slots: Slots) -> Result<(i8, Compound), String> {
    let mut parts = line.splitn(4, ' ');
    let slot: i8 =
        parts.next().unwrap_or("").parse().map_err(|_| "the slot is not a number from -128 to 127".to_string())?;
    if let Some(why) = slots.refusal(slot) {
        return Err(why);
    }
    let count: i64 = parts.next().unwrap_or("").parse().map_err(|_| "the count is not a number".to_string())?;
    if !(1..=64).contains(&count) {
        return Err(format!("count {count}: a stack holds 1 to 64 (leave an empty slot out)"));
    }
    let name = parts.next().unwrap_or("").trim();
    let mut rest = parts.next().unwrap_or("").trim();
    let before = old.items.iter().find_map(|t| match t {
        Tag::Compound(c) if c.int("Slot") == Some(slot as i64) => Some(c.clone()),
        _ => None,
    });
    if before.as_ref().and_then(|c| c.string("Name")) != Some(name) && !tables::is_item(name) {
        return Err(format!("'{name}' is no item of the game (minecraft-data's Bedrock item names, tables/items.txt)"));
    }
    let mut damage = 0i16;
    if !rest.starts_with('{') && !rest.is_empty() {
        let (d, tail) = rest.split_once(' ').unwrap_or((rest, ""));
        damage = d.parse().map_err(|_| format!("'{d}' is not a damage (a number) nor SNBT ({{...}})"))?;
        rest = tail.trim();
    }
    let extra = if rest.is_empty() { None } else { Some(snbt::parse(rest)?) };
    if let Some(k) = extra.as_ref().and_then(|e| e.0.iter().find(|(k, _)| FIELDS.contains(&k.as_str()))) {
        return Err(format!("'{}' is a field of the line, not of its SNBT", k.0));
    }
    let mut c = before.clone().unwrap_or_default();
    c.insert("Count", Tag::Byte(count as i8));
    c.insert("Damage", Tag::Short(damage));
    c.insert("Name", Tag::String(name.to_string()));
    c.insert("Slot", Tag::Byte(slot));
    if c.get("WasPickedUp").is_none() {
        c.insert("WasPickedUp", Tag::Byte(0));
    }
    if let Some(extra) = extra {
        c.0.retain(|(k, _)| FIELDS.contains(&k.as_str()));
        c.0.extend(extra.0);
    }
    // The same keys and values as stored, in another order: as stored.
    match before {
        Some(b) if same_in_any_order(&b, &c) => Ok((slot, b)),
        _ => Ok((slot, c)),
    }
}

fn same_in_any_order(a: &Compound, b: &Compound) -> bool {
    let sorted = |c: &Compound| {
        let mut v = c.0.clone();
        v.sort_by(|x, y| x.0.cmp(&y.0));
        v
    };
    a.0.len() == b.0.len() && sorted(a) == sorted(b)
}

/// The list the text says, from `old` (the items as stored).
pub(crate) fn parse(text: &str, old: &List, slots: Slots) -> DocResult<List> {
    let mut out: Vec<(i8, Compound)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (slot, c) = line_item(line, old, slots).map_err(|m| DocError::at_line(n + 1, m))?;
        if out.iter().any(|(s, _)| *s == slot) {
            return Err(DocError::at_line(n + 1, format!("slot {slot} is given twice")));
        }
        out.push((slot, c));
    }
    let items = out.into_iter().map(|(_, c)| Tag::Compound(c)).collect();
    Ok(List { elem: 10, items })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(slot: i8, count: i8, name: &str) -> Tag {
        Tag::Compound(Compound(vec![
            ("Count".into(), Tag::Byte(count)),
            ("Damage".into(), Tag::Short(0)),
            ("Name".into(), Tag::String(name.into())),
            ("Slot".into(), Tag::Byte(slot)),
            ("WasPickedUp".into(), Tag::Byte(0)),
        ]))
    }

    #[test]
    fn lines_round_trip_and_bad_ones_are_refused() {
        let old = List { elem: 10, items: vec![item(0, 5, "minecraft:apple"), item(4, 1, "minecraft:old_thing")] };
        let text = render(&old);
        assert_eq!(text, format!("{HEADER}0 5 minecraft:apple\n4 1 minecraft:old_thing\n"));
        let chest = Slots::of_block_entity("Chest");
        assert_eq!(parse(&text, &old, chest).unwrap(), old);
        let more = format!("{text}26 64 minecraft:diamond 3 {{tag: {{x: 1b}}}}\n");
        let l = parse(&more, &old, chest).unwrap();
        assert_eq!(render(&l), format!("{text}26 64 minecraft:diamond 3 {{tag: {{x: 1b}}}}\n"));
        for (bad, why) in [
            ("27 1 minecraft:diamond", "slots 0 to 26"),
            ("1 65 minecraft:diamond", "1 to 64"),
            ("1 1 minecraft:diamondz", "no item"),
            ("1 1 minecraft:diamond {Count: 2b}", "field of the line"),
            ("x 1 minecraft:diamond", "slot"),
        ] {
            let e = parse(&format!("{bad}\n"), &old, chest).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains("line 1"), "{bad}: {e}");
        }
    }
}
