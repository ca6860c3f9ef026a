//! Valid modules from `wasm-smith`: their imports drawn from our hooks
//! (every hook the host's operation table lists, with its docs/ABI.md
//! signature), their exports those of an SDK guest (`memory`, a
//! `wasmrace_test_*` test, `__wasmrace_thread_start`, sometimes
//! `__wasmrace_init`), their code random. Most use the features Rust
//! guests use; about one in seven may use any feature wasmtime or wasm-smith
//! knows, so that what the host cannot run is refused in words.

use crate::pipeline::{exercise, host_config};
use crate::signatures::{plain_signature, suspending_signature};
use crate::{Limits, Outcomes, Target};
use arbitrary::Unstructured;
use rand::{Rng, RngCore};
use rand_chacha::ChaCha8Rng;
use wasm_encoder::{
    CodeSection, ExportKind, ExportSection, Function, FunctionSection, ImportSection,
    MemorySection, MemoryType, Module, TypeSection, ValType,
};
use wasmrace_host::load::{HOOK_MODULE, PLAIN_HOOKS, SUSPENDING_HOOKS, TEST_PREFIX, THREAD_START};

const I32: ValType = ValType::I32;

/// A module importing every hook the host lists, each with its signature
/// (`wasm-smith`'s `available_imports`).
///
/// # Panics
///
/// When the host lists a hook this file has no signature for: add it here
/// (from docs/ABI.md).
pub fn hook_imports() -> Vec<u8> {
    let (types, imports, _) = hook_sections();
    let mut m = Module::new();
    m.section(&types).section(&imports);
    m.finish()
}

/// A module importing every hook and exporting its memory, a shadow stack pointer and one test,
/// `every_hook`, and a thread entry, that do nothing: it loads only if every signature of
/// [`hook_imports`] is the one the host links.
pub fn every_hook_module() -> Vec<u8> {
    let (mut types, imports, n) = hook_sections();
    types.ty().function([], []);
    types.ty().function([I32], []);
    let mut funcs = FunctionSection::new();
    funcs.function(n);
    funcs.function(n + 1);
    let mut memories = MemorySection::new();
    memories.memory(MemoryType {
        minimum: 1,
        maximum: None,
        memory64: false,
        shared: false,
        page_size_log2: None,
    });
    // The shadow stack pointer every Rust guest has.
    let mut globals = wasm_encoder::GlobalSection::new();
    globals.global(
        wasm_encoder::GlobalType {
            val_type: I32,
            mutable: true,
            shared: false,
        },
        &wasm_encoder::ConstExpr::i32_const(65536),
    );
    let mut exports = ExportSection::new();
    exports.export("memory", ExportKind::Memory, 0);
    exports.export(&format!("{TEST_PREFIX}every_hook"), ExportKind::Func, n);
    exports.export(THREAD_START, ExportKind::Func, n + 1);
    let mut body = Function::new([]);
    body.instructions().end();
    let mut code = CodeSection::new();
    code.function(&body).function(&body);
    let mut m = Module::new();
    m.section(&types)
        .section(&imports)
        .section(&funcs)
        .section(&memories)
        .section(&globals)
        .section(&exports)
        .section(&code);
    m.finish()
}

/// One type and one import per hook, suspending hooks first; and their
/// number.
fn hook_sections() -> (TypeSection, ImportSection, u32) {
    let mut types = TypeSection::new();
    let mut imports = ImportSection::new();
    let hooks = SUSPENDING_HOOKS.iter().map(|h| {
        let (params, results) = suspending_signature(h)
            .unwrap_or_else(|| panic!("no signature for the suspending hook `{h}`"));
        let mut with_site = params.to_vec();
        with_site.push(I32);
        (h, with_site, results)
    });
    let plain = PLAIN_HOOKS.iter().map(|h| {
        let (params, results) =
            plain_signature(h).unwrap_or_else(|| panic!("no signature for the hook `{h}`"));
        (h, params.to_vec(), results)
    });
    let mut n = 0;
    for (name, params, results) in hooks.chain(plain) {
        types.ty().function(params, results.iter().copied());
        imports.import(HOOK_MODULE, name, wasm_encoder::EntityType::Function(n));
        n += 1;
    }
    (types, imports, n)
}

/// A module with the exports of an SDK guest (`wasm-smith`'s `exports`):
/// its memory (the input picks its size and maximum), one or two tests, the
/// thread entry and sometimes the initializer.
fn sdk_exports(rng: &mut impl RngCore) -> Vec<u8> {
    let mut types = TypeSection::new();
    types.ty().function([], []);
    types.ty().function([I32], []);
    let mut funcs = FunctionSection::new();
    let mut exports = ExportSection::new();
    let mut entries: Vec<(String, u32)> = vec![(format!("{TEST_PREFIX}fuzz"), 0)];
    if rng.random_bool(0.3) {
        entries.push((format!("{TEST_PREFIX}other"), 0));
    }
    entries.push((THREAD_START.to_string(), 1));
    if rng.random_bool(0.3) {
        entries.push((wasmrace_host::load::INIT.to_string(), 0));
    }
    let mut code = CodeSection::new();
    for (i, (name, ty)) in entries.iter().enumerate() {
        funcs.function(*ty);
        exports.export(name, ExportKind::Func, i as u32);
        let mut body = Function::new([]);
        body.instructions().end();
        code.function(&body);
    }
    let minimum = rng.random_range(0..=4);
    let maximum = rng
        .random_bool(0.3)
        .then(|| minimum + rng.random_range(0..=64));
    let mut memories = MemorySection::new();
    memories.memory(MemoryType {
        minimum,
        maximum,
        memory64: false,
        shared: false,
        page_size_log2: None,
    });
    exports.export("memory", ExportKind::Memory, 0);
    let mut m = Module::new();
    m.section(&types)
        .section(&funcs)
        .section(&memories)
        .section(&exports)
        .section(&code);
    m.finish()
}

