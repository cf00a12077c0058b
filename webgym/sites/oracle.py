"""The oracle: shortest remaining FSM steps from any state to a task's checks, and how to click them.

`plan` runs the BFS (search.py) from a state to the conditions of a rubric's checks (any subset of
a goal's fact groups is a goal too), then appends the final `answer` step. `OraclePolicy` observes
the session's state snapshot at every step and follows a shortest path from there (for a part of a
goal, the whole goal's path up to where the part holds: see `OraclePolicy`); with
`epsilon > 0` it takes a random valid action instead with that probability, so pipelines can get
a controlled mix of successes and failures. `to_browser_actions` turns one step into the browser
actions (schemas/steps.py Action, the tools of webgym/env/actions.py) a person would do on the
rendered page: scroll the element into view, click the centre of its bounding box, type text,
press Enter.

Page conventions it relies on (render.py writes them): an element that triggers an action carries
`data-wg-action` and `data-wg-params` (JSON of the parameters it binds); a form carries them too
and holds one named field per free parameter; its submit button carries `data-wg-submit`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from schemas.rubric import Rubric
from schemas.steps import Action
from schemas.values import HORIZONS, difficulty_band
from webgym.sites.expr import Compiled
from webgym.sites.machine import ANSWER, Machine, State, Step
from webgym.sites.search import holds, shortest_path
from webgym.sites.tasks import expected_answer

DONE = "Done."
"""The oracle's answer on goals that ask for no information."""

GIVE_UP = "I could not complete the task."
"""The oracle's answer from a state where no plan within the horizon reaches the task's checks."""


@dataclass
class Plan:
    """FSM steps then the answer step; states[i] is the state before steps[i] (states[-1] the end)."""

    steps: list[Step]
    states: list[State]
    explored: int

    @property
    def length(self) -> int:
        return len(self.steps)


def rubric_checks(rubric: Rubric | dict[str, Any], groups: Iterable[int] | None = None) -> list[dict[str, Any]]:
    """The parsed checks of a rubric's groups (all of them, or the chosen indices)."""
    rubric = Rubric.model_validate(rubric)
    chosen = range(len(rubric.groups)) if groups is None else groups
    return [json.loads(check) for i in chosen for check in rubric.groups[i].checks or []]


def target(machine: Machine, checks: list[dict[str, Any]]) -> tuple[list[Compiled], str]:
    """State conditions to reach (state facts plus the evidence of answer facts) and the answer to give."""
    conditions: list[Compiled] = []
    for i, check in enumerate(checks):
        if "answer" in check:
            conditions += machine.compiler.conditions(check.get("evidence", []), f"checks[{i}].evidence")
        else:
            conditions.append(machine.compiler.condition(check, f"checks[{i}]"))
    return conditions, expected_answer(checks) or DONE


def plan(machine: Machine, state: State, checks: list[dict[str, Any]], *, max_depth: int,
         max_states: int = 200_000) -> Plan | None:
    """Shortest plan from `state` that satisfies the checks, ending with the answer; None if none
    fits in `max_depth` steps (the answer included). Plans from the start state come from the
    machine's disk cache when it has one (pathcache.py) and go into it when searched."""
    conditions, expected = target(machine, checks)
    cache = machine.paths if machine.paths is not None and state == machine.initial() else None
    path = cache.get(checks, conditions) if cache is not None else None
    if path is None:
        path = shortest_path(machine, state, conditions, max_depth=max_depth - 1, max_states=max_states)
        if path is not None and cache is not None:
            cache.put(checks, path)
    if path is None or len(path.steps) > max_depth - 1:
        return None
    final = Step.of(ANSWER, {"text": expected})
    return Plan(path.steps + [final], path.states, path.explored)


class OraclePolicy:
    """Follows a shortest path from whatever state the session is in; epsilon-noisy when asked.

    With `whole`, the goal a decomposed task's rubric was cut from, it follows the whole goal's
    shortest path and answers as soon as the rubric's own checks hold. A part's own shortest path may
    pick anything its checks leave open (another trip, another fare than the text names), so a
    demonstration would contradict the task's text, which is the whole goal narrowed to the part."""

    def __init__(self, machine: Machine, rubric: Rubric | dict[str, Any], *, horizon: int = 30,
                 epsilon: float = 0.0, seed: int = 0, max_states: int = 200_000,
                 whole: Rubric | dict[str, Any] | None = None) -> None:
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be within 0..1, got {epsilon}")
        self.machine = machine
        self.checks = rubric_checks(rubric)
        self.whole = rubric_checks(whole) if whole is not None else None
        self.whole_depth = HORIZONS[difficulty_band(Rubric.model_validate(whole).n_facts)] if whole is not None else 0
        self.own_target = target(machine, self.checks) if whole is not None else None
        self.horizon = horizon
        self.epsilon = epsilon
        self.rng = random.Random(seed)
        self.max_states = max_states
        self._plan: Plan | None = None

    def next_step(self, snapshot: dict[str, Any]) -> Step:
        """The step to take from the observed state snapshot (the state endpoint's JSON)."""
        state = self.machine.from_snapshot(snapshot)
        if self.epsilon and self.rng.random() < self.epsilon:
            moves = [step for step, _ in self.machine.successors(state)]
            if moves:
                self._plan = None
                return self.rng.choice(moves)
        if self._plan is None or not self._plan.states or self._plan.states[0] != state:
            self._plan = self._along_whole(state) or plan(self.machine, state, self.checks, max_depth=self.horizon,
                                                          max_states=self.max_states)
        if self._plan is None:
            return Step.of(ANSWER, {"text": GIVE_UP})
        step = self._plan.steps[0]
        nxt = self._plan.states[1:] if len(self._plan.states) > 1 else []
        self._plan = Plan(self._plan.steps[1:], nxt, self._plan.explored)
        return step

    def _along_whole(self, state: State) -> Plan | None:
        """The whole goal's shortest path from `state`, cut where the own checks first hold, then the
        own answer; None without a whole goal or when that cut does not fit the horizon."""
        if self.whole is None or self.own_target is None:
            return None
        path = plan(self.machine, state, self.whole, max_depth=self.whole_depth, max_states=self.max_states)
        if path is None:
            return None
        conditions, answer = self.own_target
        for i, reached in enumerate(path.states[:self.horizon]):
            if holds(self.machine, reached, conditions):
                return Plan(path.steps[:i] + [Step.of(ANSWER, {"text": answer})], path.states[:i + 1], path.explored)
        return None


