"""Training the set-of-marks scorer on accepted steps, in seconds to a minute on 2 CPU cores.

Reads top to bottom: samples (each accepted step rebuilt from the lake's rows exactly as the policy
saw it) -> loss (the objectives table of webgym/train/objectives.py) -> loop -> checkpoint.
A step's "tokens" are its decisions: column 0 of the (B, K) log-probabilities is the chosen
candidate, columns 1.. the phrases a fill typed into its fields, so filtered BC, SFT, REINFORCE
and GRPO apply unchanged. Oracle steps (clicks at x, y, a whole form in one step) become the
same decisions (webgym/policies/scorer/candidates.py: step_choices).
"""

from __future__ import annotations

import copy
import datetime as dt
import logging
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from schemas.checkpoints import Checkpoint
from schemas.steps import Action, Element, stored_actions, stored_elements
from webgym.config import TrainConfig
from webgym.lake import Lake
from webgym.policies.scorer.candidates import KINDS, Phrase, page_context, phrases, step_choices
from webgym.policies.scorer.checkpoint import Scorer, weights_id
from webgym.policies.scorer.embeddings import TextEmbeddings
from webgym.policies.scorer.features import Chosen, Decision, FieldFeatures, FlatFeatures, field_features, flat_features
from webgym.policies.scorer.network import hold_back_done
from webgym.tracking import NO_TRACKING, Tracker
from webgym.train.engine import TorchEngine
from webgym.train.objectives import OBJECTIVES, LossInputs

log = logging.getLogger(__name__)

DONE = KINDS.index("done")
"""The scalar column of a candidate's one-hot kind that says it answers "Done."."""


@dataclass
class ScorerSample:
    """One decision to learn: the features the policy saw, what it chose, and how much it counts."""

    sample_id: str
    flat: FlatFeatures
    chosen: int
    fields: list[FieldFeatures] = field(default_factory=list)
    typed: list[int] = field(default_factory=list)
    """Per fill field, the chosen option (0 keeps the value, 1 + i types phrase i)."""
    weight: float = 1.0
    advantage: float = 0.0


def scorer_samples(steps: pd.DataFrame, trajectories: pd.DataFrame, tasks: pd.DataFrame, accepted: pd.DataFrame,
                   embed: TextEmbeddings, history: int = 3,
                   relabel: bool = False, architecture: str = "mlp") -> tuple[list[ScorerSample], list[str]]:
    """Samples for the accepted (trajectory_id, t) rows (with weight and advantage), rebuilt from
    their trajectories' steps in order, and one problem line per step that could not be rebuilt
    (it is skipped; the rest go on). An oracle step gives one sample per decision it makes. With
    `relabel` (dagger), a step the oracle labelled learns the label (steps.expert_actions) from what
    the policy saw, whose history holds the policy's own earlier choices."""
    wanted = accepted.set_index(["trajectory_id", "t"])[["weight", "advantage"]]
    if wanted.index.duplicated().any():
        first = wanted.index[wanted.index.duplicated()][0]
        raise ValueError(f"accepted has several rows for step {first[0]}:{first[1]}; pass the rows of one "
                         f"objective and iteration")
    meta = trajectories.set_index("trajectory_id")[["task_id", "horizon"]]
    texts = tasks.set_index("task_id")["text"]
    samples: list[ScorerSample] = []
    problems: list[str] = []
    ids = set(accepted["trajectory_id"])
    for trajectory_id, rows in steps[steps["trajectory_id"].isin(ids)].sort_values("t").groupby("trajectory_id"):
        if trajectory_id not in meta.index or meta.at[trajectory_id, "task_id"] not in texts.index:
            problems.append(f"{trajectory_id}: no trajectory or task row")
            continue
        task = texts[meta.at[trajectory_id, "task_id"]]
        horizon = int(meta.at[trajectory_id, "horizon"])
        earlier: list[Chosen] = []
        for row in rows.itertuples(index=False):
            elements, actions = stored_elements(row.elements), stored_actions(row.actions)
            key = (trajectory_id, row.t)
            keep, relabelled = key in wanted.index, relabel and row.expert_actions is not None
            choices, candidates, problem = step_choices(elements, row.page_text,
                                                        stored_actions(row.expert_actions) if relabelled else actions)
            name = f"{trajectory_id}:{row.t}"
            if problem or elements is None:
                problems.append(f"{name}: {problem or 'no set-of-marks elements recorded'}")
            by_key = {c.key: c for c in candidates}
            task_phrases = phrases(task, row.page_text)
            within = list(earlier)
            for n, choice in enumerate(choices):
                candidate = by_key[choice.key]
                known = {p.text for p in task_phrases}
                task_phrases += [Phrase(t, "", "added") for t in dict.fromkeys(choice.typed) if t and t not in known]
                if keep:
                    decision = Decision(task, page_context(row.url, row.title), tuple(within), candidates,
                                        list(task_phrases), int(row.t), horizon)
                    weight, advantage = wanted.loc[key]
                    sample = ScorerSample(name + (f".{n}" if len(choices) > 1 else ""),
                                          _compact(flat_features(decision, embed, history, architecture)),
                                          candidates.index(candidate), weight=float(weight),
                                          advantage=0.0 if pd.isna(advantage) else float(advantage))
                    if candidate.kind == "fill":
                        options = [None, *(p.text for p in task_phrases)]
                        sample.fields = [_compact(f) for f in field_features(decision, candidate, embed)]
                        sample.typed = [options.index(t) for t in choice.typed]
                    samples.append(sample)
                within.append(Chosen(candidate.text, choice.typed))
            earlier = within if not relabelled else earlier + _chosen(elements, row.page_text, actions)
    return samples, problems