/// `wasm-smith`'s configuration for one input: small modules, our hooks
/// and the SDK's exports, Rust's features unless `wide`.
fn smith_config(rng: &mut impl RngCore, imports: &[u8], wide: bool) -> wasm_smith::Config {
    let mut c = wasm_smith::Config {
        available_imports: Some(imports.to_vec()),
        exports: Some(sdk_exports(rng)),
        max_funcs: 12,
        max_instructions: 80,
        max_imports: 24,
        max_globals: 8,
        max_data_segments: 4,
        max_element_segments: 4,
        max_elements: 16,
        max_tables: 1,
        // The exports module (`sdk_exports`) already asks for a memory:
        // one more would make every module a multi-memory one, refused at
        // once (a third of the inputs were).
        max_memories: 0,
        max_table_elements: 64,
        max_memory32_bytes: if rng.random_bool(0.9) {
            4 << 20
        } else {
            1 << 32
        },
        max_type_size: 100,
        max_types: 24,
        disallow_traps: rng.random_bool(0.5),
        memory64_enabled: false,
        threads_enabled: false,
        shared_everything_threads_enabled: false,
        gc_enabled: false,
        exceptions_enabled: false,
        relaxed_simd_enabled: false,
        simd_enabled: false,
        tail_call_enabled: false,
        custom_page_sizes_enabled: false,
        wide_arithmetic_enabled: false,
        // Not among the features Rust enables for its wasm targets; the
        // host refuses it by name, as a tenth of the inputs showed.
        extended_const_enabled: false,
        ..wasm_smith::Config::default()
    };
    if wide {
        c.exceptions_enabled = rng.random();
        c.simd_enabled = rng.random();
        c.relaxed_simd_enabled = c.simd_enabled && rng.random();
        c.tail_call_enabled = rng.random();
        c.gc_enabled = rng.random();
        c.memory64_enabled = rng.random();
        c.threads_enabled = rng.random();
        c.max_memories = rng.random_range(0..=1);
        c.extended_const_enabled = rng.random();
        c.max_tables = rng.random_range(1..=2);
    }
    c
}

/// The generated-module target.
pub(crate) struct Modules {
    limits: Limits,
    imports: Vec<u8>,
}

impl Modules {
    pub(crate) fn new(limits: &Limits) -> Self {
        Modules {
            limits: limits.clone(),
            imports: hook_imports(),
        }
    }
}

/// A module from the input's random bytes; `None` when wasm-smith wants
/// more bytes than it was given (or refuses them). One in four is shaped
/// like a std guest (`std_modules`), with threads on.
pub(crate) fn generate(rng: &mut ChaCha8Rng, imports: &[u8]) -> Option<Vec<u8>> {
    let std = rng.random_bool(0.25);
    generate_shaped(rng, imports, std)
}

/// [`generate`], shaped like a std guest when `std`.
fn generate_shaped(rng: &mut ChaCha8Rng, imports: &[u8], std: bool) -> Option<Vec<u8>> {
    let wide = rng.random_bool(0.15);
    let mut config = smith_config(rng, imports, wide);
    if std {
        let memory = crate::std_modules::std_memory(rng);
        config.available_imports = Some(crate::std_modules::std_imports(memory));
        config.exports = Some(crate::std_modules::std_exports());
        config.threads_enabled = true;
        // Its memory is `env.memory` when wasm-smith takes that import,
        // else one `std_modules::finish` adds: one of wasm-smith's own
        // beside the import was a second memory, refused at once.
        config.max_memories = 0;
    }
    let mut data = vec![0u8; rng.random_range(64..8192)];
    rng.fill_bytes(&mut data);
    let mut u = Unstructured::new(&data);
    let bytes = wasm_smith::Module::new(config, &mut u).ok()?.to_bytes();
    match std {
        true => crate::std_modules::finish(&bytes),
        false => Some(bytes),
    }
}

impl Target for Modules {
    fn run(&mut self, rng: &mut ChaCha8Rng, out: &mut Outcomes) -> Result<(), String> {
        let Some(bytes) = generate(rng, &self.imports) else {
            out.push("generate: not enough data".into());
            return Ok(());
        };
        if bytes
            .windows(HOOK_MODULE.len())
            .any(|w| w == HOOK_MODULE.as_bytes())
        {
            out.push("generate: imports hooks".into());
        }
        let config = host_config(&self.limits, None);
        exercise(&bytes, config, &self.limits, rng, out)
    }
}

#[cfg(test)]
mod std_shaped_tests {
    use super::*;
    use rand::SeedableRng;

    /// The std-shaped inputs reach the host as std guests: some load (the
    /// rewrite ran on random code with atomics) and some run.
    #[test]
    fn std_shaped_modules_load_as_std_guests() {
        let imports = hook_imports();
        let (mut loaded, mut ran) = (0, 0);
        for i in 0..200u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(i);
            let Some(bytes) = generate_shaped(&mut rng, &imports, true) else {
                continue;
            };
            let config = host_config(&Limits::default(), None);
            let Ok(guest) = wasmrace_host::Guest::from_bytes("fuzz.wasm", &bytes, config) else {
                continue;
            };
            assert!(guest.is_std(), "input {i} loaded as an SDK guest");
            loaded += 1;
            let opts = crate::pipeline::check_options(&Limits::default(), &mut rng);
            ran += usize::from(wasmrace_host::check(&guest, "main", &opts).is_ok());
        }
        assert!(loaded >= 10 && ran >= 5, "loaded {loaded}, ran {ran}");
    }
}
