"""Tests of the `awari` package against the command-line tools and the published facts.

The binaries come from AWARI_SOLVER and AWARI_PROBE, or from the repository's
target/release (run `cargo build --release` first); the database of levels 0..MAX is built
once per session into a temporary directory.
"""

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import awari

ROOT = Path(__file__).resolve().parents[2]
MAX = 16


def binary(name: str) -> str:
    path = os.environ.get(name.upper().replace("-", "_")) or str(ROOT / "target" / "release" / name)
    if not Path(path).exists():
        pytest.fail(f"{path} is missing: run `cargo build --release` first, or set {name.upper()}")
    return path


@pytest.fixture(scope="session")
def db_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("db") / "awari-db"
    subprocess.run(
        [binary("awari-solver"), "build", "--db", str(d), "--max-stones", str(MAX)],
        check=True,
        capture_output=True,
    )
    return d


@pytest.fixture(scope="session")
def db(db_dir) -> awari.Database:
    return awari.Database(db_dir)


def probe(*args: str, stdin: str = "") -> str:
    out = subprocess.run(
        [binary("awari-probe"), *args], input=stdin, capture_output=True, text=True, check=True
    )
    return out.stdout


def test_vu_example(db, db_dir):
    board = [1, 1, 1, 1, 1, 2, 4, 2, 3, 0, 0, 0]
    assert db.value(board) == 0
    assert [m.value for m in db.moves(board)] == [-1, -1, -2, -2, -2, 0]
    assert [m.best for m in db.moves(board)] == [False] * 5 + [True]
    assert db.best_moves(board) == [5]
    assert awari.index(board) == 588953
    assert awari.board(16, 588953) == board
    # The same as the command line, move for move.
    shown = json.loads(probe("show", "--db", str(db_dir), "--json", *map(str, board)))
    assert [m["value"] for m in shown["moves"]] == [m.value for m in db.moves(board)]
    assert [m["child"] for m in shown["moves"]] == [m.child for m in db.moves(board)]


def test_one_seed_start_is_a_draw(db, db_dir):
    start = [1] * 12
    assert db.value(start) == 0
    assert db.value("1 1 1 1 1 1 1 1 1 1 1 1") == 0
    assert awari.index(start) is None  # a full opponent row: valued by one ply
    line = db.line(start)
    assert line == json.loads(probe("line", "--db", str(db_dir), "--json", *["1"] * 12))
    assert line["complete"] and line["result"][0] - line["result"][1] == 0


def test_database_facts(db, db_dir):
    assert db.levels == [n for n in range(MAX + 1)]
    assert db.rules == "awari"
    assert awari.Database(db_dir, rules="awari").levels == db.levels
    assert awari.Database(str(db_dir)).levels == db.levels
    # Boards as tuples, numpy rows, lists: all the same.
    b = awari.random_boards(10, 1, seed=3)[0]
    assert db.value(tuple(int(x) for x in b)) == db.value(b) == db.value(list(b))


def test_ten_thousand_values_agree_with_batch(db, db_dir):
    boards = np.concatenate([awari.random_boards(n, 1000, seed=n) for n in range(4, MAX + 1)])
    boards = boards[:10_000]
    assert boards.shape == (10_000, 12)
    values = db.values(boards)
    assert values.dtype == np.int8 and values.shape == (len(boards),)
    text = "".join(" ".join(map(str, row)) + "\n" for row in boards)
    expected = [int(v) for v in probe("batch", "--db", str(db_dir), stdin=text).split()]
    assert values.tolist() == expected
    # Any integer dtype, any strides (read in place), and one at a time.
    for t in (np.int8, np.int16, np.int32, np.int64, np.uint16, np.uint32, np.uint64):
        assert db.values(boards.astype(t)).tolist() == expected, t
    wide = np.zeros((len(boards), 24), dtype=np.int32)
    wide[:, 1::2] = boards
    assert db.values(wide[:, 1::2]).tolist() == expected
    assert db.values(np.asfortranarray(boards)).tolist() == expected
    assert db.values(boards[::-1]).tolist() == expected[::-1]
    assert db.values(boards.tolist()[:50]).tolist() == expected[:50]
    assert [db.value(b) for b in boards[:200]] == expected[:200]


