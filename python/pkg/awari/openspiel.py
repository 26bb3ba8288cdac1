"""Perfect play inside OpenSpiel: its `oware` states as our boards, a perfect bot, and an
evaluator that measures an agent against perfect play.

OpenSpiel's `oware` game plays the `abapa` rules, so the database must be built with
`awari-solver build --rules abapa`. OpenSpiel is imported only when a function here needs it
(`pip install open_spiel`); `import awari` never needs it.

OpenSpiel's state is read through its public API: `current_player()`, `legal_actions()` and
`observation_string()`, which for `oware` reads "PLAYER | SCORE0 SCORE1 | A..F a..f" (player
0's houses A..F, then player 1's a..f, counter-clockwise). An action is the house played,
0..5 from the mover's side, which is our pit.

Cycles: our tables value a game that would go on for ever as an even split of the seeds
left. OpenSpiel ends a game by its own rules instead: when a position repeats (each side then
takes the seeds on its own side, as the real-world rule has it) and at its length limit
(`max_game_length()`, 1000 plies by default). `evaluate` counts the games that OpenSpiel ends
at a position our rules would play on as `cycles`, and leaves them out of the comparison of
final scores with the predicted ones.
"""

from __future__ import annotations

import random as _random
from typing import Any, Callable, Iterable, Optional, Union

from ._native import Database, DatabaseError
from ._native import moves as _moves

__all__ = ["board_from_state", "PerfectBot", "evaluate"]


def _pyspiel():
    try:
        import pyspiel
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("awari.openspiel needs OpenSpiel: pip install open_spiel") from e
    return pyspiel


def board_from_state(state) -> tuple[list[int], tuple[int, int]]:
    """Our board of an OpenSpiel `oware` state, from the side to move (its own six houses
    first), and the seeds each side has captured so far, the mover's first.

    Raises ValueError for a terminal state (no side to move), a state of another game, or an
    `oware` with other than six houses per player.
    """
    game = state.get_game()
    if game.get_type().short_name != "oware":
        raise ValueError(f"not an oware state: {game.get_type().short_name}")
    if state.is_terminal():
        raise ValueError("a terminal state has no side to move")
    player = state.current_player()
    who, score, pits = _observation(state, player)
    if who != player:
        raise ValueError(f"unexpected oware observation: {state.observation_string(player)!r}")
    if len(pits) != 12:
        raise ValueError(f"oware with {len(pits) // 2} houses per player; the databases have 6")
    if player == 0:
        return pits, (score[0], score[1])
    return pits[6:] + pits[:6], (score[1], score[0])


def _observation(state, player: int) -> tuple[int, list[int], list[int]]:
    """OpenSpiel's oware observation for `player`: (player to move, both scores, the houses
    A..F a..f)."""
    text = state.observation_string(player)
    fields = text.split("|")
    if len(fields) != 3 or len(fields[1].split()) != 2:
        raise ValueError(f"unexpected oware observation: {text!r}")
    who, scores, houses = fields
    return int(who), [int(x) for x in scores.split()], [int(x) for x in houses.split()]


def _open(db: Union[Database, str, Any]) -> Database:
    db = db if isinstance(db, Database) else Database(db)
    if db.rules != "abapa":
        raise DatabaseError(
            f"OpenSpiel's oware plays the abapa rules, but this database holds {db.rules} tables"
            " (build one with awari-solver build --rules abapa)"
        )
    return db


def _best_action(db: Database, state, rng: Optional[_random.Random]) -> int:
    board, _ = board_from_state(state)
    best = db.best_moves(board)
    if not best:  # pragma: no cover - a non-terminal state always has a move
        raise ValueError("no legal move")
    return rng.choice(best) if rng is not None else best[0]


_BOT_CLASS = None


def _perfect_bot_class():
    global _BOT_CLASS
    if _BOT_CLASS is not None:
        return _BOT_CLASS
    pyspiel = _pyspiel()

    class PerfectBot(pyspiel.Bot):
        """A `pyspiel.Bot` that plays a best move of every `oware` state, by the database
        `db` (an `awari.Database` or its path; `abapa` rules). Ties go to `rng`'s choice
        (a `random.Random`), or else to the first best house.

        Raises `awari.DatabaseError` when the database holds other rules, and from `step`
        when the state's level is missing."""

        def __init__(self, db, rng: Optional[_random.Random] = None):
            pyspiel.Bot.__init__(self)
            self.db = _open(db)
            self.rng = rng

        def step(self, state) -> int:
            """A best action of `state`."""
            return _best_action(self.db, state, self.rng)

        def restart_at(self, state) -> None:
            """Nothing to forget: every step reads the database afresh."""

        def inform_action(self, state, player_id: int, action: int) -> None:
            """Nothing to track."""

    _BOT_CLASS = PerfectBot
    return PerfectBot


