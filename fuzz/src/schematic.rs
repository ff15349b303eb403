//! Fuzz target bodies for schematics (`.mts`) and WorldEdit files (`.we`):
//! the decoders and the files of a mounted schematic.

use worldfs_codec::mts::{self as mts, Schematic};
use worldfs::documents::mts::{MtsDocument, view};
use worldfs_codec::we::{codec as we, lua};
use worldfs::documents::{Context, Document};

/// An `.mts` file. When it decodes: it encodes, reads back the same (as
/// version 4), its inflated form matches, and for small ones every file of
/// the document applies to itself.
pub fn mts_decode(data: &[u8]) {
    let Ok(s) = Schematic::decode(data) else { return };
    let bytes = s.encode().unwrap_or_else(|e| panic!("a decoded schematic does not encode: {e}"));
    let mut back = Schematic::decode(&bytes).expect("our encoding decodes");
    back.version = s.version;
    assert_eq!(back, s, "decode(encode(s)) != s");
    if s.version == 4 {
        assert_eq!(mts::uncompressed(data).unwrap(), s.encode_uncompressed().unwrap());
    }
    if s.volume() <= 4096 {
        let mut d = MtsDocument::decode(data, &Context::default()).unwrap();
        assert_eq!(d.encode().unwrap(), data, "an unchanged document gives back its bytes");
        for (file, writable) in view::FILES {
            let content = d.render(file).unwrap();
            if writable {
                d.apply(file, &content).unwrap_or_else(|e| panic!("{file} does not apply to itself: {e}"));
                assert_eq!(d.encode().unwrap(), data, "{file} applied to itself changed the schematic");
            }
        }
    }
}

/// A sample schematic: 3 x 2 x 2 with names, probabilities, force flags.
fn sample() -> Schematic {
    let mut s = Schematic::new_air([3, 2, 2]).unwrap();
    s.names.push(b"default:stone".to_vec());
    s.names.push(b"default:leaves".to_vec());
    s.param0[1] = 1;
    s.param0[4] = 2;
    s.param1[4] = 80 | mts::FORCE_PLACE;
    s.param2[4] = 3;
    s.param1[0] = 0;
    s.slices[1] = 63;
    s
}

/// Byte 0 picks a writable file of a mounted schematic; the rest is
/// written to it. An accepted write leaves a schematic that encodes and
/// reads back, and whose files apply to themselves; a refused one
/// changes nothing.
pub fn mts_view(data: &[u8]) {
    let Some((&pick, content)) = data.split_first() else { return };
    let writable: Vec<&str> = view::FILES.iter().filter(|(_, w)| *w).map(|(f, _)| *f).collect();
    let file = writable[pick as usize % writable.len()];
    let mut s = sample();
    let before = s.clone();
    match view::apply(&mut s, file, content) {
        Err(_) => assert_eq!(s, before, "a refused {file} changed the schematic"),
        Ok(()) => {
            s.check().unwrap_or_else(|e| panic!("{file} accepted a schematic that does not encode: {e}"));
            let back = Schematic::decode(&s.encode().unwrap()).unwrap();
            assert_eq!(back, s);
            if s.volume() <= 4096 {
                for f in &writable {
                    let again = view::render(&s, f).unwrap();
                    let mut t = s.clone();
                    view::apply(&mut t, f, &again).unwrap_or_else(|e| panic!("{f} after {file}: {e}"));
                    assert_eq!(t, s, "{f} applied to itself after a {file} write");
                }
            }
        }
    }
}

/// A `.we` file. When it decodes: writing it as version 5 reads back the
/// same nodes; the Lua reader never panics on the raw bytes either.
pub fn we_decode(data: &[u8]) {
    let _ = lua::parse(data);
    let Ok(f) = we::decode(data) else { return };
    let bytes = we::encode(&f);
    let back = we::decode(&bytes).unwrap_or_else(|e| panic!("our version 5 does not read back: {e}"));
    assert_eq!(back.version, 5);
    assert_eq!(back.nodes, f.nodes, "nodes changed through version 5");
}

