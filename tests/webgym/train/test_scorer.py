"""The scorer's trainer: a tiny scorer learns a planted rule (loss falls, weights change, the input
scorer is untouched), every objective of the table runs on its decisions, and samples rebuild
from lake rows, with bad steps reported while the rest go on."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from schemas.steps import Action, Element, Step
from schemas.tasks import Task
from schemas.trajectories import Trajectory
from tests.conftest import NOW, rows
from tests.tensorboard_events import scalars
from webgym import quality
from webgym.config import Config, PolicyConfig, ScorerConfig, TrainConfig, replaced
from webgym.embeddings import DIM
from webgym.lake.queries import checkpoint_of
from webgym.policies.scorer.candidates import KINDS, phrases
from webgym.policies.scorer.checkpoint import init_scorer, weights_id
from webgym.policies.scorer.embeddings import TextEmbeddings
from webgym.policies.scorer.features import FIELD_SCALARS, FLAT_SCALARS, FieldFeatures, FlatFeatures
from webgym.policies.scorer.network import candidate_logits, option_logits
from webgym.tracking import Tracker
from webgym.train.fit import fit_scorer
from webgym.train.scorer import (DONE, ScorerSample, batch_logprobs, decision_accuracy, greedy_decisions,
                                 record_checkpoint, scorer_samples, train_scorer)

SCORER_RECIPE = TrainConfig(epochs=8, micro_batch_size=32, learning_rate=1e-3, lr_schedule="constant", warmup_ratio=0.0,
                            weight_decay=1e-4)
"""The scorer's training recipe of the embedded default (configs/scorer.yaml's train block, which local.yaml takes)."""


def _planted(n: int, seed: int = 0) -> list[ScorerSample]:
    """Steps whose chosen candidate is the one closest to the task (and fills type the option closest
    to the field's label): a rule the scorer's products can learn."""
    rng = np.random.default_rng(seed)

    def unit(*shape: int) -> np.ndarray:
        v = rng.normal(size=(*shape, DIM)).astype(np.float32)
        return v / np.linalg.norm(v, axis=-1, keepdims=True)

    samples = []
    for i in range(n):
        task, candidates = unit(), unit(6)
        chosen = int(np.argmax(candidates @ task))
        candidates[chosen] = 0.5 * candidates[chosen] + 0.5 * task
        scalars = np.zeros((6, FLAT_SCALARS), np.float32)
        flat = FlatFeatures(task, unit(), np.zeros(DIM, np.float32), candidates, scalars)
        label, options = unit(), unit(4)
        typed = int(rng.integers(4))
        options[typed] = 0.3 * options[typed] + 0.7 * label
        field = FieldFeatures(label, options, unit(4), np.zeros((4, FIELD_SCALARS), np.float32))
        samples.append(ScorerSample(f"s{i}", flat, chosen, [field] if i % 2 else [], [typed] if i % 2 else []))
    return samples


def _tiny() -> ScorerConfig:
    return ScorerConfig(hidden=32, dropout=0.0, seed=1)


def test_a_tiny_scorer_learns_a_planted_rule_and_leaves_its_input_alone():
    scorer = init_scorer(_tiny())
    before = {k: v.clone() for k, v in scorer.net.state_dict().items()}
    samples = _planted(64)
    accuracy_before = decision_accuracy(scorer.net, samples)
    result = train_scorer(scorer, samples, replaced(SCORER_RECIPE, epochs=12, micro_batch_size=16, learning_rate=3e-3))
    losses = [h["train/loss"] for h in result.history]
    assert losses[-1] < 0.5 * losses[0]
    assert result.metrics["train/accuracy"] > max(0.8, accuracy_before + 0.3)
    assert result.metrics["train/samples"] == 64 and result.metrics["train/steps"] == 12 * 4
    assert all(torch.equal(v, scorer.net.state_dict()[k]) for k, v in before.items())  # the input is unchanged
    changed = [k for k, v in result.scorer.net.state_dict().items() if not torch.equal(v, before[k])]
    assert changed and len(changed) == len(before)
    assert result.scorer.checkpoint_id == f"scorer-{weights_id(result.scorer.net)}"
    assert result.scorer.base == scorer.checkpoint_id == "scorer-init-s1"


def test_a_failed_ending_is_learned_away_from_and_left_out_of_the_accuracy():
    """accept.failed_endings: samples with advantage -1 lower their choice's probability, where the same
    samples with advantage 0 raise it; train/accuracy counts only the samples learned towards."""
    scorer, samples = init_scorer(_tiny()), _planted(32)
    config = replaced(SCORER_RECIPE, epochs=8, micro_batch_size=16, learning_rate=1e-2)

    def chosen_probability(net) -> float:
        net.eval()
        with torch.no_grad():
            logprobs, mask = batch_logprobs(net, samples)
        return float((logprobs * mask).sum(dim=1).exp().mean())

    before = chosen_probability(scorer.net)
    negative = [dataclasses.replace(s, advantage=-1.0) for s in samples]
    away = train_scorer(scorer, negative, config)
    towards = train_scorer(scorer, samples, config)
    assert chosen_probability(away.scorer.net) < 0.1 * before < before < chosen_probability(towards.scorer.net)
    mixed = train_scorer(scorer, samples[:16] + negative[16:], config)
    assert mixed.metrics["train/accuracy"] == decision_accuracy(mixed.scorer.net, samples[:16])


def test_every_optimiser_step_is_tracked_with_loss_accuracy_entropy_learning_rate_and_gradient_norm(tmp_path):
    config = replaced(SCORER_RECIPE, epochs=3, micro_batch_size=8, gradient_accumulation_steps=2, max_grad_norm=0.5)
    with Tracker(tmp_path / "tb") as tracker:
        result = train_scorer(init_scorer(_tiny()), _planted(32), config, tracker=tracker)
    tracked = scalars(tmp_path / "tb")
    steps = list(range(1, 3 * 32 // 16 + 1))  # 4 micro-batches of 8 per epoch, 2 per optimiser step
    for name in ("train/loss", "train/accuracy", "train/entropy", "train/lr", "train/grad_norm"):
        assert [step for step, _ in tracked[name]] == steps, name
    assert all(value == pytest.approx(1e-3) for _, value in tracked["train/lr"])  # the constant schedule
    assert all(0 < value for _, value in tracked["train/grad_norm"])
    assert all(0 <= value <= 1 for _, value in tracked["train/accuracy"])
    assert all(0 < value < np.log(6) + 1e-6 for _, value in tracked["train/entropy"])  # 6 candidates a decision
    epochs = [history["train/loss"] for history in result.history]
    assert tracked["epoch/loss"] == [(1, pytest.approx(epochs[0])), (2, pytest.approx(epochs[1])),
                                     (3, pytest.approx(epochs[2]))]
    first_epoch = [value for _, value in tracked["train/loss"][:2]]  # each step: the mean of its 2 micro-batches
    assert np.mean(first_epoch) == pytest.approx(epochs[0], rel=1e-5)
    assert tracked["train/accuracy"][-1][1] > tracked["train/accuracy"][0][1]  # it learns the planted rule


def test_log_probabilities_cover_the_candidate_and_each_fill_field():
    samples = _planted(4)
    logprobs, mask = batch_logprobs(init_scorer(_tiny()).net.eval(), samples)
    assert logprobs.shape == (4, 2) and mask.tolist() == [[1, 0], [1, 1], [1, 0], [1, 1]]
    assert (logprobs <= 0).all() and (logprobs[mask == 0] == 0).all()


def test_greedy_decisions_are_what_the_greedy_policy_picks_one_decision_at_a_time():
    """Batched and padded (fewer candidates in some samples, batches of 3), each sample's best candidate and its
    fill fields' verdict equal the policy's own argmax over that decision alone."""
    samples = _planted(8)
    for sample in samples[::3]:
        sample.flat.candidates, sample.flat.scalars = sample.flat.candidates[:4], sample.flat.scalars[:4]
        sample.chosen = min(sample.chosen, 3)
    net = init_scorer(_tiny()).net.eval()
    best, fields_right = greedy_decisions(net, samples, batch_size=3)
    with torch.no_grad():
        assert best.tolist() == [int(candidate_logits(net, s.flat).argmax()) for s in samples]
        assert fields_right.tolist() == [
            all(int(option_logits(net, f).argmax()) == t for f, t in zip(s.fields, s.typed)) for s in samples]
    assert decision_accuracy(net, samples, batch_size=3) == np.mean(
        [b == s.chosen and ok for b, s, ok in zip(best, samples, fields_right)])
    for sample, pick in zip(samples, best):  # each decision's best candidate becomes its "Done."
        sample.flat.scalars[pick, DONE] = 1.0
    plain, _ = greedy_decisions(net, samples, batch_size=3)
    held_back, _ = greedy_decisions(net, samples, batch_size=3, done_margin=100.0)
    with torch.no_grad():
        logits = [candidate_logits(net, s.flat) for s in samples]
        without_done = [int(x.masked_fill(torch.from_numpy(s.flat.scalars[:, DONE] > 0), -1e9).argmax())
                        for x, s in zip(logits, samples)]
    assert plain.tolist() == [int(x.argmax()) for x in logits]
    assert held_back.tolist() == without_done and (held_back != plain).any()


@pytest.mark.parametrize("objective", ["filtered_bc", "sft", "reinforce", "grpo"])
def test_every_objective_of_the_table_trains_the_scorer(objective):
    samples = _planted(32)
    for i, sample in enumerate(samples):
        sample.advantage = 1.0 if i % 4 else -1.0
    result = train_scorer(init_scorer(_tiny()), samples, replaced(SCORER_RECIPE, objective=objective, epochs=2))
    assert np.isfinite(result.metrics["train/loss"])


def test_a_negative_advantage_pushes_the_choice_away():
    samples = _planted(16)
    for sample in samples:
        sample.advantage = -1.0
    scorer = init_scorer(_tiny())
    result = train_scorer(scorer, samples, replaced(SCORER_RECIPE, objective="reinforce", epochs=5))
    old = batch_logprobs(scorer.net.eval(), samples)[0][:, 0].mean()
    new = batch_logprobs(result.scorer.net, samples)[0][:, 0].mean()
    assert new < old


def test_no_samples_is_a_clear_error():
    with pytest.raises(ValueError, match="no samples"):
        train_scorer(init_scorer(_tiny()), [], SCORER_RECIPE)


# ---- samples from lake rows ----------------------------------------------------------------------

FORM = [Element(mark=1, tag="input", role="text", text="", x=100, y=100, width=200, height=30, form=0,
                label="Full name", value=""),
        Element(mark=2, tag="input", role="radio", text="Express", x=100, y=150, width=200, height=30, form=0,
                label="Delivery"),
        Element(mark=3, tag="button", role="submit", text="Place order", x=100, y=200, width=200, height=30, form=0)]
DONE_PAGE = [Element(mark=1, tag="a", role=None, text="Back to the shop", x=100, y=100, width=200, height=30)]


def _steps() -> pd.DataFrame:
    oracle = [Action(name="click", x=150, y=165), Action(name="type", text="Ada Lovelace", x=150, y=115),
              Action(name="click", x=200, y=215)]
    return rows([
        Step(trajectory_id="o1", t=0, url="http://shop-a.test/checkout", title="Checkout", elements=FORM,
             page_text="Checkout\nFull name", actions=oracle, response="oracle: place_order"),
        Step(trajectory_id="o1", t=1, url="http://shop-a.test/order", title="Order confirmed", elements=DONE_PAGE,
             page_text="Thank you, Ada Lovelace!", actions=[Action(name="answer", text="Done.")]),
        Step(trajectory_id="o2", t=0, url="http://shop-a.test/order", title="Order confirmed", elements=DONE_PAGE,
             page_text="Thank you", actions=[Action(name="hover", x=1, y=1)]),
        Step(trajectory_id="o2", t=1, url="http://shop-a.test/order", title="Order confirmed", elements=DONE_PAGE,
             page_text="Thank you", actions=[Action(name="click", mark=1)]),
    ])


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    trajectories = rows([Trajectory(trajectory_id=t, task_id="order", iteration=0, policy="oracle",
                                    policy_version="bfs", horizon=10, n_steps=2, termination="answered",
                                    answer="Done.", started_at=NOW, ended_at=NOW) for t in ("o1", "o2")])
    tasks = rows([Task(task_id="order", source="synthetic", source_id="shop-a/order",
                       text="On Northwind Goods, order a lamp with express delivery for Ada Lovelace.",
                       created_at=NOW)])
    return trajectories, tasks


@pytest.fixture(scope="module")
def embed() -> TextEmbeddings:
    return TextEmbeddings()


def test_samples_rebuild_oracle_decisions_with_weights_and_report_bad_steps(embed):
    trajectories, tasks = _frames()
    accepted = pd.DataFrame({"trajectory_id": ["o1", "o1", "o2", "o2"], "t": [0, 1, 0, 1],
                             "weight": [1.0, 0.5, 1.0, 1.0], "advantage": [0.2, None, 0.0, 0.0]})
    samples, problems = scorer_samples(_steps(), trajectories, tasks, accepted, embed)
    assert len(problems) == 1 and problems[0].startswith("o2:0: hover over no menu item that opens a submenu")
    names = [s.sample_id for s in samples]
    assert names == ["o1:0.0", "o1:0.1", "o1:1", "o2:1"]  # the oracle's form step is two decisions
    radio, fill, done, back = samples
    assert (radio.weight, radio.advantage, done.weight, done.advantage) == (1.0, 0.2, 0.5, 0.0)
    assert radio.fields == [] and len(fill.fields) == 1
    options = [None, *(p.text for p in phrases(tasks.at[0, "text"], "Checkout\nFull name"))]
    assert options[fill.typed[0]] == "Ada Lovelace"
    assert fill.flat.scalars[fill.chosen, :len(KINDS)].argmax() == KINDS.index("fill")
    # The radio click is in the fill's history (the step's first decision), not in its own.
    assert not radio.flat.history.any() and fill.flat.history.any()


def test_only_accepted_steps_become_samples_and_missing_tasks_are_reported(embed):
    trajectories, tasks = _frames()
    accepted = pd.DataFrame({"trajectory_id": ["o1"], "t": [1], "weight": [1.0], "advantage": [0.0]})
    samples, problems = scorer_samples(_steps(), trajectories, tasks, accepted, embed)
    assert [s.sample_id for s in samples] == ["o1:1"] and problems == []
    samples, problems = scorer_samples(_steps(), trajectories, tasks.iloc[:0], accepted, embed)
    assert samples == [] and problems == ["o1: no trajectory or task row"]
    with pytest.raises(ValueError, match="several rows for step o1:1"):
        scorer_samples(_steps(), trajectories, tasks, pd.concat([accepted, accepted]), embed)


def test_dagger_samples_learn_the_oracles_label_from_the_policys_own_history(embed):
    """The policy clicked the link where the oracle would answer, then answered: relabelled, the first
    step teaches the answer, and the second step's history still holds the click the policy made."""
    click, answer = [Action(name="click", mark=1)], [Action(name="answer", text="Done.")]
    steps = rows([Step(trajectory_id="p1", t=t, url="http://shop-a.test/order", title="Order confirmed",
                       elements=DONE_PAGE, page_text="Thank you", actions=actions, expert_actions=answer)
                  for t, actions in enumerate([click, answer])])
    trajectories = rows([Trajectory(trajectory_id="p1", task_id="order", iteration=1, policy="scorer",
                                    policy_version="s", horizon=10, n_steps=2, termination="answered",
                                    answer="Done.", started_at=NOW, ended_at=NOW)])
    _, tasks = _frames()
    accepted = pd.DataFrame({"trajectory_id": ["p1", "p1"], "t": [0, 1], "weight": [1.0, 1.0],
                             "advantage": [None, None]})
    own, _ = scorer_samples(steps, trajectories, tasks, accepted, embed)
    relabelled, problems = scorer_samples(steps, trajectories, tasks, accepted, embed, relabel=True)
    assert problems == [] and [s.sample_id for s in relabelled] == ["p1:0", "p1:1"]
    kinds = [row[:len(KINDS)].argmax() for row in relabelled[0].flat.scalars]
    assert kinds[relabelled[0].chosen] == KINDS.index("done") and kinds[own[0].chosen] == KINDS.index("link")
    assert relabelled[1].chosen == own[1].chosen
    np.testing.assert_array_equal(relabelled[1].flat.history, own[1].flat.history)
    assert relabelled[1].flat.history.any()


def test_a_trained_scorer_is_recorded_in_the_checkpoints_table(lake):
    scorer = train_scorer(init_scorer(_tiny()), _planted(8), replaced(SCORER_RECIPE, epochs=1)).scorer
    record_checkpoint(lake, scorer, "/ckpt/x", 2, "filtered_bc", {"train/loss": 1.5}, run_id="train-2")
    row = lake.read_table("checkpoints").iloc[0]
    assert (row["checkpoint_id"], row["base"], row["iteration"]) == (scorer.checkpoint_id, "scorer-init-s1", 2)
    assert quality.validate(lake, ["checkpoints"]) == []


def test_a_run_stopped_between_saving_a_scorer_and_recording_it_records_the_saved_one_when_run_again(lake, tmp_path,
                                                                                                  monkeypatch):
    trajectories, tasks = _frames()
    lake.write_table("steps", _steps(), run_id="rollout")
    lake.write_table("trajectories", trajectories, run_id="rollout")
    lake.write_table("tasks", tasks, run_id="build")
    accepted = pd.DataFrame({"trajectory_id": ["o1", "o1"], "t": [0, 1], "weight": [1.0, 1.0], "advantage": [0.0, 0.0]})
    config = Config(policy=PolicyConfig(scorer=replaced(_tiny(), embedding_cache=None)),
                    train=replaced(SCORER_RECIPE, epochs=1))

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("webgym.train.scorer.record_checkpoint", stopped)
    with pytest.raises(KeyboardInterrupt):
        fit_scorer(config, lake, accepted, None, 1, tmp_path / "models")
    saved = list((tmp_path / "models").iterdir())
    assert len(saved) == 1 and checkpoint_of(lake, saved[0].name) is None
    monkeypatch.undo()
    fitted = fit_scorer(config, lake, accepted, None, 1, tmp_path / "models")
    assert (fitted.checkpoint_id, fitted.path) == (saved[0].name, str(saved[0]))
    assert checkpoint_of(lake, fitted.checkpoint_id)["path"] == str(saved[0])
