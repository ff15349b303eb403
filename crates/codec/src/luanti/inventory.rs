//! Inventory text: the line format embedded in node metadata.
//!
//! ```text
//! List main 32
//! Width 0
//! Item default:dirt 42
//! Empty
//! ...
//! EndInventoryList
//! EndInventory
//! ```
//! It has no length prefix: inside a metadata stream the inventory ends
//! after the line whose first word is `EndInventory` (or `end`) at the top
//! level. Inside a list only `EndInventoryList` (or `end`) ends the list.

use super::itemstring::ItemStack;
use crate::jsonish::HighBytes;

/// Find where an inventory starting at `data[0]` ends, reading lines the way
/// the engine's parser does. Returns the number of bytes it uses (including
/// the terminating line's newline), or None if it is not terminated.
pub fn scan_end(data: &[u8]) -> Option<usize> {
    let mut pos = 0;
    let mut in_list = false;
    while pos < data.len() {
        let (line, next) = match data[pos..].iter().position(|&c| c == b'\n') {
            Some(n) => (&data[pos..pos + n], pos + n + 1),
            None => (&data[pos..], data.len()),
        };
        let word = line.split(|&c| c == b' ').next().unwrap_or(b"");
        if in_list {
            if word == b"EndInventoryList" || word == b"end" {
                in_list = false;
            }
        } else if word == b"EndInventory" || word == b"end" {
            return Some(next);
        } else if word == b"List" {
            in_list = true;
        }
        pos = next;
    }
    None
}

/// The most lines inventory text may have (1 048 576: a million slots).
pub const MAX_LINES: usize = 1 << 20;

/// A node's or player's inventory: its lists, in stored order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inventory {
    /// The lists, in stored order.
    pub lists: Vec<InventoryList>,
}

/// One inventory list (`List name size` ... `EndInventoryList`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InventoryList {
    /// The list name, e.g. `main`, `craft`, `fuel`.
    pub name: Vec<u8>,
    /// The `Width` line: the grid width a craft list is read with (0: not a grid).
    pub width: u32,
    /// One entry per slot; None is an empty slot. The list size is its length.
    pub slots: Vec<Option<ItemStack>>,
}

/// A problem in inventory text, with its 1-based line number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InventoryError {
    /// The 1-based line of the inventory text.
    pub line: usize,
    /// What is wrong on it.
    pub message: String,
}

impl std::fmt::Display for InventoryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl Inventory {
    /// The engine's writer.
    pub fn serialize(&self, high: HighBytes) -> Vec<u8> {
        let mut out = Vec::new();
        for list in &self.lists {
            out.extend_from_slice(b"List ");
            out.extend_from_slice(&list.name);
            out.extend_from_slice(format!(" {}\nWidth {}\n", list.slots.len(), list.width).as_bytes());
            for slot in &list.slots {
                match slot {
                    None => out.extend_from_slice(b"Empty\n"),
                    Some(item) => {
                        out.extend_from_slice(b"Item ");
                        out.extend_from_slice(&item.serialize(high));
                        out.push(b'\n');
                    }
                }
            }
            out.extend_from_slice(b"EndInventoryList\n");
        }
        out.extend_from_slice(b"EndInventory\n");
        out
    }

