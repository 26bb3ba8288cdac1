"""The OpenSpiel bridge against a real OpenSpiel (`pip install open_spiel`).

Skipped when OpenSpiel is not installed, unless AWARI_REQUIRE_OPENSPIEL=1 (as `.ci/run`
sets), which makes a missing OpenSpiel a failure. The `abapa` database of levels 0..16 is
built once per session.
"""

import os
import random
import subprocess

import pytest

import awari

if os.environ.get("AWARI_REQUIRE_OPENSPIEL") == "1":
    import pyspiel
else:
    pyspiel = pytest.importorskip("pyspiel")

from awari.openspiel import PerfectBot, board_from_state, evaluate  # noqa: E402

from test_awari import binary  # noqa: E402

MAX = 16


@pytest.fixture(scope="session")
def abapa_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("abapa") / "abapa-db"
    subprocess.run(
        [binary("awari-solver"), "build", "--db", str(d), "--rules", "abapa",
         "--max-stones", str(MAX)],
        check=True,
        capture_output=True,
    )
    return d


@pytest.fixture(scope="session")
def abapa(abapa_dir):
    return awari.Database(abapa_dir)


def random_states(count, rng, per_house=(1, 2, 3, 4)):
    """`count` non-terminal states of random games of `oware` with 1..4 seeds per house."""
    games = {k: pyspiel.load_game("oware", {"num_seeds_per_house": k}) for k in per_house}
    states = []
    while len(states) < count:
        state = games[rng.choice(per_house)].new_initial_state()
        while not state.is_terminal() and len(states) < count:
            states.append(state.clone())
            state.apply_action(rng.choice(state.legal_actions()))
    return states


def test_board_from_state_matches_openspiel_moves_on_10000_states():
    rng = random.Random(1)
    checked_children = 0
    for state in random_states(10_000, rng):
        board, (mine, theirs) = board_from_state(state)
        ours = awari.moves(board, rules="abapa")
        assert [m.pit for m in ours] == sorted(state.legal_actions()), (board, state)
        for m in ours:
            child = state.child(m.pit)
            if child.is_terminal():
                continue
            child_board, (c_mine, c_theirs) = board_from_state(child)
            assert child_board == m.child, (board, m.pit)
            # The mover's captures are the next mover's opponent's.
            assert (c_mine, c_theirs) == (theirs, mine + m.captures), (board, m.pit)
            checked_children += 1
    assert checked_children > 20_000


def test_perfect_bot_never_plays_below_the_best_value(abapa):
    rng = random.Random(2)
    bot = PerfectBot(abapa, random.Random(3))
    states = [s for s in random_states(20_000, rng, per_house=(1, 2)) if
              sum(board_from_state(s)[0]) <= MAX][:1000]
    assert len(states) == 1000
    for state in states:
        board, _ = board_from_state(state)
        values = {m.pit: m.value for m in abapa.moves(board)}
        action = bot.step(state)
        assert values[action] == max(values.values()) == abapa.value(board), board


def test_perfect_bot_against_random_play_ends_at_least_as_predicted(abapa):
    rng = random.Random(4)
    won = next(s for s in random_states(5000, rng, per_house=(1,))
               if abapa.value(board_from_state(s)[0]) >= 2)
    board, (mine, theirs) = board_from_state(won)
    predicted = abapa.value(board)
    me = won.current_player()
    finished = 0
    for game in range(20):
        state, bot, opponent = won.clone(), PerfectBot(abapa, random.Random(game)), random.Random(game)
        last = None
        while not state.is_terminal():
            b, _ = board_from_state(state)
            action = bot.step(state) if state.current_player() == me else opponent.choice(state.legal_actions())
            last = next(m.child for m in awari.moves(b, rules="abapa") if m.pit == action)
            state.apply_action(action)
        if awari.moves(last, rules="abapa"):
            continue  # OpenSpiel ended it by repetition, where our rules play on
        score = [int(x) for x in state.observation_string(0).split("|")[1].split()]
        achieved = (score[me] - score[1 - me]) - (mine - theirs)
        assert achieved >= predicted, (board, predicted, achieved)
        finished += 1
    assert finished > 0


