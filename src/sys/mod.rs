//! What worldfs asks of the operating system and the clock: which CPUs a
//! thread runs on ([`affinity`]), keeping a serving thread's CPU awake
//! between requests ([`awake`]), and the time of day ([`time`]).

pub mod affinity;
pub mod awake;
pub(crate) mod time;
