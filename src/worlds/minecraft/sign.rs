//! A sign's text as plain lines, one a line of the sign:
//!
//! ```text
//! Welcome
//! to the
//! spawn
//!
//! ```
//!
//! Where the game keeps it: before 1.20 `Text1` to `Text4`, each a JSON
//! text component (`{"text":"Welcome"}`); 1.20+ `front_text` and
//! `back_text`, each with `messages`, a list of four such components
//! (1.21.5+, DataVersion 4325: text components as NBT, a plain string tag
//! being its text). A line shows the component's plain text (its `text`
//! and that of its `extra`, in order). Written back, a line equal to what
//! was shown keeps its stored component as it was (colours, clicks and
//! all); a changed line becomes a plain component of its text. Fewer than
//! four lines leave the rest empty, as `echo` writes them. Pure.

use worldfs_codec::minecraft::nbt::{Compound, List, Tag};

/// The first DataVersion whose messages are NBT components (1.21.5).
const NBT_COMPONENTS: i64 = 4325;

/// One side of a sign and where its four messages are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// `Text1`..`Text4` (before 1.20).
    Old,
    /// `front_text.messages` (1.20+).
    Front,
    /// `back_text.messages` (1.20+).
    Back,
}

impl Side {
    /// The file that shows this side.
    pub(crate) fn file(self) -> &'static str {
        match self {
            Side::Old | Side::Front => "text",
            Side::Back => "back_text",
        }
    }
    fn holder(self) -> &'static str {
        if self == Side::Back { "back_text" } else { "front_text" }
    }
}

/// The sides a block entity holds text for (none: it is not a sign).
pub(crate) fn sides(be: &Compound) -> Vec<Side> {
    if (1..=4).all(|i| matches!(be.get(&format!("Text{i}")), Some(Tag::String(_)))) {
        return vec![Side::Old];
    }
    let messages =
        |side: Side| be.compound(side.holder()).and_then(|h| h.list("messages")).is_some_and(|m| m.items.len() == 4);
    [Side::Front, Side::Back].into_iter().filter(|s| messages(*s)).collect()
}

/// The four stored messages of a side.
fn messages(be: &Compound, side: Side) -> Vec<Tag> {
    match side {
        Side::Old => (1..=4).filter_map(|i| be.get(&format!("Text{i}")).cloned()).collect(),
        _ => be.compound(side.holder()).and_then(|h| h.list("messages")).map(|l| l.items.clone()).unwrap_or_default(),
    }
}

/// The plain text of one stored message (control characters shown as
/// U+FFFD, so that each message is one line).
fn plain(message: &Tag, data_version: i64) -> String {
    let text = match message {
        Tag::String(s) if data_version < NBT_COMPONENTS => match serde_json::from_str::<serde_json::Value>(s) {
            Ok(v) => json_plain(&v),
            Err(_) => s.clone(),
        },
        Tag::String(s) => s.clone(),
        Tag::Compound(c) => nbt_plain(c),
        Tag::List(l) => l.items.iter().map(|t| plain(t, data_version)).collect(),
        other => worldfs_codec::minecraft::snbt::tag_inline(other),
    };
    text.chars().map(|c| if c.is_control() { '\u{fffd}' } else { c }).collect()
}

fn json_plain(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(json_plain).collect(),
        Value::Object(o) => {
            let own = o.get("text").map(json_plain).unwrap_or_default();
            let extra: String = o.get("extra").map(json_plain).unwrap_or_default();
            own + &extra
        }
        other => other.to_string(),
    }
}

fn nbt_plain(c: &Compound) -> String {
    let own = c.string("text").unwrap_or("").to_string();
    let extra: String = match c.get("extra") {
        Some(Tag::List(l)) => l.items.iter().map(|t| plain(t, NBT_COMPONENTS)).collect(),
        _ => String::new(),
    };
    own + &extra
}

/// The side's lines as shown.
pub(crate) fn render(be: &Compound, side: Side, data_version: i64) -> String {
    messages(be, side).iter().map(|m| plain(m, data_version) + "\n").collect()
}

/// A new message holding `line` as the version stores one.
fn message_of(line: &str, data_version: i64) -> Tag {
    if data_version >= NBT_COMPONENTS {
        Tag::String(line.to_string())
    } else {
        Tag::String(serde_json::json!({ "text": line }).to_string())
    }
}

