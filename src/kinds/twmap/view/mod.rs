//! The files of a map <-> the map, pure: what each file of the tree shows
//! (`render_*`) and how a written file changes the map (`apply_*`). The
//! tree itself (names, which files exist) is in `kinds::twmap`; the layout is
//! documented in docs/layout.md.
//!
//! Every `apply_*` leaves the map as it was when the written content shows
//! what the map already holds, so rewriting a file with what it shows
//! changes nothing. The caller checks the whole map afterwards
//! ([`Map::recheck`]) and keeps the old map when an edit is refused.

mod content;
mod image;
mod props;

pub use content::*;
pub use image::*;
pub use props::*;
