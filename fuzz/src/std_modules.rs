//! Random modules shaped like `wasm32-wasip1-threads` std guests, for the
//! `modules` kind: a shared `env.memory` import, `wasi.thread-spawn`, the
//! WASI calls std makes (each with its preview1 signature), `_start` and
//! `wasi_thread_start` exports, and random code with atomics, `wait` and
//! `notify` (`wasm-smith` with threads on). They drive the std rewrite
//! (atomics, WASI, the race pass) and the host's thread semantics on code
//! no compiler would write.

use crate::signatures::{plain_signature, Signature};
use rand::{Rng, RngCore};
use wasm_encoder::{
    CodeSection, EntityType, ExportKind, ExportSection, Function, FunctionSection, ImportSection,
    MemoryType, Module, TypeSection, ValType,
};
use wasmrace_host::load::WASI_PLAIN;

const I32: ValType = ValType::I32;

/// The WASI functions a std-shaped module may import, with their preview1
/// signatures: the host's list of calls answered by plain hooks, which
/// keep the call's signature (`load::WASI_PLAIN`, so a call the host adds
/// is fuzzed too), and the two it makes scheduling points.
fn wasi_imports() -> Vec<(&'static str, Signature)> {
    let plain = WASI_PLAIN.iter().map(|name| {
        let signature = plain_signature(&format!("wasi_{name}"))
            .unwrap_or_else(|| panic!("no signature for `wasi_{name}`: add it to generate.rs"));
        (*name, signature)
    });
    let suspending: [(&str, Signature); 2] =
        [("sched_yield", (&[], &[I32])), ("proc_exit", (&[I32], &[]))];
    plain.chain(suspending).collect()
}

/// A std guest's shared memory, its minimum and maximum from `rng`.
pub(crate) fn std_memory(rng: &mut impl RngCore) -> MemoryType {
    let minimum = rng.random_range(1..=17);
    MemoryType {
        minimum,
        maximum: Some(minimum + rng.random_range(0..=64)),
        memory64: false,
        shared: true,
        page_size_log2: None,
    }
}

/// The imports a std-shaped module may use (`available_imports`): the
/// shared `memory`, `thread-spawn` and the WASI calls.
pub(crate) fn std_imports(memory: MemoryType) -> Vec<u8> {
    let mut types = TypeSection::new();
    let mut imports = ImportSection::new();
    imports.import("env", "memory", EntityType::Memory(memory));
    types.ty().function([I32], [I32]);
    imports.import("wasi", "thread-spawn", EntityType::Function(0));
    for (i, (name, (params, results))) in wasi_imports().into_iter().enumerate() {
        types
            .ty()
            .function(params.iter().copied(), results.iter().copied());
        imports.import(
            "wasi_snapshot_preview1",
            name,
            EntityType::Function(i as u32 + 1),
        );
    }
    let mut m = Module::new();
    m.section(&types).section(&imports);
    m.finish()
}

/// The exports of a std command module (`wasm-smith`'s `exports`): `_start`
/// and the thread entry `wasi_thread_start(tid, arg)`, empty here (the
/// generated module fills them); [`finish`] adds `memory`.
pub(crate) fn std_exports() -> Vec<u8> {
    let mut types = TypeSection::new();
    types.ty().function([], []);
    types.ty().function([I32, I32], []);
    let mut funcs = FunctionSection::new();
    let mut exports = ExportSection::new();
    let mut code = CodeSection::new();
    for (i, name) in ["_start", "wasi_thread_start"].iter().enumerate() {
        funcs.function(i as u32);
        exports.export(name, ExportKind::Func, i as u32);
        let mut body = Function::new([]);
        body.instructions().end();
        code.function(&body);
    }
    let mut m = Module::new();
    m.section(&types)
        .section(&funcs)
        .section(&exports)
        .section(&code);
    m.finish()
}

/// What wasm-smith cannot be asked for, added to a generated std-shaped
/// module as std's have them: its memory exported as `memory`, and a
/// mutable i32 global (std's `__stack_pointer`) when it has none. `None`
/// when walrus cannot read the module (the host then sees it as built).
pub(crate) fn finish(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut module = walrus::ModuleConfig::new().parse(bytes).ok()?;
    let first = module.memories.iter().next().map(|m| m.id());
    let memory = match first {
        Some(id) => id,
        None => module.memories.add_local(false, false, 1, None, None),
    };
    if !module.exports.iter().any(|e| e.name == "memory") {
        module.exports.add("memory", memory);
    }
    let sp = module
        .globals
        .iter()
        .find(|g| g.mutable && g.ty == walrus::ValType::I32)
        .map(|g| g.id());
    let sp = sp.unwrap_or_else(|| {
        module.globals.add_local(
            walrus::ValType::I32,
            true,
            false,
            walrus::ConstExpr::Value(walrus::ir::Value::I32(65536)),
        )
    });
    use_stack_pointer(&mut module, sp);
    Some(module.emit_wasm())
}

/// Makes `_start` read and write `sp`, as std's code does: a stack pointer
/// no code uses is dropped by the host's rewrite, which then refuses the
/// module for want of one (a sixth of the std-shaped inputs were).
fn use_stack_pointer(module: &mut walrus::Module, sp: walrus::GlobalId) {
    let start = module.exports.iter().find_map(|e| match e.item {
        walrus::ExportItem::Function(f) if e.name == "_start" => Some(f),
        _ => None,
    });
    let Some(start) = start else {
        return;
    };
    if let walrus::FunctionKind::Local(f) = &mut module.funcs.get_mut(start).kind {
        f.builder_mut()
            .func_body()
            .global_get_at(0, sp)
            .global_set_at(1, sp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The import and export modules are valid wasm (threads on), so
    /// wasm-smith takes them.
    #[test]
    fn std_shapes_validate() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut features = wasmparser::WasmFeatures::default();
        features.insert(wasmparser::WasmFeatures::THREADS);
        let memory = std_memory(&mut rng);
        for bytes in [std_imports(memory), std_exports()] {
            wasmparser::Validator::new_with_features(features)
                .validate_all(&bytes)
                .unwrap();
        }
    }
}
