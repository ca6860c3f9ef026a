//! Validation (wasmparser, errors with byte offsets), the import audit
//! (hooks are the only door to the outside world) and test discovery
//! (`wasmrace_test_*` exports).

use super::support::{self, Declared};
use super::{
    HOOK_MODULE, PLAIN_HOOKS, SDK_EXPORT_PREFIXES, SUSPENDING_HOOKS, TEST_PREFIX, THREAD_START,
};
use crate::error::HostError;

/// What the audit learned about a module.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    /// The tests the module exports (names without `wasmrace_test_`),
    /// sorted.
    pub tests: Vec<String>,
    /// The module exports `__wasmrace_thread_start`.
    pub has_thread_start: bool,
    /// The module imports the `spawn` hook (so it needs a thread start).
    pub imports_spawn: bool,
    /// The code changes a table at run time (`table.set`, `table.grow`,
    /// ...). Snapshots hold memory, globals and host objects, not tables,
    /// so such a guest gets no snapshots: exploration replays instead.
    pub mutates_tables: bool,
    /// The module has a mutable global of a reference type (`funcref`,
    /// `externref`). Snapshots and state hashes hold globals as numbers,
    /// so such a guest, like one that changes its tables, gets neither.
    pub mutable_ref_globals: bool,
    /// The memory and tables the module declares.
    pub declared: Declared,
    /// A std guest's facts (`load/wasi.rs`), or `None` for an SDK guest.
    pub std: Option<super::StdInfo>,
    /// What reports need to name the sites of plain accesses when data
    /// races are detected (`load/races.rs`).
    pub races: Option<std::sync::Arc<super::RaceSites>>,
}

impl Analysis {
    /// Whether snapshots and state hashes hold the guest's whole state
    /// (memory, globals and host objects): not when it changes its tables
    /// or keeps references in mutable globals.
    pub fn state_is_whole(&self) -> bool {
        !self.mutates_tables && !self.mutable_ref_globals
    }
}

/// Validates `bytes` and audits its imports and exports.
pub fn analyze(name: &str, bytes: &[u8]) -> Result<Analysis, HostError> {
    if !bytes.starts_with(b"\0asm") {
        return Err(HostError::NotWasm { name: name.into() });
    }
    // Validated as WebAssembly 2.0, what every stage of loading handles: a
    // module using a later proposal is told which, here, instead of failing
    // in `wasm-opt` or wasmtime on what instrumentation made of it.
    wasmparser::Validator::new_with_features(support::SUPPORTED)
        .validate_all(bytes)
        .map_err(|e| support::unsupported(name, bytes, e))?;
    let scan = Scan::read(name, bytes)?;
    scan.check_imports(name)?;
    scan.into_analysis(name)
}

/// What one pass over a module's sections collects for the audit.
#[derive(Default)]
struct Scan {
    /// Function types by type index: parameters and results.
    func_types: Vec<(Vec<wasmparser::ValType>, Vec<wasmparser::ValType>)>,
    /// Type index by function index, imports first.
    func_type_of: Vec<u32>,
    /// Imports from another module than the hooks'.
    forbidden: Vec<String>,
    /// Hook imports the host does not provide.
    unknown: Vec<String>,
    /// Exports: name, kind, index.
    exports: Vec<(String, wasmparser::ExternalKind, u32)>,
    analysis: Analysis,
}

impl Scan {
    fn read(name: &str, bytes: &[u8]) -> Result<Scan, HostError> {
        use wasmparser::Payload;
        let err = |e: wasmparser::BinaryReaderError| HostError::Invalid {
            name: name.into(),
            message: e.message().to_string(),
            offset: e.offset(),
        };
        let mut scan = Scan::default();
        for payload in wasmparser::Parser::new(0).parse_all(bytes) {
            match payload.map_err(err)? {
                Payload::TypeSection(r) => {
                    for rec in r.into_iter_err_on_gc_types() {
                        let ft = rec.map_err(err)?;
                        scan.func_types
                            .push((ft.params().to_vec(), ft.results().to_vec()));
                    }
                }
                Payload::ImportSection(r) => {
                    for imp in r.into_imports() {
                        scan.import(&imp.map_err(err)?);
                    }
                }
                Payload::MemorySection(r) => {
                    for m in r {
                        let m = m.map_err(err)?;
                        scan.analysis.declared.memory_initial = m.initial;
                        scan.analysis.declared.memory_maximum = m.maximum;
                    }
                }
                Payload::TableSection(r) => {
                    for t in r {
                        let t = t.map_err(err)?;
                        let d = &mut scan.analysis.declared;
                        d.tables += 1;
                        d.table_elements = d.table_elements.max(t.ty.initial);
                    }
                }
                Payload::FunctionSection(r) => {
                    for t in r {
                        scan.func_type_of.push(t.map_err(err)?);
                    }
                }
                Payload::GlobalSection(r) => {
                    for g in r {
                        let ty = g.map_err(err)?.ty;
                        let is_ref = matches!(ty.content_type, wasmparser::ValType::Ref(_));
                        scan.analysis.mutable_ref_globals |= ty.mutable && is_ref;
                    }
                }
                Payload::CodeSectionEntry(body) if !scan.analysis.mutates_tables => {
                    scan.analysis.mutates_tables = changes_tables(&body).map_err(err)?;
                }
                Payload::ExportSection(r) => {
                    for e in r {
                        let e = e.map_err(err)?;
                        scan.exports.push((e.name.to_string(), e.kind, e.index));
                    }
                }
                _ => {}
            }
        }
        Ok(scan)
    }

