//! The stream's rule for one packed word of the low-memory algorithm (12 codes and their 12
//! work bytes), branch-free, and the encoding of the work bytes: an exit while a position is
//! unsettled, its value (bit 6 flipped, see [`encode_value`]) once it is settled.

use super::{new_code, BITS, DONE_WIN, PER_WORD, SETTLED};

/// What a settled position's work byte holds: its value with bit 6 flipped. Exits (−48..=48,
/// and `NO_EXIT`) are the bytes 0x00..=0x30, 0xd0..=0xff and 0x80; values so encoded are
/// 0x40..=0x70 and 0x90..=0xbf, so that a byte says by itself which it is. A resume reads the
/// work file alone: every value on disk is one it can tell from an exit.
pub(super) const VALUE_FLAG: u8 = 0x40;

/// The work byte of a settled position of value `v`.
#[inline]
pub(super) fn encode_value(v: i8) -> u8 {
    v as u8 ^ VALUE_FLAG
}

/// What a work byte holds: an exit (`Ok`, `NO_EXIT` among them) or a value (`Err`).
#[inline]
pub(super) fn decode(byte: u8) -> Result<i8, i8> {
    match byte {
        0x40..=0x70 | 0x90..=0xbf => Err((byte ^ VALUE_FLAG) as i8),
        _ => Ok(byte as i8),
    }
}

/// What the stream does to a position at one step (see [`stream_word`]).
pub(super) struct StreamKernel {
    /// The codes of the positions settled at the previous step: won, lost.
    pub(super) done: [u8; 2],
    /// Their values (the previous step, won and lost), as work bytes ([`encode_value`]).
    pub(super) values: [u8; 2],
    /// Whether this is a step (else the last pass, which only writes values).
    pub(super) active: bool,
    /// The step.
    pub(super) step: i8,
    /// Whether every word is run through the kernel: the first step, which sets `exit_ok` of
    /// the positions without an exit (see [`may_change`]).
    pub(super) every_word: bool,
}

/// One in each of the twelve 5-bit codes of a packed word.
const CODES_01: u64 = {
    let mut x = 0;
    let mut k = 0;
    while k < PER_WORD {
        x |= 1 << (BITS as u64 * k);
        k += 1;
    }
    x
};

/// Whether [`stream_word`] can change a word at this step; false means it would return the
/// word unchanged, with no seeds and nothing to write, so the stream skips it. About two
/// thirds of the words a step streams are such, and this test costs a fifth of the kernel.
///
/// After the first step, an unsettled position's code is as the stream left it at the
/// previous step, so the kernel changes it only at the steps its exit decides something:
/// a win at step `exit` (a seed), `exit_ok` at step `−exit` (and, if its counter is already
/// 0, a loss). Unsettled positions have no exit above the step (they would have been won), and
/// `exit_ok` is sticky. So a word can change only where a code is one the previous step
/// settled (its value to write) or an exit byte is `±step`. Positions without an exit get
/// their `exit_ok` at the first step, which runs the kernel on every word (and so does the
/// first step of a resumed run). The values written earlier are encoded ([`encode_value`]),
/// so they never match.
///
/// Propagation from other chunks may change the word meanwhile, but only by settling at this
/// step or by lowering a counter, neither of which the kernel would undo or act on.
#[inline(always)]
pub(super) fn may_change(old: u64, bytes: &[u8; 12], k: &StreamKernel) -> bool {
    if k.every_word {
        return true;
    }
    // Codes done[0] and done[1] = done[0] + 1 (done[0] even): 0 or 1 after the xor, so zero
    // in bits 1..5. A 5-bit lane is nonzero when its low 4 bits plus 0xf, or the lane itself,
    // reach bit 4 (no carry leaves the lane: 0xe + 0xf < 0x20).
    let x = (old ^ (u64::from(k.done[0]) * CODES_01)) & (0x1e * CODES_01);
    let nonzero = (((x & (0xf * CODES_01)) + 0xf * CODES_01) | x) & (0x10 * CODES_01);
    if nonzero != 0x10 * CODES_01 {
        return true;
    }
    if !k.active {
        return false;
    }
    // Any exit byte equal to the step or to its negation: a zero lane after the xor (the
    // borrow test, exact for "any zero lane" whatever the bytes hold).
    use awari_db::packed::{BYTES_01 as B01, BYTES_80 as B80};
    let exit = byte_lanes(bytes);
    let any_zero = |x: u128| x.wrapping_sub(B01) & !x & B80 != 0;
    any_zero(exit ^ (u128::from(k.step as u8) * B01))
        || any_zero(exit ^ (u128::from((-k.step) as u8) * B01))
}

