//! Memory a fresh instance starts with beyond what the guest declares: the
//! pages the host grows for itself before the guest runs (the dirty-page
//! map, the first batch of thread slots) and a megabyte for the guest's
//! heap, made part of the module's initial size just before it is
//! compiled. The guest still sees the size it declared: only modules whose
//! memory size is virtual (`instrument::virtualize_memory_size`) get room,
//! and their `memory.size` and `memory.grow` read and raise that size.
//!
//! Why: growing memory is an `mprotect` of every page grown, and a pool
//! slot's next instance first takes the previous instance's growth back
//! (another `mprotect`), because its initial size is smaller. Both were
//! most of the time it took to create a program (29 µs of 30 for
//! `fetch_add_2` in `benches/peers`, `examples/startup_profile`). With
//! the room in the initial size, an instance that grows no further than it
//! makes no such call, and neither does the next one in its slot.
//!
//! What a guest could see: as after any growth the host rewound (see
//! `virtualize_memory_size`), an out-of-bounds access between its size and
//! the real size reads or writes zeroed memory instead of trapping.

use super::MEMORY_PAGES_EXPORT;
use crate::config::HostConfig;
use crate::error::{one_line, HostError};

/// Wasm pages of room for the guest's heap beyond what the host grows.
const GUEST_ROOM_PAGES: u64 = 16;

/// The pages a fresh instance gets beyond the module's declared initial
/// size under `config`: the dirty-page map (`program::place_dirty_map`),
/// the first batch of four thread slots (`program::alloc_slot`) and
/// [`GUEST_ROOM_PAGES`]. `reserve_room` lowers it to fit the limits.
pub(crate) fn room_pages(config: &HostConfig) -> u64 {
    let map = (config.max_memory_bytes / crate::snapshot::BLOCK as u64 + 2).div_ceil(65536);
    let slots = 4 * config.slot_bytes() / 65536;
    map + slots + GUEST_ROOM_PAGES
}

/// `bytes` (an instrumented module) with `pages` more initial memory, at
/// most up to the memory's declared maximum and `max_memory_bytes`;
/// unchanged when its memory size is not virtual.
pub(crate) fn reserve_room(
    name: &str,
    bytes: &[u8],
    pages: u64,
    max_memory_bytes: u64,
) -> Result<Vec<u8>, HostError> {
    let mut module = walrus::Module::from_buffer(bytes).map_err(|e| HostError::Instrument {
        name: name.into(),
        message: one_line(&format!("{e:#}")),
    })?;
    let virtual_size = module.exports.iter().any(|e| e.name == MEMORY_PAGES_EXPORT);
    {
        let mut memories = module.memories.iter_mut();
        let (Some(memory), None, true) = (memories.next(), memories.next(), virtual_size) else {
            return Ok(bytes.to_vec());
        };
        let cap = memory
            .maximum
            .unwrap_or(u64::MAX)
            .min(max_memory_bytes / 65536);
        let initial = memory.initial.saturating_add(pages).min(cap);
        if memory.memory64 || initial <= memory.initial {
            return Ok(bytes.to_vec());
        }
        memory.initial = initial;
    }
    Ok(module.emit_wasm())
}
