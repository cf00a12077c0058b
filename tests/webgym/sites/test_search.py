"""The BFS oracle: shortest paths on a small spec whose answers are known, and checked against a
plain BFS that deduplicates on whole states (the search's coarser key must not change lengths)."""

from __future__ import annotations

import json

from webgym.sites.machine import ANSWER
from webgym.sites.oracle import plan, rubric_checks, target


def brute_force_length(site, checks, max_depth=12):
    """Plain BFS deduplicating on whole states: the reference for shortest lengths."""
    machine = site.machine
    conditions, _ = target(machine, checks)
    start = machine.initial()
    seen, frontier = {start}, [start]
    for depth in range(max_depth + 1):
        for state in frontier:
            env = machine.env(state)
            if all(c.fn(env) for c in conditions):
                return depth + 1
        nxt = []
        for state in frontier:
            for _, t in machine.successors(state):
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    return None


def steps(found):
    return [str(step) for step in found.steps]


def test_known_shortest_paths_end_with_the_answer(mini):
    buy = mini.oracle_path("buy-cheap-mug")
    assert steps(buy) == ['search(q="mug")', 'open(item="p2")', "set_qty(n=2)", "add()", "go_cart()",
                          'checkout(who="Ada")', 'answer(text="Done.")']
    question = mini.oracle_path("kettle-price")
    assert steps(question) == ['search(q="kettle")', 'open(item="p3")', 'answer(text="30")']
    assert question.steps[-1].action == ANSWER


def test_a_subset_of_fact_groups_is_a_goal_with_its_own_path(mini):
    assert steps(mini.oracle_path("buy-cheap-mug", (1,))) == ['search(q="mug")', 'open(item="p1")', "add()",
                                                            "go_cart()", 'checkout(who="Ada")', 'answer(text="Done.")']


def test_coarse_deduplication_keeps_shortest_lengths(mini):
    checks = [
        [{"var": "cart", "op": "length_eq", "value": 2}],
        [{"var": "brand", "op": "eq", "value": "acme"}, {"var": "query", "op": "eq", "value": "kettle"}],
        [{"var": "name", "op": "eq", "value": "Alan"}, {"var": "cart", "op": "contains",
                                                         "value": {"record": {"id": "p3", "qty": 3}}}],
        rubric_checks(mini.rubric("buy-cheap-mug")),
    ]
    for goal in checks:
        found = plan(mini.machine, mini.machine.initial(), goal, max_depth=12)
        assert found is not None and found.length == brute_force_length(mini, goal), json.dumps(goal)


def test_no_path_within_the_depth_bound_is_none(mini):
    goal = [{"var": "cart", "op": "length_eq", "value": 2}]
    # search, open, add, back, open, add, answer
    assert plan(mini.machine, mini.machine.initial(), goal, max_depth=6) is None
    assert plan(mini.machine, mini.machine.initial(), goal, max_depth=7).length == 7


def test_paths_are_deterministic_and_replay_on_the_machine(mini):
    first, second = mini.oracle_path("buy-cheap-mug"), type(mini)(mini.spec).oracle_path("buy-cheap-mug")
    assert steps(first) == steps(second)
    state = mini.machine.initial()
    for step, expected in zip(first.steps[:-1], first.states[1:]):
        state = mini.machine.apply(state, step)
        assert state == expected