    /// Parse inventory text strictly, refusing everything the server would
    /// refuse or silently read differently from what is written: unknown or
    /// misspelt keywords, slot counts that differ from the list size, a
    /// missing `Width`, duplicate list names, bad itemstrings, `\r` line
    /// ends, and anything after `EndInventory`.
    pub fn parse_strict(text: &[u8]) -> Result<Inventory, InventoryError> {
        // Counted before splitting: 256 MiB of newlines must not become a
        // 4 GiB list of lines.
        let count = text.iter().filter(|&&c| c == b'\n').count();
        if count > MAX_LINES {
            return Err(InventoryError {
                line: MAX_LINES + 1,
                message: format!("{count} lines; an inventory may have at most {MAX_LINES}"),
            });
        }
        let mut lines: Vec<&[u8]> = text.split(|&c| c == b'\n').collect();
        if lines.last() == Some(&&b""[..]) {
            lines.pop(); // the final newline
        }
        let mut inv = Inventory { lists: Vec::new() };
        let mut names: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
        let mut i = 0;
        loop {
            let Some(&line) = lines.get(i) else {
                return Err(inventory_error(i.max(1), "missing the final line EndInventory".into()));
            };
            let n = i + 1;
            check_line_end(line, n)?;
            if line == b"EndInventory" {
                if i + 1 != lines.len() {
                    return Err(inventory_error(n + 1, "text after EndInventory".into()));
                }
                return Ok(inv);
            }
            let (name, size) = parse_list_header(line, n)?;
            if !names.insert(name.to_vec()) {
                return Err(inventory_error(n, format!("list '{}' appears twice", String::from_utf8_lossy(name))));
            }
            i += 1;
            inv.lists.push(parse_list_body(&lines, &mut i, (name, size, n))?);
        }
    }
}

fn inventory_error(line: usize, message: String) -> InventoryError {
    InventoryError { line, message }
}

/// Line `n` ends without `\r`.
fn check_line_end(line: &[u8], n: usize) -> Result<(), InventoryError> {
    if line.ends_with(b"\r") {
        return Err(inventory_error(n, "line ends with \\r (Windows line ending); use \\n only".into()));
    }
    Ok(())
}

/// `List NAME SIZE` on line `n`: the name and size.
fn parse_list_header(line: &[u8], n: usize) -> Result<(&[u8], usize), InventoryError> {
    let Some(head) = line.strip_prefix(b"List ") else {
        return Err(inventory_error(
            n,
            format!("expected 'List NAME SIZE' or 'EndInventory', found '{}'", String::from_utf8_lossy(line)),
        ));
    };
    let mut words = head.split(|&c| c == b' ');
    let name = words.next().unwrap_or(b"");
    let size = words.next();
    if name.is_empty() || words.next().is_some() {
        return Err(inventory_error(n, "a list header is 'List NAME SIZE' (NAME without spaces)".into()));
    }
    let size: usize = size
        .and_then(|s| std::str::from_utf8(s).ok())
        .filter(|s| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()))
        .and_then(|s| s.parse::<u32>().ok())
        .ok_or_else(|| inventory_error(n, "list size must be a whole number".into()))? as usize;
    Ok((name, size))
}

/// The lines of a list from `lines[*i]` to its `EndInventoryList`
/// (`*i` moves past it); the list is `name` of `size` slots, its header on
/// line `header`.
fn parse_list_body(
    lines: &[&[u8]],
    i: &mut usize,
    (name, size, header): (&[u8], usize, usize),
) -> Result<InventoryList, InventoryError> {
    let mut list = InventoryList { name: name.to_vec(), width: 0, slots: Vec::new() };
    let mut width_seen = false;
    loop {
        let Some(&line) = lines.get(*i) else {
            return Err(inventory_error(
                (*i).max(1),
                format!("list '{}' (line {header}) is not closed by EndInventoryList", String::from_utf8_lossy(name)),
            ));
        };
        let n = *i + 1;
        *i += 1;
        check_line_end(line, n)?;
        if line == b"EndInventoryList" {
            break;
        }
        if let Some(w) = line.strip_prefix(b"Width ") {
            if width_seen {
                return Err(inventory_error(n, "second Width line in one list".into()));
            }
            width_seen = true;
            list.width = std::str::from_utf8(w)
                .ok()
                .filter(|s| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()))
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| inventory_error(n, "Width must be a whole number".into()))?;
            continue;
        }
        let slot = parse_slot(line, n)?;
        if list.slots.len() == size {
            return Err(inventory_error(n, format!("more than {size} slots in list of size {size}")));
        }
        list.slots.push(slot);
    }
    if !width_seen {
        return Err(inventory_error(header, "list has no Width line (write 'Width 0')".into()));
    }
    if list.slots.len() != size {
        return Err(inventory_error(
            header,
            format!(
                "list '{}' has size {size} but {} slot lines (write Empty for empty slots)",
                String::from_utf8_lossy(name),
                list.slots.len()
            ),
        ));
    }
    Ok(list)
}

