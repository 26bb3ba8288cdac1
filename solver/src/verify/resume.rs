//! The streamed check's checkpoint, `level-NN.vresume` (in the database directory, or in
//! `verify --work`): after each bucket, what the buckets so far found, so that a `verify`
//! killed in a level of several buckets resumes at its next bucket. It is written only where
//! the level takes more than one bucket, removed when the level's verdict is in, and believed
//! only for the same level, rules, table (its length and checksum) and bucket. It holds no
//! digest of the table: a resumed run computes the checksum again in its first bucket (which
//! reads the whole level anyway), so that a table changed between the runs is found.

use std::path::{Path, PathBuf};

use awari_db::{Level, Rules, Table, TableError};

use crate::checkpoint::{CheckpointError, Fields, Kind};
use crate::streamed::Mismatch;

/// The fields, in the frame of `crate::checkpoint` (magic b"AWARIVRS", version 2; version 1
/// held the table's chunk digests too, and is not believed), in order:
///
/// ```text
/// field                                         type
/// rule set code                                 u8
/// seeds of the level                            u32
/// the table: bytes of its file, its checksum    u64, u64
/// positions per bucket                          u64
/// buckets done                                  u32
/// entries failed so far                         u64
/// E: examples kept                              u64, then E × (index u64, what: string)
/// ```
const KIND: Kind = Kind {
    magic: *b"AWARIVRS",
    version: 2,
};

/// What the buckets done found.
#[derive(Debug, Default)]
pub(super) struct Done {
    pub(super) buckets: u32,
    pub(super) failures: u64,
    pub(super) examples: Vec<Mismatch>,
}

/// The checkpoint of the streamed check of level `n` in `dir`.
pub(super) fn path(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("level-{n:02}.vresume"))
}

/// The buckets of `bucket` positions already checked in `table` (level `n`) by an earlier run,
/// from its checkpoint at `path`; none (and a line saying why, if there was one) when there is
/// no checkpoint of this level, table and bucket.
pub(super) fn read(path: &Path, rules: Rules, n: u32, table: &Table, bucket: u64) -> Done {
    match read_checked(path, rules, n, table, bucket) {
        Ok(done) => done.unwrap_or_default(),
        Err(why) => {
            eprintln!("level {n}: verifying from the first bucket: {why}");
            Done::default()
        }
    }
}

fn read_checked(
    path: &Path,
    rules: Rules,
    n: u32,
    table: &Table,
    bucket: u64,
) -> Result<Option<Done>, CheckpointError> {
    let Some(mut r) = crate::checkpoint::read(path, KIND)? else {
        return Ok(None);
    };
    let (code, seeds) = (r.u8()?, r.u32()?);
    let (len, checksum, size) = (r.u64()?, r.u64()?, r.u64()?);
    if code != rules.code() || seeds != n {
        return Err(r.unusable(format!("not of level {n} under {rules}")));
    }
    if len != table.file_len() || checksum != table.header().checksum {
        return Err(r.unusable("of another table (its length or checksum differs)"));
    }
    if size != bucket {
        return Err(r.unusable(format!(
            "of buckets of {size} positions, this run's hold {bucket} (--memory differs)"
        )));
    }
    let level = Level::new(n);
    let buckets = r.u32()?;
    if u64::from(buckets) >= level.size().div_ceil(bucket) {
        return Err(r.unusable(format!("{buckets} buckets done, more than the level has")));
    }
    let failures = r.u64()?;
    let mut examples = Vec::new();
    for _ in 0..r.count(12)? {
        let index = r.u64()?;
        if index >= level.size() {
            return Err(r.unusable(format!("an example at {index}, outside the level")));
        }
        examples.push(Mismatch {
            level: n,
            index,
            board: level.unrank(index),
            what: r.string()?,
        });
    }
    r.finish()?;
    Ok(Some(Done {
        buckets,
        failures,
        examples,
    }))
}

/// Record at `path` what the first `done.buckets` buckets of `bucket` positions of `table`
/// (level `n`) found.
pub(super) fn write(
    path: &Path,
    rules: Rules,
    n: u32,
    table: &Table,
    bucket: u64,
    done: &Done,
) -> Result<(), TableError> {
    let mut f = Fields::default();
    f.u8(rules.code())
        .u32(n)
        .u64(table.file_len())
        .u64(table.header().checksum)
        .u64(bucket)
        .u32(done.buckets)
        .u64(done.failures)
        .u64(done.examples.len() as u64);
    for m in &done.examples {
        f.u64(m.index).bytes(m.what.as_bytes());
    }
    f.write(path, KIND).map(|_| ())
}

#[cfg(test)]
mod tests {
    use awari_db::{Levels, Rules};

    use super::*;
    use crate::build::{build_level, Plan};
    use crate::progress::Silent;

    /// What a checkpoint records reads back whole; one of another rule set, level, table or
    /// bucket, or damaged, or cut short, is not believed (the check starts at its first
    /// bucket).
    #[test]
    fn a_checkpoint_is_believed_only_for_its_own_check() {
        let dir = std::env::temp_dir().join(format!("awari-vresume-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for m in 0..=6 {
            let levels = Levels::open(&dir, Some(Rules::Awari)).unwrap();
            build_level(&dir, m, Rules::Awari, &levels, Plan::InMemory, &Silent).unwrap();
        }
        let levels = Levels::open(&dir, Some(Rules::Awari)).unwrap();
        let (t5, t6) = (levels.require(5).unwrap(), levels.require(6).unwrap());
        let level = Level::new(6);
        let done = Done {
            buckets: 2,
            failures: 7,
            examples: vec![Mismatch {
                level: 6,
                index: 40,
                board: level.unrank(40),
                what: "stored 1, recomputed 3".into(),
            }],
        };
        let path = path(&dir, 6);
        write(&path, Rules::Awari, 6, t6, 1000, &done).unwrap();
        let back = read(&path, Rules::Awari, 6, t6, 1000);
        assert_eq!(
            (back.buckets, back.failures, &back.examples),
            (2, 7, &done.examples)
        );
        let none = |d: Done| d.buckets == 0 && d.failures == 0 && d.examples.is_empty();
        assert!(none(read(&path, Rules::Abapa, 6, t6, 1000)));
        assert!(none(read(&path, Rules::Awari, 5, t5, 1000)));
        assert!(none(read(&path, Rules::Awari, 6, t5, 1000)));
        assert!(none(read(&path, Rules::Awari, 6, t6, 999)));
        // More buckets done than the level has.
        write(&path, Rules::Awari, 6, t6, level.size(), &done).unwrap();
        assert!(none(read(&path, Rules::Awari, 6, t6, level.size())));
        write(&path, Rules::Awari, 6, t6, 1000, &done).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let mut flipped = bytes.clone();
        flipped[30] ^= 1;
        std::fs::write(&path, &flipped).unwrap();
        assert!(none(read(&path, Rules::Awari, 6, t6, 1000)));
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert!(none(read(&path, Rules::Awari, 6, t6, 1000)));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