/// Byte 0 picks `names`, `nodes` or `layers` of a mounted .we file; the
/// rest is written to it. An accepted write gives a file that writes and
/// reads back the same, and whose files apply to themselves; a refused one
/// changes nothing.
pub fn we_view(data: &[u8]) {
    use worldfs::documents::we::view as wv;
    let Some((&pick, content)) = data.split_first() else { return };
    let files = ["names", "nodes", "layers"];
    let file = files[pick as usize % files.len()];
    let mut f = we::decode(WE_SAMPLE).unwrap();
    let before = f.clone();
    match wv::apply(&mut f, file, content) {
        Err(_) => assert_eq!(f, before, "a refused {file} changed the file"),
        Ok(()) => {
            let back = we::decode(&we::encode(&f)).unwrap_or_else(|e| panic!("after {file}: {e}"));
            assert_eq!(back.nodes, f.nodes);
            if f.nodes.len() <= 512 {
                for g in files {
                    let c = wv::render(&f, g).unwrap();
                    let mut t = f.clone();
                    if wv::apply(&mut t, g, &c).is_ok() {
                        assert_eq!(t, f, "{g} applied to itself after a {file} write");
                    }
                }
            }
        }
    }
}

const WE_SAMPLE: &[u8] = b"5:return {{x=0,y=0,z=0,name=\"default:stone\"},{x=1,y=0,z=0,name=\"default:chest\",param2=2,meta={fields={infotext=\"Chest\"},inventory={main={\"default:dirt 5\",''}}}},{x=1,y=1,z=1,name=\"default:wood\",param1=15}}";

#[cfg(test)]
mod tests {
    use super::*;

    fn mts_seeds() -> Vec<Vec<u8>> {
        let mut v = vec![sample().encode().unwrap()];
        if let Some(dir) = std::env::var_os("WORLDFS_SHARED")
            .map(std::path::PathBuf::from)
            .or_else(|| Some(std::path::PathBuf::from("../../shared")))
        {
            if let Ok(rd) = std::fs::read_dir(dir.join("realdata/formats/mts")) {
                v.extend(rd.flatten().filter_map(|e| std::fs::read(e.path()).ok()));
            }
        }
        v
    }

    #[test]
    fn mts_decode_smoke() {
        crate::smoke::run("mts_decode", mts_decode, mts_seeds());
    }

    #[test]
    fn mts_view_smoke() {
        let s = sample();
        let mut seeds = Vec::new();
        for (i, (f, w)) in view::FILES.iter().filter(|(_, w)| *w).enumerate() {
            let _ = w;
            seeds.push([&[i as u8][..], &view::render(&s, f).unwrap()].concat());
        }
        crate::smoke::run("mts_view", mts_view, seeds);
    }

    #[test]
    fn we_view_smoke() {
        use worldfs::documents::we::view as wv;
        let f = we::decode(WE_SAMPLE).unwrap();
        let seeds = ["names", "nodes", "layers"]
            .iter()
            .enumerate()
            .map(|(i, g)| [&[i as u8][..], &wv::render(&f, g).unwrap()].concat())
            .collect();
        crate::smoke::run("we_view", we_view, seeds);
    }

    #[test]
    fn we_decode_smoke() {
        let seeds: Vec<Vec<u8>> = vec![
            b"5:return {{x=0,y=0,z=0,name=\"default:stone\",param2=3,meta={fields={a=\"b\"},inventory={main={\"default:dirt 5\",''}}}}}".to_vec(),
            b"0 0 0 default:stone 0 0\n1 0 0 default:dirt 15 3\n".to_vec(),
            b"local _={};_[1]=\"default:stone\";return {{name=_[1],x=0,y=0,z=0},{name=_[1],x=1,y=0,z=0}}".to_vec(),
            b"return {\n-- Table: {1}\n{\n   {2},\n},\n-- Table: {2}\n{\n   [\"y\"]=0,\n   [\"x\"]=0,\n   [\"name\"]=\"default:sign_wall\",\n   [\"z\"]=3,\n   [\"meta\"]={3},\n},\n-- Table: {3}\n{\n   [\"inventory\"]={4},\n   [\"fields\"]={5},\n},\n-- Table: {4}\n{\n},\n-- Table: {5}\n{\n   [\"text\"]=\"hi\",\n},\n}".to_vec(),
        ];
        crate::smoke::run("we_decode", we_decode, seeds);
    }
}
