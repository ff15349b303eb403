#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| worldfs_fuzz::twmap_view_files(data));
