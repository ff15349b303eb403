//! The node metadata list (block versions >= 23).
//!
//! `u8 list_version` (0 = empty, nothing follows; 1; 2 adds a private flag
//! per variable), `u16 count`, then per entry: `u16 p16`, `u32 nvars`,
//! nvars x (`string16 key`, `string32 value`, [`u8 private`]), and the
//! inventory text, which has no length prefix.

use super::inventory;
use crate::bytes::{DecodeError, Reader, WriteBe};

/// The node metadata of a block.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct MetaList {
    /// The list version as stored (0, 1 or 2).
    pub version: u8,
    /// Entries in stored order.
    pub entries: Vec<MetaEntry>,
}

/// The metadata of one node: variables and inventory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaEntry {
    /// Position inside the block: z*256 + y*16 + x.
    pub pos: u16,
    /// Variables in stored order.
    pub vars: Vec<MetaVar>,
    /// The inventory text exactly as stored, ending with "EndInventory\n".
    pub inventory: Vec<u8>,
}

/// One metadata variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaVar {
    /// Its name, e.g. `formspec` or `infotext`.
    pub key: Vec<u8>,
    /// Its value, any bytes.
    pub value: Vec<u8>,
    /// Marked private by a mod (`mark_as_private`): never sent to clients.
    /// Stored only in list version 2.
    pub private: bool,
}

/// The inventory text of a node without inventory lists.
pub const EMPTY_INVENTORY: &[u8] = b"EndInventory\n";

/// The most metadata variables one block may hold when decoded: 64 for
/// every node. The format has no limit (a u32 count per node), but a
/// variable takes 6 bytes stored and about 100 decoded, so a few KB of zstd
/// could otherwise ask for gigabytes.
pub const MAX_VARS: usize = 64 * 4096;

impl MetaEntry {
    /// An entry at `pos` with no variables and an empty inventory.
    pub fn new(pos: u16) -> Self {
        MetaEntry { pos, vars: Vec::new(), inventory: EMPTY_INVENTORY.to_vec() }
    }

    /// The value of `key` as the engine sees it (the last duplicate wins).
    pub fn get(&self, key: &[u8]) -> Option<&MetaVar> {
        self.vars.iter().rev().find(|v| v.key == key)
    }
}

impl MetaList {
    /// Reads a list at the reader's position (the list has no length prefix:
    /// the reader ends after it).
    pub fn decode(r: &mut Reader<'_>) -> Result<MetaList, DecodeError> {
        let version = r.u8("node metadata list version")?;
        if version == 0 {
            return Ok(MetaList { version, entries: Vec::new() });
        }
        if version > 2 {
            return Err(r.error_at(r.pos() - 1, format!("unsupported node metadata list version {version}")));
        }
        let count = r.u16("node metadata count")?;
        // At most one entry per node, so never more than 4096 (whatever the count says).
        let mut entries: Vec<MetaEntry> = Vec::with_capacity((count as usize).min(64));
        let mut seen = vec![false; 4096];
        let mut total_vars = 0usize;
        for _ in 0..count {
            let at = r.pos();
            let pos = r.u16("node metadata position")?;
            if pos >= 4096 {
                return Err(r.error_at(at, format!("node metadata position {pos} is outside the block")));
            }
            if std::mem::replace(&mut seen[pos as usize], true) {
                // The engine skips the entry header and then reads out of step.
                return Err(r.error_at(at, format!("duplicate node metadata position {pos}")));
            }
            let nvars_at = r.pos();
            let nvars = r.u32("node metadata variable count")?;
            total_vars = total_vars.saturating_add(nvars as usize);
            if total_vars > MAX_VARS {
                // Each variable costs ~100 bytes decoded but only 6 stored:
                // a zstd bomb of empty variables would need gigabytes.
                return Err(r.error_at(
                    nvars_at,
                    format!(
                        "node metadata variable count {nvars} makes more than {MAX_VARS} variables in one \
                         block (64 per node; refused to bound memory)"
                    ),
                ));
            }
            let mut vars = Vec::with_capacity(nvars.min(64) as usize);
            for _ in 0..nvars {
                let key = r.string16("node metadata key")?.to_vec();
                let value = r.string32("node metadata value")?.to_vec();
                let private = if version >= 2 { r.u8("node metadata private flag")? == 1 } else { false };
                vars.push(MetaVar { key, value, private });
            }
            let inv_at = r.pos();
            let Some(len) = inventory::scan_end(r.rest()) else {
                return Err(r.error_at(inv_at, "inventory text not terminated by EndInventory"));
            };
            let inventory = r.bytes(len, "inventory")?.to_vec();
            entries.push(MetaEntry { pos, vars, inventory });
        }
        Ok(MetaList { version, entries })
    }

    /// The list version to write in a block of `block_version`: the stored
    /// one when it can hold the entries, else what the engine writes (2 for
    /// blocks >= 28, 1 below; 0 for an empty list). The engine reads list
    /// version 2 in any block version, so a stored 2 stays 2 and private
    /// flags are never dropped.
    pub fn version_for(&self, block_version: u8) -> u8 {
        let has_private = self.entries.iter().any(|e| e.vars.iter().any(|v| v.private));
        let wanted = if block_version >= 28 || has_private { 2 } else { 1 };
        match self.version {
            0 if self.entries.is_empty() => 0,
            2 => 2,
            1 if !has_private => 1,
            _ if self.entries.is_empty() => 0,
            _ => wanted,
        }
    }

    /// Appends the list as written in a block of `block_version` (list version
    /// from [`MetaList::version_for`]).
    pub fn encode(&self, block_version: u8, out: &mut Vec<u8>) {
        let version = self.version_for(block_version);
        out.put_u8(version);
        if version == 0 {
            return;
        }
        out.put_u16(self.entries.len() as u16);
        for e in &self.entries {
            out.put_u16(e.pos);
            out.put_u32(e.vars.len() as u32);
            for v in &e.vars {
                out.put_string16(&v.key);
                out.put_string32(&v.value);
                if version >= 2 {
                    out.put_u8(v.private as u8);
                }
            }
            out.extend_from_slice(&e.inventory);
        }
    }

    /// The entry of the node at `pos` (z*256 + y*16 + x), if it has one.
    pub fn get(&self, pos: u16) -> Option<&MetaEntry> {
        self.entries.iter().find(|e| e.pos == pos)
    }

    /// The entry of the node at `pos`, to change, if it has one.
    pub fn get_mut(&mut self, pos: u16) -> Option<&mut MetaEntry> {
        self.entries.iter_mut().find(|e| e.pos == pos)
    }
}
