"""The `judge` block: which judges decide, in which order, with what budgets."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from schemas.values import JUDGE_PRIORITY
from webgym.config.base import Section


JudgeName = Literal["exact", "reference", "rubric", "webjudge", "task_only"]


class JudgeConfig(Section):
    """Judging (WebGym 3.5 and appendix E, OpenWebRL's reward gates, Online-Mind2Web's WebJudge).

    Models per purpose come from llm.endpoints: judge-keypoints (the many per-screenshot calls: a
    cheap model), judge-facts, judge-hallucination, judge-verdict (WebJudge and task-only verdicts),
    judge-equivalence (reference answers) and blocking; all fall back to llm.default.
    """

    judges: list[JudgeName] = Field(
        default=["exact", "reference", "rubric"],
        description="Judges `webgym judge run` applies after the rule gates, each where it fits: exact (synthetic "
                    "tasks with checks), reference (a source answer that is authoritative), rubric (a rubric and an "
                    "LLM endpoint; skipped without one), webjudge and task_only (second opinions, for agreement).")
    llm_when_decided: bool = Field(
        default=False,
        description="Also ask the LLM judges about trajectories the exact verifier or a reference answer already "
                    "decided (costs calls; useful for agreement reports). A judge named on the command line always runs.")
    priority: list[str] = Field(
        default=list(JUDGE_PRIORITY),
        description="Which judgment is authoritative for a trajectory, first wins (the verdicts view's order).")
    fallback_on_error: bool = Field(
        default=False,
        description="When the highest-priority judge that judged a trajectory errored, let the next judge's verdict "
                    "stand in. Off (fail closed): the error decides and the trajectory is no success; the verdicts "
                    "view says which judge decided and why either way.")
    format_error_reward: float = Field(
        default=0.0, le=0,
        description="Reward of an episode that ended on repeated format errors (OpenWebRL uses a negative one).")
    image_budget: int = Field(
        default=10, ge=1,
        description="Rubric and task-only judges: screenshots sent with a verdict call; the last one is always kept, "
                    "then the latest key screenshots.")
    webjudge_threshold: int = Field(
        default=3, ge=1, le=5, description="WebJudge keeps screenshots scored at least this (1-5) against its key points.")
    webjudge_max_images: int = Field(default=50, ge=1, description="WebJudge's image budget for its final verdict.")
    blocking: bool = Field(
        default=True,
        description="Ask the blocking detector (purpose `blocking`) about every failed verdict on a real website, so "
                    "anti-bot failures are flagged, kept out of training and put on the blocklist.")
    blocking_screenshots: int = Field(default=3, ge=1, description="Last screenshots the blocking detector sees.")
    reference_equivalence: bool = Field(
        default=False,
        description="Let an LLM (purpose judge-equivalence) decide whether an answer means the reference answer "
                    "when text matching is not enough (fuzzy matches).")
    max_tokens: int = Field(
        default=1024, ge=64,
        description="Completion limit per judge call; an answer cut off at it is invalid, asked again, then an error.")
    concurrency: int = Field(default=8, ge=1, description="Trajectories judged at once (LLM limits still apply).")

    @field_validator("priority")
    @classmethod
    def _known_judges(cls, value: list[str]) -> list[str]:
        unknown = [name for name in value if name not in JUDGE_PRIORITY]
        if unknown:
            raise ValueError(f"unknown judge(s) {unknown}; judges are {list(JUDGE_PRIORITY)}")
        return value
