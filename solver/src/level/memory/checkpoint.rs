//! Resuming an in-memory level: its state words saved between settling steps in
//! `level-NN.mstate` (in the database directory), so that a kill loses the steps since the
//! last save, not the level. A save follows the first step boundary (the end of the exits
//! phase is one) at least [`crate::checkpoint::CHECKPOINT_SECONDS`] after the last, and at
//! least ten times the last save's own time, so that saving costs at most about a tenth of
//! the build whatever the disk (`AWARI_CHECKPOINT_SECONDS`, where set, replaces both).
//!
//! ```text
//! offset  size  field
//!      0  4096  the checkpoint, in the frame of `crate::checkpoint` (magic b"AWARIMST",
//!               version 1), zero-padded (the zeros checked); its fields:
//!                 rule set code                          u8
//!                 seeds of the level                     u32
//!                 positions of the level, P              u64
//!                 the next step (those above it settled) u32, 1..=seeds
//!                 times the level was resumed so far     u32
//!                 what carried over (`level::Carried`)   f64, u64, u64, f64, u64, u32
//!                 XXH3-64 of bytes 4096..4096+2P         u64
//!   4096    2P  the state words after the step above the next, u16 LE each, in index order
//!               (the layout of `memory`'s table)
//! ```
//!
//! The file is written whole as `level-NN.mstate.tmp`, synced and renamed, so that a kill
//! leaves the old save or the new one, never a mix. A save is believed only whole: of the
//! level's rules, seeds and size, its head's checksum and its words' checksum matching; else
//! the level starts afresh, saying why. Where the disk has no room for a save beside the table
//! still to be written and 1 GiB, none is made (saying so once) and an older one goes, so that
//! the table always has its room; where the new save has no room beside the last, the last
//! goes first. A save that fails (a full disk, an I/O error) is said once and the level goes on.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use awari_db::table::{rename_into_place, tmp_path};
use awari_db::{level_size, Header, Rules, TableError};

use super::LevelBuilder;
use crate::checkpoint::{CheckpointError, Fields, Kind};
use crate::level::Carried;
use crate::twobit::Stage;

/// Its version is that of the words' layout too (`crate::settle`'s): a change there is a new
/// version, so that no save of the old layout is believed.
const KIND: Kind = Kind {
    magic: *b"AWARIMST",
    version: 1,
};
/// Bytes of the head: the checkpoint and its padding.
const HEAD: usize = 4096;
/// Bytes of words written or read at once.
const BLOCK: usize = 1 << 24;
/// Free disk a save leaves, bytes.
const MARGIN: u64 = 1 << 30;
/// A save is made at most once every this many times its own duration.
pub const SAVE_SHARE: f64 = 10.0;

/// Bytes of level `n`'s save.
pub fn saved_state_bytes(n: u32) -> u64 {
    HEAD as u64 + 2 * level_size(n)
}

/// The saved state of level `n` in the database directory `dir`.
pub fn saved_state_path(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("level-{n:02}.mstate"))
}

/// Remove level `n`'s saved state (and a half-written one) from `dir`.
pub fn remove_saved_state(dir: &Path, n: u32) {
    let path = saved_state_path(dir, n);
    let _ = std::fs::remove_file(tmp_path(&path));
    let _ = std::fs::remove_file(path);
}

/// Where the saved state of level `n` in `dir` would resume the level (`Ok(None)`: none is
/// saved), from its head alone: [`Stage::Settle`] at its next step.
pub fn saved_state_stage(
    dir: &Path,
    n: u32,
    rules: Rules,
) -> Result<Option<Stage>, CheckpointError> {
    Ok(
        read_head(&saved_state_path(dir, n), n, rules)?
            .map(|(s, _)| Stage::Settle { next: s.next }),
    )
}

/// What a save's head says.
#[derive(Clone, Copy, Debug)]
pub(super) struct Saved {
    pub(super) next: u32,
    pub(super) resumes: u32,
    pub(super) carried: Carried,
    checksum: u64,
}

