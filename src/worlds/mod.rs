//! Worlds kept in a directory: a Luanti world ([`luanti`]: its map in a
//! database, its players, accounts and mod storage beside it), a
//! Minecraft Java world ([`minecraft`]: level.dat, region files, player
//! files) and a Minecraft Bedrock world ([`bedrock`]: level.dat and its
//! LevelDB database). Each hands the filesystem core a tree, and has its
//! own check and undo. What they share: [`map_tree`] draws any of them as
//! a map of picture tiles, [`block_tree`] is the `block/` of both
//! Minecraft worlds, [`folders`] nests their other dimensions, and
//! [`undo`] plans the revert of journaled changes.

pub mod bedrock;
pub(crate) mod block_tree;
pub(crate) mod folders;
pub mod luanti;
pub(crate) mod map_tree;
pub mod minecraft;
pub(crate) mod names_by_inode;
pub(crate) mod undo;
