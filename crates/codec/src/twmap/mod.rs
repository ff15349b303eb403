//! Teeworlds and DDNet maps (`.map`): the datafile container, the map
//! items it holds, and the tile layers' grids.

pub mod datafile;
pub mod example;
pub mod items;
pub mod tiles;