    fn import(&mut self, imp: &wasmparser::Import<'_>) {
        let full = format!("`{}::{}`", imp.module, imp.name);
        if imp.module != HOOK_MODULE {
            self.forbidden.push(full);
        } else if !SUSPENDING_HOOKS.contains(&imp.name) && !PLAIN_HOOKS.contains(&imp.name) {
            self.unknown.push(full);
        } else if imp.name == "spawn" {
            self.analysis.imports_spawn = true;
        }
        if let wasmparser::TypeRef::Func(t) = imp.ty {
            self.func_type_of.push(t);
        }
    }

    /// Imports from elsewhere than the hooks, or of hooks the host lacks.
    fn check_imports(&self, name: &str) -> Result<(), HostError> {
        if !self.forbidden.is_empty() {
            return Err(HostError::ForbiddenImports {
                name: name.into(),
                imports: self.forbidden.join(", "),
            });
        }
        if !self.unknown.is_empty() {
            let mut provided: Vec<&str> = SUSPENDING_HOOKS
                .iter()
                .chain(PLAIN_HOOKS)
                .copied()
                .collect();
            provided.sort_unstable();
            return Err(HostError::UnknownHook {
                name: name.into(),
                hooks: self.unknown.join(", "),
                provided: format!("`{}`", provided.join("`, `")),
            });
        }
        Ok(())
    }

    /// The analysis from the exports: tests, thread start, memory; refused
    /// when a required export is missing or has the wrong type.
    fn into_analysis(self, name: &str) -> Result<Analysis, HostError> {
        use wasmparser::{ExternalKind, ValType};
        let mut analysis = self.analysis;
        let mut has_memory = false;
        let mut thread_start_type = None;
        for (ename, kind, index) in self.exports {
            let reserved = (ename.starts_with("__wasmrace_")
                && !SDK_EXPORT_PREFIXES.iter().any(|p| ename.starts_with(p)))
                || ename.starts_with("asyncify_");
            if reserved {
                return Err(HostError::ReservedExport {
                    name: name.into(),
                    export: ename,
                });
            }
            match kind {
                ExternalKind::Memory if ename == "memory" => has_memory = true,
                ExternalKind::Func => {
                    let ty = self
                        .func_type_of
                        .get(index as usize)
                        .and_then(|t| self.func_types.get(*t as usize));
                    let nullary = ty.is_some_and(|(p, r)| p.is_empty() && r.is_empty());
                    if let Some(test) = ename.strip_prefix(TEST_PREFIX) {
                        if nullary && !test.is_empty() {
                            analysis.tests.push(test.to_string());
                        }
                    } else if ename == THREAD_START {
                        analysis.has_thread_start =
                            ty.is_some_and(|(p, r)| p == &[ValType::I32] && r.is_empty());
                        if let Some((p, r)) = ty.filter(|_| !analysis.has_thread_start) {
                            thread_start_type = Some(func_type_text(p, r));
                        }
                    }
                }
                _ => {}
            }
        }
        if !has_memory {
            return Err(HostError::NoMemory { name: name.into() });
        }
        if analysis.tests.is_empty() {
            return Err(HostError::NoTests { name: name.into() });
        }
        // A module that never spawns does not care what its thread start is.
        if let Some(found) = thread_start_type.filter(|_| analysis.imports_spawn) {
            return Err(HostError::ThreadStartType {
                name: name.into(),
                found,
            });
        }
        if analysis.imports_spawn && !analysis.has_thread_start {
            return Err(HostError::NoThreadStart { name: name.into() });
        }
        analysis.tests.sort();
        Ok(analysis)
    }
}

/// Whether a function body changes a table at run time.
fn changes_tables(
    body: &wasmparser::FunctionBody<'_>,
) -> Result<bool, wasmparser::BinaryReaderError> {
    use wasmparser::Operator as O;
    let mut ops = body.get_operators_reader()?;
    while !ops.eof() {
        if matches!(
            ops.read()?,
            O::TableSet { .. }
                | O::TableGrow { .. }
                | O::TableFill { .. }
                | O::TableCopy { .. }
                | O::TableInit { .. }
        ) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A function type in the text format, as wasmtime prints one:
/// `(func (param i32) (result i64))`.
fn func_type_text(params: &[wasmparser::ValType], results: &[wasmparser::ValType]) -> String {
    let list = |what: &str, tys: &[wasmparser::ValType]| {
        if tys.is_empty() {
            String::new()
        } else {
            let t: Vec<String> = tys.iter().map(|t| t.to_string()).collect();
            format!(" ({what} {})", t.join(" "))
        }
    };
    format!("(func{}{})", list("param", params), list("result", results))
}
