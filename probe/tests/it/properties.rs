//! Property tests of `batch`'s input: any bytes, lines of boards written in every accepted
//! style, the same lines damaged, and arbitrary text, never panic, and answer exactly what the
//! reference (the general board parser, then one lookup per board) answers, up to the first
//! bad line, which is then the error, with its number.

use crate::common;

use std::sync::OnceLock;

use awari_db::{Board, DbError, Rules};
use awari_probe::batch::{run, Answer, BatchError};
use awari_probe::{check_playable, report, Database};
use awari_solver::build::{build, BuildOptions};
use awari_solver::Silent;
use common::any_board;
use proptest::prelude::*;

/// The highest level of the test database: boards with more seeds are a missing level.
const TOP: u32 = 12;

/// Levels 0..=TOP with depth tables, built once for all the cases (and kept for the next runs
/// while the sources are unchanged: [`common::shared`]).
fn database() -> &'static Database {
    static DB: OnceLock<Database> = OnceLock::new();
    DB.get_or_init(|| {
        let dir = common::shared("probe-props", file!(), |dir| {
            let opts = BuildOptions {
                dir: dir.to_path_buf(),
                max_stones: TOP,
                rules: Rules::Awari,
                memory: None,
                depth: true,
                mode: Default::default(),
                compress: false,
                depth_form: Default::default(),
            };
            build(&opts, &Silent, |_| {}).unwrap();
        });
        Database::open(&dir, None).unwrap()
    })
}

/// A board written in one of the accepted styles: spaces, commas, tabs, mixed, padded, with
/// a carriage return, or (if `start`) `start`.
fn board_text(max: u32, start: bool) -> impl Strategy<Value = Vec<u8>> {
    let styles = if start { 7 } else { 6 };
    (any_board(max), 0..styles, any::<bool>()).prop_map(|(b, style, cr)| {
        let pits: Vec<String> = b.pits().iter().map(u8::to_string).collect();
        let mut text = match style {
            0 => pits.join(" "),
            1 => pits.join(","),
            2 => pits.join(", "),
            3 => pits.join("\t"),
            4 => format!("  {}  ", pits.join("  ")),
            5 => pits
                .iter()
                .map(|p| format!("0{p}"))
                .collect::<Vec<_>>()
                .join(" "),
            _ => "start".to_string(),
        };
        if cr {
            text.push('\r');
        }
        text.into_bytes()
    })
}

/// A line of good input: a board of at most `max` seeds in an accepted style (`start` too
/// if `start`), or a blank line.
fn good_line(max: u32, start: bool) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        12 => board_text(max, start),
        1 => "[ \t\r]{0,3}".prop_map(String::into_bytes),
    ]
}

/// Any input line (no newline in it): mostly good, some damaged or arbitrary.
fn line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Some boards beyond the database: a missing level.
        30 => good_line(TOP + 2, true),
        // A board text damaged: a byte replaced, inserted or removed.
        3 => (board_text(TOP, false), any::<prop::sample::Index>(), any::<u8>(), 0usize..3).prop_map(
            |(mut t, at, byte, how)| {
                let k = at.index(t.len() + 1);
                let byte = if byte == b'\n' { b'x' } else { byte };
                match how {
                    0 if k < t.len() => t[k] = byte,
                    1 => t.insert(k, byte),
                    _ if k < t.len() => {
                        t.remove(k);
                    }
                    _ => t.push(byte),
                }
                t
            }
        ),
        1 => "\\PC{0,30}".prop_map(String::into_bytes),
        1 => "[0-9 ,\t-]{0,40}".prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..30),
    ]
}

/// What one line should give: `None` for a blank line, else its board or why it is bad.
fn reference(line: &[u8]) -> Option<Result<Board, String>> {
    let Ok(text) = std::str::from_utf8(line) else {
        return Some(Err("not UTF-8 text".into()));
    };
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    Some(
        Board::parse(text)
            .map_err(|e| e.to_string())
            .and_then(|b| check_playable(&b).map(|()| b)),
    )
}

