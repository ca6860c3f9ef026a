//! `wasmrace list`: the tests a module exports, one per line, for scripts
//! and for picking a `--test`.

use crate::output;
use crate::report;
use crate::verdict::Verdict;
use anyhow::Result;
use std::path::PathBuf;

const AFTER_HELP: &str = "\
The module is validated and audited exactly as `check` does, but not
instrumented or compiled, so listing is instant and needs no wasm-opt. A
std guest (wasm32-wasip1-threads) is loaded: a `bin` is one test, `main`;
a libtest harness is run with `--list` to learn its tests.

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
        let name = self.module.display().to_string();
        // A std guest's tests: a command's is `main`, a libtest harness's
        // are listed by running it (`Guest::load` does).
        let tests = if wasmrace_host::load::is_std(&bytes) {
            let config = wasmrace_host::HostConfig::default();
            wasmrace_host::Guest::from_bytes(&name, &bytes, config)?
                .tests()
                .to_vec()
        } else {
            wasmrace_host::load::analyze(&name, &bytes)?.tests
        };
        let mut text = String::new();
        for t in &tests {
            // One name a line, whatever the export's name holds.
            text.push_str(&report::shown(t));
            text.push('\n');
        }
        output::print(&text)?;
        Ok(Verdict::NoBug)
    }
}
