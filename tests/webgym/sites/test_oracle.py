"""The oracle policy: shortest remaining path from whatever state it observes; epsilon noise."""

from __future__ import annotations

import pytest

from webgym.sites.machine import ANSWER, Step
from webgym.sites.oracle import OraclePolicy
from webgym.sites.verify import verify


def episode(site, goal_id, policy, horizon=10):
    """Run a policy on the machine alone (as the rollout would through the browser); return the verdict."""
    machine = site.machine
    state = machine.initial()
    for _ in range(horizon):
        step = policy.next_step(machine.snapshot(state))
        if step.action == ANSWER:
            return verify(site.rubric(goal_id), machine.snapshot(state), step.args["text"])
        state = machine.apply(state, step)
    return verify(site.rubric(goal_id), machine.snapshot(state), None)


def test_oracle_policy_follows_the_shortest_path(mini):
    policy = OraclePolicy(mini.machine, mini.rubric("buy-cheap-mug"), horizon=10)
    assert episode(mini, "buy-cheap-mug", policy).success
    question = OraclePolicy(mini.machine, mini.rubric("kettle-price"), horizon=10)
    assert episode(mini, "kettle-price", question).success


def test_oracle_policy_recovers_from_a_detour(mini):
    machine = mini.machine
    state = machine.initial()
    for action, params in [("search", {"q": "mug"}), ("open", {"item": "p1"}), ("add", {})]:  # wrong mug in the cart
        state = machine.apply(state, Step.of(action, params))
    policy = OraclePolicy(machine, mini.rubric("buy-cheap-mug"), horizon=12)
    steps = []
    while True:
        step = policy.next_step(machine.snapshot(state))
        steps.append(str(step))
        if step.action == ANSWER:
            break
        state = machine.apply(state, step)
    assert 'remove(item="p1")' in steps  # it takes the wrong mug out again
    assert verify(mini.rubric("buy-cheap-mug"), machine.snapshot(state), "Done.").success


def test_epsilon_noise_gives_a_controlled_mix_of_outcomes(mini):
    outcomes = [episode(mini, "buy-cheap-mug",
                        OraclePolicy(mini.machine, mini.rubric("buy-cheap-mug"), horizon=10, epsilon=0.3, seed=seed)).success
                for seed in range(30)]
    assert 0 < sum(outcomes) < 30
    again = [episode(mini, "buy-cheap-mug",
                     OraclePolicy(mini.machine, mini.rubric("buy-cheap-mug"), horizon=10, epsilon=0.3, seed=seed)).success
             for seed in range(30)]
    assert again == outcomes  # seeded: the same mix every time


def test_fully_noisy_policy_only_takes_valid_actions(mini):
    machine = mini.machine
    taken = 0
    for seed in range(10):
        policy = OraclePolicy(machine, mini.rubric("buy-cheap-mug"), epsilon=1.0, seed=seed)
        state = machine.initial()
        for _ in range(15):
            step = policy.next_step(machine.snapshot(state))
            if step.action == ANSWER:  # stuck (the mini cart page has no way out): it says so
                assert step.args["text"] == "I could not complete the task."
                break
            state = machine.apply(state, step)  # raises if refused
            taken += 1
    assert taken >= 20


def test_epsilon_must_be_a_probability(mini):
    with pytest.raises(ValueError, match="epsilon must be within 0..1"):
        OraclePolicy(mini.machine, mini.rubric("buy-cheap-mug"), epsilon=1.5)