def _chosen(elements: list[Element] | None, page_text: str | None, actions: list[Action]) -> list[Chosen]:
    """The decisions the policy's own calls made on this page: the history of the steps after it."""
    choices, candidates, _ = step_choices(elements, page_text, actions)
    by_key = {c.key: c for c in candidates}
    return [Chosen(by_key[c.key].text, c.typed) for c in choices]


def _compact(features: FlatFeatures | FieldFeatures) -> FlatFeatures | FieldFeatures:
    """Vectors kept as float16 (a few thousand samples fit in a few hundred MB)."""
    for name, value in vars(features).items():
        if name != "scalars":
            setattr(features, name, value.astype(np.float16))
    return features


# ---- batches ---------------------------------------------------------------------------------

def _stack(arrays: list[np.ndarray], length: int) -> torch.Tensor:
    """Pad the first axis of each array to `length` and stack: (B, length, ...)."""
    out = np.zeros((len(arrays), length, *arrays[0].shape[1:]), dtype=np.float32)
    for i, array in enumerate(arrays):
        out[i, :len(array)] = array
    return torch.from_numpy(out)


def _masked_logprobs(logits: torch.Tensor, sizes: list[int]) -> torch.Tensor:
    valid = torch.arange(logits.shape[1])[None, :] < torch.tensor(sizes)[:, None]  # (B, N)
    return torch.log_softmax(logits.masked_fill(~valid, float("-inf")), dim=-1)


@dataclass
class _Scored:
    """Log-softmax scores of a batch: candidates (B, N) and fill fields (F, M) with their owners."""

    candidates: torch.Tensor
    fields: torch.Tensor | None
    field_rows: torch.Tensor  # (F,) sample of each field
    field_cols: torch.Tensor  # (F,) 1 + the field's index in its fill
    typed: torch.Tensor  # (F,) chosen option of each field


