//! A loaded guest: validated, audited, instrumented, compiled (through the
//! on-disk cache) and linked against the hooks. Cheap to clone and shared by
//! every program (test run) made from it.

use crate::config::HostConfig;
use crate::error::{runtime, HostError};
use crate::hooks::{make_linker, HostState, WasiEnv};
use crate::load::{self, Analysis};
use std::path::Path;
use std::sync::Arc;
use wasmtime::{Engine, ExternType, FuncType, InstancePre, Linker, Module, Store};

pub(crate) struct GuestInner {
    pub name: String,
    pub module_hash: String,
    pub config: HostConfig,
    pub engine: Engine,
    pub pre: InstancePre<HostState>,
    pub analysis: Analysis,
    pub from_cache: bool,
}

/// The pseudo-test that runs a libtest harness with `--list` (followed by
/// further arguments: `--ignored`): no test's name starts so.
pub(crate) const LIST_PREFIX: &str = "--list";

impl GuestInner {
    /// How test `test` is entered: its export, and (for a std guest) the
    /// command line it runs with: the program's name, and for a libtest
    /// harness the test alone, on one thread, its output uncaptured
    /// (`--exact NAME --test-threads=1 --nocapture`, and
    /// `--include-ignored` for an ignored one).
    pub(crate) fn entry(&self, test: &str) -> (String, Arc<WasiEnv>) {
        let Some(std) = &self.analysis.std else {
            return (format!("{}{test}", load::TEST_PREFIX), Arc::default());
        };
        let program = Path::new(&self.name)
            .file_name()
            .map_or_else(|| "main.wasm".into(), |n| n.to_string_lossy().into_owned());
        let mut args = vec![program];
        args.extend(self.config.args.iter().cloned());
        if let Some(list) = test.strip_prefix(LIST_PREFIX) {
            args.extend(["--list", "--format", "terse"].map(String::from));
            args.extend(list.split_whitespace().map(String::from));
        } else if std.harness {
            // Uncaptured: a panic's message must reach standard error
            // before `panic = abort` ends the process.
            args.extend(["--exact", test, "--test-threads=1", "--nocapture"].map(String::from));
            if std.ignored.iter().any(|t| t == test) {
                args.push("--include-ignored".into());
            }
        }
        let env = WasiEnv {
            args,
            env: self.config.env.clone(),
        };
        (
            format!("{}{}", load::TEST_PREFIX, load::MAIN_TEST),
            Arc::new(env),
        )
    }
}

/// A guest module ready to run. Clone it freely: clones share the compiled
/// code.
#[derive(Clone)]
pub struct Guest {
    pub(crate) inner: Arc<GuestInner>,
}

impl std::fmt::Debug for Guest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guest")
            .field("name", &self.inner.name)
            .field("tests", &self.inner.analysis.tests)
            .finish()
    }
}

impl Guest {
    /// Makes a guest of module `bytes` (`name` is used in messages): a std
    /// guest is rewritten first (`load::rewrite_std`); its harness tests
    /// are listed by the caller (`program/libtest.rs`).
    pub(crate) fn assemble(
        name: &str,
        bytes: &[u8],
        config: HostConfig,
    ) -> Result<Guest, HostError> {
        let module_hash = blake3::hash(bytes).to_hex().to_string();
        let races = config.data_races != wasmrace_trace::DataRaces::Off;
        let (bytes, std, sites) = if load::is_std(bytes) {
            let (b, info, sites) = load::rewrite_std(name, bytes, races)?;
            (std::borrow::Cow::Owned(b), Some(info), sites)
        } else if races {
            // Validated and audited as built first: the race pass must
            // not be the first to read a hostile module.
            load::analyze(name, bytes)?;
            let (b, sites) = load::instrument_races(name, bytes)?;
            (std::borrow::Cow::Owned(b), None, Some(sites))
        } else {
            (std::borrow::Cow::Borrowed(bytes), None, None)
        };
        let mut analysis = load::analyze(name, &bytes)?;
        refuse_arguments(name, std.as_ref().map(|s| s.harness), &config)?;
        analysis.std = std;
        analysis.races = sites.map(Arc::new);
        load::check_declared(name, &analysis.declared, &config)?;
        let engine = make_engine(&config, &analysis.declared)?;
        let (module, from_cache) = load::compiled_module(name, &bytes, &engine, &config)?;
        let linker = make_linker(&engine)?;
        let pre = linker.instantiate_pre(&module).map_err(|e| {
            hook_mismatch(name, &engine, &linker, &module, &config)
                .unwrap_or_else(|| load::compile_error(name, e))
        })?;
        Ok(Guest {
            inner: Arc::new(GuestInner {
                name: name.into(),
                module_hash,
                config,
                engine,
                pre,
                analysis,
                from_cache,
            }),
        })
    }

    /// The name errors and reports use: the path given to
    /// [`Guest::load`], or the name given to [`Guest::from_bytes`].
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The tests the module exports, sorted by name.
    pub fn tests(&self) -> &[String] {
        &self.inner.analysis.tests
    }