/// The head of the save at `path`, and the file positioned at its words (`Ok(None)`: there is
/// none).
fn read_head(
    path: &Path,
    n: u32,
    rules: Rules,
) -> Result<Option<(Saved, std::fs::File)>, CheckpointError> {
    let io = |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    };
    let Some(meta) = crate::checkpoint::metadata(path)? else {
        return Ok(None);
    };
    let size = level_size(n);
    let len = saved_state_bytes(n);
    if !meta.is_file() || meta.len() != len {
        return Err(CheckpointError::unusable(
            path,
            format!("not a file of {len} bytes, the save of level {n}'s state"),
        ));
    }
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut r = crate::checkpoint::read_head(path, &mut file, KIND, HEAD)?;
    let (code, seeds, positions) = (r.u8()?, r.u32()?, r.u64()?);
    if code != rules.code() || seeds != n || positions != size {
        return Err(r.unusable(format!("not of level {n} under {rules}")));
    }
    let next = r.u32()?;
    if !(1..=n).contains(&next) {
        return Err(r.unusable(format!("a next step of {next}")));
    }
    let resumes = r.tally_u32()?;
    let carried = Carried::read(&mut r)?;
    let checksum = r.u64()?;
    r.finish()?;
    let saved = Saved {
        next,
        resumes,
        carried,
        checksum,
    };
    Ok(Some((saved, file)))
}

/// A level's saves: where, when, and what the runs before this one carried.
pub(super) struct Durable {
    path: PathBuf,
    /// The step a loaded save resumes at (`None`: the level began in this run).
    pub(super) resumed_at: Option<u32>,
    pub(super) resumes: u32,
    pub(super) carried: Carried,
    started: Instant,
    last_save: Instant,
    /// Seconds the last save took.
    save_seconds: f64,
    /// Whether a save was skipped or failed, said once.
    said_no_save: bool,
    /// Bytes of saves this run read (a load) and wrote.
    read: u64,
    written: u64,
}

impl<'a> LevelBuilder<'a> {
    /// Prepare level `n` (as [`LevelBuilder::new`]), saving its state in the database
    /// directory `dir` as it settles and resuming from a save there if it holds a whole one
    /// (else starting afresh, saying why where there was one).
    pub fn open(
        dir: &Path,
        n: u32,
        rules: Rules,
        lower: &'a awari_db::Levels,
    ) -> Result<Self, crate::settle::BuilderError> {
        let mut builder = Self::new(n, rules, lower)?;
        let path = saved_state_path(dir, n);
        let mut durable = Durable {
            path: path.clone(),
            resumed_at: None,
            resumes: 0,
            carried: Carried::default(),
            started: Instant::now(),
            last_save: Instant::now(),
            save_seconds: 0.0,
            said_no_save: false,
            read: 0,
            written: 0,
        };
        // A save half written when a run ended.
        let _ = std::fs::remove_file(tmp_path(&path));
        match read_head(&path, n, rules) {
            Ok(None) => {}
            Ok(Some((saved, file))) => {
                let t = Instant::now();
                // A save that does not load whole is not believed, whatever the reason. (A
                // fresh level's exits phase sets every word, so those loaded go unread.)
                match builder.load(&path, file, saved.checksum) {
                    Ok(true) => {
                        if std::env::var_os("AWARI_TIMINGS").is_some() {
                            eprintln!(
                                "level {n}: state loaded at step {} in {:.2} s",
                                saved.next,
                                t.elapsed().as_secs_f64()
                            );
                        }
                        durable.resumed_at = Some(saved.next);
                        durable.resumes = saved.resumes + 1;
                        durable.carried = saved.carried;
                        durable.read = saved_state_bytes(n);
                    }
                    Ok(false) => eprintln!(
                        "level {n}: starting afresh: {}: its state words do not match their \
                         checksum (damaged)",
                        path.display()
                    ),
                    Err(e) => eprintln!("level {n}: starting afresh: {e}"),
                }
            }
            Err(why) => eprintln!("level {n}: starting afresh: {why}"),
        }
        if durable.resumed_at.is_none() {
            remove_saved_state(dir, n);
        }
        builder.durable = Some(durable);
        Ok(builder)
    }

    /// Read the saved words from `file` (positioned after the head) into the state; whether
    /// they match `checksum`.
    fn load(
        &mut self,
        path: &Path,
        mut file: std::fs::File,
        checksum: u64,
    ) -> Result<bool, TableError> {
        let io = |source| TableError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        let mut block = vec![0u8; BLOCK];
        for part in self.state.plain_mut().chunks_mut(BLOCK / 2) {
            let bytes = &mut block[..2 * part.len()];
            file.read_exact(bytes).map_err(io)?;
            hasher.update(bytes);
            for (w, b) in part.iter_mut().zip(bytes.chunks_exact(2)) {
                *w = u16::from_le_bytes([b[0], b[1]]);
            }
        }
        Ok(hasher.digest() == checksum)
    }

