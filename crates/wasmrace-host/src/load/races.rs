//! The walrus pass that shows the race detector every plain access to
//! linear memory (`--data-races`, issue #41): before each non-atomic load
//! and store, and each `memory.copy`, `memory.fill` and `memory.init`, a
//! call of a plain hook (`race_read` or `race_write`: address, length,
//! site) that never suspends the thread; after every allocation,
//! `race_fresh` (the block starts a new life: its next owner does not race
//! with its last one) (`wasmrace_explore::datarace`). It runs on the
//! module as built, first, so that sites are offsets in the original code
//! section, which is how the module's DWARF counts addresses.
//!
//! What is not checked, and why: the allocator's own code (the `dlmalloc`
//! crate of an SDK guest, wasi-libc's C of a std guest) is correct code
//! whose bookkeeping is not the program's data, and is left alone; so is the rest of wasi-libc's C, except the `mem*` functions,
//! which copy and fill the program's data and are checked, and the few
//! that order a thread's end before its joiner ([`LIBC_SYNC`]). Those
//! synchronise with volatile loads and stores and atomics that run in
//! place (`load/atomics.rs`), which the detector must see: their accesses
//! are made synchronisations instead of checked accesses (`race_acquire`
//! for a load, `race_release` for a store or an in-place atomic that
//! writes), as if they were sequentially consistent, which is what their
//! volatile accesses and fences assume: a joiner that reads the
//! `detach_state` an exiting thread stored is then ordered after all of
//! that thread's life.

use super::atomics::InPlaceSync;
use super::walk::{code_section_start, rewrite_seqs, site_of};
use walrus::ir::{
    BinaryOp, Binop, Call, Const, Instr, InstrLocId, LocalGet, LocalSet, LocalTee, Value,
};
use walrus::{FunctionBuilder, FunctionId, LocalId, MemoryId, Module, ValType};

/// The plain hooks this pass calls (docs/ABI.md, "Data races"): the
/// first four take `(addr, len, site)`, `race_fresh` `(addr, len)`.
pub const RACE_HOOKS: [&str; 5] = [
    "race_read",
    "race_write",
    "race_acquire",
    "race_release",
    "race_fresh",
];

/// The race hooks' imports in a module.
pub(crate) struct RaceHooks {
    read: FunctionId,
    write: FunctionId,
    fresh: FunctionId,
    /// `race_acquire` and `race_release`, and the functions whose accesses
    /// synchronise (`Treat::Sync`): their in-place atomics do too, which
    /// `load/atomics.rs` sees to.
    pub(super) sync: InPlaceSync,
}

impl RaceHooks {
    fn import(module: &mut Module) -> RaceHooks {
        use ValType::I32;
        let mut add = |name: &str, params: &[ValType]| {
            let ty = module.types.add(params, &[]);
            module.add_import_func(crate::ops::HOOK_MODULE, name, ty).0
        };
        RaceHooks {
            read: add(RACE_HOOKS[0], &[I32, I32, I32]),
            write: add(RACE_HOOKS[1], &[I32, I32, I32]),
            sync: InPlaceSync {
                acquire: add(RACE_HOOKS[2], &[I32, I32, I32]),
                release: add(RACE_HOOKS[3], &[I32, I32, I32]),
                functions: Default::default(),
            },
            fresh: add(RACE_HOOKS[4], &[I32, I32]),
        }
    }
}

/// What the pass does with a function's accesses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Treat {
    /// Checked for races (the program's code, std's, `mem*`).
    Check,
    /// Synchronisations (wasi-libc's C).
    Sync,
    /// Left alone (the allocator).
    Skip,
}

/// Where an allocation function's size is, among its parameters.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Size {
    /// Parameter `i`.
    Arg(usize),
    /// The product of parameters `i` and `j` (`calloc`).
    Product(usize, usize),
}