/// A slot line (`Empty` or `Item ITEMSTRING`), line `n`.
fn parse_slot(line: &[u8], n: usize) -> Result<Option<ItemStack>, InventoryError> {
    if line == b"Empty" {
        return Ok(None);
    }
    if let Some(item) = line.strip_prefix(b"Item ") {
        let stack = ItemStack::parse_strict(item)
            .map_err(|e| inventory_error(n, format!("bad item at column {}: {}", e.offset + 6, e.message)))?;
        return Ok(Some(stack));
    }
    Err(inventory_error(
        n,
        format!(
            "expected 'Item ITEMSTRING', 'Empty', 'Width N' or 'EndInventoryList', found '{}'",
            String::from_utf8_lossy(line)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHEST: &str = "List main 4\nWidth 0\nItem default:dirt 42\nItem default:pick_steel\nEmpty\nEmpty\nEndInventoryList\nEndInventory\n";

    #[test]
    fn scan_finds_the_end_and_ignores_nested_terminators() {
        let mut s = CHEST.as_bytes().to_vec();
        s.extend_from_slice(b"NEXT");
        assert_eq!(scan_end(&s), Some(CHEST.len()));
        assert_eq!(scan_end(b"EndInventory\nxyz"), Some(13));
        // EndInventory inside a list does not end the inventory
        let t = b"List a 1\nEndInventory\nEndInventoryList\nEndInventory\n";
        assert_eq!(scan_end(t), Some(t.len()));
        assert_eq!(scan_end(b"List a 1\nEmpty\n"), None);
    }

    #[test]
    fn strict_parse_round_trips() {
        let inv = Inventory::parse_strict(CHEST.as_bytes()).unwrap();
        assert_eq!(inv.lists[0].slots.len(), 4);
        assert_eq!(inv.serialize(HighBytes::Raw), CHEST.as_bytes());
        assert_eq!(Inventory::parse_strict(b"EndInventory\n").unwrap().lists.len(), 0);
        assert_eq!(Inventory::parse_strict(b"EndInventory").unwrap().lists.len(), 0);
    }

    #[test]
    fn strict_parse_rejects() {
        let cases = [
            "List main 4\nWidth 0\nEmpty\nEndInventoryList\nEndInventory\n",
            "List main 1\nWidth 0\nEmpty\nEmpty\nEndInventoryList\nEndInventory\n",
            "List main 1\nEmpty\nEndInventoryList\nEndInventory\n",
            "List main 1\nWidth x\nEmpty\nEndInventoryList\nEndInventory\n",
            "List main 1\nWidth 0\nEmpty\nEndInventoryList\n",
            "List main 1\nWidth 0\nEmpty\nEndInventory\n",
            "List main 1\nWidth 0\nItem default:dirt 0\nEndInventoryList\nEndInventory\n",
            "List main 1\nWidth 0\nFoo\nEndInventoryList\nEndInventory\n",
            "List main\nWidth 0\nEndInventoryList\nEndInventory\n",
            "List a 0\nWidth 0\nEndInventoryList\nList a 0\nWidth 0\nEndInventoryList\nEndInventory\n",
            "EndInventory\r\n",
            "EndInventory\nmore\n",
            "Lists main 1\nEndInventory\n",
        ];
        for c in cases {
            assert!(Inventory::parse_strict(c.as_bytes()).is_err(), "accepted {c:?}");
        }
    }
}
