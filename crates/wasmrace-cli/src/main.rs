//! `wasmrace`: the command line of the systematic concurrency tester. One
//! module per subcommand under `commands/`; this file parses arguments, maps
//! outcomes to exit codes (0 no bug, 1 bug, 2 error) and makes sure every
//! error, including an internal panic, ends as one `error: ` line on stderr.

mod bench_report;
mod chart;
#[cfg(test)]
mod cli_reference;
mod commands;
mod files;
mod fold;
mod html;
mod lanes;
mod output;
mod partition;
mod report;
mod verdict;

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use verdict::Verdict;

const AFTER_HELP: &str = "\
Exit status: 0 when no bug was found, 1 when a bug was found (or a replayed
schedule failed), 2 on any error (bad module, bad schedule file, bad flags).
`bench` exits 0 whenever the comparison ran, bugs or not.

Examples:
  wasmrace list app.wasm
  wasmrace check app.wasm
  wasmrace check app.wasm --test lost_update --preemption-bound 3
  wasmrace replay app.wasm wasmrace-schedules/app.lost_update.<tag>.schedule.json
  wasmrace shrink app.wasm wasmrace-schedules/app.lost_update.<tag>.schedule.json -o small.json
  wasmrace bisect app.wasm wasmrace-schedules/app.lost_update.<tag>.schedule.json --exact
  wasmrace bench --strategies pos,pct,random --chart hit-ratios.svg
  wasmrace check app.wasm --strategy random --partition 1/2 --json > p1.json
  wasmrace merge p1.json p2.json";

#[derive(Parser)]
#[command(
    name = "wasmrace",
    version,
    about = "Systematic concurrency testing for programs compiled to WebAssembly",
    long_about = "Systematic concurrency testing for programs compiled to WebAssembly.\n\n\
        wasmrace runs the tests of a guest module (built for wasm32-unknown-unknown \
        with the wasmrace guest SDK) under every interleaving of their threads, \
        up to explicit bounds, and reports the first failing interleaving step by \
        step, with a schedule file that replays it exactly.",
    after_help = AFTER_HELP,
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Check(commands::check::CheckCommand),
    Replay(commands::replay::ReplayCommand),
    Shrink(commands::shrink::ShrinkCommand),
    Bisect(commands::bisect::BisectCommand),
    List(commands::list::ListCommand),
    Bench(commands::bench::BenchCommand),
    Merge(commands::merge::MergeCommand),
    Test(commands::test::TestCommand),
}

fn main() -> ExitCode {
    install_panic_hook();
    // clap prints --help and --version (exit 0); a usage error becomes the
    // one `error:` line every other error is (exit 2).
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            output::error_line(&usage_error(&e.render().to_string()));
            return ExitCode::from(2);
        }
    };
    let result = std::panic::catch_unwind(move || match cli.command {
        Command::Check(c) => c.run(),
        Command::Replay(c) => c.run(),
        Command::Shrink(c) => c.run(),
        Command::Bisect(c) => c.run(),
        Command::List(c) => c.run(),
        Command::Bench(c) => c.run(),
        Command::Merge(c) => c.run(),
        Command::Test(c) => c.run(),
    });
    match result {
        Ok(Ok(Verdict::NoBug)) => ExitCode::from(0),
        Ok(Ok(Verdict::Bug)) => ExitCode::from(1),
        Ok(Err(e)) => {
            output::error_line(&output::error_chain(&e));
            ExitCode::from(2)
        }
        // The panic hook has already printed the one line.
        Err(_) => ExitCode::from(2),
    }
}

/// A panic is a wasmrace bug, never the user's: report it like any other
/// error (one line, exit 2) instead of a multi-line default message, but keep
/// the backtrace available for whoever debugs it.
/// clap's usage error without its `error: ` prefix and without the usage
/// and `--help` lines that follow it (its tips stay, on the same line).
fn usage_error(rendered: &str) -> String {
    let kept: Vec<&str> = rendered
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .collect();
    // A line ending in `:` introduces the next: no `;` between them.
    let text = output::one_line(&kept.join("\n")).replace(":; ", ": ");
    text.strip_prefix("error: ").unwrap_or(&text).to_string()
}

fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        output::error_line(&format!(
            "internal error: {msg}{at}; this is a bug in wasmrace, please report it"
        ));
        if std::env::var_os("RUST_BACKTRACE").is_some() {
            eprintln!("{}", std::backtrace::Backtrace::force_capture());
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn usage_errors_are_one_line() {
        let e = Cli::try_parse_from(["wasmrace", "check", "a.wasm", "--partition", "4/3"])
            .err()
            .unwrap();
        let line = usage_error(&e.render().to_string());
        assert!(
            line.starts_with("invalid value '4/3' for '--partition <K/N>'"),
            "{line}"
        );
        assert!(line.contains("`4/3` is not a partition `K/N`"), "{line}");
        assert!(!line.contains('\n') && !line.contains("Usage"), "{line}");
        let e = Cli::try_parse_from(["wasmrace", "check", "a.wasm", "--sed", "1"])
            .err()
            .unwrap();
        let line = usage_error(&e.render().to_string());
        assert!(
            line.starts_with("unexpected argument '--sed' found"),
            "{line}"
        );
        assert!(
            line.contains("tip: a similar argument exists: '--seed'"),
            "{line}"
        );
    }

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// `--preemption-bound`'s help states the default in prose (it cannot
    /// be a clap default: it is an `Option` that conflicts with
    /// `--unbounded`), so pin it to the library's: the library's default
    /// is the CLI's, the portfolio, opening with DFS bounded at 2.
    #[test]
    fn documented_preemption_bound_is_the_library_default() {
        let default = wasmrace_host::CheckOptions::default().strategy;
        assert_eq!(default, wasmrace_host::StrategyChoice::named("portfolio"));
        assert_eq!(default.options().preemption_bound, Some(Some(2)));
        let help = Cli::command()
            .find_subcommand_mut("check")
            .unwrap()
            .render_long_help()
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(help.contains(
            "at most N preemptions (dfs; dpor: bounded partial-order reduction) [default: 2]"
        ));
    }

    /// Options that only some strategies read are `Option`s, so that giving
    /// one to another strategy is refused even at its default value; their
    /// help states the defaults in prose, pinned here to the library's.
    #[test]
    fn documented_strategy_option_defaults_are_the_library_defaults() {
        let help = Cli::command()
            .find_subcommand_mut("check")
            .unwrap()
            .render_long_help()
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let ses = wasmrace_explore::strategies::SesOptions::default();
        let ss = wasmrace_explore::strategies::SsOptions::default();
        for expected in [
            "Priority change points of `--strategy pct` [default: 3]".to_string(),
            "Delaying explorer of `--strategy ses` and `ss` [default: rtc]".to_string(),
            format!("turns the cache off [default: {}]", ses.cache_mb),
            format!("numsamples(d) = c1 * c2^d) [default: {}]", ss.c1),
            format!(
                "per extra delay of `--strategy ss` (c2) [default: {}]",
                ss.c2
            ),
        ] {
            assert!(help.contains(&expected), "missing {expected:?} in {help}");
        }
    }

    /// Every default a registered strategy declares is the one the help
    /// states: a strategy whose default differs from the prose (or from
    /// another strategy's taking the same option) fails here.
    #[test]
    fn every_registered_default_is_the_documented_one() {
        use wasmrace_explore::strategies::descriptor::Knob;
        use wasmrace_explore::strategies::registry::REGISTRY;
        let help = Cli::command()
            .find_subcommand_mut("check")
            .unwrap()
            .render_long_help()
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for d in REGISTRY {
            let o = &d.defaults;
            for t in d.takes {
                let stated = match t.knob {
                    Knob::PreemptionBound => match o.preemption_bound.expect(d.name) {
                        Some(b) => vec![format!(
                            "at most N preemptions (dfs; dpor: bounded partial-order reduction) \
                             [default: {b}]"
                        )],
                        None => {
                            vec!["without a preemption bound (dfs; dpor's default)".to_string()]
                        }
                    },
                    Knob::Dpor => vec![format!(
                        "Algorithm of `--strategy dpor` [default: {}]",
                        o.dpor.expect(d.name).name()
                    )],
                    Knob::Depth => vec![format!(
                        "Priority change points of `--strategy pct` [default: {}]",
                        o.depth.expect(d.name)
                    )],
                    Knob::StateCache => {
                        assert_eq!(o.state_cache, Some(false), "{}: off unless given", d.name);
                        vec!["Do not explore a state twice".to_string()]
                    }
                    Knob::DelayBound => {
                        assert_eq!(o.delay_bound, Some(None), "{}", d.name);
                        vec!["at most N delays (ses only) [default: no bound,".to_string()]
                    }
                    Knob::Explorer => vec![format!(
                        "`--strategy ses` and `ss` [default: {}]",
                        o.explorer.expect(d.name).name()
                    )],
                    Knob::CacheMb => vec![format!(
                        "turns the cache off [default: {}]",
                        o.cache_mb.expect(d.name)
                    )],
                    Knob::Samples => vec![
                        format!("c1 * c2^d) [default: {}]", o.c1.expect(d.name)),
                        format!("(c2) [default: {}]", o.c2.expect(d.name)),
                    ],
                    Knob::FrontierMb => vec![format!(
                        "the run stops, not exhausted [default: {}]",
                        o.frontier_mb.expect(d.name)
                    )],
                };
                for s in stated {
                    assert!(help.contains(&s), "{}: missing {s:?} in {help}", d.name);
                }
            }
        }
    }

    /// `--strategy` accepts exactly the registered names, each with its
    /// line of help, the registry's default first.
    #[test]
    fn strategy_values_are_the_registry() {
        use wasmrace_explore::strategies::registry::{default_descriptor, NAMES, REGISTRY};
        let cmd = Cli::command();
        let check = cmd.find_subcommand("check").unwrap();
        let arg = check
            .get_arguments()
            .find(|a| a.get_id() == "strategy")
            .unwrap();
        let values = arg.get_possible_values();
        let names: Vec<&str> = values.iter().map(|v| v.get_name()).collect();
        assert_eq!(names, NAMES);
        assert_eq!(names, wasmrace_host::STRATEGY_NAMES);
        for (v, d) in values.iter().zip(REGISTRY) {
            assert_eq!(
                v.get_help().map(|h| h.to_string()).as_deref(),
                Some(d.about)
            );
        }
        let default: Vec<_> = arg.get_default_values().iter().collect();
        assert_eq!(default, [default_descriptor().name]);
    }
}