/// Whether `name` hands out memory, and where its size is: std's
/// `System` allocator (`__rdl_alloc(size, align)`, `__rdl_alloc_zeroed`,
/// `__rdl_realloc(ptr, old, align, new)`, under which Rust's shims and
/// every inlined copy of them end; legacy and v0 mangling:
/// `_RNvCs..._7___rustc11___rdl_alloc`) and wasi-libc's `malloc` family,
/// which std's `System` and libc's own code (thread stacks) call. Whatever
/// the block held before, its new owner starts afresh.
fn allocates(name: &str) -> Option<Size> {
    const RUST: [(&str, Size); 3] = [
        ("__rdl_alloc", Size::Arg(0)),
        ("__rdl_alloc_zeroed", Size::Arg(0)),
        ("__rdl_realloc", Size::Arg(3)),
    ];
    const LIBC: [(&str, Size); 4] = [
        ("malloc", Size::Arg(0)),
        ("calloc", Size::Product(0, 1)),
        ("realloc", Size::Arg(1)),
        ("aligned_alloc", Size::Arg(1)),
    ];
    let rust = RUST
        .iter()
        .find(|(r, _)| name == *r || name.ends_with(&format!("{}_{r}", r.len())));
    rust.or_else(|| LIBC.iter().find(|(l, _)| name == *l))
        .map(|(_, size)| *size)
}

/// Rust's allocator shims and wasi-libc's other allocator entry points:
/// left alone, like the allocator itself.
fn allocator_entry(name: &str) -> bool {
    const SHIMS: [&str; 4] = [
        "__rust_alloc",
        "__rust_dealloc",
        "__rust_realloc",
        "__rust_alloc_zeroed",
    ];
    allocates(name).is_some()
        || SHIMS
            .iter()
            .any(|r| name == *r || name.ends_with(&format!("{}_{r}", r.len())))
        || matches!(name, "free" | POSIX_MEMALIGN)
}

/// `posix_memalign(out, align, size) -> errno`: the block is written to
/// `*out` (`wrap_posix_memalign`).
const POSIX_MEMALIGN: &str = "posix_memalign";

/// Whether `name` is Rust's own allocator: std's `System` (`__rdl_alloc`
/// and the others, `std::sys::alloc`, whose bodies are `dlmalloc`'s,
/// inlined: it reads a neighbouring block's header, which overlaps that
/// block's data) and the `dlmalloc` crate.
fn rust_allocator(name: &str) -> bool {
    [
        "__rdl_",
        "dlmalloc",
        "3std3sys5alloc",
        "3std5alloc15realloc_fallback",
    ]
    .iter()
    .any(|p| name.contains(p))
}

/// Whether `name` is Rust-mangled (legacy or v0).
fn is_rust(name: &str) -> bool {
    name.starts_with("_ZN") || name.starts_with("_R")
}

/// What the pass does with function `name`'s accesses (see the module
/// documentation). In a std guest a name that is not Rust-mangled is
/// wasi-libc's (`load/atomics.rs` has the same rule); in an SDK guest
/// every function is Rust.
fn treat(name: Option<&str>, std: bool) -> Treat {
    let Some(n) = name else { return Treat::Check };
    if rust_allocator(n) || allocator_entry(n) {
        return Treat::Skip;
    }
    let rust = is_rust(n);
    // An SDK guest's std has no threads: its `Mutex`, `RwLock`, `Once`
    // are plain flags, which std itself checks (held twice, it panics,
    // and `hints.rs` names the SDK's replacement): a race on the flag
    // would hide that better report.
    if !std && (n.contains("3std4sync") || n.contains("3std3sys4sync")) {
        return Treat::Skip;
    }
    if !std || rust {
        return Treat::Check;
    }
    // wasi-libc's allocator: dlmalloc's functions and their helpers.
    let allocator = n.contains("alloc")
        || n.contains("free")
        || n.starts_with("dl")
        || matches!(n, "sbrk" | "dispose_chunk" | "prepend_alloc");
    if allocator {
        Treat::Skip
    } else if n.starts_with("mem") || n.starts_with("__mem") {
        Treat::Check
    } else if LIBC_SYNC.contains(&n) || LIBC_LOCKS.iter().any(|p| n.starts_with(p)) {
        Treat::Sync
    } else {
        Treat::Skip
    }
}

/// wasi-libc's functions that order a thread's end before its joiner:
/// the thread's start routine's caller, which runs its exit (TLS
/// destructors, then `detach_state` stored and the joiner woken), the
/// join that reads `detach_state`, and the thread list's lock they share.
/// Other libc functions are left alone: making all of libc's accesses
/// synchronise would order every two threads that start or exit one
/// after the other, hiding their races (the thread list's lock is taken
/// by every thread's exit), which ThreadSanitizer, which models `pthread`
/// calls rather than libc's insides, would report.
/// wasi-libc's locks, which programs reach through `pthread_*` calls
/// (parking_lot's thread parker guards its `should_park` flag with a
/// `pthread_mutex_t`): their accesses synchronise like those of
/// [`LIBC_SYNC`]. By name prefix: the name section holds the `__`-prefixed
/// implementations, the public names being aliases.
const LIBC_LOCKS: [&str; 10] = [
    "__pthread_mutex_",
    "pthread_mutex_",
    "__pthread_cond_",
    "pthread_cond_",
    "__private_cond_",
    "__pthread_rwlock_",
    "pthread_rwlock_",
    "__pthread_barrier_",
    "pthread_barrier_",
    "sem_",
];

