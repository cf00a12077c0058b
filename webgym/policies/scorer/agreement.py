"""Which decisions a policy gets right on its own episodes: each step the oracle labelled
(steps.expert_actions, rollout.label_evaluations) set beside the policy's own calls, both mapped
onto the page's set-of-marks candidates, so a decision is counted by the kind of candidate the
oracle chose (a toggle, "Done.", the answering line, a scroll, ...)."""

from __future__ import annotations

import pandas as pd

from schemas.steps import stored_actions, stored_elements
from webgym.policies.scorer.candidates import step_choices

COLUMNS = ["trajectory_id", "t", "kind", "matched"]

def labelled_decisions(steps: pd.DataFrame) -> pd.DataFrame:
    """One row per labelled step whose label maps onto the page's candidates: `kind`, the kind of the
    oracle's first choice, and `matched`, whether the policy's first choice is the same candidate (with
    the same text in every field of a fill, the same text for an answer). The first choice only: the policy makes one per step,
    the oracle sometimes several (it fills a form, then submits another)."""
    rows = []
    for step in steps[steps["expert_actions"].notna()].itertuples(index=False):
        elements = stored_elements(step.elements)
        wanted, candidates, problem = step_choices(elements, step.page_text, stored_actions(step.expert_actions))
        if problem or not wanted:
            continue
        made, offered, _ = step_choices(elements, step.page_text, stored_actions(step.actions))
        target = next(c for c in candidates if c.key == wanted[0].key)
        chosen = next((c for c in offered if made and c.key == made[0].key), None)
        matched = chosen is not None and made[0] == wanted[0] and chosen.text == target.text  # an answer off the page
        rows.append((step.trajectory_id, int(step.t), target.kind, matched))
    return pd.DataFrame(rows, columns=COLUMNS).astype({"t": "int64", "matched": bool})


def made_by_kind(decided: pd.DataFrame, by: str) -> pd.DataFrame:
    """`labelled_decisions` rows (with a `by` column, e.g. the evaluated point) counted per `by` and kind, and
    for all kinds together as kind "all": decisions and how many the policy made."""
    both = pd.concat([decided.assign(kind="all"), decided])
    return both.groupby([by, "kind"], as_index=False).agg(decisions=("matched", "size"), matched=("matched", "sum"))
