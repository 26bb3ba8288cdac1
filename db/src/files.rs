//! What a path names, asked before a table is opened: whether it is there at all (only a path
//! that does not exist is absent; a dangling symlink or a symlink loop is an error), and
//! whether it is a regular file (a FIFO would block the open until a writer came, a device
//! such as `/dev/zero` never ends; both are refused at once).

use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use crate::error::TableError;
use crate::format::io_err;

/// Whether `path` is there: `false` only where nothing of that name exists. A symlink whose
/// target does not exist is [`TableError::DanglingSymlink`], one that cannot be resolved (a
/// loop, a directory that cannot be read) the operating system's error: neither is taken for
/// a missing file.
pub fn present(path: &Path) -> Result<bool, TableError> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(source) => Err(io_err(path)(source)),
        Ok(m) if m.file_type().is_symlink() => match fs::metadata(path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == ErrorKind::NotFound => Err(dangling(path)),
            Err(source) => Err(io_err(path)(source)),
        },
        Ok(_) => Ok(true),
    }
}

/// `Ok` if `path` is a regular file (through symlinks); else the error that says what it is.
pub fn regular_file(path: &Path) -> Result<(), TableError> {
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound && is_symlink(path) => {
            return Err(dangling(path))
        }
        Err(source) => return Err(io_err(path)(source)),
    };
    check_type(path, meta.file_type())
}

/// Open `path` for reading if it is a regular file (checked before the open, which would wait
/// on a FIFO, and again on what was opened); returns it and its length.
pub(crate) fn open_regular(path: &Path) -> Result<(fs::File, u64), TableError> {
    regular_file(path)?;
    let file = fs::File::open(path).map_err(io_err(path))?;
    let meta = file.metadata().map_err(io_err(path))?;
    check_type(path, meta.file_type())?;
    Ok((file, meta.len()))
}

/// `Ok` for a regular file's type; else [`TableError::NotAFile`] naming what it is.
pub(crate) fn check_type(path: &Path, t: fs::FileType) -> Result<(), TableError> {
    if t.is_file() {
        return Ok(());
    }
    Err(TableError::NotAFile {
        path: path.to_path_buf(),
        kind: kind(t),
    })
}

/// What a file type is, in words.
fn kind(t: fs::FileType) -> &'static str {
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a file"
}

fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

fn dangling(path: &Path) -> TableError {
    TableError::DanglingSymlink {
        path: path.to_path_buf(),
        target: fs::read_link(path).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("awari-db-files-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn only_a_missing_name_is_absent() {
        let d = dir("present");
        assert!(!present(&d.join("none")).unwrap());
        fs::write(d.join("file"), b"x").unwrap();
        assert!(present(&d.join("file")).unwrap());
        regular_file(&d.join("file")).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::symlink;
            symlink("file", d.join("link")).unwrap();
            assert!(present(&d.join("link")).unwrap());
            regular_file(&d.join("link")).unwrap();
            symlink("nothing", d.join("dangling")).unwrap();
            for e in [
                present(&d.join("dangling")).unwrap_err(),
                regular_file(&d.join("dangling")).unwrap_err(),
            ] {
                assert!(matches!(e, TableError::DanglingSymlink { .. }), "{e}");
                assert!(e.to_string().contains("dangling symlink"), "{e}");
            }
            symlink("loop-b", d.join("loop-a")).unwrap();
            symlink("loop-a", d.join("loop-b")).unwrap();
            let e = present(&d.join("loop-a")).unwrap_err();
            assert!(matches!(e, TableError::Io { .. }), "{e}");
            assert!(regular_file(&d.join("loop-a")).is_err());
        }
        let e = regular_file(&d).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        #[cfg(unix)]
        {
            let e = regular_file(Path::new("/dev/null")).unwrap_err();
            assert!(e.to_string().contains("character device"), "{e}");
        }
        fs::remove_dir_all(&d).unwrap();
    }
}
