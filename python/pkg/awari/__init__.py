"""Perfect-play Awari (Oware): the solved game's databases and rules.

The native module (`awari._native`) does the work; `awari.openspiel` bridges to OpenSpiel
and imports it only when used. See __init__.pyi for the documented API.
"""

from ._native import Database, DatabaseError, Move, board, index, moves, random_boards

__all__ = ["Database", "DatabaseError", "Move", "board", "index", "moves", "random_boards"]
