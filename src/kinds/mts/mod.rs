//! Luanti schematics (`.mts`): the codec ([`codec`]) and the document
//! shown when one is mounted ([`view`]).

pub mod codec;

pub use codec::{MtsError, Schematic};
