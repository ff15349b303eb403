//! The tile pyramid of `MNT/map/` (pure): which tile holds which nodes,
//! coarse tiles made from four finer ones, and the page that shows them.
//!
//! Zoom levels go from 0 (one tile of 256 x 256 pixels for the whole
//! coordinate space, 256 nodes a pixel) to [`MAX_Z`] (a pixel a node), as
//! web maps number them. Tile `Z/X,Y.png` covers, with
//! `span = 256 << (MAX_Z - Z)` nodes, x from `X * span - 32768` eastwards
//! and z from `32767 - Y * span` southwards (north is up).

/// The most detailed zoom level (a pixel a node).
pub const MAX_Z: u8 = 8;
/// Tiles are this many pixels square.
pub const TILE: usize = 256;

/// Nodes a tile of level `z` spans on each side.
pub(crate) fn span(z: u8) -> i64 {
    (TILE as i64) << (MAX_Z - z)
}

/// The tile of level `z` that holds node column (x, z).
pub fn tile_of(level: u8, x: i64, z: i64) -> (i64, i64) {
    let s = span(level);
    ((x + 32768).div_euclid(s), (32767 - z).div_euclid(s))
}

/// The west x and the north z of a tile.
pub fn origin(level: u8, tx: i64, ty: i64) -> (i64, i64) {
    let s = span(level);
    (tx * s - 32768, 32767 - ty * s)
}

/// "X,Y.png" -> (X, Y).
pub(crate) fn parse_name(name: &str) -> Option<(i64, i64)> {
    let (x, y) = name.strip_suffix(".png")?.split_once(',')?;
    let v = |s: &str| s.parse::<i64>().ok().filter(|v| (0..1 << 16).contains(v) && s == v.to_string());
    Some((v(x)?, v(y)?))
}

/// A coarse tile from its four children (`[north-west, north-east,
/// south-west, south-east]`, RGBA pixels each, None: no tile): every pixel
/// the average of the visible pixels of a 2 x 2 square.
pub fn compose(children: [Option<&[u8]>; 4]) -> Vec<u8> {
    let mut out = vec![0u8; TILE * TILE * 4];
    for (i, child) in children.iter().enumerate() {
        let Some(px) = child else { continue };
        let (ox, oy) = ((i % 2) * TILE / 2, (i / 2) * TILE / 2);
        for y in 0..TILE / 2 {
            for x in 0..TILE / 2 {
                let (mut sum, mut n) = ([0u32; 3], 0u32);
                for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    let p = ((2 * y + dy) * TILE + 2 * x + dx) * 4;
                    if px[p + 3] > 0 {
                        for c in 0..3 {
                            sum[c] += px[p + c] as u32;
                        }
                        n += 1;
                    }
                }
                if let Some(avg) = sum.iter().map(|s| s.checked_div(n)).collect::<Option<Vec<u32>>>() {
                    let q = ((oy + y) * TILE + ox + x) * 4;
                    for c in 0..3 {
                        out[q + c] = avg[c] as u8;
                    }
                    out[q + 3] = 255;
                }
            }
        }
    }
    out
}

/// The world's extent in nodes, for the page's first view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bounds {
    pub(crate) min_x: i64,
    pub(crate) max_x: i64,
    pub(crate) min_z: i64,
    pub(crate) max_z: i64,
}