/// The reference answer to a good board (or the lookup's error).
fn answer(db: &Database, board: &Board, how: Answer) -> Result<Vec<u8>, DbError> {
    let mut out = Vec::new();
    match how {
        Answer::Value => out.extend(format!("{}\n", db.value(board)?).bytes()),
        Answer::ValueDepth => {
            let v = db.value(board)?;
            // A board above the database's levels whose moves all capture has a value (from
            // its children) but no depth table: `batch` stops there, as on a missing level.
            let d = db.depth(board)?.ok_or_else(|| DbError::MissingDepth {
                dir: db.levels().dir().to_path_buf(),
                seeds: board.seeds(),
            })?;
            out.extend(format!("{v} {d}\n").bytes());
        }
        Answer::Json => {
            report(board, db.rules(), Some(db))?.write_json(&mut out);
            out.push(b'\n');
        }
    }
    Ok(out)
}

/// Run `batch` on `lines` and compare with the reference, line by line.
fn check(lines: &[Vec<u8>], trailing: bool, how: Answer) -> Result<(), TestCaseError> {
    let db = database();
    let mut input = lines.join(&b'\n');
    if trailing {
        input.push(b'\n');
    }
    let mut got = Vec::new();
    let result = run(db, how, input.as_slice(), &mut got);

    let mut want = Vec::new();
    let mut failure = None;
    // `split` gives one empty piece after a trailing newline: a blank line, no answer.
    for (k, l) in input.split(|&b| b == b'\n').enumerate() {
        match reference(l) {
            None => {}
            Some(Err(message)) => {
                failure = Some((k as u64 + 1, Some(message)));
                break;
            }
            Some(Ok(board)) => match answer(db, &board, how) {
                Ok(a) => want.extend(a),
                Err(e) => {
                    prop_assert!(board.seeds() > TOP, "{board}: {e}");
                    failure = Some((k as u64 + 1, None));
                    break;
                }
            },
        }
    }
    prop_assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(&want)
    );
    match (failure, result) {
        (None, Ok(())) => {}
        (
            Some((number, Some(message))),
            Err(BatchError::Line {
                number: n,
                message: m,
            }),
        ) => {
            prop_assert_eq!((n, m), (number, message));
        }
        (
            Some((_, None)),
            Err(BatchError::Db(DbError::MissingLevel { .. } | DbError::MissingDepth { .. })),
        ) => {}
        (want, got) => prop_assert!(false, "expected {:?}, got {:?}", want, got),
    }
    Ok(())
}

fn answers() -> impl Strategy<Value = Answer> {
    prop::sample::select(vec![Answer::Value, Answer::ValueDepth, Answer::Json])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Good input within the database: every line answered.
    #[test]
    fn batch_answers_good_lines_as_the_reference_does(
        lines in prop::collection::vec(good_line(TOP, false), 0..40),
        trailing in any::<bool>(),
        how in answers(),
    ) {
        check(&lines, trailing, how)?;
    }

    /// Any input: the same answers up to the first bad line, then its error.
    #[test]
    fn batch_answers_any_input_as_the_reference_does(
        lines in prop::collection::vec(line(), 0..40),
        trailing in any::<bool>(),
        how in answers(),
    ) {
        check(&lines, trailing, how)?;
    }
}

/// A case the property found: a board above the database's levels (14 seeds, the test
/// database stops at 12) whose one move captures has a value from its children but no depth:
/// with depths asked, `batch` answers the line before it and stops there with the error.
#[test]
fn a_board_above_the_levels_with_only_captures_stops_a_depth_batch() {
    let lines = [
        b"1 1 1 1 1 1 1 1 1 1 1 1".to_vec(),
        b"0 0 0 0 0 6 3 1 1 1 1 1".to_vec(),
    ];
    check(&lines, true, Answer::ValueDepth).unwrap();
    check(&lines, false, Answer::Value).unwrap();
}
