"""The set-of-marks action scorer: a small policy that learns on 2 CPU cores in minutes.

Each step it lists what it may do (webgym/policies/candidates.py), scores every candidate with a
small MLP over MiniLM embeddings of the task, the candidate, the page (title and path) and its
last actions, their products with the candidate, plus a few scalar features (kind, word overlap
with the task, repetition), and takes the softmax's choice: sampled at a temperature in training
rollouts, the best one in evaluation. A fill then chooses, per text field, which task phrase to
type (or to keep the field's value) with a second, smaller MLP. A step's log-probability is the
candidate's plus its fields', which is what training maximises (webgym/train/scorer.py).

The recorded response is the chosen candidate's key and description, and the executed calls go
to the steps table with the page's elements and text, so training rebuilds each decision exactly.
A checkpoint is a directory: config.json and model.safetensors; its id is the policy's version.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from schemas.steps import Action, Element
from webgym.embeddings import DIM, MODEL_NAME, Embedder, EmbeddingCache, text_key
from webgym.policies.base import PolicyError, PolicyInput, PolicyOutput
from webgym.policies.candidates import (KINDS, PHRASE_SOURCES, STOPWORDS, WORD, Candidate, Phrase, field_name,
                                        page_candidates, page_context, phrases, step_choices)
from webgym.policies.scorer_config import ScorerConfig

FLAT_SCALARS = len(KINDS) + 13
FIELD_SCALARS = len(PHRASE_SOURCES) + 7
QUESTION = re.compile(r"\?|^\W*(what|how|which|when|who|where)\b|\baccording to\b", re.I)
NUMBER_WORDS = {w: str(i) for i, w in enumerate("zero one two three four five six seven eight nine ten".split())}
CLAUSE = re.compile(r"[,;:.?!]|\band\b|\bthen\b", re.I)


# ---- what the scorer reads -------------------------------------------------------------------

def words(text: str) -> set[str]:
    """Content words, lower-cased, number words as digits: what word-overlap features compare."""
    out = set()
    for token in WORD.findall(text.lower()):
        token = token.strip(",.;:!?'\"")
        if token and token not in STOPWORDS:
            out.add(token)
        if token in NUMBER_WORDS:
            out.add(NUMBER_WORDS[token])
    return out


def clauses(task: str) -> list[str]:
    """The task cut at punctuation and 'and'/'then': each asks for about one thing."""
    parts = [p.strip() for p in CLAUSE.split(task) if len(p.strip()) > 2]
    return parts or [task]


@dataclass(frozen=True)
class Chosen:
    """A candidate taken at an earlier step of the episode, and what its fill typed."""

    text: str
    typed: tuple[str | None, ...] = ()


@dataclass(frozen=True)
class Decision:
    """Everything the scorer reads at one step."""

    task: str
    context: str
    history: tuple[Chosen, ...]
    """Earlier choices of the episode, oldest first."""
    candidates: list[Candidate]
    phrases: list[Phrase]
    step: int
    horizon: int


def chosen_at(elements: Sequence[Element] | None, page_text: str | None, actions: Sequence[Action]) -> list[Chosen]:
    """What an executed step chose, as the history keeps it (calls that map to no candidate are left out)."""
    choices, candidates, _ = step_choices(elements, page_text, actions)
    by_key = {c.key: c for c in candidates}
    return [Chosen(by_key[c.key].text, c.typed) for c in choices]


# ---- features -------------------------------------------------------------------------------

class TextEmbeddings:
    """MiniLM vectors by text, memoised in memory (per-step texts repeat a lot) and, with `cache_dir`,
    kept on disk by text hash: new vectors are written `save_every` at a time and on `flush`, as one
    chunk each (not a chunk per call, as the embedder's own cache would)."""

    def __init__(self, embedder: Embedder | None = None, cache_dir: str | Path | None = None,
                 save_every: int = 4096) -> None:
        self.embedder = embedder or Embedder()
        self.cache = EmbeddingCache(cache_dir, self.embedder.cache_name) if cache_dir is not None else None
        self.save_every = save_every
        self._memo: dict[str, np.ndarray] = {}
        self._unsaved: list[str] = []

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        """(N, 384) float32 unit vectors; the empty text is the zero vector."""
        missing = list(dict.fromkeys(t for t in texts if t and t not in self._memo))
        if missing:
            self._fill(missing)
        zero = np.zeros(DIM, dtype=np.float32)
        return np.stack([self._memo[t] if t else zero for t in texts]) if texts else np.zeros((0, DIM), np.float32)

    def _fill(self, missing: list[str]) -> None:
        if self.cache is not None:
            found, vectors = self.cache.get([text_key(t) for t in missing])
            for text, vector in zip([t for t, hit in zip(missing, found, strict=True) if hit], vectors, strict=True):
                self._memo[text] = vector.astype(np.float32)
            missing = [t for t, hit in zip(missing, found, strict=True) if not hit]
        if not missing:
            return
        for text, vector in zip(missing, self.embedder(missing), strict=True):
            self._memo[text] = vector
        if self.cache is not None:
            self._unsaved += missing
            if len(self._unsaved) >= self.save_every:
                self.flush()

    def flush(self) -> None:
        """Write the vectors embedded since the last flush to the file cache (one chunk)."""
        if self.cache is None:
            return
        texts, self._unsaved = self._unsaved, []
        if texts:
            self.cache.put([text_key(t) for t in texts], np.stack([self._memo[t] for t in texts]))


@dataclass
class FlatFeatures:
    """One step's candidates as the scorer's first MLP reads them."""

    task: np.ndarray  # (D,)
    page: np.ndarray  # (D,)
    history: np.ndarray  # (D,) mean of the last actions' vectors, zeros at the first step
    candidates: np.ndarray  # (N, D)
    scalars: np.ndarray  # (N, FLAT_SCALARS)


@dataclass
class FieldFeatures:
    """One text field of a fill and its options (keep, then the phrases) for the second MLP."""

    label: np.ndarray  # (D,)
    options: np.ndarray  # (M, D)
    contexts: np.ndarray  # (M, D) the task's words before each phrase
    scalars: np.ndarray  # (M, FIELD_SCALARS)


def _one_hot(index: int, size: int) -> list[float]:
    return [1.0 if i == index else 0.0 for i in range(size)]


def flat_features(decision: Decision, embed: TextEmbeddings, history: int) -> FlatFeatures:
    """Embeddings and scalar features of every candidate of a decision."""
    recent = [c.text for c in decision.history[-history:]] if history else []
    parts = clauses(decision.task)
    vectors = embed([decision.task, decision.context, *recent, *parts, *(c.text for c in decision.candidates)])
    task, page = vectors[0], vectors[1]
    hist = vectors[2:2 + len(recent)].mean(axis=0) if recent else np.zeros(DIM, np.float32)
    clause_vectors = vectors[2 + len(recent):2 + len(recent) + len(parts)]
    cand = vectors[2 + len(recent) + len(parts):]
    task_words = words(decision.task)
    task_lower = decision.task.lower()
    done_before = [c.text for c in decision.history]
    question = 1.0 if QUESTION.search(decision.task) else 0.0
    rows = []
    for i, candidate in enumerate(decision.candidates):
        target = words(candidate.target)
        numbers = {w for w in target if w.replace(".", "").isdigit()}
        rows.append([
            *_one_hot(KINDS.index(candidate.kind), len(KINDS)),
            float(task @ cand[i]), float(page @ cand[i]), float(hist @ cand[i]),
            float((clause_vectors @ cand[i]).max()),
            len(target & task_words) / max(len(target), 1),
            1.0 if len(candidate.target) >= 3 and candidate.target.lower() in task_lower else 0.0,
            1.0 if numbers & task_words else 0.0,
            1.0 if numbers else 0.0,
            min(done_before.count(candidate.text), 3) / 3,
            1.0 if done_before and done_before[-1] == candidate.text else 0.0,
            decision.step / max(decision.horizon, 1),
            question,
            min(len(target), 10) / 10,
        ])
    return FlatFeatures(task, page, hist, cand, np.asarray(rows, dtype=np.float32).reshape(-1, FLAT_SCALARS))


def field_features(decision: Decision, candidate: Candidate, embed: TextEmbeddings) -> list[FieldFeatures]:
    """Per text field of a fill: its options, None (keep its value) first, then the decision's phrases."""
    typed_before = {t for c in decision.history for t in c.typed if t}
    out = []
    for element in candidate.fields:
        label = field_name(element)
        value = element.value or ""
        texts = [value or "(keep)", *(p.text for p in decision.phrases)]
        contexts = ["", *(p.context for p in decision.phrases)]
        vectors = embed([label, *texts, *contexts])
        label_vector, options = vectors[0], vectors[1:1 + len(texts)]
        context_vectors = vectors[1 + len(texts):]
        label_words = words(label)
        rows = []
        for j, phrase in enumerate([None, *decision.phrases]):
            text = value if phrase is None else phrase.text
            rows.append([
                *_one_hot(PHRASE_SOURCES.index("keep" if phrase is None else phrase.source), len(PHRASE_SOURCES)),
                float(label_vector @ options[j]), float(label_vector @ context_vectors[j]),
                1.0 if phrase is not None and label_words & words(phrase.context) else 0.0,
                1.0 if (phrase is None and value) or (phrase is not None and phrase.text == value) else 0.0,
                0.0 if value else 1.0,
                1.0 if text and text in typed_before else 0.0,
                min(len(text), 80) / 40,
            ])
        out.append(FieldFeatures(label_vector, options, context_vectors,
                                 np.asarray(rows, dtype=np.float32).reshape(-1, FIELD_SCALARS)))
    return out


# ---- the model ------------------------------------------------------------------------------

class _MLP(nn.Module):
    """Two hidden layers over per-item features plus, broadcast to every item, per-decision context
    features; the first layer is split so the context is projected once per decision, not per item."""

    def __init__(self, item_inputs: int, context_inputs: int, hidden: int, dropout: float) -> None:
        super().__init__()
        self.item = nn.Linear(item_inputs, hidden)
        self.context = nn.Linear(context_inputs, hidden, bias=False)
        self.rest = nn.Sequential(nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, hidden), nn.GELU(),
                                  nn.Dropout(dropout), nn.Linear(hidden, 1))

    def forward(self, items: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """(B, N, I), (B, C) -> (B, N)."""
        return self.rest(self.item(items) + self.context(context)[:, None, :]).squeeze(-1)


class ScorerNet(nn.Module):
    """Two MLPs: candidate scores (one per candidate) and fill-field option scores."""

    def __init__(self, hidden: int = 256, dropout: float = 0.1) -> None:
        super().__init__()
        self.flat = _MLP(4 * DIM + FLAT_SCALARS, 3 * DIM, hidden, dropout)
        self.field = _MLP(4 * DIM + FIELD_SCALARS, DIM, max(hidden // 2, 8), dropout)

    def candidate_scores(self, task: torch.Tensor, page: torch.Tensor, history: torch.Tensor,
                         candidates: torch.Tensor, scalars: torch.Tensor) -> torch.Tensor:
        """(B, D) x3, (B, N, D), (B, N, S) -> (B, N) logits."""
        items = torch.cat([candidates, task[:, None] * candidates, page[:, None] * candidates,
                           history[:, None] * candidates, scalars], dim=-1)  # (B, N, 4D + S)
        return self.flat(items, torch.cat([task, page, history], dim=-1))

    def option_scores(self, label: torch.Tensor, options: torch.Tensor, contexts: torch.Tensor,
                      scalars: torch.Tensor) -> torch.Tensor:
        """(F, D), (F, M, D) x2, (F, M, S) -> (F, M) logits."""
        items = torch.cat([options, contexts, label[:, None] * options, label[:, None] * contexts, scalars], dim=-1)
        return self.field(items, label)


@dataclass
class Scorer:
    """A scorer network with its identity: `checkpoint_id` is the version rollouts record."""

    net: ScorerNet
    checkpoint_id: str
    hidden: int
    dropout: float
    history: int
    base: str | None = None


CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"


class CheckpointError(ValueError):
    """A scorer checkpoint directory is missing or unreadable; the message names the file."""


def init_scorer(config: ScorerConfig) -> Scorer:
    """An untrained scorer, its weights drawn from `config.seed` (the same seed gives the same scorer)."""
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(config.seed)
    net = ScorerNet(config.hidden, config.dropout)
    torch.random.set_rng_state(generator_state)
    return Scorer(net, f"scorer-init-s{config.seed}", config.hidden, config.dropout, config.history)


def weights_id(net: ScorerNet) -> str:
    """A short hash of the weights: a trained checkpoint's id is stable and says what it holds."""
    digest = hashlib.sha256()
    for name, tensor in sorted(net.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().numpy().tobytes())
    return digest.hexdigest()[:12]


def save_scorer(scorer: Scorer, path: str | Path) -> Path:
    """Write the checkpoint directory atomically (a temporary directory, then a rename)."""
    path = Path(path)
    if path.exists():
        raise CheckpointError(f"{path} already exists; checkpoints are never overwritten")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.mkdir()
    try:
        save_file({k: v.contiguous() for k, v in scorer.net.state_dict().items()}, str(tmp / WEIGHTS_FILE))
        meta = {"checkpoint_id": scorer.checkpoint_id, "base": scorer.base, "hidden": scorer.hidden,
                "dropout": scorer.dropout, "history": scorer.history, "embedding": MODEL_NAME}
        (tmp / CONFIG_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def load_scorer(path: str | Path) -> Scorer:
    """Read a checkpoint directory written by save_scorer."""
    path = Path(path)
    for name in (CONFIG_FILE, WEIGHTS_FILE):
        if not (path / name).is_file():
            raise CheckpointError(f"scorer checkpoint {path}: {name} is missing")
    try:
        meta = json.loads((path / CONFIG_FILE).read_text(encoding="utf-8"))
        net = ScorerNet(int(meta["hidden"]), float(meta["dropout"]))
        net.load_state_dict(load_file(str(path / WEIGHTS_FILE)))
    except (json.JSONDecodeError, KeyError, ValueError, RuntimeError) as error:
        raise CheckpointError(f"scorer checkpoint {path}: unreadable ({str(error).splitlines()[0]})") from None
    if meta.get("embedding", MODEL_NAME) != MODEL_NAME:
        raise CheckpointError(f"scorer checkpoint {path}: trained on {meta['embedding']} embeddings, not {MODEL_NAME}")
    return Scorer(net, meta["checkpoint_id"], int(meta["hidden"]), float(meta["dropout"]), int(meta["history"]),
                  meta.get("base"))


def open_scorer(config: ScorerConfig) -> Scorer:
    """The configured checkpoint, or a fresh scorer when none is set."""
    return load_scorer(config.checkpoint) if config.checkpoint else init_scorer(config)


# ---- acting ---------------------------------------------------------------------------------

def _tensor(array: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.asarray(array, dtype=np.float32))


def candidate_logits(net: ScorerNet, flat: FlatFeatures) -> torch.Tensor:
    """(N,) scores of one decision's candidates."""
    return net.candidate_scores(_tensor(flat.task)[None], _tensor(flat.page)[None], _tensor(flat.history)[None],
                                _tensor(flat.candidates)[None], _tensor(flat.scalars)[None])[0]


def option_logits(net: ScorerNet, field: FieldFeatures) -> torch.Tensor:
    """(M,) scores of one field's options."""
    return net.option_scores(_tensor(field.label)[None], _tensor(field.options)[None], _tensor(field.contexts)[None],
                             _tensor(field.scalars)[None])[0]


class ScorerPolicy:
    """Implements the Policy protocol with a scorer (name `scorer`, version = its checkpoint id)."""

    name = "scorer"
    prompt_version = None
    privileged = False

    def __init__(self, scorer: Scorer, embed: TextEmbeddings | None = None, temperature: float = 1.0,
                 greedy: bool = False, seed: int = 0) -> None:
        self.scorer, self.temperature, self.greedy = scorer, temperature, greedy
        self.version = scorer.checkpoint_id
        self.embed = embed or TextEmbeddings()
        self._generator = torch.Generator().manual_seed(seed)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scorer-policy")

    def _pick(self, logits: torch.Tensor) -> tuple[int, float]:
        """The chosen index and its log-probability under the policy (temperature 1)."""
        logprobs = torch.log_softmax(logits, dim=-1)
        if self.greedy:
            index = int(torch.argmax(logits))
        else:
            probs = torch.softmax(logits / self.temperature, dim=-1)
            index = int(torch.multinomial(probs, 1, generator=self._generator))
        return index, float(logprobs[index])

    def decide(self, observed: PolicyInput) -> PolicyOutput:
        """One decision, computed in the calling thread."""
        observation = observed.observation
        if observation.elements is None:
            raise PolicyError("the scorer needs set-of-marks observations: set env.observation to set_of_marks")
        history = tuple(chosen for turn in observed.history for chosen in chosen_at(
            turn.observation.elements, turn.observation.page_text, turn.executed))
        decision = Decision(observed.task.text, page_context(observation.url, observation.title), history,
                            page_candidates(observation.elements, observation.page_text),
                            phrases(observed.task.text, observation.page_text), observed.step, observed.horizon)
        net = self.scorer.net.eval()
        with torch.no_grad():
            index, logprob = self._pick(candidate_logits(net, flat_features(decision, self.embed, self.scorer.history)))
            candidate = decision.candidates[index]
            typed: list[str | None] = []
            if candidate.kind == "fill":
                options = [None, *(p.text for p in decision.phrases)]
                for field in field_features(decision, candidate, self.embed):
                    option, option_logprob = self._pick(option_logits(net, field))
                    typed.append(options[option])
                    logprob += option_logprob
        return PolicyOutput(candidate.actions(typed), response=candidate.response(typed), logprob=logprob)

    async def act(self, observed: PolicyInput) -> PolicyOutput:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, self.decide, observed)

    def close(self) -> None:
        """Stop the worker thread (after the episodes using the policy have finished) and keep the
        vectors it embedded for training."""
        self._worker.shutdown(wait=True)
        self.embed.flush()
