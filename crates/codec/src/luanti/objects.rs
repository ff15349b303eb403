//! Static objects (entities saved with a block) and node timers.

use crate::bytes::{DecodeError, Reader, WriteBe};

/// The static object list of a block: the objects saved with it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct StaticObjects {
    /// Stored list version (written 0, ignored on read).
    pub version: u8,
    /// The objects in stored order.
    pub objects: Vec<StaticObject>,
}

/// One object saved with a block (a dropped item, a mob, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticObject {
    /// 7 = Lua entity; other values are kept as they are.
    pub kind: u8,
    /// Position in world units x1000 (one node = 10 world units).
    pub pos: [i32; 3],
    /// Type-specific data, kept byte for byte.
    pub data: Vec<u8>,
}

/// [`StaticObject::kind`] of a Lua entity (`ACTIVEOBJECT_TYPE_LUAENTITY`).
pub const LUA_ENTITY: u8 = 7;

impl StaticObjects {
    /// Reads a list at the reader's position.
    pub fn decode(r: &mut Reader<'_>) -> Result<StaticObjects, DecodeError> {
        let version = r.u8("static object list version")?;
        let count = r.u16("static object count")?;
        // An object takes at least 15 bytes: a lying count reserves nothing more.
        let mut objects = Vec::with_capacity((count as usize).min(r.remaining() / 15));
        for _ in 0..count {
            let kind = r.u8("static object type")?;
            let pos =
                [r.i32("static object position")?, r.i32("static object position")?, r.i32("static object position")?];
            let data = r.string16("static object data")?.to_vec();
            objects.push(StaticObject { kind, pos, data });
        }
        Ok(StaticObjects { version, objects })
    }

    /// Appends the list (the caller keeps counts and data within 65535).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u8(self.version);
        out.put_u16(self.objects.len() as u16);
        for o in &self.objects {
            out.put_u8(o.kind);
            for c in o.pos {
                out.put_i32(c);
            }
            out.put_string16(&o.data);
        }
    }
}

/// The data of a Lua entity, decoded. Only used when encoding it again
/// gives the same bytes; anything else is shown and kept as raw data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LuaEntity {
    /// The entity name, e.g. `__builtin:item`.
    pub name: Vec<u8>,
    /// What the entity's `get_staticdata` returned (often serialized Lua or JSON).
    pub staticdata: Vec<u8>,
    /// Hit points.
    pub hp: u16,
    /// World units per second x1000.
    pub velocity: [i32; 3],
    /// Degrees x1000.
    pub yaw: i32,
    /// Pitch and roll, degrees x1000 (format version2 >= 1).
    pub pitch_roll: Option<(i32, i32)>,
    /// Object GUID (format version2 >= 2, Luanti 5.13+).
    pub guid: Option<[u8; 16]>,
}

impl LuaEntity {
    /// The entity in an object's data, if it is version 1 data that encodes back
    /// to the same bytes.
    pub fn decode(data: &[u8]) -> Option<LuaEntity> {
        let mut r = Reader::new(data, crate::bytes::Region::Blob);
        if r.u8("").ok()? != 1 {
            return None;
        }
        let name = r.string16("").ok()?.to_vec();
        let staticdata = r.string32("").ok()?.to_vec();
        let hp = r.u16("").ok()?;
        let velocity = [r.i32("").ok()?, r.i32("").ok()?, r.i32("").ok()?];
        let yaw = r.i32("").ok()?;
        let mut e = LuaEntity { name, staticdata, hp, velocity, yaw, pitch_roll: None, guid: None };
        if r.remaining() > 0 {
            let v2 = r.u8("").ok()?;
            if v2 >= 1 {
                e.pitch_roll = Some((r.i32("").ok()?, r.i32("").ok()?));
            }
            if v2 >= 2 {
                e.guid = Some(r.bytes(16, "").ok()?.try_into().ok()?);
            }
        }
        // Keep the decoded form only when it is lossless.
        (e.encode() == data).then_some(e)
    }

    /// The object data for this entity.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![1u8];
        out.put_string16(&self.name);
        out.put_string32(&self.staticdata);
        out.put_u16(self.hp);
        for v in self.velocity {
            out.put_i32(v);
        }
        out.put_i32(self.yaw);
        match (self.pitch_roll, self.guid) {
            (None, None) => {}
            (pr, guid) => {
                out.put_u8(if guid.is_some() { 2 } else { 1 });
                let (p, r) = pr.unwrap_or((0, 0));
                out.put_i32(p);
                out.put_i32(r);
                if let Some(g) = guid {
                    out.extend_from_slice(&g);
                }
            }
        }
        out
    }
}

/// A running node timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeTimer {
    /// Position inside the block: z*256 + y*16 + x.
    pub pos: u16,
    /// Seconds x1000.
    pub timeout: i32,
    /// Seconds x1000.
    pub elapsed: i32,
}

pub(crate) fn decode_timer(r: &mut Reader<'_>) -> Result<NodeTimer, DecodeError> {
    Ok(NodeTimer {
        pos: r.u16("node timer position")?,
        timeout: r.i32("node timer timeout")?,
        elapsed: r.i32("node timer elapsed")?,
    })
}

pub(crate) fn encode_timer(t: &NodeTimer, out: &mut Vec<u8>) {
    out.put_u16(t.pos);
    out.put_i32(t.timeout);
    out.put_i32(t.elapsed);
}
