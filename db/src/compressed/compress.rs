//! Writing a compressed table, or estimating its size: the public entry points for values
//! ([`compress`], [`compress_as`]), depths ([`compress_depth`], [`compress_depth_as`]) and
//! estimates ([`estimate`], [`estimate_as`]), and the pipeline they share: the counts or the
//! probe form's sample and refits (the model), the encoding pass, and the decoding check
//! before the rename.

use std::os::unix::fs::FileExt;
use std::path::Path;

use rayon::prelude::*;

use crate::error::TableError;
use crate::format::{checksum, commit_tmp, create_tmp, io_err};
use crate::index::level_size;
use crate::rules::Rules;
use crate::{rans, Level};

use super::contexts;
use super::encoder::{encode_group, Coder};
use super::format::{
    Alphabet, CompressedHeader, Form, Layout, BLOCK_SEGMENTS, GROUP_BLOCKS, GROUP_RECORD,
    HEADER_LEN, MAX_SEGMENT, TAIL, VERSION,
};
use super::huffman::{fit, Model};
use super::reader::Compressed;

/// The symbol of entry `i`, whose byte is `v`, or an error naming it.
fn symbol(path: &Path, alphabet: Alphabet, i: u64, v: u8) -> Result<usize, TableError> {
    alphabet.symbol(v).ok_or_else(|| {
        let (field, expected, got) = if alphabet.signed {
            let n = alphabet.zero;
            (
                "value",
                format!("-{n}..={n} at entry {i}"),
                (v as i8).to_string(),
            )
        } else {
            let top = alphabet.symbols - 1;
            ("depth", format!("0..={top} at entry {i}"), v.to_string())
        };
        TableError::Mismatch {
            path: path.to_path_buf(),
            field,
            expected,
            got,
        }
    })
}

/// What [`compress`] reports.
#[derive(Clone, Copy, Debug)]
pub struct CompressedSize {
    /// Entries of the level.
    pub entries: u64,
    /// Bytes of the compressed file.
    pub bytes: u64,
}

impl CompressedSize {
    /// Bits per position of the whole file (header, model and index included).
    pub fn bits_per_position(&self) -> f64 {
        8.0 * self.bytes as f64 / self.entries.max(1) as f64
    }
}

/// Where [`compress`] reads a level's values: entries `start..start + buf.len()` into `buf`.
pub type ReadValues<'a> = dyn Fn(u64, &mut [u8]) -> Result<(), TableError> + Sync + 'a;

/// Where [`compress`] learns the probe form's don't-cares: for entries
/// `start..start + values.len()`, given their values, it fills `ceilings` with the highest
/// value each entry may store instead of its own, or [`FIXED`] where it must store its own.
pub type ReadFreedom<'a> = dyn Fn(u64, &[u8], &mut [i8]) -> Result<(), TableError> + Sync + 'a;

/// The ceiling of an entry that must store its own value.
pub const FIXED: i8 = i8::MIN;

/// Values per batch of the streamed compression (a multiple of a group).
const BATCH: u64 = 1 << 24;
// The largest group divides it, and with it every group (powers of two no larger).
const _: () = assert!(BATCH % (MAX_SEGMENT * BLOCK_SEGMENTS * GROUP_BLOCKS) as u64 == 0);

/// How many times the probe form's model is refitted to its own shortest codes (the sizes
/// settle by the fourth: 2.512 bits per position of level 16 after four, 2.524 after three).
const PROBE_FITS: usize = 4;

/// With rANS (coder 4), the first two refits see only every this many of the sample's
/// groups: they only steer the free entries' choices from the crude first costs, and the
/// last two, over the whole sample, give the model. The search's passes over the sample
/// cost 2.25 instead of 4, for 0.02 % more bytes at levels 14..18 and 0.06 % at level 20
/// (2.457 bits per position instead of 2.456).
const PROBE_EARLY_FIT_STRIDE: usize = 8;

/// Groups the probe form's model is fitted to: about 2048 spread over the level.
fn sample_stride(groups: u64) -> u64 {
    (groups / 2048).max(1)
}

