//! Reading a file wasmrace was given: a regular file only, never more than
//! the cap of its kind. Every reader goes through [`read_capped`] (the
//! host's modules and cache entries, schedule files, `merge`'s parts), so a
//! FIFO, a device or a directory is one error at once rather than a hang,
//! and a huge or growing file is refused rather than read into memory.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;

/// Why a file could not be read. The caller names the file and the flag
/// or constant of the cap: this error says only what was wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Opening or reading failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A directory, a FIFO, a device or a socket (`kind` says which, as
    /// `a FIFO`).
    #[error("it is {kind}, not a regular file")]
    NotRegular {
        /// What the path names instead, with its article.
        kind: &'static str,
    },
    /// Larger than the cap: `size` bytes (at least, for a file that grew
    /// while it was read).
    #[error("it is {size} bytes, over the limit of {limit} bytes")]
    TooLarge {
        /// The size seen.
        size: u64,
        /// The cap.
        limit: u64,
    },
}

/// What a file that is not a regular one is, with its article.
pub fn kind_of(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    match () {
        () if t.is_dir() => "a directory",
        () if t.is_symlink() => "a symbolic link",
        () if t.is_file() => "a regular file",
        () => "not a file",
    }
}

/// The bytes of the regular file at `path`, at most `max_bytes` of them.
///
/// The path is checked before it is opened (a FIFO is never opened for
/// reading, which would block until a writer comes), opened without
/// blocking, and checked again through the open file, which must be the one
/// checked: a path swapped for a FIFO in between is refused too. The read
/// stops one byte past the cap, so a file that grows while read is refused
/// without being read whole.
pub fn read_capped(path: &Path, max_bytes: u64) -> Result<Vec<u8>, ReadError> {
    let before = std::fs::metadata(path)?;
    regular(&before, max_bytes)?;
    let file = open_nonblocking(path)?;
    let now = file.metadata()?;
    regular(&now, max_bytes)?;
    if !same_file(&before, &now) {
        return Err(ReadError::Io(std::io::Error::other(
            "it was replaced while being opened",
        )));
    }
    let mut bytes = Vec::with_capacity(now.len() as usize);
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(ReadError::TooLarge {
            size: bytes.len() as u64,
            limit: max_bytes,
        });
    }
    Ok(bytes)
}

/// Refuses what is not a regular file, or one over the cap.
fn regular(meta: &Metadata, max_bytes: u64) -> Result<(), ReadError> {
    if !meta.is_file() {
        return Err(ReadError::NotRegular {
            kind: kind_of(meta),
        });
    }
    if meta.len() > max_bytes {
        return Err(ReadError::TooLarge {
            size: meta.len(),
            limit: max_bytes,
        });
    }
    Ok(())
}

/// Opens for reading; on unix with `O_NONBLOCK`, which does not change how
/// a regular file reads but makes opening a FIFO return at once.
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    options.open(path)
}

/// Whether two metadata are of one file (device and inode on unix).
pub fn same_file(a: &Metadata, b: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        a.dev() == b.dev() && a.ino() == b.ino()
    }
    #[cfg(not(unix))]
    {
        a.len() == b.len() && a.modified().ok() == b.modified().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("wasmrace-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn reads_a_regular_file_up_to_the_cap() {
        let p = temp("small");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(read_capped(&p, 3).unwrap(), b"abc");
        let e = read_capped(&p, 2).unwrap_err();
        assert!(
            matches!(e, ReadError::TooLarge { size: 3, limit: 2 }),
            "{e}"
        );
    }

    #[test]
    fn refuses_a_directory_and_a_device_at_once() {
        let e = read_capped(&std::env::temp_dir(), 1 << 20).unwrap_err();
        assert_eq!(e.to_string(), "it is a directory, not a regular file");
        if Path::new("/dev/zero").exists() {
            let e = read_capped(Path::new("/dev/zero"), 1 << 20).unwrap_err();
            assert_eq!(e.to_string(), "it is a device, not a regular file");
        }
    }

    /// A FIFO with no writer: opening it for reading would block forever.
    #[cfg(unix)]
    #[test]
    fn refuses_a_fifo_without_opening_it() {
        let p = temp("fifo");
        let _ = std::fs::remove_file(&p);
        let made = std::process::Command::new("mkfifo").arg(&p).status();
        if !made.is_ok_and(|s| s.success()) {
            return;
        }
        let e = read_capped(&p, 1 << 20).unwrap_err();
        assert_eq!(e.to_string(), "it is a FIFO, not a regular file");
    }
}
