"""OpenSpiel's MCTS bot against perfect play on 16-seed positions.
Usage: python openspiel_mcts.py ABAPA_DB  (awari-solver build --rules abapa --max-stones 16)"""
import random, sys
import pyspiel
from awari import Database
from awari.openspiel import evaluate

game = pyspiel.load_game("oware", {"num_seeds_per_house": 2})
mcts = pyspiel.MCTSBot(game, pyspiel.RandomRolloutEvaluator(1, 1), 2.0, 200, 100, False, 1, False)
report = evaluate(Database(sys.argv[1]), mcts, games=20, seeds=(16,), rng=random.Random(1))
print({k: round(v, 3) if isinstance(v, float) else v for k, v in report.items()})