/// Compress a level whose values `read` gives (entries `start..start + buf.len()` into
/// `buf`) to the compressed table `path`. Without `free`, the self-contained form
/// ([`Form::SelfContained`]): two streamed passes (count, encode). With `free`, the probe form
/// ([`Form::CaptureDontCares`]): its model is fitted to a sample of the level, then one
/// encoding pass. Either way the file is then decoded back and compared with the source before
/// it is renamed into place (the probe form's stored values each checked against their value
/// and ceiling).
/// `progress` is told the pass (0 count, 1 encode, 2 check) and how many entries it has done.
pub fn compress(
    path: &Path,
    rules: Rules,
    seeds: u32,
    read: &ReadValues<'_>,
    free: Option<&ReadFreedom<'_>>,
    progress: &(dyn Fn(u8, u64) + Sync),
) -> Result<CompressedSize, TableError> {
    let form = free.map_or(Form::SelfContained, |_| Form::CaptureDontCares);
    run(form.into(), path, rules, seeds, read, free, progress, false)
}

/// [`compress`] in a chosen layout of values: [`Form::SelfContained`] without `free`,
/// [`Form::CaptureDontCares`] with it, in segments of 128 or 256 entries
/// ([`Form::with_segment_log2`]).
///
/// # Panics
/// If `layout` is a form of depths (see [`compress_depth`]), or `free` does not match it.
#[allow(clippy::too_many_arguments)]
pub fn compress_as(
    layout: impl Into<Layout>,
    path: &Path,
    rules: Rules,
    seeds: u32,
    read: &ReadValues<'_>,
    free: Option<&ReadFreedom<'_>>,
    progress: &(dyn Fn(u8, u64) + Sync),
) -> Result<CompressedSize, TableError> {
    let layout = layout.into();
    run(layout, path, rules, seeds, read, free, progress, false)
}

fn as_u8(b: &mut [i8]) -> &mut [u8] {
    // SAFETY: u8 and i8 have the same size, alignment and validity (every bit pattern).
    unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr().cast::<u8>(), b.len()) }
}

/// Compress a depth table of level `seeds` whose largest depth is `max_depth` (its entries,
/// one byte each, `read` gives) to the compressed depth table `path` (`level-NN.cdepth`),
/// coded against the level's values, which `values` gives (entries `start..` into a buffer,
/// as bytes): two streamed passes, then the file decoded back and compared before it is
/// renamed into place. A depth above `max_depth`, or a draw whose depth is not 0, is an error.
/// It is coder 5's ([`Form::Depths`]).
pub fn compress_depth(
    path: &Path,
    rules: Rules,
    seeds: u32,
    max_depth: u8,
    read: &ReadValues<'_>,
    values: &ReadValues<'_>,
    progress: &(dyn Fn(u8, u64) + Sync),
) -> Result<CompressedSize, TableError> {
    let form = Form::Depths;
    compress_depth_as(form, path, rules, seeds, max_depth, read, values, progress)
}

/// [`compress_depth`] in a chosen layout of depths: [`Form::Depths`] in segments of 128 or
/// 256 entries.
///
/// # Panics
/// If `layout` is not a form of depths.
#[allow(clippy::too_many_arguments)]
pub fn compress_depth_as(
    layout: impl Into<Layout>,
    path: &Path,
    rules: Rules,
    seeds: u32,
    max_depth: u8,
    read: &ReadValues<'_>,
    values: &ReadValues<'_>,
    progress: &(dyn Fn(u8, u64) + Sync),
) -> Result<CompressedSize, TableError> {
    let layout = layout.into();
    assert!(layout.form.is_depth(), "{layout:?} is not a form of depths");
    let symbols = usize::from(max_depth) + 1;
    let side = |start: u64, _: &[u8], out: &mut [i8]| values(start, as_u8(out));
    let side = Side::Values(&side);
    run_with(
        path, rules, seeds, layout, symbols, read, side, progress, false,
    )
}

