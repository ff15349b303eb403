//! Cubesets: the Lua-subset reader on any text, and on what it accepts, the
//! Document contract: every file applied to itself keeps the meaning, and a
//! refused edit changes nothing.

use worldfs::documents::cubeset::Cubeset;
use worldfs::documents::{Context, Document};

/// `cubeset`: byte 0 picks a file of the first piece (or the set's
/// metadata) to write the rest to, in the sample cubeset; when the input
/// is itself a cubeset, it is decoded and every file applied to itself.
pub fn cubeset(data: &[u8]) {
    let ctx = Context::default();
    if let Ok(doc) = Cubeset::decode(data, &ctx) {
        let mut d = Cubeset::decode(data, &ctx).expect("decodes twice");
        for e in doc.entries().into_iter().filter(|e| !e.dir && e.writable) {
            let c = doc.render(&e.path).expect("a listed file renders");
            d.apply(&e.path, &c).unwrap_or_else(|err| panic!("{}: its own content refused: {err}", e.path));
        }
        Cubeset::decode(&d.encode().unwrap(), &ctx).expect("what we write reads back");
    }
    let Some((&which, rest)) = data.split_first() else { return };
    let mut doc = Cubeset::decode(SAMPLE.as_bytes(), &ctx).expect("the sample reads");
    let files = [
        "metadata",
        "pieces/01_Well/hitbox",
        "pieces/01_Well/legend",
        "pieces/01_Well/layers",
        "pieces/01_Well/connectors",
        "pieces/01_Well/metadata",
    ];
    let path = files[which as usize % files.len()];
    let before = doc.encode().unwrap();
    match doc.apply(path, rest) {
        Ok(()) => {
            let back = Cubeset::decode(&doc.encode().unwrap(), &ctx).expect("an accepted edit reads back");
            assert_eq!(back.render(path).unwrap(), doc.render(path).unwrap());
        }
        Err(_) => assert_eq!(doc.encode().unwrap(), before, "a refused edit changed the file"),
    }
}

pub const SAMPLE: &str = "-- sample\nCubeset =\n{\n\tMetadata =\n\t{\n\t\tCubesetFormatVersion = 1,\n\t\t[\"IntendedUse\"] = \"SinglePieceStructures\",\n\t},\n\tPieces =\n\t{\n\t\t{\n\t\t\tOriginData = { ExportName = \"Well\" },\n\t\t\tSize = { x = 2, y = 2, z = 1 },\n\t\t\tHitbox = { MinX = 0, MinY = 0, MinZ = 0, MaxX = 1, MaxY = 1, MaxZ = 0 },\n\t\t\tConnectors = { { Type = 1, RelX = 0, RelY = 0, RelZ = 0, Direction = 2 } },\n\t\t\tMetadata = { [\"IsStarting\"] = \"1\" },\n\t\t\tBlockDefinitions = { \".: 0: 0\", \"a: 24: 0\" },\n\t\t\tBlockData = { \"a.\", \"..\" },\n\t\t},\n\t},\n}\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cubeset_smoke() {
        let seeds = vec![
            SAMPLE.as_bytes().to_vec(),
            [&[3u8][..], b"y=0\naa\n\ny=1\n..\n"].concat(),
            [&[2u8][..], b". 0:0\na 1:2\n"].concat(),
        ];
        crate::smoke::run("cubeset", cubeset, seeds);
    }
}
