//! `dimensions/NAMESPACE/PATH/` of a Java world: every dimension but the
//! overworld (whose trees stay at the mount's root), as the game names it
//! (`dimensions/minecraft/the_nether/`, `dimensions/minecraft/the_end/`,
//! a data pack's or mod's `dimensions/mymod/moon/`), wherever the world
//! keeps it (`DIM-1/`, `DIM1/`, `dimensions/...`: `layout.rs`). Each holds
//! what the root holds for the overworld: `chunks/`, `block/`, `find/`,
//! `names`, `map/`, and `entities/` and `poi/` where the dimension has
//! them.
//!
//! Trees are told apart by four bits of their inodes (`fs::union`); the
//! root has too few tags for every tree of every dimension, so
//! `dimensions/` is one tag of the root, a union of namespaces (the next
//! four bits), each a union of its dimensions (four more), each a union of
//! its trees (four more): 15 namespaces of 15 dimensions each at most.

use super::layout::Dimension;
use super::{Trees, dimension_trees};
use crate::fs::union::Mounted;
use crate::fs::{Options, Services};
use crate::worlds::folders::{folder_union, mounted_union, tag_of};
use std::path::Path;
use std::sync::Arc;

/// `dimensions/` for `others` (each dimension but the overworld) as one
/// tree whose inodes have `tag` in their top four bits; None when there
/// are none.
pub(crate) fn tree(
    world: &Path,
    others: &[Dimension],
    tag: u64,
    trees: &Trees,
    opts: &Options,
    services: &Arc<Services>,
) -> Option<Mounted> {
    let base = tag << 60;
    let mut namespaces: Vec<(&str, Vec<&Dimension>)> = Vec::new();
    for d in others {
        match namespaces.iter_mut().find(|(ns, _)| *ns == d.namespace) {
            Some((_, ds)) => ds.push(d),
            None => namespaces.push((&d.namespace, vec![d])),
        }
    }
    let mut ns_mounts = Vec::new();
    for (i, (ns, dims)) in namespaces.into_iter().enumerate() {
        let Some(ns_tag) = tag_of(i, &format!("namespace {ns}")) else { continue };
        let ns_base = base | ns_tag << 56;
        let mut dim_mounts = Vec::new();
        for (k, d) in dims.into_iter().enumerate() {
            let Some(dim_tag) = tag_of(k, &format!("dimension {}", d.id())) else { continue };
            let dim_base = ns_base | dim_tag << 52;
            let prefix = format!("dimensions/{ns}/{}/", d.path);
            let mounted = dimension_trees(world, d, |t| dim_base | t << 48, trees, opts, services);
            let union = folder_union(dim_base, 48, prefix, mounted, opts);
            dim_mounts.push(mounted_union(&d.path, dim_tag, union));
        }
        let union = folder_union(ns_base, 52, format!("dimensions/{ns}/"), dim_mounts, opts);
        ns_mounts.push(mounted_union(ns, ns_tag, union));
    }
    if ns_mounts.is_empty() {
        return None;
    }
    Some(mounted_union("dimensions", tag, folder_union(base, 56, "dimensions/".into(), ns_mounts, opts)))
}
