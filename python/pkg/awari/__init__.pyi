"""Perfect-play Awari (Oware): the solved game's databases and rules.

A board is any sequence of 12 integers -- pits 0..11 counted counter-clockwise from the side
to move, its own row (0..5) first -- or a string as the command line takes it ("start",
"1 1 1 1 1 1 1 1 1 1 1 1"). A value is the seed difference the side to move obtains, from the
seeds on the board, with perfect play: +2 means it captures two more of them than the
opponent; 0 is a draw.

`awari.openspiel` (typed in its source) bridges to OpenSpiel: `board_from_state`,
`PerfectBot` and `evaluate`.
"""

from os import PathLike
from typing import Any, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

BoardLike = Union[Sequence[int], str]

class DatabaseError(Exception):
    """A database cannot answer: a level is missing, a table is corrupt or of another rule set."""

class Move:
    """One legal move of a position."""

    pit: int
    """The pit played, 0..5 (from the side to move)."""
    captures: int
    """Seeds captured."""
    child: list[int]
    """The position after the move, from the next mover's side."""
    value: Optional[int]
    """The mover's value of the move, captures - value(child) (None without a database)."""
    best: bool
    """Whether the move achieves the position's value (False without a database)."""

class Database:
    """A database directory: the tables `awari-solver build` writes (plain or compressed), or the
    VU release's raw scores.N files."""

    def __init__(self, path: Union[str, PathLike[str]], rules: Optional[str] = None) -> None:
        """Open the database in `path`; with `rules` ("awari", "abapa", "grand-slam") the
        tables must be of that rule set. Raises DatabaseError."""
    def value(self, board: BoardLike) -> int:
        """The value of `board` for the side to move."""
    def moves(self, board: BoardLike) -> list[Move]:
        """Every legal move with its value, and whether it is best (in `best_moves`)."""
    def best_moves(self, board: BoardLike) -> list[int]:
        """The perfect pits (empty at the end of the game): those that achieve the position's
        value and, where depth tables exist, of those the ones that convert a win fastest or
        hold a loss longest, so that playing them realises every win."""
    def line(self, board: BoardLike, max_plies: int = 2000) -> dict[str, Any]:
        """A perfect-play game from `board` to its end: the document of
        `awari-probe line --json` (board, value, plies, result, complete, end)."""
    def values(self, boards: npt.ArrayLike) -> npt.NDArray[np.int8]:
        """The values of an (N, 12) array of boards, computed on all cores without the GIL."""
    @property
    def levels(self) -> list[int]:
        """The levels (seed counts) present, in increasing order."""
    @property
    def rules(self) -> str:
        """The rule set of the tables."""

def moves(board: BoardLike, rules: str = "awari") -> list[Move]:
    """The legal moves of `board` under `rules`, without values (no database needed)."""

def index(board: BoardLike) -> Optional[int]:
    """The index of `board` in its level (the Romein & Bal numbering), or None when its
    opponent row is full."""

def board(level: int, index: int) -> list[int]:
    """The board at `index` of level `level` (the inverse of `index`)."""

def random_boards(seeds: int, n: int, seed: int = 0) -> npt.NDArray[np.uint8]:
    """`n` positions of level `seeds` drawn uniformly at random (reproducibly, from `seed`),
    as an (n, 12) uint8 array."""
