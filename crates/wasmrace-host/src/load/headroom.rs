//! Memory a fresh instance starts with beyond what the guest declares: the
//! pages the host grows for itself before the guest runs (the dirty-page
//! map, the first batch of thread slots) and a megabyte for the guest's
//! heap, made part of the module's initial size just before it is
//! compiled. The guest still sees the size it declared: only modules whose
//! memory size is virtual (`instrument::virtualize_memory_size`) and that
//! have a dirty-page map (`load::track_dirty_pages`) get room; their
//! `memory.size` and `memory.grow` read and raise that size.
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
//! the real size does not trap. Its writes are marked in the map like any
//! other, so restores zero them again: such an access reads zeros in every
//! execution. (Why only modules with a map: without one, a restore
//! rewrites memory up to the guest's size only, and a stray write above it
//! would outlive its execution.)

use super::{DIRTY_BASE_EXPORT, MEMORY_PAGES_EXPORT};
use crate::config::HostConfig;
use crate::error::{one_line, HostError};

/// Wasm pages of room for the guest's heap beyond what the host grows.
const GUEST_ROOM_PAGES: u64 = 16;

/// The pages a fresh instance gets beyond the module's declared initial
/// size under `config`: the dirty-page map (`program::place_dirty_map`),
/// the first batch of thread slots (`program::alloc_slot`) and
/// [`GUEST_ROOM_PAGES`]. `reserve_room` lowers it to fit the limits.
pub(crate) fn room_pages(config: &HostConfig) -> u64 {
    let map = crate::program::dirty_map_bytes(config).div_ceil(65536);
    let slots = crate::program::FIRST_SLOT_BATCH * config.slot_bytes() / 65536;
    map + slots + GUEST_ROOM_PAGES
}

/// `bytes` (an instrumented module) with `pages` more initial memory, at
/// most up to the memory's declared maximum, `max_memory_bytes` and wasm32's
/// 65,536 pages; unchanged when its memory size is not virtual or it has no
/// dirty-page map.
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
    let exports = |name: &str| module.exports.iter().any(|e| e.name == name);
    let room = exports(MEMORY_PAGES_EXPORT) && exports(DIRTY_BASE_EXPORT);
    {
        let mut memories = module.memories.iter_mut();
        let (Some(memory), None, true) = (memories.next(), memories.next(), room) else {
            return Ok(bytes.to_vec());
        };
        let cap = memory
            .maximum
            .unwrap_or(u64::MAX)
            .min(max_memory_bytes / 65536)
            .min(65536);
        let initial = memory.initial.saturating_add(pages).min(cap);
        if memory.memory64 || initial <= memory.initial {
            return Ok(bytes.to_vec());
        }
        memory.initial = initial;
    }
    Ok(module.emit_wasm())
}

#[cfg(test)]
mod tests {
    use super::*;
    use walrus::{ConstExpr, Module, ValType};

    /// A module with one memory of `initial` pages (and `maximum`), and the
    /// exports instrumentation adds when `tracked`.
    fn module(initial: u64, maximum: Option<u64>, tracked: bool) -> Vec<u8> {
        let mut m = Module::default();
        let mem = m.memories.add_local(false, false, initial, maximum, None);
        m.exports.add("memory", mem);
        if tracked {
            for name in [MEMORY_PAGES_EXPORT, DIRTY_BASE_EXPORT] {
                let init = ConstExpr::Value(walrus::ir::Value::I32(0));
                let g = m.globals.add_local(ValType::I32, false, false, init);
                m.exports.add(name, g);
            }
        }
        m.emit_wasm()
    }

    fn initial(bytes: &[u8]) -> u64 {
        let m = Module::from_buffer(bytes).unwrap();
        let memory = m.memories.iter().next().unwrap();
        memory.initial
    }

    #[test]
    fn the_room_stays_within_every_limit() {
        let gib = 1u64 << 30;
        let grown =
            |bytes: &[u8], pages, max| initial(&reserve_room("m", bytes, pages, max).unwrap());
        assert_eq!(grown(&module(17, None, true), 29, gib), 46);
        // A declared maximum, `max_memory_bytes`, and wasm32's 4 GiB.
        assert_eq!(grown(&module(17, Some(20), true), 29, gib), 20);
        assert_eq!(grown(&module(17, None, true), 29, 2 << 20), 32);
        assert_eq!(grown(&module(17, None, true), 1 << 20, u64::MAX), 65536);
        // Never below the declared size, and no room without the map.
        assert_eq!(grown(&module(17, None, true), 29, 1 << 20), 17);
        assert_eq!(grown(&module(17, None, false), 29, gib), 17);
        // The map's share is capped as `place_dirty_map` caps the map.
        let huge = HostConfig {
            max_memory_bytes: 1 << 50,
            ..HostConfig::default()
        };
        assert_eq!(crate::program::dirty_map_bytes(&huge), 1 << 22);
        assert_eq!(
            room_pages(&huge),
            (1 << 22) / 65536 + 4 * huge.slot_bytes() / 65536 + GUEST_ROOM_PAGES
        );
    }
}
