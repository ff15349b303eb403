#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| worldfs_fuzz::mc_player_files(data));