LOCATE_JS = """
({action, params}) => {
  const same = (bound) => Object.entries(bound).every(([k, v]) => k in params && String(params[k]) === String(v));
  const box = (el) => { const rects = el.getClientRects(); const r = rects.length ? rects[0] : el.getBoundingClientRect();
    return {x: r.left + r.width / 2, y: r.top + r.height / 2 + window.scrollY, h: r.height}; };
  const view = {scrollY: window.scrollY, height: window.innerHeight,
                max: Math.max(0, document.documentElement.scrollHeight - window.innerHeight)};
  for (const el of document.querySelectorAll(`[data-wg-action="${CSS.escape(action)}"]`)) {
    const bound = JSON.parse(el.dataset.wgParams || "{}");
    if (!same(bound)) continue;
    if (el.tagName !== "FORM") {
      if (Object.keys(bound).length !== Object.keys(params).length) continue;
      return {view, kind: "click", target: box(el)};
    }
    const fields = [];
    for (const [name, value] of Object.entries(params)) {
      if (name in bound) continue;
      const inputs = [...el.querySelectorAll(`[name="${CSS.escape(name)}"]`)];
      if (!inputs.length) return {view, error: `form of ${action} has no field ${name}`};
      const input = inputs[0];
      if (input.type === "radio") {
        const option = inputs.find(i => String(i.value) === String(value));
        if (!option) return {view, error: `field ${name} of ${action} has no option ${value}`};
        fields.push({kind: "click", target: box(option.closest("label") || option)});
      } else if (input.type === "checkbox") {
        if (input.checked !== Boolean(value)) fields.push({kind: "click", target: box(input.closest("label") || input)});
      } else {
        fields.push({kind: "type", target: box(input), text: String(value ?? ""), current: input.value});
      }
    }
    const submit = el.querySelector("[data-wg-submit]");
    return {view, kind: "form", fields, submit: submit ? box(submit) : null};
  }
  return {view, error: `no element for ${action} ${JSON.stringify(params)} on this page`};
}
"""


class NoElement(LookupError):
    """The page has no element for a step: the rendered site disagrees with the spec."""


class _Viewport:
    """Where the page is scrolled; an off-screen target first needs a scroll."""

    def __init__(self, view: dict[str, float]) -> None:
        self.scroll_y, self.height, self.max = view["scrollY"], view["height"], view["max"]

    def scroll_to(self, target: dict[str, float]) -> Action | None:
        """The scroll that brings a target into view (None when it is in view)."""
        top = target["y"] - target["h"] / 2 - self.scroll_y
        if 0 <= top and top + target["h"] <= self.height:
            return None
        delta = min(max(0.0, target["y"] - self.height / 2), self.max) - self.scroll_y
        if abs(delta) < 1:
            return None
        return Action(name="scroll", direction="down" if delta > 0 else "up", amount=round(abs(delta) / self.height, 3))

    def point(self, target: dict[str, float]) -> tuple[float, float]:
        return round(target["x"], 1), round(target["y"] - self.scroll_y, 1)


async def to_browser_actions(page: Any, step: Step) -> list[Action]:
    """Browser actions (the tools of webgym/env/actions.py) that perform one step on the current page
    (a Playwright async Page): click at the centre of the element, type into fields, submit.
    When an element is out of view the list ends with the scroll that brings it in: run the
    actions, then ask again for the rest. Raises NoElement when the page has no element for it."""
    if step.action == ANSWER:
        return [Action(name="answer", text=str(step.args.get("text", "")))]
    found = await page.evaluate(LOCATE_JS, {"action": step.action, "params": step.args})
    if "error" in found:
        raise NoElement(found["error"])
    viewport = _Viewport(found["view"])
    targets = ([("click", found["target"], None)] if found["kind"] == "click"
               else [(f["kind"], f["target"], f.get("text")) for f in found["fields"]]
               + ([("click", found["submit"], None)] if found["submit"] else []))
    actions: list[Action] = []
    for n, (kind, target, text) in enumerate(targets):
        scroll = viewport.scroll_to(target)
        if scroll is not None:
            return actions + [scroll]
        x, y = viewport.point(target)
        last_field = found["kind"] == "form" and not found["submit"] and n == len(targets) - 1
        if kind == "type":
            actions.append(Action(name="type", text=text + ("\n" if last_field else ""), x=x, y=y))
        else:
            actions.append(Action(name="click", x=x, y=y))
    return actions