/// Twelve bytes as the twelve low byte lanes of a `u128` (the other four 0).
#[inline(always)]
fn byte_lanes(bytes: &[u8; 12]) -> u128 {
    let mut b16 = [0u8; 16];
    b16[..12].copy_from_slice(bytes);
    u128::from_le_bytes(b16)
}

/// The stream's work on one packed word (12 codes) and its 12 work bytes (the exits of
/// unsettled positions, the encoded values of the others, which it passes through as they
/// are): positions settled at the previous step get their value written and
/// their code marked done; unsettled ones get `exit_ok` for this step, and those their exit
/// decides are settled (seeds). Returns the new word, the seeds (bit k for position k, bit
/// 16 + k when it is a win), and the new bytes when any was written.
///
/// Branch-free SWAR on the 12 codes and 12 bytes as byte lanes of a `u128`: whether a position
/// is unsettled is unpredictable in the middle steps, and branches on it cost more than the
/// whole word. Every lane test below is a high bit: a sum that reaches 0x80 without leaving
/// its byte (codes are below 32; exits are shifted to 16..=112, `NO_EXIT` to 0).
#[inline(always)]
pub(super) fn stream_word(
    old: u64,
    bytes: [u8; 12],
    k: &StreamKernel,
) -> (u64, u32, Option<[u8; 12]>) {
    use awari_db::packed::{
        byte_mask, zero_bytes, BYTES_01 as B01, BYTES_7F as B7F, BYTES_80 as B80,
    };
    // A lane's high bit spread over its byte.
    let spread = |high: u128| (high >> 7) * 0xff;
    let select = |m: u128, a: u128, b: u128| (a & spread(m)) | (b & !spread(m));
    let code = u128::from(unpack_codes(old & ((1 << 30) - 1)))
        | (u128::from(unpack_codes(old >> 30)) << 48);
    let raw = byte_lanes(&bytes);
    // Settled positions' bytes (encoded values, or exits not yet replaced) read as exit 0:
    // only unsettled lanes are decided by their exit, and an encoded value would leave the
    // range the lane tests below are exact in.
    let settled = (code + (0x80 - SETTLED as u128) * B01) & B80;
    let exit = raw & !spread(settled);
    // u = exit + 128 (NO_EXIT: 0), then the others less 64: 16..=112.
    let u = exit ^ B80;
    let no_exit = !(((u & B7F) + B7F) | u) & B80;
    let u = u - ((0x40 * B01) & !spread(no_exit));
    let step = k.step as u8 as u128;
    let active = if k.active { B80 } else { 0 };
    let unsettled = !settled & B80 & active;
    let win = (u + (64 - step) * B01) & B80 & unsettled; // exit ≥ step
    let exit_ok = !(u + (63 + step) * B01) & B80; // exit ≤ −step
    let counter_zero = !(code + 0x7e * B01) & B80; // code 0 or 1
    let loss = unsettled & !win & counter_zero & exit_ok;
    let lane = |c: u8| u128::from(c) * B01;
    let done_win = zero_bytes(code ^ lane(k.done[0]));
    let done_loss = zero_bytes(code ^ lane(k.done[1]));
    let mut next = select(unsettled, (code & !B01) | (exit_ok >> 7), code);
    next = select(win, lane(new_code(k.step, true) as u8), next);
    next = select(loss, lane(new_code(k.step, false) as u8), next);
    next = select(
        done_win | done_loss,
        lane(DONE_WIN as u8) + (done_loss >> 7),
        next,
    );
    let new = pack_codes(next as u64) | (pack_codes((next >> 48) as u64) << 30);
    let found = byte_mask(win | loss) | (byte_mask(win) << 16);
    let written = (done_win | done_loss != 0).then(|| {
        let out = select(
            done_win,
            lane(k.values[0]),
            select(done_loss, lane(k.values[1]), raw),
        );
        let mut b = [0u8; 12];
        b.copy_from_slice(&out.to_le_bytes()[..12]);
        b
    });
    (new, found, written)
}

