//! Phase 3 of a distributed level: every rank writes its slice of the table into the shared
//! `.tmp` file, in blocks that end on checksum-chunk boundaries, digesting the whole chunks it
//! holds; rank 0 gathers the digests, fills in the header and renames the file into place.

use std::path::Path;

use awari_db::{level_path, Header, Rules, SharedTable};

use super::{all_ok, WRITE_BLOCK};
use crate::build::level::{count, Output, Sink};
use crate::build::BuildError;
use crate::comm::Comm;
use crate::settle::LevelCounts;

/// Writes a rank's slice of the table in order, in blocks that end on checksum-chunk
/// boundaries, digesting the whole chunks it holds.
struct SliceSink<'t> {
    table: &'t SharedTable,
    /// Data offset of the next byte.
    at: u64,
    buf: Vec<u8>,
    /// (chunk index, digest) pairs.
    digests: Vec<u64>,
    counts: LevelCounts,
}

impl<'t> SliceSink<'t> {
    fn new(table: &'t SharedTable, start: u64) -> SliceSink<'t> {
        SliceSink {
            table,
            at: start,
            buf: Vec::with_capacity(WRITE_BLOCK as usize),
            digests: Vec::new(),
            counts: LevelCounts::default(),
        }
    }

    fn push(&mut self, mut data: &[u8]) -> Result<(), awari_db::TableError> {
        while !data.is_empty() {
            let pos = self.at + self.buf.len() as u64;
            let room = ((pos / WRITE_BLOCK + 1) * WRITE_BLOCK - pos) as usize;
            let take = room.min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if take == room {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), awari_db::TableError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.counts = self.counts.merge(count(&self.buf));
        if let Some(d) = self.table.write_at(self.at, &self.buf)? {
            self.digests.extend([self.at / WRITE_BLOCK, d]);
        }
        self.at += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    fn finish(mut self) -> Result<(LevelCounts, Vec<u64>), awari_db::TableError> {
        self.flush()?;
        self.table.sync()?;
        Ok((self.counts, self.digests))
    }
}

/// The table of a distributed level: one file every rank sees, each rank writing its slice.
pub(super) struct SharedOutput<'p> {
    pub(super) comm: &'p dyn Comm,
    pub(super) dir: &'p Path,
    pub(super) n: u32,
    pub(super) rules: Rules,
    /// The first index of this rank's slice.
    pub(super) start: u64,
}

impl Output for SharedOutput<'_> {
    /// Every rank writes its slice; rank 0 finishes the file.
    fn write(
        &self,
        fill: &mut dyn FnMut(&mut Sink) -> Result<(), BuildError>,
    ) -> Result<LevelCounts, BuildError> {
        let (comm, n, rules, start) = (self.comm, self.n, self.rules, self.start);
        write_shared(
            comm,
            &level_path(self.dir, n),
            Header::values(rules, n),
            start,
            fill,
        )
    }
}

fn write_shared(
    comm: &dyn Comm,
    path: &Path,
    header: Header,
    start: u64,
    fill: &mut dyn FnMut(&mut Sink) -> Result<(), BuildError>,
) -> Result<LevelCounts, BuildError> {
    let path = path.to_path_buf();
    let me = comm.rank();
    let created: Result<Option<SharedTable>, BuildError> = if me == 0 {
        SharedTable::create(&path, header)
            .map(Some)
            .map_err(Into::into)
    } else {
        Ok(None)
    };
    all_ok(comm, &created)?;
    let table = match created? {
        Some(t) => Ok(t),
        None => SharedTable::open(&path, header).map_err(BuildError::from),
    };
    let written = table.and_then(|table| {
        let mut sink = SliceSink::new(&table, start);
        fill(&mut |d: &[u8]| sink.push(d))?;
        let (counts, digests) = sink.finish()?;
        Ok((table, counts, digests))
    });
    all_ok(comm, &written)?;
    let (table, counts, digests) = written?;
    // Every rank's slice is on disk: rank 0 gathers the digests and finishes the file.
    let mut out = vec![Vec::new(); comm.size()];
    out[0] = digests;
    let got = comm.exchange(out);
    let finished: Result<(), BuildError> = if me == 0 {
        let mut all = vec![None; table.chunks()];
        for pair in got.concat().chunks(2) {
            all[pair[0] as usize] = Some(pair[1]);
        }
        table.finish(&all).map(|_| ()).map_err(Into::into)
    } else {
        Ok(())
    };
    all_ok(comm, &finished)?;
    finished?;
    let c = comm.sum(&[counts.wins, counts.draws, counts.losses]);
    Ok(LevelCounts {
        wins: c[0],
        draws: c[1],
        losses: c[2],
    })
}