def __getattr__(name: str):
    # PerfectBot subclasses pyspiel.Bot, so it is made on first use (PEP 562).
    if name == "PerfectBot":
        return _perfect_bot_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _seeds(state) -> int:
    board, _ = board_from_state(state)
    return sum(board)


def _random_position(game_for, seeds: int, rng: _random.Random):
    """A non-terminal state with `seeds` seeds on the board, reached by random play from the
    start of the game with the fewest houses' seeds that holds that many."""
    per_house = max(1, -(-seeds // 12))
    game = game_for(per_house)
    for _ in range(10_000):
        state = game.new_initial_state()
        while not state.is_terminal() and _seeds(state) > seeds:
            state.apply_action(rng.choice(state.legal_actions()))
        if not state.is_terminal() and _seeds(state) == seeds:
            return state
    raise ValueError(f"random play never reached a position of {seeds} seeds")


def evaluate(
    db,
    agent: Union[Any, Callable[[Any], int]],
    games: int = 100,
    seeds: Iterable[int] = (16,),
    rng: Optional[_random.Random] = None,
) -> dict[str, Any]:
    """Play `agent` (a `pyspiel.Bot`, or a callable from a state to an action) from random
    positions against perfect play, and measure every move it makes against the best.

    Each game starts at a random position of one of `seeds` seed counts (in turn), reached
    by random play from an `oware(num_seeds_per_house=k)` start; the agent moves first and
    `PerfectBot` answers. Returns a dict:

    - `games`, `moves`: games played and agent moves measured;
    - `optimal_share`: the share of the agent's moves that keep the position's value;
    - `seeds_lost_total`, `seeds_lost_mean`: what the agent's moves give away against
      perfect play (best value minus the move's value), in all and per move;
    - `cycles`: games that reached OpenSpiel's length limit (left out of what follows);
    - `predicted`, `achieved`: the agent's seed difference from the start position on,
      predicted by the database (its value) and obtained, summed over the other games;
    - `below_predicted`: how many of those games the agent finished below its prediction.
    """
    pyspiel = _pyspiel()
    db = _open(db)
    rng = rng if rng is not None else _random.Random(0)
    step = agent.step if hasattr(agent, "step") else agent
    perfect = _perfect_bot_class()(db, rng)
    seeds = list(seeds)
    cache = {}

    def game_for(k: int):
        if k not in cache:
            cache[k] = pyspiel.load_game("oware", {"num_seeds_per_house": k})
        return cache[k]

    out = {"games": 0, "moves": 0, "optimal": 0, "seeds_lost_total": 0, "cycles": 0,
           "predicted": 0, "achieved": 0, "below_predicted": 0}
    for g in range(games):
        state = _random_position(game_for, seeds[g % len(seeds)], rng)
        me = state.current_player()
        board, (mine, theirs) = board_from_state(state)
        predicted = db.value(board)
        if hasattr(agent, "restart_at"):
            agent.restart_at(state)
        last = None  # our board after the last move
        while not state.is_terminal():
            board, _ = board_from_state(state)
            if state.current_player() == me:
                values = {m.pit: m.value for m in db.moves(board)}
                action = step(state)
                if action not in values:
                    raise ValueError(f"the agent played {action}, not a legal action {sorted(values)}")
                lost = max(values.values()) - values[action]
                out["moves"] += 1
                out["optimal"] += lost == 0
                out["seeds_lost_total"] += lost
            else:
                action = perfect.step(state)
            last = next(m.child for m in _moves(board, rules="abapa") if m.pit == action)
            state.apply_action(action)
        out["games"] += 1
        if last is not None and _moves(last, rules="abapa"):
            # OpenSpiel ended it (a repetition, or its length limit) where ours plays on.
            out["cycles"] += 1
            continue
        achieved = _final_difference(state, me) - (mine - theirs)
        out["predicted"] += predicted
        out["achieved"] += achieved
        out["below_predicted"] += achieved < predicted
    moves = max(out["moves"], 1)
    optimal = out.pop("optimal")
    out["optimal_share"] = optimal / moves
    out["seeds_lost_mean"] = out["seeds_lost_total"] / moves
    return out


def _final_difference(state, player: int) -> int:
    """Seeds captured by `player` minus its opponent's, at the end of the game."""
    _, score, _ = _observation(state, 0)
    return score[player] - score[1 - player]
