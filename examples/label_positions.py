"""Label 100,000 random 20-seed positions with their values and best moves, into labels.npz.

Needs levels 0..20 (`awari-solver build`, the default) and the package (`pip install ./python`).
Usage: python examples/label_positions.py [DB=awari-db]
"""
import sys

import numpy as np

import awari

db = awari.Database(sys.argv[1] if len(sys.argv) > 1 else "awari-db")
boards = awari.random_boards(20, 100_000, seed=1)
values = db.values(boards)  # int8, all cores
best = np.zeros((len(boards), 6), dtype=bool)  # best[i, pit]: that move keeps the value
for i, board in enumerate(boards):
    best[i, db.best_moves(board)] = True
np.savez_compressed("labels.npz", boards=boards, values=values, best=best)
print(f"labels.npz: {len(boards)} positions, {np.mean(values > 0):.0%} won for the mover")
