//! docs/cli-reference.md, generated from the clap definitions, and the test
//! that fails when the checked-in page drifts from them. Regenerate it with
//! `WASMRACE_BLESS=1 cargo test -p wasmrace-cli cli_reference`.
//!
//! clap-markdown writes the page (a table of contents, then every command's
//! about, usage, arguments and options with their help, defaults and
//! possible values). It copies each command's `after_help` as Markdown, but
//! ours is terminal text (indented examples, a `.cargo/config.toml`
//! snippet, `<program>.wasm`), so it goes in a `text` block here, exactly
//! as `--help` prints it.

use clap::CommandFactory;

/// The page, checked in at this path of the repository.
const PAGE: &str = "docs/cli-reference.md";

/// How to regenerate the page, named by the test when it fails.
const BLESS: &str = "WASMRACE_BLESS=1 cargo test -p wasmrace-cli cli_reference";

/// The page for `wasmrace`'s clap definitions.
fn markdown() -> String {
    let cli = crate::Cli::command();
    let options = clap_markdown::MarkdownOptions::new()
        .title("`wasmrace` command-line reference".into())
        .show_footer(false);
    let mut page = clap_markdown::help_markdown_command_custom(&cli, &options);
    let intro =
        "This document contains the help content for the `wasmrace` command-line program.\n";
    let ours = format!(
        "Generated from the clap definitions in `crates/wasmrace-cli` (the text of \
         `wasmrace --help` and each command's `--help`); do not edit it by hand: \
         regenerate it with `{BLESS}`. The user guide is [cli.md](cli.md).\n"
    );
    replace_once(&mut page, intro, &ours);
    let mut commands = vec![&cli];
    commands.extend(cli.get_subcommands());
    for command in commands {
        if let Some(after) = command.get_after_help() {
            let after = after.to_string();
            let fenced = format!("```text\n{after}\n```\n\n");
            replace_once(&mut page, &format!("{after}\n\n"), &fenced);
        }
    }
    // clap-markdown separates commands by several blank lines: one will do.
    while page.contains("\n\n\n") {
        page = page.replace("\n\n\n", "\n\n");
    }
    page.trim_end().to_string() + "\n"
}

/// Replaces the one occurrence of `from` in `page`: a layout clap-markdown
/// no longer writes fails here rather than leaving a page half-fixed.
fn replace_once(page: &mut String, from: &str, to: &str) {
    assert_eq!(
        page.matches(from).count(),
        1,
        "expected {from:?} once in clap-markdown's page"
    );
    *page = page.replacen(from, to, 1);
}

#[test]
fn cli_reference_is_up_to_date() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(PAGE);
    let generated = markdown();
    if std::env::var_os("WASMRACE_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let Ok(checked_in) = std::fs::read_to_string(&path) else {
        panic!("{PAGE} is missing; generate it with `{BLESS}` and commit it");
    };
    if checked_in != generated {
        let line = checked_in
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| checked_in.lines().count().min(generated.lines().count()));
        panic!(
            "{PAGE} is not what the clap definitions generate (first difference at line {}); \
             regenerate it with `{BLESS}` and commit it",
            line + 1
        );
    }
}

/// The page covers what the brief of the reference promises: every
/// command, every visible flag with its help, and the examples.
#[test]
fn cli_reference_covers_every_command_and_flag() {
    let page = markdown();
    let cli = crate::Cli::command();
    for command in cli.get_subcommands() {
        let name = command.get_name();
        assert!(page.contains(&format!("## `wasmrace {name}`")), "{name}");
        for arg in command.get_arguments().filter(|a| !a.is_hide_set()) {
            if let Some(long) = arg.get_long() {
                assert!(page.contains(&format!("`--{long}")), "{name} --{long}");
            }
        }
        if let Some(after) = command.get_after_help() {
            assert!(page.contains(&format!("```text\n{after}\n```")), "{name}");
        }
    }
    assert!(page.contains("wasmrace merge p1.json p2.json\n```"));
}

/// The hand-written command lines of the user pages (the README, docs/,
/// each command's `--help` examples) name only flags their command has, so
/// that a renamed or removed flag cannot live on in a usage line.
#[test]
fn command_lines_in_the_docs_name_real_flags() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cli = crate::Cli::command();
    let mut pages = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    let mut bad = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for line in text.lines() {
            let Some((command, flags)) = command_line(&cli, line) else {
                continue;
            };
            checked += 1;
            // A command that passes what follows on (`test`'s libtest
            // arguments) takes any flag.
            let passes_on = command.get_arguments().any(|a| a.is_trailing_var_arg_set());
            for flag in flags.into_iter().filter(|_| !passes_on) {
                let known = command
                    .get_arguments()
                    .chain(cli.get_arguments())
                    .any(|a| a.get_long() == Some(flag.as_str()));
                if !known {
                    bad.push(format!("{}: --{flag} in `{line}`", page.display()));
                }
            }
        }
    }
    assert!(checked > 30, "found only {checked} command lines");
    assert!(bad.is_empty(), "flags no command has: {bad:#?}");
}

/// A line that runs `wasmrace SUBCOMMAND ...` (alone, after `$ `, after a
/// pipe or `&&`): its subcommand and the long flags it names.
fn command_line<'a>(
    cli: &'a clap::Command,
    line: &str,
) -> Option<(&'a clap::Command, Vec<String>)> {
    let at = line.find("wasmrace ")?;
    let before = line[..at].trim_end();
    let starts = before.is_empty()
        || before.ends_with('$')
        || before.ends_with("&&")
        || before.ends_with('|')
        || before.ends_with('`')
        || before.ends_with("wasmrace/target/debug/");
    if !starts {
        return None;
    }
    let rest = &line[at + "wasmrace ".len()..];
    let name = rest.split_whitespace().next()?;
    let command = cli.find_subcommand(name)?;
    let words = rest.split(['`', '|']).next().unwrap_or(rest);
    let flags = words
        .split(|c: char| c.is_whitespace() || c == '[' || c == ']' || c == '=')
        .filter_map(|w| w.strip_prefix("--"))
        .filter(|f| {
            !f.is_empty()
                && f.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        })
        .map(str::to_string)
        .collect();
    Some((command, flags))
}

#[test]
fn command_lines_are_found_with_their_flags() {
    let cli = crate::Cli::command();
    let flags = |line: &str| command_line(&cli, line).map(|(c, f)| (c.get_name().to_string(), f));
    assert_eq!(
        flags("$ wasmrace check app.wasm --no-such-flag [--seed N]"),
        Some(("check".into(), vec!["no-such-flag".into(), "seed".into()]))
    );
    assert_eq!(
        flags("wasmrace check app.wasm --json | jq '.tests[] --x'"),
        Some(("check".into(), vec!["json".into()]))
    );
    assert_eq!(flags("the wasmrace check command takes --seed"), None);
    assert_eq!(flags("wasmrace nosuchcommand --seed"), None);
}