const LIBC_SYNC: [&str; 7] = [
    "__wasi_thread_start_C",
    "__pthread_join",
    "__pthread_timedjoin_np",
    "__pthread_detach",
    "__tl_sync",
    "__tl_lock",
    "__tl_unlock",
];

/// Instruments `module` (see the module documentation); `std` says whether
/// it is a std guest. Returns the hooks, which the atomics' rewrite calls
/// from wasi-libc's in-place atomics (`load/atomics.rs`).
pub(crate) fn instrument_races(module: &mut Module, mem: MemoryId, std: bool) -> RaceHooks {
    let code_start = code_section_start(module);
    let mut hooks = RaceHooks::import(module);
    let ids: Vec<FunctionId> = module.funcs.iter_local().map(|(id, _)| id).collect();
    let mut entries = Vec::new();
    for id in &ids {
        let name = module.funcs.get(*id).name.clone();
        if let Some(size) = name.as_deref().and_then(allocates) {
            entries.push((*id, size));
        }
        let (read, write) = match treat(name.as_deref(), std) {
            Treat::Skip => continue,
            Treat::Check => (hooks.read, hooks.write),
            Treat::Sync => {
                hooks.sync.functions.insert(*id);
                (hooks.sync.acquire, hooks.sync.release)
            }
        };
        instrument_function(module, *id, mem, (read, write), code_start);
    }
    for (id, size) in entries {
        wrap_allocation(module, id, size, &hooks);
    }
    let memalign = ids
        .iter()
        .copied()
        .find(|id| module.funcs.get(*id).name.as_deref() == Some(POSIX_MEMALIGN));
    if let Some(id) = memalign {
        wrap_posix_memalign(module, id, mem, &hooks);
    }
    hooks
}

/// Instruments an SDK guest's module bytes (a std guest's rewrite calls
/// [`instrument_races`] itself, on the module it rewrites); returns the
/// new bytes and how to name their sites.
pub(crate) fn instrument_sdk(
    name: &str,
    bytes: &[u8],
) -> Result<(Vec<u8>, RaceSites), crate::error::HostError> {
    use crate::error::{one_line, HostError};
    let mut module = Module::from_buffer(bytes).map_err(|e| HostError::Invalid {
        name: name.into(),
        message: one_line(&format!("{e:#}")),
        offset: 0,
    })?;
    let memories: Vec<MemoryId> = module.memories.iter().map(|m| m.id()).collect();
    let [mem] = memories[..] else {
        // No memory, or several (refused later): nothing to watch.
        return Ok((bytes.to_vec(), RaceSites::default()));
    };
    let sites = RaceSites::new(bytes, super::walk::function_ranges(&module));
    instrument_races(&mut module, mem, false);
    Ok((module.emit_wasm(), sites))
}

/// The locals one function's rewrite needs, made on first use.
struct Scratch {
    locals: Vec<(ValType, LocalId)>,
}

impl Scratch {
    /// The `n`-th local of type `ty` (a bulk operation saves three i32s).
    fn get(&mut self, module: &mut Module, ty: ValType, n: usize) -> LocalId {
        let mut seen = 0;
        for (t, l) in &self.locals {
            if *t == ty {
                if seen == n {
                    return *l;
                }
                seen += 1;
            }
        }
        let l = module.locals.add(ty);
        self.locals.push((ty, l));
        self.get(module, ty, n)
    }
}