/// `MNT/map/index.html`: a page of our own (no third-party code, nothing
/// fetched but the tiles beside it) that shows the tiles as a map to pan
/// (drag) and zoom (wheel, or + and -), with the node under the pointer.
/// `south_z`: the world's z grows southwards (Minecraft): the page shows
/// and links z as the world has it (-1 - the map's z).
pub(crate) fn index_html(b: Option<Bounds>, south_z: bool) -> String {
    let b = b.unwrap_or(Bounds { min_x: -64, max_x: 64, min_z: -64, max_z: 64 });
    format!(
        r#"<!doctype html>
<html><head><meta charset="utf-8"><title>worldfs map</title>
<style>
html, body {{ margin: 0; height: 100%; overflow: hidden; background: #222; font: 14px sans-serif; }}
#map {{ position: absolute; inset: 0; cursor: grab; }}
#map img {{ position: absolute; image-rendering: pixelated; user-select: none; -webkit-user-drag: none; }}
#where {{ position: absolute; left: 8px; bottom: 8px; padding: 4px 8px; background: #000a; color: #fff; }}
</style></head>
<body><div id="map"></div><div id="where">drag to move, wheel to zoom</div>
<script>
// worldfs map: tiles Z/X,Y.png beside this page (docs/layout.md).
const MAXZ = {MAX_Z}, TILE = {TILE}, BOUNDS = {{minX: {}, maxX: {}, minZ: {}, maxZ: {}}};
// The world's z of a map z (north up either way), and back: the same map.
const worldZ = z => {};
const map = document.getElementById("map"), where = document.getElementById("where");
// The view: the node at the centre and nodes per screen pixel.
let cx = (BOUNDS.minX + BOUNDS.maxX) / 2, cz = (BOUNDS.minZ + BOUNDS.maxZ) / 2;
let npp = Math.max(1 / 4, Math.max(BOUNDS.maxX - BOUNDS.minX + 16, BOUNDS.maxZ - BOUNDS.minZ + 16) / Math.min(innerWidth, innerHeight));
// A link to a place: index.html#X,Z,ZOOM (the page keeps it up to date).
const at = location.hash.slice(1).split(",").map(Number);
if (at.length === 3 && at.every(Number.isFinite)) {{ [cx, cz] = [at[0], worldZ(at[1])]; npp = Math.pow(2, MAXZ - at[2]); }}
const imgs = new Map();
let loaded = 0, wanted = 0;
function level() {{ return Math.max(0, Math.min(MAXZ, Math.round(MAXZ - Math.log2(Math.max(npp, 1 / 64))))); }}
function draw() {{
  const z = level(), span = TILE << (MAXZ - z), w = map.clientWidth, h = map.clientHeight;
  const west = cx - w / 2 * npp, north = cz + h / 2 * npp;
  const x0 = Math.floor((west + 32768) / span), x1 = Math.floor((west + w * npp + 32768) / span);
  const y0 = Math.floor((32767 - north) / span), y1 = Math.floor((32767 - (north - h * npp)) / span);
  const keep = new Set();
  wanted = 0;
  for (let ty = Math.max(0, y0); ty <= y1; ty++) for (let tx = Math.max(0, x0); tx <= x1; tx++) {{
    const key = z + "/" + tx + "," + ty + ".png";
    keep.add(key);
    let img = imgs.get(key);
    if (!img) {{
      img = new Image();
      img.style.visibility = "hidden"; // shown once loaded: no broken-image boxes
      img.onload = () => {{ loaded++; img.style.visibility = "visible"; status(); }};
      img.onerror = () => {{ img.style.display = "none"; img.failed = true; status(); }};
      img.src = key;
      imgs.set(key, img);
      map.appendChild(img);
    }}
    wanted++;
    const px = (tx * span - 32768 - west) / npp, py = (north - (32767 - ty * span)) / npp;
    img.style.left = px + "px"; img.style.top = py + "px";
    img.style.width = img.style.height = span / npp + "px";
  }}
  for (const [key, img] of imgs) if (!keep.has(key)) {{ img.remove(); imgs.delete(key); }}
  try {{ history.replaceState(null, "", "\u0023" + Math.round(cx) + "," + worldZ(Math.round(cz)) + "," + z); }} catch (e) {{}}
  status();
}}
function status() {{
  let done = 0;
  for (const img of imgs.values()) if (img.complete) done++;
  document.title = "worldfs map: " + loaded + " tiles" + (done === imgs.size ? " loaded" : "");
}}
function node(e) {{
  const r = map.getBoundingClientRect();
  return [Math.floor(cx + (e.clientX - r.left - map.clientWidth / 2) * npp),
          Math.floor(cz - (e.clientY - r.top - map.clientHeight / 2) * npp)];
}}
let drag = null;
map.onmousedown = e => {{ drag = [e.clientX, e.clientY]; map.style.cursor = "grabbing"; }};
onmouseup = () => {{ drag = null; map.style.cursor = "grab"; }};
onmousemove = e => {{
  if (drag) {{ cx -= (e.clientX - drag[0]) * npp; cz += (e.clientY - drag[1]) * npp; drag = [e.clientX, e.clientY]; draw(); }}
  const [x, z] = node(e);
  where.textContent = "x " + x + ", z " + worldZ(z) + "  (zoom " + level() + ")";
}};
function zoom(f, e) {{
  const [x, z] = e ? node(e) : [cx, cz];
  npp = Math.min(512, Math.max(1 / 16, npp * f));
  if (e) {{ const [x2, z2] = node(e); cx += x - x2; cz += z - z2; }}
  draw();
}}
map.onwheel = e => {{ e.preventDefault(); zoom(e.deltaY > 0 ? 1.25 : 0.8, e); }};
onkeydown = e => {{ if (e.key === "+") zoom(0.8); if (e.key === "-") zoom(1.25); }};
onresize = draw;
draw();
</script></body></html>
"#,
        b.min_x,
        b.max_x,
        b.min_z,
        b.max_z,
        if south_z { "-1 - z" } else { "z" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_cover_the_map() {
        assert_eq!(tile_of(0, -32768, 32767), (0, 0));
        assert_eq!(tile_of(0, 32767, -32768), (0, 0));
        assert_eq!(tile_of(MAX_Z, 0, 0), (128, 127));
        assert_eq!(origin(MAX_Z, 128, 127), (0, 255));
        let (x, z) = origin(5, 17, 3);
        assert_eq!(tile_of(5, x, z), (17, 3));
        assert_eq!(tile_of(5, x + span(5) - 1, z - span(5) + 1), (17, 3));
        assert_eq!(parse_name("12,7.png"), Some((12, 7)));
        assert_eq!(parse_name("012,7.png"), None);
        assert_eq!(parse_name("1,-7.png"), None);
    }

    #[test]
    fn compose_averages_visible_pixels() {
        let mut a = vec![0u8; TILE * TILE * 4];
        a[..4].copy_from_slice(&[100, 0, 0, 255]);
        a[4..8].copy_from_slice(&[200, 0, 0, 255]);
        let out = compose([Some(&a), None, None, None]);
        assert_eq!(&out[..4], &[150, 0, 0, 255]);
        assert_eq!(out[(TILE / 2) * 4 + 3], 0, "the north-east quarter is empty");
        assert!(index_html(None, false).contains("MAXZ = 8"));
    }
}