def test_random_boards_are_uniform_positions_of_the_level():
    b = awari.random_boards(20, 5000, seed=7)
    assert b.shape == (5000, 12) and b.dtype == np.uint8
    assert (b.sum(axis=1) == 20).all()
    assert (b[:, 6:].min(axis=1) == 0).all()  # an empty opponent pit: a position of the level
    assert (awari.random_boards(20, 5000, seed=7) == b).all()
    assert not (awari.random_boards(20, 5000, seed=8) == b).all()
    # Indices spread over the level.
    idx = np.array([awari.index(row) for row in b[:2000]])
    size = 80214915
    assert idx.min() < size // 10 and idx.max() > size - size // 10
    assert awari.random_boards(0, 2).tolist() == [[0] * 12] * 2
    assert awari.random_boards(5, 0).shape == (0, 12)


def test_rules_without_a_database():
    # A grand slam: abapa captures nothing, grand-slam takes the two seeds.
    board = [0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0]
    assert [(m.pit, m.captures) for m in awari.moves(board, rules="abapa")] == [(5, 0)]
    assert [(m.pit, m.captures) for m in awari.moves(board, rules="grand-slam")] == [(5, 2)]
    assert awari.moves(board) == []  # awari: the only move eradicates, the game ends
    # cross-wari: an odd pit sows clockwise.
    board = [0, 3, 1, 0, 0, 0, 1, 0, 0, 0, 1, 2]
    moves = awari.moves(board, rules="cross-wari")
    # Pit 1's 3 seeds go clockwise into 0, 11, 10 and capture 10 and 11 (2 + 3).
    assert [(m.pit, m.captures) for m in moves] == [(1, 5), (2, 0)]
    assert moves[0].child == [1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0]
    assert [(m.pit, m.captures) for m in awari.moves(board, rules="abapa")] == [(1, 0), (2, 0)]
    for m in awari.moves("start"):
        assert m.value is None and not m.best and sum(m.child) == 48
    for level in (0, 1, 12, 30, 48):
        i = awari.index(awari.board(level, 0))
        assert i == 0


@pytest.mark.parametrize(
    "bad, message",
    [
        ([1, 2, 3], "12 pits"),
        ([49] + [0] * 11, "49 seeds"),
        ([-1] + [0] * 11, "pit 0"),
        (["a"] * 12, "pit 0"),
        ([4] * 11 + [3], "47 seeds"),
        (5, "12 pit counts"),
        ("nonsense", "pit 0"),
    ],
)
def test_bad_boards_raise_value_error_with_the_cli_message(db, bad, message):
    with pytest.raises(ValueError, match=message):
        db.value(bad)
    with pytest.raises(ValueError, match=message):
        awari.moves(bad)
    with pytest.raises(ValueError, match=message):
        awari.index(bad)


