//! Writing a plain table: [`TableWriter`] streams its data to `NAME.tmp`, hashing it in
//! checksum chunks, and renames it into place (the layout is [`super`]'s).

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::{chunk_digest, combine_digests, trailer, Header, CHECKSUM_CHUNK, HEADER_LEN};
use crate::error::TableError;
use crate::format::{commit_tmp, create_tmp, io_err};

/// Writes a table atomically: data is streamed to `NAME.tmp` in any slices, hashed in
/// checksum chunks on the way, and [`TableWriter::finish`] fsyncs and renames it to `NAME`.
pub struct TableWriter {
    path: PathBuf,
    tmp: PathBuf,
    header: Header,
    out: BufWriter<File>,
    pending: Vec<u8>,
    digests: Vec<u64>,
    written: u64,
}

impl TableWriter {
    /// Start writing the table `header` describes to `path` (checksum is computed here).
    pub fn create(path: impl AsRef<Path>, header: Header) -> Result<TableWriter, TableError> {
        let path = path.as_ref().to_path_buf();
        let (tmp, file) = create_tmp(&path)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(&header.to_bytes()).map_err(io_err(&tmp))?;
        Ok(TableWriter {
            path,
            tmp,
            header,
            out,
            pending: Vec::with_capacity(CHECKSUM_CHUNK),
            digests: Vec::new(),
            written: 0,
        })
    }

    /// Append data.
    pub fn write(&mut self, mut data: &[u8]) -> Result<(), TableError> {
        self.written += data.len() as u64;
        while !data.is_empty() {
            if self.pending.is_empty() && data.len() >= CHECKSUM_CHUNK {
                let (chunk, rest) = data.split_at(CHECKSUM_CHUNK);
                self.digests.push(chunk_digest(chunk));
                self.out.write_all(chunk).map_err(io_err(&self.tmp))?;
                data = rest;
                continue;
            }
            let take = (CHECKSUM_CHUNK - self.pending.len()).min(data.len());
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.pending.len() == CHECKSUM_CHUNK {
                self.flush_pending()?;
            }
        }
        Ok(())
    }

    fn flush_pending(&mut self) -> Result<(), TableError> {
        if !self.pending.is_empty() {
            self.digests.push(chunk_digest(&self.pending));
            self.out
                .write_all(&self.pending)
                .map_err(io_err(&self.tmp))?;
            self.pending.clear();
        }
        Ok(())
    }

    /// Fill in the checksum, fsync, and rename into place. Returns the final header.
    pub fn finish(mut self) -> Result<Header, TableError> {
        let expected = self.header.data_len();
        if self.written != expected {
            return Err(TableError::BadLength {
                path: self.tmp.clone(),
                expected: HEADER_LEN as u64 + expected,
                got: HEADER_LEN as u64 + self.written,
            });
        }
        self.flush_pending()?;
        self.header.checksum = combine_digests(&self.digests);
        self.out
            .write_all(&trailer(&self.digests))
            .map_err(io_err(&self.tmp))?;
        let tmp = self.tmp.clone();
        let mut file = self
            .out
            .into_inner()
            .map_err(|e| io_err(&tmp)(e.into_error()))?;
        file.seek(SeekFrom::Start(0)).map_err(io_err(&tmp))?;
        file.write_all(&self.header.to_bytes())
            .map_err(io_err(&tmp))?;
        commit_tmp(file, &tmp, &self.path)?;
        Ok(self.header)
    }
}

/// Write a whole table from memory (atomic, see [`TableWriter`]).
pub fn write_table(
    path: impl AsRef<Path>,
    header: Header,
    data: &[u8],
) -> Result<Header, TableError> {
    let mut w = TableWriter::create(path, header)?;
    w.write(data)?;
    w.finish()
}
