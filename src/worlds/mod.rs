//! Worlds kept in a directory: a Luanti world ([`luanti`]: its map in a
//! database, its players, accounts and mod storage beside it) and a
//! Minecraft Java world ([`minecraft`]: level.dat, region files, player
//! files) and a Minecraft Bedrock world ([`bedrock`]: level.dat and its
//! LevelDB database). Each hands the filesystem core a tree, and has its own check
//! and undo; [`map_tree`] draws either as a map of picture tiles.

pub mod bedrock;
pub(crate) mod folders;
pub mod luanti;
pub(crate) mod map_tree;
pub mod minecraft;
pub(crate) mod undo;