/// What [`run_with`] reads beside the entries: nothing (the self-contained form), the probe
/// form's ceilings, or a depth table's values (its contexts).
#[derive(Clone, Copy)]
enum Side<'a, 'b> {
    None,
    Ceilings(&'a ReadFreedom<'b>),
    Values(&'a ReadFreedom<'b>),
}

/// What [`compress`] would write, without writing: the model fitted to a sample of about
/// 2048 groups spread over the level (as the probe form's always is), those groups encoded,
/// and their bytes scaled to the level (the header, model and index counted exactly). Within
/// a few tenths of a percent of the real size where both were measured (docs/performance.md),
/// in seconds rather than the minutes or hours of a level. `path` names the level in errors;
/// `progress` is told pass 0 only.
pub fn estimate(
    path: &Path,
    rules: Rules,
    seeds: u32,
    read: &ReadValues<'_>,
    free: Option<&ReadFreedom<'_>>,
    progress: &(dyn Fn(u8, u64) + Sync),
) -> Result<CompressedSize, TableError> {
    let form = free.map_or(Form::SelfContained, |_| Form::CaptureDontCares);
    run(form.into(), path, rules, seeds, read, free, progress, true)
}

/// [`estimate`] in a chosen layout of values (as [`compress_as`]).
///
/// # Panics
/// As [`compress_as`].
#[allow(clippy::too_many_arguments)]
pub fn estimate_as(
    layout: impl Into<Layout>,
    path: &Path,
    rules: Rules,
    seeds: u32,
    read: &ReadValues<'_>,
    free: Option<&ReadFreedom<'_>>,
    progress: &(dyn Fn(u8, u64) + Sync),
) -> Result<CompressedSize, TableError> {
    let layout = layout.into();
    run(layout, path, rules, seeds, read, free, progress, true)
}

/// [`compress`] or [`estimate`] of a values table in `layout`: the probe form with `free`,
/// else the self-contained one.
#[allow(clippy::too_many_arguments)]
fn run(
    layout: Layout,
    path: &Path,
    rules: Rules,
    seeds: u32,
    read: &ReadValues<'_>,
    free: Option<&ReadFreedom<'_>>,
    progress: &(dyn Fn(u8, u64) + Sync),
    estimate_only: bool,
) -> Result<CompressedSize, TableError> {
    let form = layout.form;
    assert!(
        !form.is_depth() && form.is_probe() == free.is_some(),
        "a values table of {form:?} with{} ceilings",
        if free.is_some() { "" } else { "out" }
    );
    let symbols = 2 * seeds as usize + 1;
    let side = free.map_or(Side::None, Side::Ceilings);
    run_with(
        path,
        rules,
        seeds,
        layout,
        symbols,
        read,
        side,
        progress,
        estimate_only,
    )
}

