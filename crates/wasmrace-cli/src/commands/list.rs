//! `wasmrace list`: the tests a module exports, one per line, for scripts
//! and for picking a `--test`.

use crate::output;
use crate::report;
use crate::Verdict;
use anyhow::Result;
use std::path::PathBuf;

const AFTER_HELP: &str = "\
The module is validated and audited exactly as `check` does, but not
instrumented or compiled, so listing is instant and needs no wasm-opt.

Examples:
  wasmrace list app.wasm
  for t in $(wasmrace list app.wasm); do wasmrace check app.wasm --test \"$t\"; done";

/// List the tests of a module
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct ListCommand {
    /// The guest module (.wasm)
    #[arg(value_name = "MODULE")]
    module: PathBuf,
}

impl ListCommand {
    pub fn run(self) -> Result<Verdict> {
        let limit = wasmrace_host::HostConfig::default().max_module_bytes;
        let bytes = wasmrace_host::load::read_module(&self.module, limit)?;
        // The same audit `Guest::load` starts with, so `list` refuses what
        // `check` would refuse, with the same message.
        let analysis = wasmrace_host::load::analyze(&self.module.display().to_string(), &bytes)?;
        let mut text = String::new();
        for t in &analysis.tests {
            // One name a line, whatever the export's name holds.
            text.push_str(&report::shown(t));
            text.push('\n');
        }
        output::print(&text)?;
        Ok(Verdict::NoBug)
    }
}
