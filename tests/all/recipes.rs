//! ARCHITECTURE.md's recipes are true: every source file that names an
//! existing shared-object kind (what adding that kind touched) is listed
//! in "How to add a shared object", and every file the recipe lists
//! exists. A new place that must learn about each kind fails here until
//! the recipe says so.

use std::fs;
use std::path::{Path, PathBuf};

/// Kinds added by the recipe, as (the hook and file name, the type name).
const KINDS: [(&str, &str); 2] = [("barrier", "Barrier"), ("rwlock", "RwLock")];

/// Files that name a kind's word for another reason, with the reason.
const OTHER_MEANING: [(&str, &str); 3] = [
    (
        "crates/wasmrace-host/src/hints.rs",
        "std's RwLock on wasm32-unknown-unknown, whose panic it explains",
    ),
    (
        "crates/wasmrace-host/src/load/races.rs",
        "wasi-libc's pthread_rwlock functions, which synchronise",
    ),
    (
        "crates/wasmrace-explore/src/strategies/systematic/ses/rounds.rs",
        "std's RwLock, which the host itself uses",
    ),
];

/// Where the code that the recipe may touch lives.
const SOURCE_DIRS: [&str; 3] = ["crates", "guest-sdk", "fuzz/src"];

#[test]
fn shared_object_recipe_lists_every_file_a_kind_touches() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let recipe = recipe(root, "## How to add a shared object");
    let mut missing = Vec::new();
    for (word, ty) in KINDS {
        for file in naming(root, word, ty) {
            let generic = file.replace(&format!("/{word}.rs"), "/<kind>.rs");
            let other = OTHER_MEANING.iter().any(|(f, _)| *f == file);
            if !other && !recipe.contains(&generic) && !recipe.contains(&file) {
                missing.push(format!("{file} (names {ty})"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's \"How to add a shared object\" misses files that \
         the kinds touch (list them, or add the file to OTHER_MEANING with \
         why): {missing:?}"
    );
}

#[test]
fn shared_object_recipe_names_only_files_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let recipe = recipe(root, "## How to add a shared object");
    let named: Vec<&str> = recipe
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| s.ends_with(".rs") || s.ends_with(".md"))
        .collect();
    assert!(named.len() >= 8, "the recipe names its files: {named:?}");
    for path in named {
        let path = path.replace("<kind>", KINDS[0].0);
        assert!(
            root.join(&path).is_file(),
            "ARCHITECTURE.md's recipe names `{path}`, which does not exist"
        );
    }
}

/// The section of ARCHITECTURE.md under `heading`, to the next `## `.
fn recipe(root: &Path, heading: &str) -> String {
    let text = fs::read_to_string(root.join("ARCHITECTURE.md")).expect("read ARCHITECTURE.md");
    let start = text.find(heading).expect("the recipe's heading");
    let rest = &text[start + heading.len()..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    rest[..end].to_string()
}

/// The source files (relative to the workspace, `/`-separated) whose
/// non-test code names the kind: its hooks (`barrier_wait`), its
/// operations and roles (`BarrierWait`, `BarrierArrive`) or its type.
/// std's type of the same name (`std::sync::Barrier`) does not count.
fn naming(root: &Path, word: &str, ty: &str) -> Vec<String> {
    let mut files = Vec::new();
    for dir in SOURCE_DIRS {
        rust_files(&root.join(dir), &mut files);
    }
    let mut out: Vec<String> = files
        .into_iter()
        .filter(|f| !is_test_file(f))
        .filter(|f| names_kind(&fs::read_to_string(f).unwrap_or_default(), word, ty))
        .map(|f| relative(root, &f))
        .collect();
    out.sort();
    out
}

/// Whether the code before the file's unit-test module names the kind.
fn names_kind(text: &str, word: &str, ty: &str) -> bool {
    let code = text.split("#[cfg(test)]\nmod ").next().unwrap_or("");
    code.lines().filter(|l| !l.contains("std::sync")).any(|l| {
        mentions(l, &format!("{word}_"), |c| c.is_ascii_lowercase()) || mentions_type(l, ty)
    })
}

/// `ty` as a word, or followed by a capital (`BarrierWait`).
fn mentions_type(line: &str, ty: &str) -> bool {
    mentions(line, ty, |c| c.is_ascii_uppercase() || !c.is_alphanumeric())
}

/// Whether `needle` occurs in `line` at the start of a word, followed by a
/// character `next` accepts (or the end of the line).
fn mentions(line: &str, needle: &str, next: impl Fn(char) -> bool) -> bool {
    line.match_indices(needle).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + needle.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && after.is_none_or(&next)
    })
}

fn is_test_file(path: &Path) -> bool {
    let s = path.to_string_lossy();
    s.contains("/tests/") || s.ends_with("_tests.rs") || s.ends_with("/tests.rs")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() && name != "target" {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.to_string_lossy().replace('\\', "/")
}