def _score(net: torch.nn.Module, batch: list[ScorerSample]) -> _Scored:
    sizes = [len(s.flat.candidates) for s in batch]
    logits = net.candidate_scores(
        torch.from_numpy(np.stack([s.flat.task for s in batch]).astype(np.float32)),
        torch.from_numpy(np.stack([s.flat.page for s in batch]).astype(np.float32)),
        torch.from_numpy(np.stack([s.flat.history for s in batch]).astype(np.float32)),
        _stack([s.flat.candidates for s in batch], max(sizes)), _stack([s.flat.scalars for s in batch], max(sizes)))
    fields = [(b, j, f, s.typed[j]) for b, s in enumerate(batch) for j, f in enumerate(s.fields)]
    scored = _Scored(_masked_logprobs(logits, sizes), None, torch.tensor([b for b, *_ in fields], dtype=torch.long),
                     torch.tensor([1 + j for _, j, *_ in fields], dtype=torch.long),
                     torch.tensor([t for *_, t in fields], dtype=torch.long))
    if fields:
        option_sizes = [len(f.options) for _, _, f, _ in fields]
        m = max(option_sizes)
        option_logits = net.option_scores(
            torch.from_numpy(np.stack([f.label for _, _, f, _ in fields]).astype(np.float32)),
            _stack([f.options for _, _, f, _ in fields], m), _stack([f.contexts for _, _, f, _ in fields], m),
            _stack([f.scalars for _, _, f, _ in fields], m))  # (F, M)
        scored.fields = _masked_logprobs(option_logits, option_sizes)
    return scored


def batch_logprobs(net: torch.nn.Module, batch: list[ScorerSample]) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, K) log-probabilities of each sample's decisions (candidate, then fill fields) and their mask."""
    return _chosen_logprobs(_score(net, batch), batch)


def _chosen_logprobs(scored: _Scored, batch: list[ScorerSample]) -> tuple[torch.Tensor, torch.Tensor]:
    chosen = torch.tensor([s.chosen for s in batch])
    width = 1 + max(len(s.fields) for s in batch)
    logprobs = torch.cat([scored.candidates.gather(1, chosen[:, None]), torch.zeros(len(batch), width - 1)], dim=1)
    mask = torch.zeros(len(batch), width)
    mask[:, 0] = 1.0
    if scored.fields is not None:
        picked = scored.fields.gather(1, scored.typed[:, None])[:, 0]  # (F,)
        logprobs = logprobs.index_put((scored.field_rows, scored.field_cols), picked)
        mask[scored.field_rows, scored.field_cols] = 1.0
    return logprobs, mask


@torch.no_grad()
def _decision_metrics(scored: _Scored, batch: list[ScorerSample]) -> dict[str, float]:
    """train/accuracy (the best-scored candidate, and each fill field's best option, is the sample's; over the
    samples learned towards, advantage >= 0) and train/entropy (nats, of the candidate distribution) of a
    scored batch, means over its samples."""
    right = scored.candidates.argmax(dim=1) == torch.tensor([s.chosen for s in batch])  # (B,)
    if scored.fields is not None:
        right[scored.field_rows[scored.fields.argmax(dim=1) != scored.typed]] = False
    towards = torch.tensor([s.advantage >= 0 for s in batch])
    probabilities = scored.candidates.exp()  # (B, N); padding has probability 0 and log-probability -inf
    entropy = -torch.where(probabilities > 0, probabilities * scored.candidates, 0.0).sum(dim=1)  # (B,)
    accuracy = {"train/accuracy": float(right[towards].float().mean())} if bool(towards.any()) else {}
    return {**accuracy, "train/entropy": float(entropy.mean())}


