"""The `nightly` block: what one run of the nightly flow does."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from webgym.config.base import Section


class NightlyConfig(Section):
    """What one run of the nightly flow does (flows/nightly.py)."""

    iterations: int = Field(
        default=1, ge=0,
        description="Iterations per run (rollout -> judge -> accept -> train -> serve -> evaluate); the next "
                    "run continues from the last finished one. 0: only recover, check, rebuild warehouse and report.")
    episodes: int = Field(
        default=64, ge=1, description="Training tasks rolled out per iteration (times rollout.group_size episodes).")
    eval_tasks: int | None = Field(
        default=None, ge=1,
        description="Held-out test tasks evaluated after each iteration (a seeded sample, the same every time); "
                    "null: the whole test split.")
    warm_start_tasks: int = Field(
        default=0, ge=0,
        description="Iteration 0 of a fresh lake: oracle demonstrations on this many train tasks, then the SFT "
                    "warm start (OpenWebRL 4.2, AutoWebWorld); 0: no warm start, iteration 0 rolls out the policy.")
    warm_start_epochs: int | None = Field(
        default=None, ge=1,
        description="Epochs of the warm start's SFT on the oracle demonstrations (a few dozen demonstrations "
                    "want more passes than an iteration's rollouts); null: the training epochs of the profile.")
    warm_start_learning_rate: float | None = Field(
        default=None, gt=0,
        description="Learning rate of the warm start's SFT; null: train.learning_rate. A small model fitted from "
                    "scratch wants a far larger step than the GRPO that follows it (configs/vlm-cpu.yaml).")
    validation_tasks: int = Field(
        default=0, ge=0,
        description="Validation tasks (taskset.split.validation_instances and validation_fraction: training "
                    "families, never trained on) each new checkpoint is evaluated on greedily before it is served: "
                    "it is promoted only when, paired task by task with the served checkpoint's episodes on the "
                    "same tasks, it solves at least as many (plus promotion_min_gain, less promotion_tolerance of "
                    "them), else the previous policy stays served and the night says so, with the tasks gained and "
                    "lost and the exact McNemar p. 0: every checkpoint is promoted.")
    promotion_tolerance: float = Field(
        default=0.0, ge=0, le=1,
        description="How much lower a new checkpoint's validation success may be than the served one's on the "
                    "same tasks (tasks lost minus tasks gained, as a share of them) and still be promoted (0: never "
                    "worse).")
    promotion_min_gain: int = Field(
        default=0, ge=0,
        description="Validation tasks a new checkpoint must gain beyond those it loses to be promoted, on top of "
                    "promotion_tolerance: promoted when tasks gained minus tasks lost >= promotion_min_gain - "
                    "promotion_tolerance x tasks. 1: a tie keeps the served checkpoint (five nights promoted on a "
                    "tie of 40 went +2, -6, -4, -3 and -5 tasks on the test split, benchmarks/RESULTS.md R28 and "
                    "R29); 0: a tie promotes.")
    evaluate_untrained: bool = Field(
        default=True,
        description="Before the first training of a fresh lake, evaluate the starting policy too, so the report "
                    "shows the warm-start gain and the gain from the policy's own rollouts apart.")
    grpo_max_rounds: int = Field(
        default=2, ge=0,
        description="grpo: extra rollout rounds of the missing number of tasks while accept still lacks effective "
                    "groups (DAPO dynamic sampling), before training on what there is.")
    build_taskset: bool = Field(
        default=True,
        description="Run build_taskset first (idempotent: ingests and annotates only what is new; without inputs "
                    "it builds the synthetic task set of the shipped sites).")
    dispatch: Literal["local", "deployments"] = Field(
        default="local",
        description="How the nightly run starts its stages. local: each flow runs as a subflow in the nightly "
                    "process (no server needed). deployments: each flow runs as its prefect.yaml deployment "
                    "`<flow>/<flow>` on the work pool that fits it (browser-cpu, gpu-train, gpu-serve), started "
                    "with run_deployment and waited for; needs PREFECT_API_URL, workers (or `webgym server`) and "
                    "flow results persisted where the nightly process can read them (prefect.yaml's job_variables).")
    allow_profile_change: bool = Field(
        default=False,
        description="Let this profile continue a lake whose earlier nightly runs used another profile (the runs "
                    "table says which). false: such a run stops at its start with a one-line error naming both, so a "
                    "schedule pointed at the wrong lake (the 02:00 run of `webgym server`) cannot mix another world, "
                    "policy or task set into the lake's learning curve.")
