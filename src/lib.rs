//! worldfs: a Luanti world as a filesystem.
//!
//! Layers, from the bytes up: [`codec`] (blobs <-> structures, pure),
//! [`store`] (the map database), [`view`] (structures <-> the files a user
//! sees, pure), [`fs`] (inodes, handles, caching, commits; no FUSE types)
//! and [`fuse`] (the thin adapter to the kernel).

pub mod affinity;
pub mod awake;
pub mod check;
pub mod cli;
pub mod demo;
pub mod fs;
pub mod fuse;
pub mod kinds;
pub mod open;
pub mod scan;
pub mod time;
pub mod undo;
pub mod view;