def greedy_decisions(net: torch.nn.Module, samples: list[ScorerSample], batch_size: int = 256,
                     done_margin: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Per sample, the best-scored candidate (B,) and whether each of its fill fields' best option is the
    sample's (B,): what the greedy policy would do at each recorded decision, with its "Done." margin."""
    net.eval()
    best, fields_right = [], []
    with torch.no_grad():
        for start in range(0, len(samples), batch_size):
            batch = samples[start:start + batch_size]
            scored = _score(net, batch)
            ok = torch.ones(len(batch), dtype=torch.bool)
            if scored.fields is not None:
                ok[scored.field_rows[scored.fields.argmax(dim=1) != scored.typed]] = False
            candidates = scored.candidates
            if done_margin:
                done = torch.zeros_like(candidates, dtype=torch.bool)
                for row, sample in enumerate(batch):
                    done[row, :len(sample.flat.scalars)] = torch.from_numpy(sample.flat.scalars[:, DONE] > 0.5)
                candidates = hold_back_done(candidates, done, done_margin)
            best.append(candidates.argmax(dim=1).numpy())
            fields_right.append(ok.numpy())
    if not best:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    return np.concatenate(best), np.concatenate(fields_right)


def decision_accuracy(net: torch.nn.Module, samples: list[ScorerSample], batch_size: int = 256) -> float:
    """Fraction of samples whose best-scored candidate, and each fill field's best option, is the one chosen."""
    best, fields_right = greedy_decisions(net, samples, batch_size)
    chosen = np.array([s.chosen for s in samples], dtype=np.int64)
    return float(((best == chosen) & fields_right).sum()) / max(len(samples), 1)


# ---- training --------------------------------------------------------------------------------

@dataclass
class ScorerTrainResult:
    scorer: Scorer
    """The trained scorer (a copy: the input scorer is unchanged); its id hashes its weights."""
    metrics: dict[str, float]
    """train/loss (last epoch's mean), train/accuracy (greedy choice = the sample's), train/samples, ..."""
    history: list[dict[str, float]] = field(default_factory=list)
    """Per-epoch metrics."""


def _logprobs_of(net: torch.nn.Module, samples: list[ScorerSample], batch_size: int) -> dict[int, torch.Tensor]:
    """Each sample's decision log-probabilities under `net` (evaluation mode), by sample index."""
    net.eval()
    out: dict[int, torch.Tensor] = {}
    with torch.no_grad():
        for start in range(0, len(samples), batch_size):
            logprobs, _ = batch_logprobs(net, samples[start:start + batch_size])
            out.update({start + i: row for i, row in enumerate(logprobs)})
    return out


def _aligned(fixed: dict[int, torch.Tensor], chosen: list[int], like: torch.Tensor) -> torch.Tensor:
    """The fixed log-probabilities of a batch's samples, padded to the batch's (B, K)."""
    out = torch.zeros_like(like)
    for row, i in enumerate(chosen):
        out[row, :len(fixed[i])] = fixed[i][:like.shape[1]]
    return out


def _means(records: list[dict[str, float]]) -> dict[str, float]:
    """Each metric's mean over the records that have it (GRPO's imitation term only where demonstrations are)."""
    names = dict.fromkeys(name for record in records for name in record)
    return {name: float(np.mean([r[name] for r in records if name in r])) for name in names}


def train_scorer(scorer: Scorer, samples: list[ScorerSample], config: TrainConfig,
                 reference: Scorer | None = None, tracker: Tracker = NO_TRACKING) -> ScorerTrainResult:
    """Fit a copy of the scorer to the samples with the profile's `train` block: its objective (GRPO's
    clip range and KL included), epochs, micro-batches and accumulation, AdamW with its learning rate,
    schedule, warmup and weight decay, gradient clipping and max_steps. The KL reference is `reference`,
    else the scorer training starts from. Every optimiser step's loss, accuracy, entropy, learning rate and
    gradient norm go to `tracker` (means over the step's micro-batches), each epoch's mean loss as epoch/loss."""
    if not samples:
        raise ValueError("train_scorer: no samples to train on (no accepted step could be rebuilt)")
    objective = OBJECTIVES[config.objective]
    batch_size = config.micro_batch_size
    # micro-batches that cannot fill a last accumulation step are not trained on (drop-last)
    total_steps = -(-len(samples) // batch_size) * config.epochs // config.gradient_accumulation_steps
    if total_steps == 0:
        raise ValueError(f"train_scorer: {len(samples)} samples in micro-batches of {batch_size} cannot fill one "
                         f"optimiser step of {config.gradient_accumulation_steps} micro-batches; lower "
                         f"train.gradient_accumulation_steps or train.micro_batch_size")
    if config.max_steps is not None:
        total_steps = min(total_steps, config.max_steps)
    torch.manual_seed(config.seed)
    net = copy.deepcopy(scorer.net)
    engine = TorchEngine(net, config, total_steps, torch.device("cpu"))
    order = np.random.default_rng(config.seed)
    # fixed before the first update: the policy that sampled the steps is the one training starts from
    old = _logprobs_of(net, samples, batch_size) if objective.needs_old_logprobs else {}
    ref = {}
    if config.kl_coef > 0:
        ref = _logprobs_of(reference.net, samples, batch_size) if reference is not None else old
    started = time.monotonic()
    history: list[dict[str, float]] = []
    micro: list[dict[str, float]] = []  # the metrics of the micro-batches of the optimiser step under way
    steps = 0
    for epoch in range(config.epochs):
        net.train()
        losses = []
        permutation = order.permutation(len(samples))
        for start in range(0, len(samples), batch_size):
            chosen = permutation[start:start + batch_size].tolist()
            batch = [samples[i] for i in chosen]
            scored = _score(net, batch)
            logprobs, mask = _chosen_logprobs(scored, batch)  # (B, K)
            loss, loss_metrics = objective.loss(LossInputs(
                logprobs, mask, torch.tensor([s.weight for s in batch]), torch.tensor([s.advantage for s in batch]),
                _aligned(old, chosen, logprobs) if old else None, _aligned(ref, chosen, logprobs) if ref else None),
                config)
            micro.append({"train/loss": float(loss.detach()), **_decision_metrics(scored, batch), **loss_metrics})
            lr = engine.lr()  # the rate this step applies; the scheduler moves on inside micro_step
            grad_norm = engine.micro_step(loss)
            if grad_norm is not None:
                steps += 1
                tracker.scalars({**_means(micro), "train/lr": lr, "train/grad_norm": grad_norm}, step=steps)
                micro = []
            losses.append(float(loss.detach()))
            if steps == total_steps:
                break
        history.append({"train/epoch": float(epoch + 1), "train/loss": float(np.mean(losses))})
        tracker.scalars({"epoch/loss": history[-1]["train/loss"]}, step=epoch + 1)
        log.info("scorer epoch %d: train/loss %.4f", epoch + 1, history[-1]["train/loss"])
        if steps == total_steps:
            break
    net.eval()
    trained = Scorer(net, f"scorer-{weights_id(net)}", scorer.hidden, scorer.dropout, scorer.history,
                     base=scorer.checkpoint_id, architecture=scorer.architecture)
    towards = [s for s in samples if s.advantage >= 0]
    metrics = {"train/loss": history[-1]["train/loss"], "train/accuracy": decision_accuracy(net, towards),
               "train/samples": float(len(samples)), "train/epochs": float(len(history)),
               "train/steps": float(steps), "train/lr": engine.lr(), "train/seconds": time.monotonic() - started}
    log.info("scorer %s: %s", trained.checkpoint_id, metrics)
    return ScorerTrainResult(trained, metrics, history)


def record_checkpoint(lake: Lake, scorer: Scorer, path: str, iteration: int, objective: str,
                      metrics: dict[str, float], run_id: str) -> None:
    """One checkpoints row for a saved scorer (its id is the version its rollouts record)."""
    row = Checkpoint(checkpoint_id=scorer.checkpoint_id, iteration=iteration, path=path, base=scorer.base,
                     objective=objective, metrics=metrics, created_at=dt.datetime.now(dt.UTC))
    lake.write_table("checkpoints", pd.DataFrame([row.model_dump()]), run_id=run_id)
