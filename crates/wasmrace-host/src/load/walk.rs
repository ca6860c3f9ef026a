//! Walking a module's code, for the passes that rewrite instructions in
//! place (`atomics.rs`, `races.rs`): every instruction sequence of a
//! function, an instruction's site (its offset in the code section,
//! which is how wasm DWARF counts addresses), and the function a site is
//! in.

use walrus::ir::{Instr, InstrLocId, InstrSeqId};
use walrus::{FunctionId, Module};

/// Replaces every instruction sequence of local function `id` with what
/// `f` makes of it (`f` may add functions and locals to the module).
pub(super) fn rewrite_seqs(
    module: &mut Module,
    id: FunctionId,
    mut f: impl FnMut(&mut Module, Vec<(Instr, InstrLocId)>) -> Vec<(Instr, InstrLocId)>,
) {
    let seqs: Vec<InstrSeqId> = {
        let func = module.funcs.get(id).kind.unwrap_local();
        let mut all = Vec::new();
        walrus::ir::dfs_in_order(&mut Seqs(&mut all), func, func.entry_block());
        all
    };
    for seq in seqs {
        let instrs = {
            let func = module.funcs.get_mut(id).kind.unwrap_local_mut();
            std::mem::take(&mut func.block_mut(seq).instrs)
        };
        let out = f(module, instrs);
        let func = module.funcs.get_mut(id).kind.unwrap_local_mut();
        func.block_mut(seq).instrs = out;
    }
}

/// An instruction's site: its offset in the code section (0 for one the
/// loader made).
pub(super) fn site_of(loc: InstrLocId, code_start: u32) -> u32 {
    match loc.is_default() {
        true => 0,
        false => loc.data().saturating_sub(code_start),
    }
}

/// Where the code section starts in the file: an instruction's location
/// is its file offset, a body's range is counted from there (walrus keeps
/// the section's offset to itself; every body maps its first instruction
/// both ways).
pub(super) fn code_section_start(module: &Module) -> u32 {
    module
        .funcs
        .iter_local()
        .find_map(|(_, f)| {
            let (relative, loc) = f.instruction_mapping.first()?;
            (!loc.is_default()).then(|| loc.data().saturating_sub(*relative as u32))
        })
        .unwrap_or(0)
}

/// Collects the ids of every instruction sequence of a function.
struct Seqs<'a>(&'a mut Vec<InstrSeqId>);
impl<'instr> walrus::ir::Visitor<'instr> for Seqs<'_> {
    fn start_instr_seq(&mut self, seq: &'instr walrus::ir::InstrSeq) {
        self.0.push(seq.id());
    }
}

/// Every named local function's body range, demangled (`rustc-demangle`:
/// `std::sync::poison::mutex::Mutex<T>::lock`, without the hash).
pub(super) fn function_ranges(module: &Module) -> Vec<(u32, u32, String)> {
    let mut v: Vec<(u32, u32, String)> = module
        .funcs
        .iter_local()
        .filter_map(|(id, f)| {
            let range = f.original_range.clone()?;
            let name = module.funcs.get(id).name.as_deref()?;
            let name = format!("{:#}", rustc_demangle::demangle(name));
            Some((range.start as u32, range.end as u32, name))
        })
        .collect();
    v.sort();
    v
}