def test_every_error_path(db, db_dir, tmp_path):
    with pytest.raises(ValueError, match="rule"):
        awari.moves([1] * 12, rules="chess")
    with pytest.raises(ValueError, match="rule"):
        awari.Database(db_dir, rules="chess")
    with pytest.raises(awari.DatabaseError, match="abapa"):
        awari.Database(db_dir, rules="abapa")
    with pytest.raises(awari.DatabaseError, match="does not exist"):
        awari.Database(tmp_path / "nowhere")
    # A level the database lacks.
    with pytest.raises(awari.DatabaseError, match=f"level {MAX + 2}"):
        db.value(awari.random_boards(MAX + 2, 1)[0])
    with pytest.raises(awari.DatabaseError, match="missing"):
        db.values(awari.random_boards(MAX + 2, 3))
    # Arrays of the wrong shape or content.
    with pytest.raises(ValueError, match="11 columns"):
        db.values(np.zeros((3, 11), dtype=np.int64))
    with pytest.raises(ValueError, match="dimension"):
        db.values(np.zeros(12, dtype=np.int64))
    with pytest.raises(ValueError, match="row 1: .*49 seeds"):
        db.values(np.array([[0] * 12, [49] + [0] * 11]))
    with pytest.raises(ValueError, match="row 0: pit 3"):
        db.values(np.array([[0, 0, 0, -2] + [0] * 8]))
    with pytest.raises(ValueError):
        db.values("not an array")
    with pytest.raises(ValueError, match="not of float64"):
        db.values(np.zeros((3, 12)))
    with pytest.raises(ValueError, match="row 2: .*pit 0"):
        db.values(np.array([[0] * 12, [0] * 12, [2**63] + [0] * 11], dtype=np.uint64))
    with pytest.raises(ValueError, match="row 0: .*pit 0"):
        db.values(np.array([[-1] + [0] * 11], dtype=np.int8))
    # Levels that do not exist, and indices past a level's end.
    with pytest.raises(ValueError, match="no level 47"):
        awari.board(47, 0)
    with pytest.raises(ValueError, match="no level 49"):
        awari.random_boards(49, 1)
    with pytest.raises(ValueError, match="past the end"):
        awari.board(1, 12)
    # A corrupt table: bad magic, then a truncated file.
    copy = tmp_path / "copy"
    shutil.copytree(db_dir, copy)
    table = copy / "level-12.values"
    data = table.read_bytes()
    table.write_bytes(b"Z" + data[1:])
    with pytest.raises(awari.DatabaseError, match="magic"):
        awari.Database(copy)
    table.write_bytes(data[:-10])
    with pytest.raises(awari.DatabaseError, match="truncated"):
        awari.Database(copy)


def test_a_raw_vu_directory(db, db_dir, tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    for n in range(MAX + 1):
        # VU's scores.N: a table's entries (their count at offset 24 of its header), without
        # the 64-byte header and the chunk digests after them.
        table = (db_dir / f"level-{n:02}.values").read_bytes()
        size = int.from_bytes(table[24:32], "little")
        data = table[64 : 64 + size]
        (raw / f"scores.{n}").write_bytes(data)
    vu = awari.Database(raw)
    assert vu.levels == db.levels and vu.rules == "awari"
    boards = np.concatenate([awari.random_boards(n, 300, seed=n) for n in range(MAX + 1)])
    assert (vu.values(boards) == db.values(boards)).all()
    assert vu.value([1, 1, 1, 1, 1, 2, 4, 2, 3, 0, 0, 0]) == 0


# The probe form to 13 seeds only: its capture searches make compressing levels 0..16 some
# 60 times slower than the self-contained form (40 s of CPU against 0.7 s, measured beside
# other work), and its reader is the same code at every level.
@pytest.mark.parametrize("form,top", [([], MAX), (["--probe"], 13)], ids=["self-contained", "probe-form"])
def test_a_compressed_database_answers_like_the_plain_one(db, db_dir, tmp_path, form, top):
    packed = tmp_path / "packed"
    stones = [str(n) for n in range(top + 1)]
    subprocess.run(
        [binary("awari-solver"), "compress", "--db", str(db_dir), "--out", str(packed), "--stones", *stones, *form],
        check=True,
        capture_output=True,
    )
    assert (packed / f"level-{top:02}.cvalues").exists()
    assert not (packed / f"level-{top:02}.values").exists()
    compressed = awari.Database(packed)
    assert compressed.levels == list(range(top + 1))
    boards = np.concatenate([awari.random_boards(k, 100_000 // (top + 1) + 1, seed=k) for k in range(top + 1)])
    np.random.default_rng(3).shuffle(boards)
    boards = boards[:100_000]
    assert (compressed.values(boards) == db.values(boards)).all()
    for b in boards[:: 10_000].tolist():
        assert compressed.value(b) == db.value(b)
        assert [m.value for m in compressed.moves(b)] == [m.value for m in db.moves(b)]
    # A damaged block: an error naming the level and the block, never a wrong value.
    path = packed / f"level-{top:02}.cvalues"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x20
    path.write_bytes(bytes(data))
    damaged = awari.Database(packed)
    # One board in every half block (256 positions) of the level reads every block.
    size = math.comb(top + 11, 11) - math.comb(top + 5, 11)
    every = np.array([awari.board(top, i) for i in range(0, size, 256)], dtype=np.uint8)
    with pytest.raises(Exception, match=f"level {top}, block"):
        damaged.values(every)
