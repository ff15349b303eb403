//! An account: password hash, privileges, last login (Luanti's
//! `AuthDatabase*` classes in src/database/ of
//! <https://github.com/luanti-org/luanti>). Encodings: LevelDB's `auth.db`
//! value (`AuthDatabaseLevelDB`, database-leveldb.cpp; also worldfs's
//! canonical form) and a line of the `files` backend's `auth.txt`
//! (doc/world_format.md, "auth.txt").

use crate::bytes::{Reader, Region};

/// One account, as every auth backend holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthEntry {
    /// `#1#salt#verifier` (SRP), a legacy SHA1 hash, or empty (no password).
    pub password: String,
    /// In the order held.
    pub privileges: Vec<String>,
    /// Unix seconds; -1: created but never logged in.
    pub last_login: i64,
}

/// Whether a privilege name can be stored in every backend: not empty, no
/// `,` or `:` (auth.txt separators), no whitespace or control characters.
pub fn check_privilege(p: &str) -> Result<(), String> {
    if p.is_empty() {
        return Err("an empty privilege name".into());
    }
    if let Some(c) = p.chars().find(|c| *c == ',' || *c == ':' || c.is_whitespace() || c.is_control()) {
        return Err(format!("privilege '{p}' holds {c:?}, which no privilege name has"));
    }
    Ok(())
}

impl AuthEntry {
    /// u8 1, string16 password, u16 n + n x string16 privilege, s64 last_login.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![1u8];
        out.extend_from_slice(&(self.password.len() as u16).to_be_bytes());
        out.extend_from_slice(self.password.as_bytes());
        out.extend_from_slice(&(self.privileges.len() as u16).to_be_bytes());
        for p in &self.privileges {
            out.extend_from_slice(&(p.len() as u16).to_be_bytes());
            out.extend_from_slice(p.as_bytes());
        }
        out.extend_from_slice(&self.last_login.to_be_bytes());
        out
    }

    /// Reads the LevelDB value (see [`AuthEntry::encode`]).
    pub fn decode(data: &[u8]) -> Result<AuthEntry, String> {
        let mut r = Reader::new(data, Region::Blob);
        let e = |e: crate::DecodeError| format!("auth record: {e}");
        let text = |b: &[u8], what: &str| {
            String::from_utf8(b.to_vec()).map_err(|_| format!("auth record: the {what} is not UTF-8"))
        };
        let version = r.u8("version").map_err(e)?;
        if version != 1 {
            return Err(format!("auth record: version {version} (only 1 exists)"));
        }
        let password = text(r.string16("password").map_err(e)?, "password")?;
        let n = r.u16("privilege count").map_err(e)?;
        let mut privileges = Vec::with_capacity(n as usize);
        for _ in 0..n {
            privileges.push(text(r.string16("privilege").map_err(e)?, "privilege")?);
        }
        let last_login = i64::from_be_bytes(r.array::<8>("last_login").map_err(e)?);
        if r.remaining() != 0 {
            return Err(format!("auth record: {} bytes after last_login", r.remaining()));
        }
        Ok(AuthEntry { password, privileges, last_login })
    }

    /// `name:password:priv1,priv2:last_login` (always four fields).
    pub fn to_line(&self, name: &str) -> String {
        format!("{name}:{}:{}:{}", self.password, self.privileges.join(","), self.last_login)
    }

    /// One auth.txt line as the engine reads it; None for a line it skips
    /// (fewer than three fields once a trailing empty one is dropped).
    pub fn from_line(line: &str) -> Option<(String, AuthEntry)> {
        let mut parts: Vec<&str> = line.split(':').collect();
        if parts.last() == Some(&"") {
            parts.pop(); // getline-based splitting drops a trailing empty field
        }
        if parts.len() < 3 {
            return None;
        }
        let privileges = if parts[2].is_empty() { Vec::new() } else { parts[2].split(',').map(String::from).collect() };
        // atol: leading digits (and sign), 0 when there are none
        let last_login = parts.get(3).map_or(0, |s| atol(s));
        Some((parts[0].to_string(), AuthEntry { password: parts[1].to_string(), privileges, last_login }))
    }
}

fn atol(s: &str) -> i64 {
    let s = s.trim_start();
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let v = digits.parse::<i64>().unwrap_or(0);
    if neg { -v } else { v }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leveldb_value_matches_the_spec_example() {
        let e = AuthEntry {
            password: String::new(),
            privileges: ["interact", "shout", "fly", "fast"].map(String::from).to_vec(),
            last_login: 0x6553f100,
        };
        let v = e.encode();
        assert_eq!(v.len(), 41);
        assert_eq!(&v[..5], &[1, 0, 0, 0, 4]);
        assert_eq!(&v[33..], &0x6553f100i64.to_be_bytes());
        assert_eq!(AuthEntry::decode(&v).unwrap(), e);
        assert!(AuthEntry::decode(&v[..40]).is_err());
    }

    #[test]
    fn auth_txt_lines_as_the_engine_reads_them() {
        let (n, e) = AuthEntry::from_line("singleplayer::fast,fly,interact,shout:1700000000").unwrap();
        assert_eq!((n.as_str(), e.privileges.len(), e.last_login), ("singleplayer", 4, 1700000000));
        assert_eq!(e.to_line(&n), "singleplayer::fast,fly,interact,shout:1700000000");
        assert_eq!(AuthEntry::from_line("bar::"), None); // the engine drops it too
        let (_, e) = AuthEntry::from_line("foo:#1#x#y:shout").unwrap();
        assert_eq!(e.last_login, 0);
        let (_, e) = AuthEntry::from_line("foo:h::-1").unwrap();
        assert_eq!((e.privileges.len(), e.last_login), (0, -1));
        assert!(check_privilege("fly").is_ok() && check_privilege("a,b").is_err() && check_privilege("").is_err());
    }
}
