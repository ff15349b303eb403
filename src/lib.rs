//! worldfs: game worlds as filesystems.
//!
//! Layers, from the bytes up; each imports only those below it:
//! - the crate `worldfs_codec`: blobs and files <-> structures, pure;
//! - the crate `worldfs_store`: the databases behind a world, and the
//!   undo journal;
//! - [`sys`]: the operating system and the clock (CPU affinity, staying
//!   awake, time);
//! - [`view`]: structures <-> the text of the files a user sees, pure;
//! - [`fs`]: the filesystem core (inodes, handles, caching, commit at
//!   close, write errors; no FUSE types and no kind of world);
//! - [`transfer`]: nodes moved between map blocks and schematics, pure;
//! - [`documents`]: worlds kept in one file (schematics, WorldEdit files,
//!   Teeworlds maps, cubesets, chunk dumps), each a small tree of files;
//! - [`worlds`]: worlds kept in a directory (Luanti, Minecraft Java and
//!   Bedrock), each with its own tree, check and undo;
//! - [`open`]: the one place that knows every kind, and picks one for a path;
//! - [`fuse`] (the thin adapter to the kernel) and [`cli`] on top.

pub mod cli;
pub mod documents;
pub mod fs;
pub mod fuse;
pub mod open;
pub mod sys;
pub mod transfer;
pub mod view;
pub mod worlds;
