"""Breadth-first search over a site's state graph: shortest action sequences to a goal predicate.

BFS expands states in order of depth, at most `max_depth` deep and `max_states` states in all, and
deduplicates states so each is expanded once. Deduplication uses a key that keeps exactly what can
still matter for the goal (a bisimulation, so the paths found are still shortest and valid):

- the page and every variable whose exact value the dynamics read (a parameter domain, an
  effect's value, a view either of them uses, a condition comparing it with something that is not
  a literal), and every read variable that an action changes relative to its old value (inc,
  append, toggle...);
- for every other variable that conditions compare with literals (form fields checked with
  `exists`, goal facts like `name eq "Ada"`), only the truth of those conditions;
- nothing of the variables nothing reads (say, ratings when the goal is about the shopping list;
  views that pages only display do not count as reading);
- nothing of the variables that cannot influence the goal or the page (Machine.relevant_vars):
  a report form whose results a goal about alerts never reads;
- on each page, nothing of the variables no action sequence from there reads before overwriting
  them (Machine.live_vars): the filters of a search the cart page's links all reset, a draft that
  only the compose page reads.
Two states with equal keys enable the same actions and lead to states with equal keys, and agree
on the goal, so expanding one of them is enough.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

from webgym.sites.expr import Compiled, Env
from webgym.sites.machine import Machine, State, Step


class SearchLimit(RuntimeError):
    """The search gave up: more states than allowed before the goal was found."""


@dataclass
class Path:
    """A shortest FSM path: its steps and the state after each (states[0] is the start)."""

    steps: list[Step]
    states: list[State]
    explored: int


def state_key(machine: Machine, target: list[Compiled]) -> Callable[[State], tuple]:
    """The deduplication key for a search towards `target` (see the module docstring)."""
    goal_reads = frozenset().union(*(c.reads for c in target))
    relevant = machine.relevant_vars(goal_reads)
    conditions = machine.preconditions + target
    read = set(machine.value_reads).union(*(c.reads for c in conditions))
    valued = set(machine.value_reads) | (set(machine.relative_writes) & read)
    for condition in conditions:
        if condition.guard is None:
            valued |= condition.reads
    guards: dict[str, list[Callable]] = {}
    for condition in conditions:
        if condition.guard is not None and condition.guard not in valued:
            guards.setdefault(condition.guard, []).append(condition.fn)
    # A guarded variable's truths depend on its value alone: memoise them per value.
    truths = {name: _truths(machine, name, tests) for name, tests in guards.items()}
    live = machine.live_vars(goal_reads)
    per_page: dict[str, tuple[Callable, list[tuple[int, Callable]]]] = {}
    for page, alive in live.items():
        alive = alive & relevant
        indices = sorted(machine.index[name] for name in valued & alive)
        pick = operator.itemgetter(*indices) if indices else (lambda values: ())
        per_page[page] = pick, [(machine.index[name], memo) for name, memo in truths.items() if name in alive]

    def key(state: State) -> tuple:
        values = state.values
        pick, memos = per_page[state.page]
        return state.page, pick(values), tuple(memo(values[i]) for i, memo in memos)
    return key


def _truths(machine: Machine, name: str, tests: list[Callable]) -> Callable:
    index = machine.index[name]
    width = len(machine.vars)
    cache: dict = {}

    def truths(value: object) -> tuple:
        hit = cache.get(value)
        if hit is None:
            values = [None] * width
            values[index] = value
            env = Env(tuple(values), None)
            hit = cache[value] = tuple(test(env) for test in tests)
        return hit
    return truths


def holds(machine: Machine, state: State, conditions: list[Compiled]) -> bool:
    """Every condition holds in the state."""
    env = machine.env(state)
    return all(c.fn(env) for c in conditions)


def shortest_path(machine: Machine, start: State, target: list[Compiled], *, max_depth: int,
                  max_states: int = 200_000) -> Path | None:
    """Shortest path from `start` to a state where every target condition holds, or None when no
    path of at most `max_depth` steps exists. Raises SearchLimit past `max_states` states."""
    key = state_key(machine, target)

    def reached(state: State) -> bool:
        return holds(machine, state, target)

    if reached(start):
        return Path([], [start], 1)
    start_key = key(start)
    parents: dict[tuple, tuple[tuple | None, Step | None, State]] = {start_key: (None, None, start)}
    frontier = [start]
    for _ in range(max_depth):
        next_frontier: list[State] = []
        for state in frontier:
            state_k = key(state)
            for step, nxt in machine.successors(state):
                nxt_k = key(nxt)
                if nxt_k in parents:
                    continue
                parents[nxt_k] = (state_k, step, nxt)
                if reached(nxt):
                    return _unwind(parents, nxt_k, len(parents))
                if len(parents) >= max_states:
                    raise SearchLimit(f"{machine.spec.name}: gave up after {len(parents)} states "
                                      f"(raise sites.max_states or simplify the goal)")
                next_frontier.append(nxt)
        if not next_frontier:
            return None
        frontier = next_frontier
    return None


def _unwind(parents: dict, end: tuple, explored: int) -> Path:
    steps: list[Step] = []
    states: list[State] = []
    key: tuple | None = end
    while key is not None:
        parent, step, state = parents[key]
        states.append(state)
        if step is not None:
            steps.append(step)
        key = parent
    return Path(steps[::-1], states[::-1], explored)