/// Compress (or with `estimate_only`, estimate) a level's table of `form` over an alphabet of
/// `symbols` symbols.
#[allow(clippy::too_many_arguments)]
fn run_with(
    path: &Path,
    rules: Rules,
    seeds: u32,
    layout: Layout,
    symbols: usize,
    read: &ReadValues<'_>,
    side: Side<'_, '_>,
    progress: &(dyn Fn(u8, u64) + Sync),
    estimate_only: bool,
) -> Result<CompressedSize, TableError> {
    let entries = level_size(seeds);
    let form = layout.form;
    assert!(
        form.allows_segment_log2(layout.segment_log2),
        "{layout:?}: a segment length the form does not allow"
    );
    let alphabet = Alphabet::new(form, seeds, symbols);
    let depth = form.is_depth();
    debug_assert_eq!(matches!(side, Side::Ceilings(_)), form.is_probe());
    debug_assert_eq!(matches!(side, Side::Values(_)), depth);
    let level = Level::new(seeds);
    let contexts = match form {
        Form::SelfContained => symbols,
        Form::CaptureDontCares => contexts::contexts(symbols),
        Form::Depths => contexts::DEPTH_CONTEXTS,
    };
    let (seg, group) = (layout.segment(), layout.group());
    let groups = entries.div_ceil(group as u64);
    // A batch's entries, and its side information: the probe form's ceilings, or a depth
    // table's values.
    let read_fresh = |start: u64, end: u64| -> Result<(Vec<u8>, Option<Vec<i8>>), TableError> {
        let mut buf = vec![0u8; (end - start) as usize];
        read(start, &mut buf)?;
        let side = match side {
            Side::Ceilings(f) | Side::Values(f) => {
                let mut c = vec![FIXED; buf.len()];
                f(start, &buf, &mut c)?;
                Some(c)
            }
            Side::None => None,
        };
        Ok((buf, side))
    };
    // A level of one batch is read once, for the sample, the encoding and the check alike:
    // the probe form's ceilings (a capture search for each entry) would be the most costly
    // part of its compression three times over.
    let whole = match side {
        Side::Ceilings(_) if entries <= BATCH && !estimate_only => Some(read_fresh(0, entries)?),
        _ => None,
    };
    let read_batch = |start: u64, end: u64| match &whole {
        Some((values, side)) => {
            let (s, e) = (start as usize, end as usize);
            Ok((
                values[s..e].to_vec(),
                side.as_ref().map(|c| c[s..e].to_vec()),
            ))
        }
        None => read_fresh(start, end),
    };
    // The counts per context of entries `first..` (values or depths), coded as they will be:
    // the probe form's free entries as its search chooses them under `costs`.
    let count =
        |values: &[u8], side: Option<&[i8]>, costs: Option<&contexts::Costs>, first: u64| {
            let mut k = vec![0u64; contexts * symbols];
            let mut pairs = Vec::new();
            let mut search = contexts::Scratch::default();
            for (si, segment) in values.chunks(seg).enumerate() {
                let at = si * seg;
                let start = first + at as u64;
                // The self-contained form's contexts: each value after the previous one.
                let mut previous = alphabet.zero;
                for (j, &v) in segment.iter().enumerate() {
                    let s = symbol(path, alphabet, start + j as u64, v)?;
                    if form == Form::SelfContained {
                        k[previous * symbols + s] += 1;
                        previous = s;
                    }
                }
                let c = side.map(|c| &c[at..at + segment.len()]);
                match form {
                    Form::SelfContained => continue,
                    Form::Depths => {
                        let signs = c.expect("a depth table's values");
                        if let Some(j) =
                            (0..segment.len()).find(|&j| signs[j] == 0 && segment[j] != 0)
                        {
                            return Err(TableError::Mismatch {
                                path: path.to_path_buf(),
                                field: "depth",
                                expected: format!("0 for a draw at entry {}", start + j as u64),
                                got: segment[j].to_string(),
                            });
                        }
                        contexts::depth_pairs(&level, start, segment, signs, &mut pairs);
                    }
                    Form::CaptureDontCares => {
                        let c = c.expect("the probe form's ceilings");
                        let costs = costs.expect("the probe form's costs");
                        contexts::segment_pairs(
                            &level,
                            start,
                            segment,
                            c,
                            costs,
                            &mut search,
                            &mut pairs,
                        );
                    }
                }
                for &(ctx, s) in &pairs {
                    k[ctx * symbols + s] += 1;
                }
            }
            Ok::<_, TableError>(k)
        };
    let add = |mut a: Vec<u64>, b: Vec<u64>| {
        a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
        a
    };

    // The probe form's model (and an estimate's) is fitted to a sample of groups spread over
    // the level.
    let sample: Vec<(u64, Vec<u8>, Option<Vec<i8>>)> = if form.is_probe() || estimate_only {
        let stride = sample_stride(groups);
        (0..groups)
            .step_by(stride as usize)
            .collect::<Vec<_>>()
            .par_iter()
            .map(|&g| {
                let start = g * group as u64;
                let end = (start + group as u64).min(entries);
                let (v, c) = read_batch(start, end)?;
                progress(0, end);
                Ok((start, v, c))
            })
            .collect::<Result<_, TableError>>()?
    } else {
        Vec::new()
    };
    // The coder, and the model's bytes as the file stores them.
    let (coder, model_bytes) = if form.is_probe() {
        // Pass 1: the model refitted [`PROBE_FITS`] times, each to the shortest codes of the
        // sample's segments under the last model, from costs of a bit to repeat the previous
        // symbol and two for any other; the first two of a part of the sample.
        let mut costs = contexts::Costs::initial(symbols);
        let mut model = rans::Model::fit(symbols, &vec![0; contexts * symbols]);
        for fit in 1..=PROBE_FITS {
            let stride = if fit + 1 < PROBE_FITS {
                PROBE_EARLY_FIT_STRIDE
            } else {
                1
            };
            let counts = sample
                .par_iter()
                .step_by(stride)
                .map(|(first, v, c)| count(v, c.as_deref(), Some(&costs), *first))
                .try_reduce(|| vec![0u64; contexts * symbols], |a, b| Ok(add(a, b)))?;
            model = rans::Model::fit(symbols, &counts);
            costs = contexts::Costs::of(&model);
        }
        let bytes = model.to_le_bytes();
        (Coder::Rans { model, costs }, bytes)
    } else {
        // Pass 1: the counts per context (segment by segment, as they will be coded), of the
        // sample for an estimate, else streamed over the level.
        let counts = if estimate_only {
            sample
                .par_iter()
                .map(|(first, v, c)| count(v, c.as_deref(), None, *first))
                .try_reduce(|| vec![0u64; contexts * symbols], |a, b| Ok(add(a, b)))?
        } else {
            let mut counts = vec![0u64; contexts * symbols];
            for start in (0..entries).step_by(BATCH as usize) {
                let end = (start + BATCH).min(entries);
                let (buf, side) = read_batch(start, end)?;
                let part = buf
                    .par_chunks(group)
                    .enumerate()
                    .map(|(g, chunk)| {
                        let s = side
                            .as_deref()
                            .map(|s| &s[g * group..g * group + chunk.len()]);
                        count(chunk, s, None, start + (g * group) as u64)
                    })
                    .try_reduce(|| vec![0u64; contexts * symbols], |a, b| Ok(add(a, b)))?;
                counts = add(counts, part);
                progress(0, end);
            }
            counts
        };
        if form == Form::Depths {
            // Every (context, depth) pair is counted: the ones never seen get nothing.
            let model = rans::Model::fit_seen(symbols, &counts);
            let bytes = model.to_sparse_bytes();
            (Coder::RansDepth { model }, bytes)
        } else {
            let lengths = fit(symbols, &counts);
            let model = Model::from_lengths(symbols, &lengths).expect("built within the limits");
            (Coder::Huffman { model }, lengths)
        }
    };

    let index_offset = (HEADER_LEN + model_bytes.len()) as u64;
    let data_offset = index_offset + groups * GROUP_RECORD as u64;

    if estimate_only {
        let (sampled, bytes) = sample
            .par_iter()
            .map(|(first, v, c)| {
                let (_, data) =
                    encode_group(&coder, layout, alphabet, &level, *first, v, c.as_deref());
                (v.len() as u64, data.len() as u64)
            })
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        let data = (bytes as f64 * entries as f64 / sampled.max(1) as f64).round() as u64;
        return Ok(CompressedSize {
            entries,
            bytes: data_offset + data + TAIL as u64,
        });
    }

    // Pass 2: encode group by group, in parallel within a batch; the index records go to
    // their place, the data after them in order.
    let mut header = CompressedHeader {
        version: VERSION,
        form,
        segment_log2: layout.segment_log2,
        rules,
        seeds,
        symbols: symbols as u32,
        entries,
        index_offset,
        data_offset,
        checksum: 0,
        model_checksum: 0,
    };
    header.model_checksum = header.model_checksum_of(&model_bytes);
    let (tmp, file) = create_tmp(path)?;
    file.write_all_at(&header.to_bytes(), 0)
        .map_err(io_err(&tmp))?;
    file.write_all_at(&model_bytes, HEADER_LEN as u64)
        .map_err(io_err(&tmp))?;
    let mut cursor = 0u64;
    // The index, hashed as its records are written (in order): the file's last 8 bytes.
    let mut index_hash = xxhash_rust::xxh3::Xxh3::new();
    for start in (0..entries).step_by(BATCH as usize) {
        let end = (start + BATCH).min(entries);
        let (buf, ceilings) = read_batch(start, end)?;
        if form.is_probe() {
            // The values' range (pass 1 checked only its sample).
            buf.par_iter()
                .enumerate()
                .try_for_each(|(k, &v)| symbol(path, alphabet, start + k as u64, v).map(|_| ()))?;
        }
        let encoded: Vec<(Vec<u8>, Vec<u8>)> = buf
            .par_chunks(group)
            .enumerate()
            .map(|(g, values)| {
                let c = ceilings
                    .as_deref()
                    .map(|c| &c[g * group..g * group + values.len()]);
                let first = start + (g * group) as u64;
                encode_group(&coder, layout, alphabet, &level, first, values, c)
            })
            .collect();
        let first_group = start / group as u64;
        let mut records = Vec::with_capacity(encoded.len() * GROUP_RECORD);
        let mut data = Vec::new();
        for (mut record, bytes) in encoded {
            record[0..8].copy_from_slice(&cursor.to_le_bytes());
            records.extend_from_slice(&record);
            cursor += bytes.len() as u64;
            data.extend_from_slice(&bytes);
        }
        index_hash.update(&records);
        file.write_all_at(&records, index_offset + first_group * GROUP_RECORD as u64)
            .map_err(io_err(&tmp))?;
        file.write_all_at(&data, data_offset + cursor - data.len() as u64)
            .map_err(io_err(&tmp))?;
        progress(1, end);
    }
    let tail: [u8; TAIL] = index_hash.digest().to_le_bytes();
    file.write_all_at(&tail, data_offset + cursor)
        .map_err(io_err(&tmp))?;
    file.sync_data().map_err(io_err(&tmp))?;

    // Pass 3: decode it back and compare, then the checksum, the header, and the rename.
    let decoded = Compressed::open(&tmp, &file)?;
    for start in (0..entries).step_by(BATCH as usize) {
        let end = (start + BATCH).min(entries);
        let (want, ceilings) = read_batch(start, end)?;
        want.par_chunks(1 << 16)
            .enumerate()
            .try_for_each(|(c, w)| -> Result<(), TableError> {
                let from = start + (c << 16) as u64;
                let mut got = vec![0u8; w.len()];
                let tops = ceilings
                    .as_deref()
                    .map(|t| &t[c << 16..(c << 16) + w.len()]);
                if depth {
                    // Chunks start on a segment: their values are the context.
                    decoded.read_depths(from, &mut got, tops.expect("a depth table's values"))?;
                } else {
                    decoded.read_stored(from, &mut got)?;
                }
                let tops = tops.filter(|_| !depth);
                let wrong = |k: usize| {
                    let (g, v) = (got[k] as i8, w[k] as i8);
                    g != v && !tops.is_some_and(|t| t[k] != FIXED && g <= t[k] && v <= t[k])
                };
                if let Some(k) = (0..w.len()).find(|&k| wrong(k)) {
                    return Err(TableError::Mismatch {
                        path: tmp.clone(),
                        field: "decoded value",
                        expected: format!("{} at entry {}", w[k] as i8, from + k as u64),
                        got: (got[k] as i8).to_string(),
                    });
                }
                Ok(())
            })?;
        progress(2, end);
    }
    header.checksum = checksum(&decoded.map()[HEADER_LEN..]);
    drop(decoded);
    file.write_all_at(&header.to_bytes(), 0)
        .map_err(io_err(&tmp))?;
    let bytes = file.metadata().map_err(io_err(&tmp))?.len();
    commit_tmp(file, &tmp, path)?;
    Ok(CompressedSize { entries, bytes })
}
