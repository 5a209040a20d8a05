//! TimeMaps stored compressed, many to a file: each complete TimeMap (its NDJSON lines) is one
//! zstd frame, with a content checksum, appended to a pack `timemaps/pack-NNNN.zst` (a new pack
//! once one passes [`PACK_BYTES`]), and its line of `timemaps/index.ndjson` says where it is
//! (`pack`, `offset`, `length`), and once the stage has rewritten the index in sample order,
//! `timemaps/index.offsets` says where each sample line's index line is. A pack is a valid zstd stream: `zstd -dc` gives its TimeMaps
//! in the order written. Read back by the index line only, never by scanning a pack, so bytes
//! no line points at (a frame killed half-written) are never read.

mod entry;
mod offsets;
mod read;
mod write;

pub use entry::{file_name, pack_name, pack_number, Hydration, IndexLine, Location, MAX_LINE};
pub use offsets::{offset_record, OFFSETS};
pub use read::{find, open_frame, open_in, open_timemap, Frame};
pub use write::{compress, PackWriter, PACK_BYTES};
