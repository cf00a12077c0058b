"""The scorer's network: two small MLPs, one scoring a step's candidates, one scoring the options of a
fill's text fields."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from webgym.embeddings import DIM
from webgym.policies.scorer.features import FIELD_SCALARS, FieldFeatures, FlatFeatures, scalar_count


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
    """Two MLPs: candidate scores (one per candidate) and fill-field option scores. The `architecture`
    (features.ARCHITECTURES) sets how many scalars per candidate the first one reads. `embedding_dropout`
    drops, in training only, that share of the MiniLM inputs (texts and their products), not the scalars: the
    text channel can learn a training site's habits (which toggles its tasks set), the scalars only how a
    candidate relates to the task, which is what carries to sites the demonstrations never showed."""

    def __init__(self, hidden: int = 256, dropout: float = 0.1, architecture: str = "mlp",
                 embedding_dropout: float = 0.0) -> None:
        super().__init__()
        self.architecture = architecture
        self.flat = _MLP(4 * DIM + scalar_count(architecture), 3 * DIM, hidden, dropout)
        self.field = _MLP(4 * DIM + FIELD_SCALARS, DIM, max(hidden // 2, 8), dropout)
        self.embedding_dropout = nn.Dropout(embedding_dropout)

    def candidate_scores(self, task: torch.Tensor, page: torch.Tensor, history: torch.Tensor,
                         candidates: torch.Tensor, scalars: torch.Tensor) -> torch.Tensor:
        """(B, D) x3, (B, N, D), (B, N, S) -> (B, N) logits."""
        drop = self.embedding_dropout
        texts = torch.cat([candidates, task[:, None] * candidates, page[:, None] * candidates,
                           history[:, None] * candidates], dim=-1)
        items = torch.cat([drop(texts), scalars], dim=-1)  # (B, N, 4D + S)
        return self.flat(items, drop(torch.cat([task, page, history], dim=-1)))

    def option_scores(self, label: torch.Tensor, options: torch.Tensor, contexts: torch.Tensor,
                      scalars: torch.Tensor) -> torch.Tensor:
        """(F, D), (F, M, D) x2, (F, M, S) -> (F, M) logits."""
        drop = self.embedding_dropout
        texts = torch.cat([options, contexts, label[:, None] * options, label[:, None] * contexts], dim=-1)
        return self.field(torch.cat([drop(texts), scalars], dim=-1), drop(label))



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



def hold_back_done(logits: torch.Tensor, done: torch.Tensor, margin: float) -> torch.Tensor:
    """Scores with every "Done." candidate (`done`, a mask of their shape) lowered by `margin`: their argmax,
    the greedy decision, answers "Done." only when it wins by the margin (ScorerConfig.done_margin). Most
    held-out episodes that fail end with an early "Done." (README, "What the default learns")."""
    return logits - margin * done.to(logits.dtype)