    /// blake3 (hex) of the original module bytes; schedule files carry it.
    pub fn module_hash(&self) -> &str {
        &self.inner.module_hash
    }

    /// The configuration the guest was loaded with; its programs use it.
    pub fn config(&self) -> &HostConfig {
        &self.inner.config
    }

    /// Whether the compiled module came from the on-disk cache.
    pub fn from_cache(&self) -> bool {
        self.inner.from_cache
    }
}

/// The first hook the module imports with another type than the host
/// defines it with, said in words (wasmtime's own message calls the
/// module's type "expected"). `None` when every hook matches.
fn hook_mismatch(
    name: &str,
    engine: &Engine,
    linker: &Linker<HostState>,
    module: &Module,
    config: &HostConfig,
) -> Option<HostError> {
    let mut store = Store::new(engine, HostState::new(config, false));
    module.imports().find_map(|import| {
        let ExternType::Func(found) = import.ty() else {
            return None;
        };
        let host = linker
            .get(&mut store, import.module(), import.name())
            .ok()?;
        let expected = host.into_func()?.ty(&store);
        (!FuncType::eq(&found, &expected)).then(|| HostError::HookSignature {
            name: name.into(),
            hook: import.name().into(),
            found: func_type_text(&found),
            expected: func_type_text(&expected),
        })
    })
}

/// A function type in the text format: `(func (param i32) (result i64))`.
fn func_type_text(ty: &FuncType) -> String {
    let list = |what: &str, tys: Vec<String>| {
        if tys.is_empty() {
            String::new()
        } else {
            format!(" ({what} {})", tys.join(" "))
        }
    };
    let params = ty.params().map(|t| t.to_string()).collect();
    let results = ty.results().map(|t| t.to_string()).collect();
    format!("(func{}{})", list("param", params), list("result", results))
}

/// Bytes of a pool slot's memory wasmtime resets in place (`memset`, or
/// only the pages written, with Linux's `PAGEMAP_SCAN`) when its instance
/// is dropped, instead of returning them to the kernel: the next instance
/// in the slot, the next test's or the next worker's, then starts without
/// a page fault per page it touches. Without it, creating a program and its
/// first executions were most of a short exploration (`fetch_add_2` in
/// `benches/peers`: 123 µs to create the program, 85 µs to explore it,
/// against 32 µs and 40 µs with it, `examples/startup_profile.rs`). A test's
/// memory is one to two MiB; the bound keeps the reset of a larger one
/// short on kernels without the scan.
const KEEP_RESIDENT: usize = 4 << 20;

fn make_engine(config: &HostConfig, declared: &load::Declared) -> Result<Engine, HostError> {
    let mut c = wasmtime::Config::new();
    c.consume_fuel(true);
    c.memory_init_cow(true);
    // A program holds one instance at a time (two while it re-instantiates
    // for a restore), so a few slots per thread are plenty; each slot
    // reserves address space for a 4 GiB memory plus guards.
    let slots = config.instance_slots.max(2);
    let mut pool = wasmtime::PoolingAllocationConfig::default();
    pool.total_memories(slots)
        .total_core_instances(slots)
        // The module's tables, whatever their count and size
        // (`check_declared` bounds both), so that no table is refused in
        // the pool's terms.
        .total_tables(slots.saturating_mul(declared.pool_tables()))
        .max_tables_per_module(declared.pool_tables())
        .table_elements(declared.pool_table_elements());
    pool.max_memory_size(config.max_memory_bytes.max(1 << 20) as usize);
    pool.linear_memory_keep_resident(KEEP_RESIDENT)
        .pagemap_scan(wasmtime::Enabled::Auto);
    c.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pool));
    match Engine::new(&c) {
        Ok(e) => Ok(e),
        // Where that much address space cannot be reserved (a `ulimit -v`,
        // valgrind), allocate instances on demand: slower resets, same results.
        Err(_) => {
            c.allocation_strategy(wasmtime::InstanceAllocationStrategy::OnDemand);
            Engine::new(&c).map_err(runtime)
        }
    }
}

/// Refuses `HostConfig::args` for a guest without a command line of its
/// own (an SDK guest, or a libtest harness, whose command line is
/// libtest's), and `HostConfig::env` for an SDK guest, which has no
/// environment. `harness`: `None` for an SDK guest.
fn refuse_arguments(
    name: &str,
    harness: Option<bool>,
    config: &HostConfig,
) -> Result<(), HostError> {
    let message = match harness {
        None if !config.args.is_empty() || !config.env.is_empty() => {
            "is an SDK guest, which has no command line or environment: `--arg` and `--env` apply to std guests (wasm32-wasip1-threads)"
        }
        Some(true) if !config.args.is_empty() => {
            "is a libtest harness, whose command line is libtest's (each test runs with `--exact NAME`): `--arg` applies to a std command module (a `bin`); `--env` applies to both"
        }
        _ => return Ok(()),
    };
    Err(HostError::Arguments {
        name: name.to_string(),
        message: message.to_string(),
    })
}
