//! Typed errors of the library. Each names what was expected and what was found.

use std::path::PathBuf;

/// A rule-set name that is not one of `awari`, `abapa`, `grand-slam`, `cross-wari`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown rule set '{got}' (expected awari, abapa, grand-slam or cross-wari)")]
pub struct ParseRulesError {
    /// The text that was given.
    pub got: String,
}

/// A board that cannot be played.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoardError {
    /// Not 12 pit counts.
    #[error("a board has 12 pits, got {got} {}", if *.got == 1 { "number" } else { "numbers" })]
    WrongPitCount {
        /// How many numbers were given.
        got: usize,
    },
    /// A pit count that is not a non-negative integer.
    #[error("pit {pit}: '{got}' is not a seed count (expected a whole number 0..48)")]
    BadNumber {
        /// The pit (0..11).
        pit: usize,
        /// The text that was given.
        got: String,
    },
    /// More seeds than the game has.
    #[error("the board holds {got} seeds; the game has at most 48")]
    TooManySeeds {
        /// The total given.
        got: u32,
    },
}

/// A table file that cannot be opened, read or written.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// An operating-system error on the named file.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file does not start with the table magic.
    #[error("{}: not an awari table (bad magic: expected \"{}\", got \"{}\")", path.display(), magic_text(expected), magic_text(got))]
    BadMagic {
        /// The file.
        path: PathBuf,
        /// The magic bytes this library writes.
        expected: [u8; 8],
        /// The first eight bytes of the file.
        got: [u8; 8],
    },
    /// A file shorter than a table header (an empty file, a truncated one).
    #[error("{}: too short ({len} bytes, a header is {}): truncated, or not a table", path.display(), crate::format::HEADER_LEN)]
    TooShort {
        /// The file.
        path: PathBuf,
        /// Its length in bytes.
        len: u64,
    },
    /// A path that is not a regular file (a directory, a FIFO, a device, a socket): refused
    /// before it is opened (a FIFO would wait for a writer, a device never ends).
    #[error("{}: not a regular file (it is {kind})", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is: "a directory", "a FIFO", ...
        kind: &'static str,
    },
    /// A symbolic link whose target does not exist.
    #[error("{}: dangling symlink (its target {} does not exist)", path.display(), target.display())]
    DanglingSymlink {
        /// The link.
        path: PathBuf,
        /// Where it points.
        target: PathBuf,
    },
    /// A stored value outside −n..n for a level of n seeds: the table is damaged.
    #[error("{}: entry {index} holds {value}, outside -{seeds}..{seeds}: the table is damaged (run awari-solver verify)", path.display())]
    BadValue {
        /// The file.
        path: PathBuf,
        /// The entry.
        index: u64,
        /// What it holds.
        value: i8,
        /// The level.
        seeds: u32,
    },
    /// A format version this library does not read.
    #[error("{}: format version {got} is not supported (expected {expected})", path.display())]
    BadVersion {
        /// The file.
        path: PathBuf,
        /// The version this library reads.
        expected: u32,
        /// The version in the file.
        got: u32,
    },
    /// A header field that does not match what the caller asked for or what the format allows.
    #[error("{}: {field} mismatch: expected {expected}, got {got}", path.display())]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// The header field.
        field: &'static str,
        /// What was expected.
        expected: String,
        /// What the file says.
        got: String,
    },
    /// The file is shorter or longer than its header says.
    #[error("{}: wrong length: expected {expected} bytes, got {got} (truncated or corrupt)", path.display())]
    BadLength {
        /// The file.
        path: PathBuf,
        /// The length the header implies.
        expected: u64,
        /// The length on disk.
        got: u64,
    },
    /// The data does not hash to the checksum in the header.
    #[error("{}: checksum mismatch: header says {expected:016x}, data hashes to {got:016x} (corrupt file)", path.display())]
    BadChecksum {
        /// The file.
        path: PathBuf,
        /// The checksum in the header.
        expected: u64,
        /// The checksum of the data.
        got: u64,
    },
    /// A table in the probe form read on its own: its entries need a capture search.
    #[error("{}: level {seeds} is in the probe form (capture don't-cares): it can be probed through its database directory, not read on its own (compress its levels with `awari-solver compress` without --probe for this)", path.display())]
    ProbeForm {
        /// The file.
        path: PathBuf,
        /// The level.
        seeds: u32,
    },
    /// A compressed table of a coder this library no longer reads (2 or 3, superseded by 4
    /// and 5): it is written again from the values.
    #[error("{}: level {seeds} is compressed with coder {coder}, which is no longer read; {}", path.display(), retired_coder_remedy(*coder, *seeds))]
    RetiredCoder {
        /// The file.
        path: PathBuf,
        /// The level.
        seeds: u32,
        /// The coder code in its header (byte 14).
        coder: u8,
    },
    /// A block of a compressed table that fails its check.
    #[error("{}: level {seeds}, block {block}: {what} (corrupt file)", path.display())]
    CorruptBlock {
        /// The file.
        path: PathBuf,
        /// The level.
        seeds: u32,
        /// The block number.
        block: u64,
        /// What is wrong with it.
        what: String,
    },
    /// A lookup into the database that writing a table needed (the probe form's capture
    /// search, the values a depth table is coded against) failed.
    #[error("{}: {source}", path.display())]
    Lookup {
        /// The table being written.
        path: PathBuf,
        /// Why the lookup failed.
        source: Box<crate::dir::DbError>,
    },
    /// A work file or checkpoint of a build, a depth pass or a proof that fails its checks
    /// (a checksum, a bound): it is not believed. A resume that meets one starts the level
    /// (or the damaged part of it) afresh.
    #[error("{}: damaged ({what})", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
}

/// What to do about a table of level `seeds` of a retired coder: what it held, and how to
/// write it again.
fn retired_coder_remedy(coder: u8, seeds: u32) -> String {
    match coder {
        3 => format!(
            "it holds depths to conversion: remove it and write them again from the values \
             with `awari-solver depth --stones {seeds}`"
        ),
        _ => format!(
            "it holds the probe form: remove it and recompress the level from its values \
             with `awari-solver compress --probe --stones {seeds}`"
        ),
    }
}

/// An error and its causes on one line, as the binaries print them: each cause is appended
/// after ": " unless the text before it already says it (most messages here quote their
/// source, and printing the chain again would repeat the operating system's words).
pub fn one_line(error: &(dyn std::error::Error + 'static)) -> String {
    let mut line = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        cause = c.source();
    }
    line
}

/// Eight magic bytes as text, the unprintable ones escaped: `AWARITB\x1a`.
fn magic_text(m: &[u8; 8]) -> String {
    m.iter()
        .flat_map(|&b| std::ascii::escape_default(b))
        .map(char::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_says_each_cause_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        let quoted = TableError::Io {
            path: "/x/level-01.values".into(),
            source: io(),
        };
        assert_eq!(one_line(&quoted), "/x/level-01.values: No such file");
        #[derive(Debug, thiserror::Error)]
        #[error("cannot open the table")]
        struct Silent(#[source] std::io::Error);
        assert_eq!(
            one_line(&Silent(io())),
            "cannot open the table: No such file"
        );
    }
}
