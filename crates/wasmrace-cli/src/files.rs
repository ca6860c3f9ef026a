//! The one rule for the files a command writes (docs/files.md), and the
//! reading of the inputs the host does not read itself (`merge`'s parts).
//!
//! Reading is `wasmrace_trace::files::read_capped` for every kind (modules
//! through the host, schedules through `Schedule::read`, parts here): a
//! regular file only, under a cap named in the error. Writing is
//! [`write()`]: never onto a file the command reads ([`Inputs`]: canonical
//! path and device and inode), never through a symbolic link and never in
//! place of one (a link at the name is refused: following it writes
//! wherever it points, and replacing it would undo `/dev/stdout` or a
//! link the user keeps), never onto a FIFO or a device, and atomically
//! (written beside, then renamed over the name): a reader sees the old file
//! or the new one, never half of one.

use anyhow::{bail, Result};
use std::fs::Metadata;
use std::io::Write;
use std::path::{Path, PathBuf};
use wasmrace_trace::files::{kind_of, read_capped, same_file, ReadError};

/// A path as reports and errors show it: control characters escaped, so
/// a name holding a terminal escape or a newline prints as text.
pub fn shown_path(path: &Path) -> String {
    wasmrace_trace::text::shown(&path.display().to_string()).into_owned()
}

/// Largest part `merge` reads by default, in MiB (`--max-part-mb`): a
/// part is a report with one trace per bug, each under the host's log
/// bound, so 64 MiB holds hundreds of tests' bugs.
pub const DEFAULT_MAX_PART_MB: u64 = 64;

/// The bytes of one part of `merge`, read by the rule every input
/// follows; `max_bytes` is `--max-part-mb`'s (`wasmrace_merge::parse`
/// takes them from there).
pub fn read_part(path: &Path, max_bytes: u64) -> Result<Vec<u8>> {
    let name = shown_path(path);
    read_capped(path, max_bytes).map_err(|e| match e {
        ReadError::TooLarge { size, .. } => anyhow::anyhow!(
            "`{name}` is {size} bytes, over the limit of {} MiB for a part; raise --max-part-mb",
            max_bytes >> 20
        ),
        e => anyhow::anyhow!("cannot read `{name}`: {e}"),
    })
}

/// One file a command reads: where it is and which file it is.
struct Input {
    canonical: Option<PathBuf>,
    meta: Option<Metadata>,
}

/// The files a command reads, which it never writes onto.
#[derive(Default)]
pub struct Inputs(Vec<Input>);

impl Inputs {
    /// The inputs at `paths` (one that does not exist is not there to
    /// overwrite: reading it fails on its own).
    pub fn of<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Inputs {
        Inputs(
            paths
                .into_iter()
                .map(|p| Input {
                    canonical: std::fs::canonicalize(p).ok(),
                    meta: std::fs::metadata(p).ok(),
                })
                .collect(),
        )
    }

    /// Whether writing at `out` would replace one of the inputs: the same
    /// canonical path (through the folder's links), or the same file.
    fn holds(&self, out: &Path, existing: Option<&Metadata>) -> bool {
        let canonical = canonical_target(out);
        self.0.iter().any(|i| {
            let by_path = canonical.is_some() && i.canonical == canonical;
            let by_id = matches!((&i.meta, existing), (Some(a), Some(b)) if same_file(a, b));
            by_path || by_id
        })
    }
}

/// `out` with its folder made canonical (the name itself is not
/// resolved: a link there is refused, not followed).
fn canonical_target(out: &Path) -> Option<PathBuf> {
    let name = out.file_name()?;
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(std::fs::canonicalize(dir).ok()?.join(name))
}

/// Refuses an output the rule forbids, before anything is written: the
/// commands call it first, so that a long run does not end in a refusal.
/// `what` names the output in the error (`schedule file`, `html report`).
pub fn check_output(out: &Path, what: &str, inputs: &Inputs) -> Result<()> {
    let name = shown_path(out);
    let existing = std::fs::symlink_metadata(out).ok();
    if existing.as_ref().is_some_and(Metadata::is_symlink) {
        bail!(
            "cannot write {what} `{name}`: it is a symbolic link; wasmrace neither writes \
             through a link nor replaces one it did not make"
        );
    }
    if let Some(m) = existing.as_ref().filter(|m| !m.is_file()) {
        bail!(
            "cannot write {what} `{name}`: it is {}; wasmrace writes regular files only",
            kind_of(m)
        );
    }
    if inputs.holds(out, existing.as_ref()) {
        bail!("cannot write {what} `{name}`: it is a file this command reads");
    }
    Ok(())
}

