//! What `worldfs snapshot` stored, seen from the world: `diff.rs` (what
//! changed between two snapshots, or since one), `changed/` of each
//! snapshot's directory in the mount (`changed.rs`), and `worldfs restore`
//! (`restore.rs`). The directories themselves (`MNT/snapshots/`) are
//! built by `snapshot_tree.rs`, beside the world's other trees.

pub(crate) mod changed;
pub(crate) mod diff;
pub(crate) mod restore;