/// Instruments one function's accesses with `(load hook, store hook)`.
fn instrument_function(
    module: &mut Module,
    id: FunctionId,
    mem: MemoryId,
    (read, write): (FunctionId, FunctionId),
    code_start: u32,
) {
    let mut scratch = Scratch { locals: Vec::new() };
    rewrite_seqs(module, id, |module, instrs| {
        let mut out = Vec::with_capacity(instrs.len());
        for (instr, loc) in instrs {
            let site = site_of(loc, code_start);
            match &instr {
                Instr::Load(l) if l.memory == mem && !l.kind.atomic() => {
                    let a = scratch.get(module, ValType::I32, 0);
                    out.extend(access_at_top(a, l.arg.offset, l.kind.width(), site, read));
                }
                Instr::Store(s) if s.memory == mem && !s.kind.atomic() => {
                    let ty = stored_type(s.kind);
                    let v = scratch.get(module, ty, if ty == ValType::I32 { 1 } else { 0 });
                    let a = scratch.get(module, ValType::I32, 0);
                    out.push((local_set(v), InstrLocId::default()));
                    out.extend(access_at_top(a, s.arg.offset, s.kind.width(), site, write));
                    out.push((local_get(v), InstrLocId::default()));
                }
                Instr::MemoryCopy(c) if c.src == mem && c.dst == mem => {
                    let [d, s, n] = three(&mut scratch, module);
                    out.extend(save3(d, s, n));
                    out.extend(hook_call(s, n, site, read));
                    out.extend(hook_call(d, n, site, write));
                    out.extend(restore3(d, s, n));
                }
                Instr::MemoryFill(f) if f.memory == mem => {
                    let [d, s, n] = three(&mut scratch, module);
                    out.extend(save3(d, s, n));
                    out.extend(hook_call(d, n, site, write));
                    out.extend(restore3(d, s, n));
                }
                Instr::MemoryInit(m) if m.memory == mem => {
                    let [d, s, n] = three(&mut scratch, module);
                    out.extend(save3(d, s, n));
                    out.extend(hook_call(d, n, site, write));
                    out.extend(restore3(d, s, n));
                }
                _ => {}
            }
            out.push((instr, loc));
        }
        out
    });
}

fn three(scratch: &mut Scratch, module: &mut Module) -> [LocalId; 3] {
    [1, 2, 3].map(|n| scratch.get(module, ValType::I32, n))
}

/// `[d, s, n]` -> locals, leaving nothing.
fn save3(d: LocalId, s: LocalId, n: LocalId) -> Vec<(Instr, InstrLocId)> {
    [local_set(n), local_set(s), local_set(d)]
        .into_iter()
        .map(|i| (i, InstrLocId::default()))
        .collect()
}

/// Locals -> `[d, s, n]`.
fn restore3(d: LocalId, s: LocalId, n: LocalId) -> Vec<(Instr, InstrLocId)> {
    [local_get(d), local_get(s), local_get(n)]
        .into_iter()
        .map(|i| (i, InstrLocId::default()))
        .collect()
}

/// `hook(addr, len, site)` from two locals.
fn hook_call(addr: LocalId, len: LocalId, site: u32, hook: FunctionId) -> Vec<(Instr, InstrLocId)> {
    [
        local_get(addr),
        local_get(len),
        i32c(site as i32),
        Instr::Call(Call { func: hook }),
    ]
    .into_iter()
    .map(|i| (i, InstrLocId::default()))
    .collect()
}

/// With an address on top of the stack (left there):
/// `hook(addr + offset, width, site)`.
fn access_at_top(
    a: LocalId,
    offset: u64,
    width: u32,
    site: u32,
    hook: FunctionId,
) -> Vec<(Instr, InstrLocId)> {
    let mut v = vec![Instr::LocalTee(LocalTee { local: a }), local_get(a)];
    if offset != 0 {
        v.push(i32c(offset as u32 as i32));
        v.push(Instr::Binop(Binop {
            op: BinaryOp::I32Add,
        }));
    }
    v.extend([
        i32c(width as i32),
        i32c(site as i32),
        Instr::Call(Call { func: hook }),
    ]);
    v.into_iter().map(|i| (i, InstrLocId::default())).collect()
}

fn stored_type(kind: walrus::ir::StoreKind) -> ValType {
    use walrus::ir::StoreKind::*;
    match kind {
        I32 { .. } | I32_8 { .. } | I32_16 { .. } => ValType::I32,
        I64 { .. } | I64_8 { .. } | I64_16 { .. } | I64_32 { .. } => ValType::I64,
        F32 => ValType::F32,
        F64 => ValType::F64,
        V128 => ValType::V128,
    }
}

