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

use crate::codec::nbt::{Compound, List, Tag};
use crate::codec::snbt;
use crate::kinds::{DocError, DocResult};

/// How the version stores an item's count and extra data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemForm {
    /// `Count` a byte, extras in `tag` (to 1.20.4).
    Classic,
    /// `count` an int, extras in `components` (1.20.5+, DataVersion 3837).
    Components,
}

impl ItemForm {
    pub fn of_data_version(v: i64) -> ItemForm {
        if v >= 3837 { ItemForm::Components } else { ItemForm::Classic }
    }
    fn count_key(self) -> &'static str {
        match self {
            ItemForm::Classic => "Count",
            ItemForm::Components => "count",
        }
    }
    fn extra_key(self) -> &'static str {
        match self {
            ItemForm::Classic => "tag",
            ItemForm::Components => "components",
        }
    }
}

const HEADER: &str = "# slot count item [tag or components as SNBT]\n";

pub fn render(items: &List, form: ItemForm) -> String {
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
/// other keys and its order of keys are kept).
pub fn parse(text: &str, old: &List, form: ItemForm) -> DocResult<List> {
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
        let count: i64 = count
            .parse()
            .ok()
            .filter(|c| (1..=127).contains(c))
            .ok_or_else(|| at(format!("'{count}' is not a count from 1 to 127")))?;
        let id_ok =
            !id.is_empty() && id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-./:".contains(c));
        if !id_ok {
            return Err(at(format!("'{id}' is not an item id (like minecraft:stone)")));
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
                ItemForm::Components => Tag::Int(count as i32),
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
        assert_eq!(parse(&text, &chest(), ItemForm::Classic).unwrap(), chest());
    }

    #[test]
    fn edits_and_bad_lines() {
        let new = parse("0 64 minecraft:diamond {display: {Name: \"x\"}}\n", &chest(), ItemForm::Classic).unwrap();
        let Tag::Compound(c) = &new.items[0] else { panic!() };
        assert_eq!((c.int("Count"), c.string("id")), (Some(64), Some("minecraft:diamond")));
        assert!(c.compound("tag").is_some());
        for bad in ["x 1 minecraft:a", "0 0 minecraft:a", "0 1 Bad", "0 1 minecraft:a {x", "0 1 a:b\n0 1 a:c"] {
            assert!(parse(bad, &chest(), ItemForm::Classic).is_err(), "{bad}");
        }
    }
}
