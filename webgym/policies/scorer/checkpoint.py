"""Scorer checkpoints: a directory with config.json and model.safetensors, whose id (a hash of the
weights) is the policy version rollouts record. config.json names the network's architecture
(features.ARCHITECTURES); a checkpoint written before there was a choice has none and is the MLP."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from webgym.checkpoints import CheckpointError, new_checkpoint_dir
from webgym.config import ScorerConfig
from webgym.embeddings import MODEL_NAME
from webgym.policies.scorer.features import ARCHITECTURES
from webgym.policies.scorer.network import ScorerNet


@dataclass
class Scorer:
    """A scorer network with its identity: `checkpoint_id` is the version rollouts record."""

    net: ScorerNet
    checkpoint_id: str
    hidden: int
    dropout: float
    history: int
    base: str | None = None
    architecture: str = "mlp"

    @property
    def embedding_dropout(self) -> float:
        """The network's dropout on its MiniLM inputs in training (ScorerNet): read from the network, so a scorer
        trained from another keeps it without being told."""
        return float(self.net.embedding_dropout.p)


CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"


def init_scorer(config: ScorerConfig) -> Scorer:
    """An untrained scorer, its weights drawn from `config.seed` (the same seed gives the same scorer)."""
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(config.seed)
    net = ScorerNet(config.hidden, config.dropout, config.architecture, config.embedding_dropout)
    torch.random.set_rng_state(generator_state)
    name = f"scorer-init-s{config.seed}" + ("" if config.architecture == "mlp" else f"-{config.architecture}")
    return Scorer(net, name, config.hidden, config.dropout, config.history, architecture=config.architecture)



def weights_id(net: ScorerNet) -> str:
    """A short hash of the weights: a trained checkpoint's id is stable and says what it holds."""
    digest = hashlib.sha256()
    for name, tensor in sorted(net.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().numpy().tobytes())
    return digest.hexdigest()[:12]



def save_scorer(scorer: Scorer, path: str | Path) -> Path:
    """Write the checkpoint directory atomically (webgym.checkpoints.new_checkpoint_dir)."""
    with new_checkpoint_dir(path) as staging:
        save_file({k: v.contiguous() for k, v in scorer.net.state_dict().items()}, str(staging / WEIGHTS_FILE))
        meta = {"checkpoint_id": scorer.checkpoint_id, "base": scorer.base, "hidden": scorer.hidden,
                "dropout": scorer.dropout, "history": scorer.history, "embedding": MODEL_NAME,
                "architecture": scorer.architecture, "embedding_dropout": scorer.embedding_dropout}
        (staging / CONFIG_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return Path(path)


def load_scorer(path: str | Path) -> Scorer:
    """Read a checkpoint directory written by save_scorer."""
    path = Path(path)
    for name in (CONFIG_FILE, WEIGHTS_FILE):
        if not (path / name).is_file():
            raise CheckpointError(f"scorer checkpoint {path}: {name} is missing")
    try:
        meta = json.loads((path / CONFIG_FILE).read_text(encoding="utf-8"))
        architecture = meta.get("architecture", "mlp")
        if architecture not in ARCHITECTURES:
            raise CheckpointError(f"scorer checkpoint {path}: architecture {architecture!r} is not one this version "
                                  f"knows ({', '.join(ARCHITECTURES)}); it was written by a newer webgym")
        embedding_dropout = float(meta.get("embedding_dropout", 0.0))
        net = ScorerNet(int(meta["hidden"]), float(meta["dropout"]), architecture, embedding_dropout)
        net.load_state_dict(load_file(str(path / WEIGHTS_FILE)))
    except (json.JSONDecodeError, KeyError, ValueError, RuntimeError) as error:
        raise CheckpointError(f"scorer checkpoint {path}: unreadable ({str(error).splitlines()[0]})") from None
    if meta.get("embedding", MODEL_NAME) != MODEL_NAME:
        raise CheckpointError(f"scorer checkpoint {path}: trained on {meta['embedding']} embeddings, not {MODEL_NAME}")
    return Scorer(net, meta["checkpoint_id"], int(meta["hidden"]), float(meta["dropout"]), int(meta["history"]),
                  meta.get("base"), architecture)



def open_scorer(config: ScorerConfig) -> Scorer:
    """The configured checkpoint, or a fresh scorer when none is set."""
    return load_scorer(config.checkpoint) if config.checkpoint else init_scorer(config)