/// Makes every call of allocation function `id` (one `i32` result: the
/// block, or 0) a call of a wrapper that calls it and then tells the
/// detector the block is fresh (`race_fresh(block, size)`; a failed
/// allocation's 0 with its size names memory nobody owns, harmlessly).
fn wrap_allocation(module: &mut Module, id: FunctionId, size: Size, hooks: &RaceHooks) {
    let ty = module.types.get(module.funcs.get(id).ty()).clone();
    let fits = |i: usize| ty.params().get(i) == Some(&ValType::I32);
    let ok = ty.results() == [ValType::I32]
        && match size {
            Size::Arg(i) => fits(i),
            Size::Product(i, j) => fits(i) && fits(j),
        };
    if !ok {
        return;
    }
    let mut b = FunctionBuilder::new(&mut module.types, ty.params(), ty.results());
    let args: Vec<LocalId> = ty.params().iter().map(|t| module.locals.add(*t)).collect();
    let block = module.locals.add(ValType::I32);
    let mut body = b.func_body();
    for a in &args {
        body.local_get(*a);
    }
    body.call(id).local_tee(block);
    match size {
        Size::Arg(i) => {
            body.local_get(args[i]);
        }
        Size::Product(i, j) => {
            body.local_get(args[i])
                .local_get(args[j])
                .binop(BinaryOp::I32Mul);
        }
    }
    body.call(hooks.fresh).local_get(block);
    let wrapper = b.finish(args, &mut module.funcs);
    redirect(module, id, wrapper);
}

/// Makes every call of `posix_memalign(out, align, size)` a call of a
/// wrapper that, when it succeeds (returns 0), tells the detector the block
/// at `*out` is fresh.
fn wrap_posix_memalign(module: &mut Module, id: FunctionId, mem: MemoryId, hooks: &RaceHooks) {
    use walrus::ir::{LoadKind, MemArg, UnaryOp};
    let ty = module.types.get(module.funcs.get(id).ty()).clone();
    if ty.params() != [ValType::I32; 3] || ty.results() != [ValType::I32] {
        return;
    }
    let mut b = FunctionBuilder::new(&mut module.types, ty.params(), ty.results());
    let args: Vec<LocalId> = ty.params().iter().map(|t| module.locals.add(*t)).collect();
    let ret = module.locals.add(ValType::I32);
    let mut body = b.func_body();
    body.local_get(args[0])
        .local_get(args[1])
        .local_get(args[2])
        .call(id)
        .local_tee(ret)
        .unop(UnaryOp::I32Eqz)
        .if_else(
            None,
            |ok| {
                ok.local_get(args[0])
                    .load(
                        mem,
                        LoadKind::I32 { atomic: false },
                        MemArg {
                            align: 4,
                            offset: 0,
                        },
                    )
                    .local_get(args[2])
                    .call(hooks.fresh);
            },
            |_| {},
        );
    body.local_get(ret);
    let wrapper = b.finish(args, &mut module.funcs);
    redirect(module, id, wrapper);
}

/// Makes every call of `from` (but `to`'s) and every table entry of
/// `from` a call of `to`.
fn redirect(module: &mut Module, from: FunctionId, to: FunctionId) {
    let (id, wrapper) = (from, to);
    struct Redirect {
        from: FunctionId,
        to: FunctionId,
    }
    impl walrus::ir::VisitorMut for Redirect {
        fn visit_instr_mut(&mut self, instr: &mut Instr, _: &mut InstrLocId) {
            match instr {
                Instr::Call(c) if c.func == self.from => c.func = self.to,
                Instr::ReturnCall(c) if c.func == self.from => c.func = self.to,
                _ => {}
            }
        }
    }
    let mut v = Redirect {
        from: id,
        to: wrapper,
    };
    let ids: Vec<FunctionId> = module.funcs.iter_local().map(|(f, _)| f).collect();
    for f in ids {
        if f == wrapper {
            continue;
        }
        let func = module.funcs.get_mut(f).kind.unwrap_local_mut();
        let entry = func.entry_block();
        walrus::ir::dfs_pre_order_mut(&mut v, func, entry);
    }
    for elem in module.elements.iter_mut() {
        if let walrus::ElementItems::Functions(fs) = &mut elem.items {
            for f in fs.iter_mut() {
                if *f == id {
                    *f = wrapper;
                }
            }
        }
    }
}

fn local_get(local: LocalId) -> Instr {
    Instr::LocalGet(LocalGet { local })
}

fn local_set(local: LocalId) -> Instr {
    Instr::LocalSet(LocalSet { local })
}

