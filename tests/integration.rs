//! The integration tests of the worldfs daemon, in one test binary (as
//! ripgrep does): each file of tests/ is a module, and the helpers in
//! common/ are compiled once. Run one module's tests with
//! `cargo test --test integration MODULE::`.

// Tests may unwrap and expect: a panic is the test failing with its
// message (the policy of Cargo.toml's [workspace.lints] is for the code
// users run).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

mod architecture;
mod backend_leveldb;
mod backend_mounts;
mod bad_inputs;
mod bedrock;
mod cache_memory;
mod codec_real_worlds;
mod companion_mods;
mod concurrency;
mod core_behaviour;
mod core_defects;
mod core_documents;
mod core_engine_limits;
mod core_model;
mod core_panics;
mod core_reads;
mod core_reference;
mod core_rename;
mod core_write_path;
mod crash_safety;
mod cubeset;
mod faults;
mod find_index;
mod found_by_fuzzing;
mod group_commit;
mod holders;
mod hot_journal;
mod index_identity;
mod kinds_mount;
mod last_doors;
mod live_direct;
mod live_memory;
mod live_pace;
mod live_players;
mod live_saves;
mod live_server;
mod live_spool;
mod live_undo;
mod live_writers;
mod mcchunk;
mod minecraft;
mod minecraft_dimensions;
mod minecraft_more;
mod minecraft_pictures;
mod minecraft_properties;
mod minecraft_registry;
mod minecraft_robust;
mod mount_read;
mod mount_requests;
mod mount_write;
mod mount_write_refusals;
mod mts_real;
mod packaging;
mod permissions;
mod pictures;
mod players_auth;
mod properties;
mod schematic_properties;
mod server_oracle;
mod server_schematic;
mod server_write;
mod snapshot_diff;
mod snapshot_mount;
mod snapshot_restore;
mod snapshot_server;
mod snapshot_store;
mod store_contract;
mod system_integration;
mod tools_installed;
mod transfer_cli;
mod twmap_oracle;
mod twmap_real;
mod undo_journal;
mod unmount_keeps;
mod we_real;
mod write_reads_only_its_blocks;
