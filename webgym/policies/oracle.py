"""The oracle as a rollout policy: it reads the session state, follows a shortest FSM path from
there (webgym/sites/oracle.py) and clicks the real elements; epsilon-noisy when asked, so
pipelines get a controlled mix of successes and failures. As an expert it labels the states a learned
policy reaches with its own next calls (DAgger training rollouts)."""

from __future__ import annotations

import json
import zlib
from collections import OrderedDict

from schemas.rubric import Rubric
from schemas.steps import Action
from webgym.policies.base import PolicyError, PolicyInput, PolicyOutput, TaskSpec
from webgym.sites.machine import ANSWER, Step
from webgym.sites.oracle import GIVE_UP, NoElement, OraclePolicy, rubric_checks, to_browser_actions
from webgym.sites.search import SearchLimit
from webgym.sites.site import Site

PLANNED_SOURCES = frozenset({"synthetic"})
"""The sources whose tasks the oracle can plan: the synthetic sites' goals. A demonstration draw takes only
these (an external world's or a benchmark's task has no state machine to search)."""

MAX_EPISODES = 4096
"""Plans kept for episodes in flight (older ones are dropped)."""

EXPERT_MAX_STATES = 2_000
"""The search budget of one label. A policy's states are searched afresh at every step, and the search
holds every episode's event loop: from states 1-6 random steps off the start of 30 sites' goals, 2,000
states lost 1 of 270 labels and took at most 0.9 s, where the rollouts' 200,000 took up to 25 s."""


class SiteOracle:
    """Implements the Policy protocol on the synthetic sites (privileged: it sees page and state), and the
    Expert protocol: the same plan labels the states a learned policy reaches (DAgger)."""

    name = "oracle"
    prompt_version = None
    privileged = True

    def __init__(self, sites: dict[str, Site], epsilon: float = 0.0, seed: int = 0,
                 max_states: int = 200_000) -> None:
        self.sites = {site.spec.hostname: site for site in sites.values()}
        self.epsilon, self.seed, self.max_states = epsilon, seed, max_states
        self.version = f"oracle-eps{epsilon:g}"
        self._planners: OrderedDict[str, OraclePolicy] = OrderedDict()

    def _planner(self, observed: PolicyInput, site: Site) -> OraclePolicy:
        planner = self._planners.get(observed.episode_id)
        if planner is None:
            seed = zlib.crc32(f"{self.seed}|{observed.episode_id}".encode())
            planner = OraclePolicy(site.machine, observed.task.rubric, horizon=observed.horizon,
                                   epsilon=self.epsilon, seed=seed, max_states=self.max_states,
                                   whole=_whole_goal(observed.task, site))
            self._planners[observed.episode_id] = planner
            while len(self._planners) > MAX_EPISODES:
                self._planners.popitem(last=False)
        return planner

    def _step(self, observed: PolicyInput) -> Step:
        site = self.sites.get(observed.task.website or "")
        view = observed.privileged
        if site is None or view is None or view.site_state is None or not observed.task.rubric:
            raise PolicyError(f"the oracle needs a synthetic-site task with a rubric and its session state "
                              f"(task {observed.task.task_id} on {observed.task.website})")
        return self._planner(observed, site).next_step(view.site_state)

    async def act(self, observed: PolicyInput) -> PolicyOutput:
        step = self._step(observed)
        try:
            actions = await to_browser_actions(observed.privileged.page, step)
        except NoElement as error:
            raise PolicyError(f"oracle: the page has no element for {step.action}: {error}") from None
        return PolicyOutput(actions, response=f"oracle: {step.action} {json.dumps(step.args, sort_keys=True)}")

    async def label(self, observed: PolicyInput) -> list[Action] | None:
        """The calls of a shortest path's first step from the state the policy reached; None off the
        synthetic sites, where no plan within the horizon or the search budget is left (giving up is no
        lesson) or where the page lacks the step's element."""
        try:
            step = self._step(observed)
            if step.action == ANSWER and step.args.get("text") == GIVE_UP:
                return None
            return await to_browser_actions(observed.privileged.page, step)
        except (PolicyError, SearchLimit, NoElement):
            return None


def _whole_goal(task: TaskSpec, site: Site) -> Rubric | None:
    """The site goal a decomposed task was cut from (its source id names it), so that the
    demonstration does what the task's text says; None for a whole goal or a goal the site lacks."""
    site_name, _, goal = (task.source_id or "").partition("/")
    if site_name != site.name or goal not in {g.id for g in site.spec.goals}:
        return None
    whole = site.rubric(goal)
    return whole if rubric_checks(whole) != rubric_checks(task.rubric) else None