fn i32c(v: i32) -> Instr {
    Instr::Const(Const {
        value: Value::I32(v),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allocators_entry_points_are_known_in_both_manglings() {
        assert_eq!(
            allocates("_RNvCsfLfy6EI15iL_7___rustc11___rdl_alloc"),
            Some(Size::Arg(0))
        );
        assert_eq!(allocates("__rdl_realloc"), Some(Size::Arg(3)));
        assert_eq!(allocates("calloc"), Some(Size::Product(0, 1)));
        assert_eq!(
            allocates("_RNvCsfLfy6EI15iL_7___rustc12___rust_alloc"),
            None
        );
        assert!(allocator_entry(
            "_RNvCsfLfy6EI15iL_7___rustc14___rust_dealloc"
        ));
        assert!(allocator_entry("free"));
        assert_eq!(allocates("my_malloc"), None);
        assert!(!allocator_entry("my_malloc"));
    }

    #[test]
    fn libc_synchronises_its_allocator_is_left_alone_and_its_copies_are_checked() {
        assert_eq!(treat(Some("__pthread_join"), true), Treat::Sync);
        assert_eq!(treat(Some("__wasi_thread_start_C"), true), Treat::Sync);
        assert_eq!(treat(Some("__pthread_create"), true), Treat::Skip);
        assert_eq!(treat(Some("__pthread_mutex_unlock"), true), Treat::Sync);
        assert_eq!(treat(Some("pthread_cond_signal"), true), Treat::Sync);
        assert_eq!(treat(Some("dlfree"), true), Treat::Skip);
        assert_eq!(treat(Some("internal_memalign"), true), Treat::Skip);
        assert_eq!(treat(Some("memcpy"), true), Treat::Check);
        assert_eq!(treat(Some("_ZN4demo4main17h0E"), true), Treat::Check);
        // An SDK guest's unmangled functions are the program's (its tests).
        assert_eq!(treat(Some("wasmrace_test_x"), false), Treat::Check);
        assert_eq!(
            treat(
                Some("_RNvMs0_NtCsjqx8TIyZbP9_8dlmalloc8dlmallocINtB5_8DlmallocNtNtB7_3sys6SystemE6mallocCsebHcaeoSrxy_3std"),
                false
            ),
            Treat::Skip
        );
        assert_eq!(treat(None, true), Treat::Check);
        assert_eq!(
            treat(Some("_RNvCsfLfy6EI15iL_7___rustc13___rdl_realloc"), false),
            Treat::Skip
        );
        assert_eq!(
            treat(
                Some("_ZN3std4sync6poison5mutex14Mutex$LT$T$GT$4lock17h0E"),
                false
            ),
            Treat::Skip
        );
    }
}

/// How reports name the site of a plain access: the source line in the
/// program's own code from the module's DWARF (read when a race is
/// reported, then kept), else the function holding it.
#[derive(Debug, Default)]
pub struct RaceSites {
    /// The original module's named functions by code range, sorted:
    /// `(start, end, demangled name)`.
    functions: Vec<(u32, u32, String)>,
    /// The original module bytes, when they hold DWARF line tables.
    dwarf: Option<Vec<u8>>,
    lines: std::sync::Mutex<std::collections::BTreeMap<u32, Option<String>>>,
}

impl RaceSites {
    /// The sites of module `bytes` (as built), whose functions are
    /// `functions` (`load/walk.rs`'s `function_ranges`).
    pub(crate) fn new(bytes: &[u8], functions: Vec<(u32, u32, String)>) -> RaceSites {
        let has_lines = wasmparser::Parser::new(0).parse_all(bytes).any(
            |p| matches!(p, Ok(wasmparser::Payload::CustomSection(c)) if c.name() == ".debug_line"),
        );
        RaceSites {
            functions,
            dwarf: has_lines.then(|| bytes.to_vec()),
            lines: Default::default(),
        }
    }

    /// `file:line:col` of `site` in the program's own code, else the
    /// function that holds it, else its code offset.
    pub fn describe(&self, site: u32) -> String {
        if let Some(line) = self.line(site) {
            return line;
        }
        let i = self
            .functions
            .partition_point(|(start, _, _)| *start <= site);
        match i.checked_sub(1).and_then(|i| self.functions.get(i)) {
            Some((_, end, name)) if site < *end => format!("in `{name}`"),
            _ => format!("code offset {site:#x}"),
        }
    }

    fn line(&self, site: u32) -> Option<String> {
        let bytes = self.dwarf.as_deref()?;
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        lines
            .entry(site)
            .or_insert_with(|| super::dwarf::site_lines(bytes, &[site]).remove(&site))
            .clone()
    }
}