@pytest.fixture(scope="session")
def abapa_depth(tmp_path_factory):
    d = tmp_path_factory.mktemp("abapa-depth") / "abapa-db"
    subprocess.run(
        # Compressed depth tables (level-NN.cdepth): the bots read them as the plain ones.
        [binary("awari-solver"), "build", "--db", str(d), "--rules", "abapa",
         "--max-stones", str(MAX), "--depth", "--depth-form", "compressed"],
        check=True,
        capture_output=True,
    )
    return awari.Database(d)


def test_perfect_bots_win_by_the_predicted_margin_with_depth_tables(abapa_depth):
    """Two PerfectBots from won positions: with depth tables the winner converts, so no
    position repeats while a side is winning, and every game that OpenSpiel ends where our
    rules end it (it also stops a game once a side holds most of the seeds) ends at exactly
    the predicted margin."""
    rng = random.Random(8)
    won = [s for s in random_states(20_000, rng, per_house=(1, 2))
           if sum(board_from_state(s)[0]) <= MAX and abapa_depth.value(board_from_state(s)[0]) > 0]
    assert len(won) >= 100
    finished = 0
    for k, start in enumerate(won[:100]):
        board, (mine, theirs) = board_from_state(start)
        predicted = abapa_depth.value(board)
        me = start.current_player()
        state = start.clone()
        bots = [PerfectBot(abapa_depth, random.Random(2 * k)), PerfectBot(abapa_depth, random.Random(2 * k + 1))]
        last, seen = None, set()
        while not state.is_terminal():
            b, _ = board_from_state(state)
            if abapa_depth.value(b) != 0:
                assert tuple(b) not in seen, ("a won position repeats", board, b)
                seen.add(tuple(b))
            action = bots[state.current_player()].step(state)
            move = next(m for m in awari.moves(b, rules="abapa") if m.pit == action)
            if move.captures:
                seen.clear()
            last = move.child
            state.apply_action(action)
        if awari.moves(last, rules="abapa"):
            continue  # OpenSpiel ended it where our rules play on
        score = [int(x) for x in state.observation_string(0).split("|")[1].split()]
        assert (score[me] - score[1 - me]) - (mine - theirs) == predicted, (board, predicted)
        finished += 1
    assert finished >= 50


def test_evaluate_perfect_play_scores_as_predicted(abapa):
    bot = PerfectBot(abapa, random.Random(5))
    r = evaluate(abapa, bot, games=60, seeds=(8, 12, 16), rng=random.Random(6))
    assert r["games"] == 60 and r["moves"] > 0
    assert r["optimal_share"] == 1.0 and r["seeds_lost_total"] == 0 and r["seeds_lost_mean"] == 0
    assert r["achieved"] == r["predicted"] and r["below_predicted"] == 0
    assert 0 <= r["cycles"] <= 60
    # A random agent gives seeds away, and a callable is an agent too.
    pick = random.Random(7)
    r = evaluate(abapa, lambda s: pick.choice(s.legal_actions()), games=30, seeds=(12,))
    assert r["optimal_share"] < 1.0 and r["seeds_lost_total"] > 0
    assert r["seeds_lost_mean"] == pytest.approx(r["seeds_lost_total"] / r["moves"])


def test_errors(abapa_dir, tmp_path):
    awari_rules = tmp_path / "awari-db"
    subprocess.run([binary("awari-solver"), "build", "--db", str(awari_rules), "--max-stones", "8"],
                   check=True, capture_output=True)
    with pytest.raises(awari.DatabaseError, match="abapa"):
        PerfectBot(awari.Database(awari_rules))  # awari rules
    bot = PerfectBot(str(abapa_dir))  # a path is opened
    start = pyspiel.load_game("oware").new_initial_state()  # 48 seeds: level missing
    with pytest.raises(awari.DatabaseError, match="level 48"):
        bot.step(start)
    with pytest.raises(ValueError, match="not an oware state"):
        board_from_state(pyspiel.load_game("tic_tac_toe").new_initial_state())
    state = pyspiel.load_game("oware", {"num_seeds_per_house": 1}).new_initial_state()
    rng = random.Random(8)
    while not state.is_terminal():
        state.apply_action(rng.choice(state.legal_actions()))
    with pytest.raises(ValueError, match="terminal"):
        board_from_state(state)
    with pytest.raises(ValueError, match="houses per player"):
        board_from_state(pyspiel.load_game("oware", {"num_houses_per_player": 5}).new_initial_state())
    with pytest.raises(ValueError, match="not a legal action"):
        evaluate(abapa_dir, lambda s: 99, games=1, seeds=(8,))