/// Writes `bytes` to `out` by the rule: checked ([`check_output`]), then
/// written to a new file beside it and renamed over the name.
pub fn write(out: &Path, bytes: &[u8], what: &str, inputs: &Inputs) -> Result<()> {
    check_output(out, what, inputs)?;
    let name = shown_path(out);
    let (temp, mut file) =
        create_beside(out).map_err(|e| anyhow::anyhow!("cannot write {what} `{name}`: {e}"))?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.flush())
        .and_then(|()| std::fs::rename(&temp, out));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        bail!("cannot write {what} `{name}`: {e}");
    }
    Ok(())
}

/// A new file in `out`'s folder, named after it and this process, created
/// exclusively (`create_new` follows no link: a name taken by anything,
/// a link planted there included, is passed over). A link planted at `out`
/// between the check and the rename is replaced, never followed.
fn create_beside(out: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    let base = out
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let mut last = None;
    for i in 0..16 {
        let temp = out.with_file_name(format!(".{base}.{}-{i}.tmp", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
        {
            Ok(f) => return Ok((temp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free name beside it")))
}

/// Most threads `--jobs` takes: each is a thread with its own instance of
/// the module (a slot of the instance pool, a signal stack, its own
/// strategy), so the count must be a resource the machine has. 256 is past
/// the cores of any machine wasmrace runs on today, and far below where
/// thread creation or the instance pool's reservations fail.
pub const MAX_JOBS: u32 = 256;

/// `--jobs`, parsed: 1 to [`MAX_JOBS`] (clap's value parser: its message
/// ends up on the one `error:` line, which names the flag).
pub fn parse_jobs(s: &str) -> Result<u32, String> {
    let n: u64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of threads"))?;
    match n {
        0 => Err("`--jobs` must be at least 1".into()),
        n if n > u64::from(MAX_JOBS) => Err(format!(
            "`--jobs {n}` is over the maximum of {MAX_JOBS} threads (MAX_JOBS)"
        )),
        n => Ok(n as u32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("wasmrace-cli-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn never_writes_onto_an_input_by_path_or_by_identity() {
        let d = dir("inputs");
        let input = d.join("m.wasm");
        std::fs::write(&input, b"module").unwrap();
        let inputs = Inputs::of([input.as_path()]);
        let e = write(&input, b"x", "report", &inputs).unwrap_err();
        assert!(
            e.to_string().contains("it is a file this command reads"),
            "{e}"
        );
        // Another name for the same file.
        let hard = d.join("hard.wasm");
        std::fs::hard_link(&input, &hard).unwrap();
        assert!(write(&hard, b"x", "report", &inputs).is_err());
        assert_eq!(std::fs::read(&input).unwrap(), b"module");
    }

    #[cfg(unix)]
    #[test]
    fn neither_writes_through_a_link_nor_replaces_it() {
        let d = dir("link");
        let target = d.join("target");
        std::fs::write(&target, b"keep").unwrap();
        let link = d.join("out.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = write(&link, b"new", "schedule file", &Inputs::default()).unwrap_err();
        assert!(e.to_string().contains("it is a symbolic link"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        // A regular file is replaced whole, and nothing is left beside it.
        let out = d.join("plain.json");
        std::fs::write(&out, b"old").unwrap();
        write(&out, b"new", "schedule file", &Inputs::default()).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"new");
        let left: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
        assert_eq!(left.len(), 3, "no temporary file left");
    }

    #[test]
    fn refuses_devices_and_folders_as_outputs() {
        let d = dir("devices");
        let e = write(&d, b"x", "html report", &Inputs::default()).unwrap_err();
        assert!(e.to_string().contains("it is a directory"), "{e}");
        if Path::new("/dev/full").exists() {
            let e = check_output(Path::new("/dev/full"), "x", &Inputs::default()).unwrap_err();
            assert!(e.to_string().contains("it is a device"), "{e}");
        }
    }

    #[test]
    fn jobs_are_bounded_and_say_which_flag() {
        assert_eq!(parse_jobs("256"), Ok(256));
        assert_eq!(parse_jobs("0").unwrap_err(), "`--jobs` must be at least 1");
        for big in ["257", "100000", "4294967295", "99999999999999999999"] {
            let e = parse_jobs(big).unwrap_err();
            assert!(e.contains("--jobs") || e.contains("not a number"), "{e}");
        }
        assert!(parse_jobs("4294967295")
            .unwrap_err()
            .contains("maximum of 256"));
    }
}
