//! Players, accounts and mod storage: every parser of their encodings, and
//! the round trips that must hold for whatever they accept.

use worldfs_codec::luanti::auth::AuthEntry;
use worldfs_codec::luanti::mod_storage::ModStorage;
use worldfs_codec::luanti::player::Player;

/// `records`: the first byte picks the parser: 0 a `players/<name>` file,
/// 1 the LevelDB/canonical player value, 2 an auth.txt line, 3 the auth
/// value, 4 a mod storage JSON file, 5 the mod storage canonical form.
pub fn records(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else { return };
    match which % 6 {
        0 => {
            if let Ok((name, p)) = Player::from_file(rest) {
                assert_eq!(Player::decode(&p.encode()).as_ref(), Ok(&p), "player canonical round trip");
                if let Ok(file) = p.to_file(&name) {
                    let (n2, p2) = Player::from_file(&file).expect("a written player file reads back");
                    assert_eq!(n2, name);
                    // floats go through text: compare as the engine would store them
                    assert_eq!((p2.hp, p2.breath, &p2.meta, &p2.inventory), (p.hp, p.breath, &p.meta, &p.inventory));
                }
            }
        }
        1 => {
            if let Ok(p) = Player::decode(rest) {
                assert_eq!(p.encode(), rest, "player value re-encodes byte for byte");
            }
        }
        2 => {
            if let Ok(line) = std::str::from_utf8(rest)
                && !line.contains('\n')
                && let Some((name, e)) = AuthEntry::from_line(line)
            {
                assert_eq!(AuthEntry::decode(&e.encode()).as_ref(), Ok(&e));
                if !name.contains(':') && e.privileges.iter().all(|p| !p.contains(',') && !p.is_empty()) {
                    let again = AuthEntry::from_line(&e.to_line(&name));
                    if e.privileges.is_empty() && e.password.is_empty() {
                        // "name:::N" keeps 4 fields; fine either way
                        let _ = again;
                    } else {
                        assert_eq!(again, Some((name, e)));
                    }
                }
            }
        }
        3 => {
            if let Ok(e) = AuthEntry::decode(rest) {
                assert_eq!(e.encode(), rest);
            }
        }
        4 => {
            if let Ok(m) = ModStorage::from_json(rest) {
                let j = m.to_json().expect("what came from JSON is UTF-8");
                assert_eq!(ModStorage::from_json(&j).as_ref(), Ok(&m), "mod storage JSON round trip");
            }
        }
        _ => {
            if let Ok(m) = ModStorage::decode(rest) {
                assert_eq!(m.encode(), rest);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_smoke() {
        let seeds = vec![
            [&[0u8][..], b"name = a\nhp = 3\nposition = (1,2,3)\nextended_attributes = {\"k\":\"v\"}\nPlayerArgsEnd\nEndInventory\n"].concat(),
            [&[2u8][..], b"singleplayer::fast,fly:1700000000"].concat(),
            [&[4u8][..], br#"{"a":"b","n":1}"#].concat(),
            [&[5u8][..], &ModStorage::from_json(br#"{"a":"b"}"#).unwrap().encode()[..]].concat(),
        ];
        crate::smoke::run("records", records, seeds);
    }
}