/// Take the side's text back into the block entity: lines shown unchanged
/// keep their message, others become plain ones. More than four lines, or
/// a control character in one, are refused naming the line.
pub(crate) fn apply(be: &mut Compound, side: Side, text: &str, data_version: i64) -> Result<(), (usize, String)> {
    let lines: Vec<&str> = text.strip_suffix('\n').unwrap_or(text).split('\n').collect();
    let lines: Vec<&str> = if text.is_empty() { Vec::new() } else { lines };
    if lines.len() > 4 {
        return Err((5, format!("a sign has 4 lines; this text has {}", lines.len())));
    }
    if let Some((n, _)) = lines.iter().enumerate().find(|(_, l)| l.chars().any(char::is_control)) {
        return Err((n + 1, "a control character (a sign line is plain text)".into()));
    }
    let old = messages(be, side);
    let new: Vec<Tag> = (0..4)
        .map(|i| {
            let line = lines.get(i).copied().unwrap_or("");
            match old.get(i) {
                Some(m) if plain(m, data_version) == line => m.clone(),
                _ => message_of(line, data_version),
            }
        })
        .collect();
    match side {
        Side::Old => {
            for (i, m) in new.into_iter().enumerate() {
                be.insert(&format!("Text{}", i + 1), m);
            }
        }
        _ => {
            let holder =
                be.compound_mut(side.holder()).ok_or_else(|| (1, "this side of the sign is gone".to_string()))?;
            let elem = new.first().map_or(8, Tag::type_id);
            let elem = match holder.list("messages") {
                Some(l) if new.iter().all(|t| t.type_id() == l.elem) => l.elem,
                _ => elem,
            };
            if new.iter().any(|t| t.type_id() != elem) {
                return Err((1, "these lines cannot be stored in one list (mixed kinds of message)".into()));
            }
            holder.insert("messages", Tag::List(List { elem, items: new }));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn old_sign(texts: [&str; 4]) -> Compound {
        let mut c = Compound(vec![("id".into(), Tag::String("minecraft:sign".into()))]);
        for (i, t) in texts.iter().enumerate() {
            c.0.push((format!("Text{}", i + 1), Tag::String(t.to_string())));
        }
        c
    }

    #[test]
    fn lines_show_plain_text_and_unchanged_ones_keep_their_json() {
        let styled = r#"{"text":"Hi ","extra":[{"text":"there","color":"red"}]}"#;
        let mut be = old_sign([styled, r#"{"text":""}"#, r#""plain""#, "{\"text\":\"a\\nb\"}"]);
        let shown = render(&be, Side::Old, 2730);
        assert_eq!(shown, "Hi there\n\nplain\na\u{fffd}b\n");
        apply(&mut be, Side::Old, &shown.replace("plain", "new \"one\""), 2730).unwrap();
        assert_eq!(be.string("Text1"), Some(styled));
        assert_eq!(be.string("Text3"), Some(r#"{"text":"new \"one\""}"#));
        assert_eq!(be.string("Text4"), Some("{\"text\":\"a\\nb\"}"));
        apply(&mut be, Side::Old, "only\n", 2730).unwrap();
        assert_eq!(be.string("Text1"), Some(r#"{"text":"only"}"#));
        assert_eq!(be.string("Text2"), Some(r#"{"text":""}"#));
        assert_eq!(apply(&mut be, Side::Old, "1\n2\n3\n4\n5\n", 2730).unwrap_err().0, 5);
        assert_eq!(apply(&mut be, Side::Old, "a\tb\n", 2730).unwrap_err().0, 1);
    }

    #[test]
    fn front_and_back_of_a_1_20_sign() {
        let side = |msgs: [&str; 4]| {
            let items = msgs.iter().map(|m| Tag::String(m.to_string())).collect();
            Tag::Compound(Compound(vec![("messages".into(), Tag::List(List { elem: 8, items }))]))
        };
        let mut be = Compound(vec![
            ("front_text".into(), side([r#"{"text":"A"}"#, r#""""#, r#""""#, r#""""#])),
            ("back_text".into(), side([r#""""#, r#""""#, r#""""#, r#""""#])),
        ]);
        assert_eq!(sides(&be), vec![Side::Front, Side::Back]);
        assert_eq!(render(&be, Side::Front, 3465), "A\n\n\n\n");
        apply(&mut be, Side::Back, "\nB\n", 3465).unwrap();
        assert_eq!(render(&be, Side::Back, 3465), "\nB\n\n\n");
        assert_eq!(render(&be, Side::Front, 3465), "A\n\n\n\n");
        // 1.21.5+: plain strings are the text.
        apply(&mut be, Side::Front, "{x}\n", 4325).unwrap();
        assert_eq!(render(&be, Side::Front, 4325), "{x}\n\n\n\n");
    }
}
