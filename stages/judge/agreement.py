"""Agreement of every judge with human labels (WebGym figure 5): accuracy, precision, recall and F1,
side by side, rubric judge next to the task-only baseline, plus the authoritative verdicts."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from schemas.values import JUDGE_PRIORITY

TRUE = {"1", "true", "yes", "y", "success"}
FALSE = {"0", "false", "no", "n", "failure", "not success"}
COLUMNS = ["judge", "labelled", "judged", "errors", "accuracy", "precision", "recall", "f1", "tp", "fp", "fn", "tn"]


class LabelError(ValueError):
    """The labels file cannot be read at all (missing, or without the needed columns)."""


@dataclass(frozen=True)
class Labels:
    """Human labels, one per trajectory, and the rows that could not be used."""

    frame: pd.DataFrame
    """trajectory_id, success (bool)."""
    bad: list[str]


def read_labels(path: str | Path) -> Labels:
    """LABELS.csv with columns trajectory_id and success (true/false, 1/0, yes/no, success/failure);
    a bad row is reported with its line and the rest are read."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            missing = {"trajectory_id", "success"} - set(reader.fieldnames or [])
            if missing:
                raise LabelError(f"{path}: missing column(s) {sorted(missing)}; the header is {reader.fieldnames}")
            labels: dict[str, bool] = {}
            first_line: dict[str, int] = {}
            bad = []
            for row in reader:
                where = f"{path}, line {reader.line_num}"
                trajectory = (row["trajectory_id"] or "").strip()
                value = (row["success"] or "").strip().lower()
                if not trajectory:
                    bad.append(f"{where}: empty trajectory_id")
                elif value not in TRUE | FALSE:
                    bad.append(f"{where}: success {row['success']!r} is not true/false, 1/0, yes/no or success/failure")
                elif trajectory in labels:
                    bad.append(f"{where}: trajectory {trajectory} is already labelled on line {first_line[trajectory]}")
                else:
                    labels[trajectory], first_line[trajectory] = value in TRUE, reader.line_num
    except FileNotFoundError:
        raise LabelError(f"labels file {path} not found") from None
    except UnicodeDecodeError as error:
        raise LabelError(f"{path} is not UTF-8 text: {error}") from None
    return Labels(pd.DataFrame({"trajectory_id": list(labels), "success": list(labels.values())}), bad)


def _scores(judge: str, labelled: int, predicted: pd.DataFrame) -> dict:
    truth, guess = predicted["label"], predicted["success"]
    tp, fp = int((guess & truth).sum()), int((guess & ~truth).sum())
    fn, tn = int((~guess & truth).sum()), int((~guess & ~truth).sum())
    n = tp + fp + fn + tn
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = None if precision is None or recall is None else (
        2 * precision * recall / (precision + recall) if precision + recall else 0.0)
    return {"judge": judge, "labelled": labelled, "judged": n, "errors": int(predicted["error"].sum()),
            "accuracy": (tp + tn) / n if n else None, "precision": precision, "recall": recall, "f1": f1,
            "tp": tp, "fp": fp, "fn": fn, "tn": tn}


def agreement(labels: pd.DataFrame, judgments: pd.DataFrame, verdicts: pd.DataFrame) -> pd.DataFrame:
    """One row per judge present (its latest judgment per trajectory) and one for `verdicts` (the
    authoritative judgment), scored on the labelled trajectories it judged. Errors and not-evaluable
    rows count as predicted failures (fail closed) and are counted in `errors`; precision, recall and
    F1 are empty where undefined."""
    truth = labels.rename(columns={"success": "label"})[["trajectory_id", "label"]].astype({"label": bool})
    latest = judgments.sort_values("judged_at").drop_duplicates(["trajectory_id", "judge"], keep="last")
    present = [j for j in JUDGE_PRIORITY if j in set(latest["judge"])]
    present += sorted(set(latest["judge"]) - set(present))
    tables = [(judge, latest[latest["judge"] == judge]) for judge in present] + [("verdicts", verdicts)]
    rows = []
    for judge, frame in tables:
        predicted = truth.merge(frame[["trajectory_id", "success", "status"]], on="trajectory_id")
        predicted = predicted.assign(success=predicted["success"].astype(bool),
                                     error=predicted["status"].isin(["error", "not_evaluable"]))
        rows.append(_scores(judge, len(truth), predicted))
    return pd.DataFrame(rows, columns=COLUMNS)
