"""DAgger's labels: which training episodes get an expert, and, in Chromium, the oracle's call recorded
beside a straying scorer's own at the states it reaches, mapped onto the page's candidates and learned
from the scorer's own history."""

from __future__ import annotations

import asyncio

import pytest

from schemas.steps import Action, Element
from schemas.tasks import Task
from tests.conftest import NOW, rows
from tests.webgym.rollout.conftest import roll_out
from tests.webgym.sites.conftest import mini  # noqa: F401 (fixture)
from webgym.config import Config, EnvConfig, RolloutConfig, ScorerConfig
from webgym.env.observe import Observation
from webgym.policies.base import PolicyInput, TaskSpec
from webgym.policies.oracle import EXPERT_MAX_STATES, SiteOracle
from webgym.policies.scorer.candidates import step_choices
from webgym.policies.scorer.checkpoint import init_scorer
from webgym.policies.scorer.embeddings import TextEmbeddings
from webgym.policies.scorer.policy import ScorerPolicy
from webgym.rollout.collect import episode_specs
from webgym.rollout.runner import expert_for
from webgym.sites.tasks import task_record
from webgym.train.scorer import scorer_samples


def test_dagger_training_and_labelled_evaluation_episodes_on_synthetic_sites_get_the_oracle_as_expert(mini):
    sites = {mini.name: mini}
    dagger = Config.model_validate({"accept": {"objective": "dagger"}, "policy": {"kind": "scorer"}})
    expert = expert_for(dagger, "train", sites)
    assert isinstance(expert, SiteOracle) and expert.max_states == EXPERT_MAX_STATES and expert.epsilon == 0
    assert expert_for(dagger, "evaluation", sites) is None and expert_for(dagger, "validation", sites) is None
    assert expert_for(dagger, "train", {}) is None
    assert expert_for(Config(), "train", sites) is None  # filtered_bc learns the policy's own calls
    labelled = Config.model_validate({"rollout": {"label_evaluations": True}})
    assert isinstance(expert_for(labelled, "evaluation", sites), SiteOracle)
    assert expert_for(labelled, "train", sites) is None and expert_for(labelled, "validation", sites) is None
    assert expert_for(labelled, "evaluation", {}) is None  # MiniWoB++ only: no oracle to ask


def test_the_oracle_has_no_label_off_the_synthetic_sites(mini):
    observed = PolicyInput(TaskSpec("t", "Buy a mug", "http://elsewhere.test/", "elsewhere.test", 2, {"groups": []}),
                           Observation("http://elsewhere.test/", "Home", ["http://elsewhere.test/"], 0, b"", None),
                           [], 0, 5)
    assert asyncio.run(SiteOracle({mini.name: mini}).label(observed)) is None


@pytest.mark.slow  # MiniLM, Chromium and a dozen scored and labelled steps: 20-60 s on a busy 2-core machine
def test_dagger_rollouts_record_the_oracles_call_from_the_states_the_policy_reaches(lake, mini):
    """An untrained scorer strays; the oracle's call from each state it reaches is recorded beside the
    scorer's own (none where the page lacks the oracle's element, e.g. after the scorer left for another
    page), maps onto that page's candidates, and is what the relabelled sample learns."""
    tasks = [TaskSpec(r["source_id"], r["text"], r["start_url"], r["hostname"], 2, r["rubric"])
             for r in (task_record(mini, goal) for goal in mini.spec.goals)]
    embed = TextEmbeddings()
    policy = ScorerPolicy(init_scorer(ScorerConfig(seed=1)), embed, seed=3)
    settings = RolloutConfig(concurrency=1, default_horizon=12, horizons={"easy": 12, "medium": 12, "hard": 12})

    expert = SiteOracle({mini.name: mini}, max_states=EXPERT_MAX_STATES)
    try:
        roll_out(lake, [mini], episode_specs(tasks, 1, settings, "dagger"), policy, settings,
                 EnvConfig(observation="set_of_marks"), expert)
    finally:
        policy.close()
    trajectories, steps = lake.read_table("trajectories"), lake.read_table("steps").sort_values(["trajectory_id", "t"])
    labelled = steps[steps["expert_actions"].notna()]
    assert steps.loc[steps["t"] == 0, "expert_actions"].notna().all()  # the oracle's first call is on the start page
    own, label, index = [], [], {}
    for step in labelled.itertuples():
        elements = [Element.model_validate(e) for e in step.elements]
        taken, _, _ = step_choices(elements, step.page_text, [Action.model_validate(a) for a in step.actions])
        expert, candidates, problem = step_choices(elements, step.page_text,
                                                   [Action.model_validate(a) for a in step.expert_actions])
        assert problem is None and expert, f"{step.trajectory_id}:{step.t}: {problem}"
        own.append(taken[0].key)
        label.append(expert[0].key)
        index[f"{step.trajectory_id}:{step.t}"] = [c.key for c in candidates].index(expert[0].key)
    assert own != label  # the untrained scorer does not do what the oracle would
    task_rows = rows([Task(task_id=t.task_id, source="synthetic", source_id=t.task_id, text=t.text, created_at=NOW)
                      for t in tasks])
    accepted = labelled[["trajectory_id", "t"]].assign(weight=1.0, advantage=0.0)
    samples, problems = scorer_samples(steps, trajectories, task_rows, accepted, embed, relabel=True)
    assert problems == []
    first = {s.sample_id.split(".")[0]: s.chosen for s in reversed(samples)}  # a step's first decision
    assert first == index