/// Six 5-bit codes (bits 0..30) spread to six bytes.
#[inline(always)]
fn unpack_codes(x: u64) -> u64 {
    const F: u64 = 0x1f | (0x1f << 24);
    let y = (x & 0x7fff) | ((x & 0x3fff_8000) << 9); // three codes at bit 0, three at bit 24
    (y & F) | ((y & (F << 5)) << 3) | ((y & (F << 10)) << 6)
}

/// Six bytes (each below 32) packed to six 5-bit codes: the inverse of `unpack_codes`.
#[inline(always)]
fn pack_codes(y: u64) -> u64 {
    const F: u64 = 0x1f | (0x1f << 24);
    let y = (y & F) | ((y >> 3) & (F << 5)) | ((y >> 6) & (F << 10));
    (y & 0x7fff) | ((y >> 9) & 0x3fff_8000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::level::lowmem::MASK;
    use crate::settle::NO_EXIT;

    /// Every value's byte is one no exit has, and decodes to the value; every exit decodes
    /// to itself.
    #[test]
    fn values_and_exits_have_their_own_bytes() {
        let exits: Vec<i8> = std::iter::once(NO_EXIT).chain(-48..=48).collect();
        for v in -48..=48i8 {
            let b = encode_value(v);
            assert_eq!(decode(b), Err(v));
            assert!(exits.iter().all(|&e| e as u8 != b), "value {v}");
        }
        for &e in &exits {
            assert_eq!(decode(e as u8), Ok(e));
        }
    }

    /// The stream's rule for one position, written plainly: (new code, new byte, seed, win).
    fn reference(code: u64, byte: u8, k: &StreamKernel) -> (u64, u8, bool, bool) {
        if code == u64::from(k.done[0]) || code == u64::from(k.done[1]) {
            let win = code == u64::from(k.done[0]);
            let value = if win { k.values[0] } else { k.values[1] };
            return (DONE_WIN + u64::from(!win), value, false, false);
        }
        if !k.active || code >= SETTLED {
            return (code, byte, false, false);
        }
        let (exit, i) = (byte as i8, k.step);
        let exit_ok = exit <= -i;
        if exit >= i && exit != NO_EXIT {
            (new_code(i, true), byte, true, true)
        } else if code / 2 == 0 && exit_ok {
            (new_code(i, false), byte, true, false)
        } else {
            (2 * (code / 2) + u64::from(exit_ok), byte, false, false)
        }
    }

    /// The SWAR kernel equals the plain rule on random words: every code, every exit byte
    /// (`NO_EXIT` and the ±48 range, at the edges of the lane tests), encoded values beside
    /// them, every step, the last pass.
    #[test]
    fn stream_word_equals_the_plain_rule() {
        let mut rng = awari_db::SplitMix64(12);
        for round in 0..200_000 {
            let step = 1 + rng.below(48) as i8;
            let prev = if round % 7 == 0 { 1 } else { step + 1 };
            let kernel = StreamKernel {
                done: [new_code(prev, true) as u8, new_code(prev, false) as u8],
                values: [encode_value(prev), encode_value(-prev)],
                active: round % 7 != 0,
                step,
                every_word: false,
            };
            let mut word = 0u64;
            let mut bytes = [0u8; 12];
            for (j, b) in bytes.iter_mut().enumerate() {
                let code = rng.below(20);
                word |= code << (BITS as usize * j);
                *b = match rng.below(9) {
                    // A settled position's value (the lane tests must ignore it).
                    8 if code >= SETTLED => encode_value(rng.below(97) as i8 - 48),
                    0 => NO_EXIT as u8,
                    1 => step as u8,
                    2 => (-step) as u8,
                    3 => (step - 1) as u8,
                    4 => (1 - step) as u8,
                    _ => (rng.below(97) as i8 - 48) as u8,
                };
            }
            let (new, found, written) = stream_word(word, bytes, &kernel);
            for (j, &b) in bytes.iter().enumerate() {
                let code = (word >> (BITS as usize * j)) & MASK;
                let (c, byte, seed, win) = reference(code, b, &kernel);
                let got_byte = written.map_or(b, |w| w[j]);
                assert_eq!(
                    (
                        (new >> (BITS as usize * j)) & MASK,
                        got_byte,
                        found >> j & 1 == 1,
                        found >> (16 + j) & 1 == 1
                    ),
                    (c, byte, seed, win),
                    "code {code}, exit {}, step {step}, last pass {}",
                    b as i8,
                    !kernel.active
                );
            }
            assert_eq!(new >> 60, 0);
        }
    }

    /// A word the stream skips is one the kernel leaves unchanged, on random words in the
    /// states the previous steps leave: unsettled positions with `exit_ok` as of the previous
    /// step (and never a zero counter with it set), positions settled earlier with their
    /// values written, at the previous step (values to write) or at this one.
    #[test]
    fn skipped_words_are_unchanged() {
        let mut rng = awari_db::SplitMix64(13);
        let (mut skipped, mut run) = (0, 0);
        for round in 0..300_000 {
            let last_pass = round % 5 == 0;
            let step = if last_pass {
                1
            } else {
                1 + rng.below(47) as i8
            };
            let prev = if last_pass { 1 } else { step + 1 };
            let kernel = StreamKernel {
                done: [new_code(prev, true) as u8, new_code(prev, false) as u8],
                values: [encode_value(prev), encode_value(-prev)],
                active: !last_pass,
                step,
                every_word: false,
            };
            // Mostly unsettled positions and earlier values, so that many words are skipped.
            let rare = 1 + rng.below(40);
            let mut word = 0u64;
            let mut bytes = [0u8; 12];
            for (j, b) in bytes.iter_mut().enumerate() {
                let exit = |rng: &mut awari_db::SplitMix64| match rng.below(6) {
                    0 => NO_EXIT,
                    1 => -step,
                    2 => step - 1,
                    _ => rng.below(97) as i8 - 48,
                };
                let (code, byte) = match rng.below(rare) {
                    // Settled at the previous step, or at this one (by propagation).
                    0 => (new_code(prev, rng.below(2) == 0), exit(&mut rng) as u8),
                    1 if !last_pass => (new_code(step, rng.below(2) == 0), exit(&mut rng) as u8),
                    k if k % 2 == 0 => {
                        // Settled earlier, its value ±j written (j ≥ prev + 1).
                        let j = (prev + 1 + rng.below(48) as i8).min(48);
                        let win = rng.below(2) == 0;
                        let value = if win { j } else { -j };
                        (DONE_WIN + u64::from(!win), encode_value(value))
                    }
                    _ => {
                        // Unsettled: no exit above the step (it would have won), exit_ok as
                        // of the previous step, never a zero counter with exit_ok set.
                        let mut e = exit(&mut rng);
                        if !last_pass && e != NO_EXIT && e > step {
                            e = step;
                        }
                        if last_pass && e != NO_EXIT && e >= 1 {
                            e = 0;
                        }
                        let exit_ok = e == NO_EXIT || e <= -prev;
                        let counter = if exit_ok {
                            1 + rng.below(6)
                        } else {
                            rng.below(7)
                        };
                        (2 * counter + u64::from(exit_ok), e as u8)
                    }
                };
                word |= code << (BITS as usize * j);
                *b = byte;
            }
            if may_change(word, &bytes, &kernel) {
                run += 1;
                continue;
            }
            skipped += 1;
            assert_eq!(
                stream_word(word, bytes, &kernel),
                (word, 0, None),
                "step {step}, codes {word:#x}, bytes {bytes:?}"
            );
        }
        assert!(
            skipped > 30_000 && run > 30_000,
            "skipped {skipped}, run {run}"
        );
    }
}
