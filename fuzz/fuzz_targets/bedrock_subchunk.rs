#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| worldfs_fuzz::bedrock_subchunk(data));
