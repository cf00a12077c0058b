"""Blocklist by evidence (WebGym appendix B.2 and E.4, OpenWebRL's host blacklist): websites the task
sampler skips, listed on evidence over several episodes rather than on one bad page.

Evidence is read from what the rollout and the judge recorded: an episode the rollout ended as
`blocked` (HTTP 403/429, a CAPTCHA page), a judgment the blocking detector flagged, and an episode
whose start URL never opened (`navigation_failed`, "could not open ..."; a URL the sandbox refused is
no evidence). A website is listed after env.block_after blocked episodes from different tasks, or
after env.unreachable_after episodes that could not reach it; the row keeps the episodes
(trajectory_ids) and a summary. `webgym judge unblock` clears a row; only evidence seen after the
clearing can list the website again. Synthetic sites run on our own server and are never listed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from urllib.parse import urlsplit

import pandas as pd

from schemas.blocklist import SCHEMA

NEVER_LISTED = ("synthetic",)
"""Sources whose websites are ours: a failure there is a bug to fix, not a website to avoid."""

EVIDENCE_COLUMNS = ["website", "trajectory_id", "task_id", "kind", "evidence", "seen_at"]
TRAJECTORY_COLUMNS = ["trajectory_id", "task_id", "termination", "error", "ended_at"]
"""What `block_evidence` reads of the trajectories (the driver needs no more)."""


def _website(task: dict) -> str | None:
    if task.get("website"):
        return task["website"]
    host = urlsplit(task.get("start_url") or "").hostname
    return host.removeprefix("www.") if host else None


def block_evidence(trajectories: pd.DataFrame, judgments: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """One row per episode that shows its website blocking agents (kind blocked) or unreachable (kind
    unreachable): website, trajectory_id, task_id, kind, evidence (what showed it), seen_at."""
    blocked = trajectories[trajectories["termination"] == "blocked"].assign(kind="blocked")
    unreachable = trajectories[(trajectories["termination"] == "navigation_failed")
                               & trajectories["error"].fillna("").str.startswith("could not open")]
    flagged = judgments[judgments["blocked"].fillna(False).astype(bool)]
    by_judge = trajectories.merge(flagged[["trajectory_id", "judge", "rationale"]], on="trajectory_id").assign(
        kind="blocked", error=lambda f: f["judge"] + " judgment: " + f["rationale"].fillna("no reason given"))
    episodes = pd.concat([blocked, unreachable.assign(kind="unreachable"), by_judge[TRAJECTORY_COLUMNS + ["kind"]]])
    episodes = episodes.drop_duplicates(["trajectory_id", "kind"])  # the gate repeats the rollout's evidence
    sites = {t["task_id"]: (None if t["source"] in NEVER_LISTED else _website(t))
             for t in tasks.to_dict("records")}
    evidence = episodes.assign(website=episodes["task_id"].map(sites), evidence=episodes["error"],
                               seen_at=episodes["ended_at"])
    return evidence.dropna(subset=["website"])[EVIDENCE_COLUMNS].reset_index(drop=True)


def listed_websites(blocklist: pd.DataFrame) -> set[str]:
    """The websites listed now (not cleared)."""
    return set(blocklist.loc[blocklist["cleared_at"].isna(), "website"])


def updated_blocklist(blocklist: pd.DataFrame, evidence: pd.DataFrame, block_after: int, unreachable_after: int,
                      now: dt.datetime) -> pd.DataFrame:
    """The whole blocklist table: its rows, with a website that has enough evidence since it was last
    cleared (or ever) listed anew, with the evidence that listed it."""
    listed, cleared = listed_websites(blocklist), blocklist.set_index("website")["cleared_at"].dropna().to_dict()
    new = []
    for website, seen in evidence.groupby("website"):
        if website in listed:
            continue
        if website in cleared:
            seen = seen[seen["seen_at"] > cleared[website]]
        blocked, unreachable = seen[seen["kind"] == "blocked"], seen[seen["kind"] == "unreachable"]
        if blocked["task_id"].nunique() >= block_after:
            new.append(_row(website, "blocked", blocked, now))
        elif len(unreachable) >= unreachable_after:
            new.append(_row(website, "unreachable", unreachable, now))
    if not new:
        return blocklist
    kept = blocklist[~blocklist["website"].isin([row["website"] for row in new])]
    return pd.concat([kept, pd.DataFrame(new)], ignore_index=True)[SCHEMA.columns]


def _row(website: str, reason: str, seen: pd.DataFrame, now: dt.datetime) -> dict:
    seen = seen.sort_values("seen_at")
    shown = "; ".join(dict.fromkeys(seen["evidence"].fillna("no detail")))
    summary = f"{len(seen)} {reason} episode(s) from {seen['task_id'].nunique()} task(s): {shown}"
    return {"website": website, "reason": reason, "evidence": summary, "trajectory_id": seen["trajectory_id"].iloc[0],
            "trajectory_ids": seen["trajectory_id"].tolist(), "tasks": seen["task_id"].nunique(),
            "first_seen": seen["seen_at"].iloc[0], "listed_at": now, "cleared_at": None}


def cleared_blocklist(blocklist: pd.DataFrame, websites: Iterable[str], now: dt.datetime) -> pd.DataFrame:
    """The blocklist with these listed websites cleared (cleared_at = now); KeyError names any that is
    not listed."""
    websites = list(websites)
    unknown = sorted(set(websites) - listed_websites(blocklist))
    if unknown:
        raise KeyError(f"not on the blocklist: {', '.join(unknown)}")
    return blocklist.assign(cleared_at=blocklist["cleared_at"].mask(blocklist["website"].isin(websites), now))