    /// At a step boundary, with step `next` to run: save the state if one is due (see the
    /// module). No propagation runs meanwhile.
    pub(super) fn save_if_due(&mut self, next: u32) -> Result<(), TableError> {
        let Some(d) = &self.durable else {
            return Ok(());
        };
        // The variable, where set, exactly (tests save at every step with 0).
        let every = if std::env::var_os("AWARI_CHECKPOINT_SECONDS").is_some() {
            crate::checkpoint::checkpoint_seconds()
        } else {
            crate::checkpoint::CHECKPOINT_SECONDS.max(SAVE_SHARE * d.save_seconds)
        };
        if d.last_save.elapsed().as_secs_f64() < every {
            return Ok(());
        }
        let t = Instant::now();
        if let Err(e) = self.save(next) {
            // A save is not needed for the table: the level goes on without it.
            if let Some(d) = &mut self.durable {
                let _ = std::fs::remove_file(tmp_path(&d.path));
                if !d.said_no_save {
                    d.said_no_save = true;
                    eprintln!(
                        "level {}: the state was not saved ({e}): a kill before the next save \
                         loses the level's progress since the last",
                        self.level.seeds()
                    );
                }
            }
            return Ok(());
        }
        let seconds = t.elapsed().as_secs_f64();
        if std::env::var_os("AWARI_TIMINGS").is_some() {
            eprintln!(
                "level {}: state saved before step {next} in {seconds:.2} s",
                self.level.seeds()
            );
        }
        if let Some(d) = &mut self.durable {
            d.save_seconds = seconds;
            d.last_save = Instant::now();
        }
        Ok(())
    }

    /// Save the state, step `next` to run (see the module).
    fn save(&mut self, next: u32) -> Result<(), TableError> {
        let n = self.level.seeds();
        let size = self.level.size();
        let (rules, words) = (self.rules, self.state.words());
        let Some(d) = &mut self.durable else {
            return Ok(());
        };
        let bytes = saved_state_bytes(n);
        // The last save (of this size) is replaced: the room for the new one and the table is
        // the free space and the last save's.
        let held = std::fs::metadata(&d.path).map_or(0, |m| m.len());
        let table = Header::values(rules, n).file_len();
        let dir = d.path.parent().unwrap_or(Path::new("."));
        let free = crate::sys::disk_free(dir);
        if free.is_some_and(|free| free + held < bytes + table + MARGIN) {
            if !d.said_no_save {
                d.said_no_save = true;
                eprintln!(
                    "level {n}: no room on disk to save the state ({}) beside the table: a kill \
                     now loses the level's progress",
                    crate::sys::human(bytes)
                );
            }
            let _ = std::fs::remove_file(&d.path);
            return Ok(());
        }
        if free.is_some_and(|free| free < bytes + MARGIN) {
            // No room for the new one beside the last: the last goes first.
            let _ = std::fs::remove_file(&d.path);
        }
        let tmp = tmp_path(&d.path);
        let io = |source| TableError::Io {
            path: tmp.clone(),
            source,
        };
        let mut file = std::fs::File::create(&tmp).map_err(io)?;
        file.seek(SeekFrom::Start(HEAD as u64)).map_err(io)?;
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        let mut block = Vec::with_capacity(BLOCK);
        for part in words.chunks(BLOCK / 2) {
            block.clear();
            for w in part {
                block.extend_from_slice(&w.load(Relaxed).to_le_bytes());
            }
            hasher.update(&block);
            file.write_all(&block).map_err(io)?;
        }
        let carried = Carried {
            seconds: d.carried.seconds + d.started.elapsed().as_secs_f64(),
            read: d.carried.read + d.read,
            written: d.carried.written + d.written + bytes,
            ..d.carried
        };
        let mut f = Fields::default();
        f.u8(rules.code()).u32(n).u64(size).u32(next).u32(d.resumes);
        carried.write(&mut f);
        f.u64(hasher.digest());
        let head = f.head(KIND, HEAD).expect("a few dozen bytes of fields");
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(&head).map_err(io)?;
        file.sync_all().map_err(io)?;
        drop(file);
        rename_into_place(&tmp, &d.path)?;
        d.written += bytes;
        Ok(())
    }

    /// Bytes of saves read and written over every run of the level.
    pub(crate) fn work_io(&self) -> (u64, u64) {
        self.durable.as_ref().map_or((0, 0), |d| {
            (d.carried.read + d.read, d.carried.written + d.written)
        })
    }

    /// The table is in place: the save goes.
    pub(crate) fn forget_save(&self) {
        if let Some(d) = &self.durable {
            let _ = std::fs::remove_file(tmp_path(&d.path));
            let _ = std::fs::remove_file(&d.path);
        }
    }
}
