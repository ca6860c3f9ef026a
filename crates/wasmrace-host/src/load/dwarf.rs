//! Source lines of a std guest's scheduling points, from the module's DWARF
//! (`addr2line`, over `gimli`: a well-kept reader of the format, where our
//! own would be thousands of lines): for each site (an atomic
//! instruction's offset in the code section, which is how wasm DWARF counts
//! addresses), the line of the innermost frame in the program's own code,
//! skipping std's (`/rustc/...`) and dependencies' (`.cargo/registry`), so
//! that a step says `std-counter/src/lib.rs:27:9` rather than
//! `core/src/sync/atomic.rs`. Read once at load time; a module without
//! DWARF, or a site with no frame of the program's, has no line.

use std::collections::BTreeMap;

/// The line of each of `sites` that the DWARF sections of `bytes` know.
pub fn site_lines(bytes: &[u8], sites: &[u32]) -> BTreeMap<u32, String> {
    let mut lines = BTreeMap::new();
    let Some(ctx) = context(bytes) else {
        return lines;
    };
    for &site in sites {
        if let Some(line) = user_line(&ctx, site) {
            lines.insert(site, line);
        }
    }
    lines
}

type Reader<'a> = gimli::EndianSlice<'a, gimli::LittleEndian>;

/// The DWARF of `bytes`' custom sections, if it has a line table.
fn context(bytes: &[u8]) -> Option<addr2line::Context<Reader<'_>>> {
    let mut sections: BTreeMap<&str, &[u8]> = BTreeMap::new();
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        if let Ok(wasmparser::Payload::CustomSection(c)) = payload {
            if c.name().starts_with(".debug_") {
                sections.insert(c.name(), c.data());
            }
        }
    }
    if !sections.contains_key(".debug_line") {
        return None;
    }
    let dwarf = gimli::Dwarf::load(|id| {
        let data = sections.get(id.name()).copied().unwrap_or(&[]);
        Ok::<_, gimli::Error>(gimli::EndianSlice::new(data, gimli::LittleEndian))
    })
    .ok()?;
    addr2line::Context::from_dwarf(dwarf).ok()
}

/// Whether `file` is std's, wasi-libc's (C) or a dependency's source, not
/// the program's.
fn foreign(file: &str) -> bool {
    file.starts_with("/rustc/")
        || file.contains("/.cargo/registry/")
        || file.contains("/library/")
        || file.ends_with(".c")
        || file.ends_with(".h")
}

/// `file:line:col` of the innermost frame at `site` in the program's own
/// code, if one is (else the function's name says more).
fn user_line(ctx: &addr2line::Context<Reader<'_>>, site: u32) -> Option<String> {
    let mut frames = ctx.find_frames(u64::from(site)).skip_all_loads().ok()?;
    while let Ok(Some(frame)) = frames.next() {
        let Some(loc) = frame.location else { continue };
        let (Some(file), Some(line)) = (loc.file, loc.line) else {
            continue;
        };
        if !foreign(file) {
            return Some(format!(
                "{}:{line}:{}",
                short(file),
                loc.column.unwrap_or(0)
            ));
        }
    }
    None
}

/// A source path as reports show it: from the crate's folder on
/// (`std-counter/src/lib.rs`), as a panic in a workspace member names it.
fn short(file: &str) -> &str {
    match file.rfind("/src/") {
        Some(i) => match file[..i].rfind('/') {
            Some(j) => &file[j + 1..],
            None => file,
        },
        None => file,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_shown_from_the_crate_folder_on() {
        assert_eq!(
            short("/work/x/examples/std-counter/src/lib.rs"),
            "std-counter/src/lib.rs"
        );
        assert_eq!(short("std_harness/src/lib.rs"), "std_harness/src/lib.rs");
        assert_eq!(short("src/lib.rs"), "src/lib.rs");
        assert_eq!(short("/tmp/build.rs"), "/tmp/build.rs");
        assert!(foreign("/rustc/59807616/library/core/src/sync/atomic.rs"));
        assert!(foreign(
            "/opt/wasi-libc/libc-top-half/musl/src/thread/__wait.c"
        ));
        assert!(!foreign("/work/x/src/lib.rs"));
    }

    #[test]
    fn a_module_without_dwarf_has_no_lines() {
        let bytes = wat::parse_str("(module (func))").unwrap();
        assert!(site_lines(&bytes, &[0, 1, 2]).is_empty());
    }
}
