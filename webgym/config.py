"""Typed configuration: one pydantic model per concern, loaded from a YAML profile in configs/.

Precedence, lowest first: field defaults, the profile file, environment variables (WEBGYM_DATA),
command-line options. Every field says what it is for where it is declared.
"""

from __future__ import annotations

import os
import re
import string
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from schemas.judgments import JUDGE_PRIORITY
from webgym import PROJECT_ROOT
from webgym.env.episode import EnvConfig
from webgym.policies.settings import PolicyConfig
from webgym.rollout.collect import RolloutConfig
from webgym.train.config import TrainConfig


class ConfigError(ValueError):
    """A profile is missing, unreadable or has a bad value; the message says how to fix it."""


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LakeConfig(Section):
    data_dir: str = Field(
        default="data",
        description="Root of the Parquet lake: a path (relative to the project) or an fsspec URL "
                    "such as s3://bucket/lake. Env WEBGYM_DATA or --data-dir override it.")
    journal_batch_rows: int = Field(
        default=64, ge=1,
        description="Rows a streaming writer journals before it commits them as one Parquet part.")
    compact_min_files: int = Field(
        default=16, ge=2, description="Compaction merges a table once it has at least this many parts.")


class WarehouseConfig(Section):
    path: str = Field(
        default="warehouse.duckdb",
        description="DuckDB file with views over the lake, for external SQL tools (relative to the project).")


class EndpointConfig(Section):
    """One OpenAI-compatible server (OpenAI, Azure OpenAI v1, vLLM, SGLang, Ollama, llama.cpp)."""

    base_url: str = Field(description="API root, e.g. https://api.openai.com/v1 or http://gpu-1:8000/v1.")
    model: str = Field(description="Model name sent with every request (the served name on vLLM/SGLang).")
    api_key_env: str | None = Field(
        default=None,
        description="Name of the environment variable that holds the API key (never the key itself); "
                    "null for local servers that need none.")
    family: str = Field(
        default="default",
        description="Cache family: endpoints with the same family and model share cached answers "
                    "(replicas of one server). Change it when one model name serves different weights.")
    max_concurrency: int = Field(default=16, ge=1, description="Requests in flight at once on this endpoint.")
    rpm: int | None = Field(default=None, ge=1, description="Requests per minute allowed; null: unlimited.")
    tpm: int | None = Field(default=None, ge=1, description="Tokens per minute allowed (prompt + completion); "
                                                             "null: unlimited.")
    timeout_s: float = Field(default=120.0, gt=0, description="Per-request timeout in seconds.")
    structured: Literal["json_schema", "json_object", "prompt"] = Field(
        default="json_schema",
        description="How JSON answers are requested: json_schema (OpenAI, vLLM, SGLang, Ollama), "
                    "json_object (JSON mode plus the schema in the prompt), prompt (schema in the prompt only).")

    @field_validator("base_url")
    @classmethod
    def _no_credentials_in_url(cls, value: str) -> str:
        if "@" in value.split("//", 1)[-1].split("/", 1)[0] or "?" in value:
            raise ValueError("must not hold credentials or a query string (HTTP logs print URLs); "
                             "put the key in an environment variable named by api_key_env")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _names_a_variable(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
            raise ValueError("must be the NAME of an environment variable (e.g. OPENAI_API_KEY), "
                             "not the key itself")
        return value


class ModelPrice(Section):
    input_per_mtok: float = Field(ge=0, description="USD per million prompt tokens.")
    output_per_mtok: float = Field(ge=0, description="USD per million completion tokens.")


class LLMConfig(Section):
    """Every model call: endpoints per purpose, retries, cache, price table."""

    default: list[EndpointConfig] = Field(
        default_factory=list,
        description="Endpoints for purposes without their own entry; several are load-balanced.")
    endpoints: dict[str, list[EndpointConfig]] = Field(
        default_factory=dict,
        description="Per-purpose endpoints (rubric, decompose, judge-keypoints, judge-facts, "
                    "judge-hallucination, blocking, policy, or any other name); override llm.default.")
    max_attempts: int = Field(default=5, ge=1, description="Tries per request on 429, 5xx, timeouts "
                                                           "and connection errors.")
    backoff_s: float = Field(default=1.0, gt=0, description="First retry delay; doubles per try, with jitter.")
    backoff_max_s: float = Field(default=60.0, gt=0, description="Longest retry delay.")
    dead_cooldown_s: float = Field(default=30.0, gt=0, description="How long an unreachable endpoint is "
                                                                   "skipped before it is tried again.")
    structured_attempts: int = Field(default=3, ge=1, description="Answers asked for before a structured "
                                                                  "call returns a failure.")
    cache: bool = Field(default=True, description="Answer repeated requests from the persistent cache.")
    cache_dir: str = Field(default=".cache/llm", description="Cache directory (relative to the project).")
    image_max_side: int | None = Field(default=None, ge=16, description="Downscale screenshots so their "
                                                                        "longer side is at most this; null: as is.")
    ledger_flush_rows: int = Field(default=256, ge=1, description="llm_calls rows journaled before they are "
                                                                  "written as a lake part.")
    prices: dict[str, ModelPrice] = Field(default_factory=dict,
                                          description="Price per model name, for cost_usd in llm_calls.")

    def cache_path(self) -> Path:
        return (PROJECT_ROOT / self.cache_dir).resolve()


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


class AcceptConfig(Section):
    """Which recorded steps a training iteration learns from (stages/accept.py; WebGym 5 and appendix F,
    OpenWebRL 4.2-4.4, WebAgent-R1 2)."""

    objective: Literal["filtered_bc", "reinforce", "grpo", "sft"] = Field(
        default="filtered_bc",
        description="Selection rule, matching the loss the trainer uses (train.objective): filtered_bc (successful "
                    "trajectories, WebGym eq. 1), reinforce (every judged trajectory, reward minus the task's mean), "
                    "grpo (groups of one task, group-normalised advantages), sft (shortest success per task).")
    replay_iterations: int = Field(
        default=1, ge=1,
        description="filtered_bc: the replay buffer holds the successful trajectories of the last k rollout iterations "
                    "(WebGym: 4 or 8); 1 learns from the newest iteration only. reinforce and grpo are on-policy: "
                    "newest iteration only.")
    recency_power: float = Field(
        default=1.0, ge=0,
        description="filtered_bc draw: a step of age a iterations is drawn with probability proportional to "
                    "(a + 1) ** -power (WebGym's recency bias power: 1 or 2); 0 draws uniformly.")
    samples_per_iteration: int | None = Field(
        default=None, ge=1,
        description="filtered_bc: steps drawn from the replay buffer per iteration, without replacement (WebGym: 1200 "
                    "or 1800); null keeps every kept step of the buffer (no draw).")
    seed: int = Field(default=0, description="Seed of the replay draw (combined with the iteration: reproducible, "
                                             "different every iteration).")
    repetition_penalty: bool = Field(
        default=True,
        description="WebGym's repetition penalty: a step whose next step shows the same screenshot (same blob hash) "
                    "is not learned from, even in a successful trajectory (it still gets a negative advantage).")
    keep_parse_errors: bool = Field(
        default=False,
        description="Learn from steps whose response could not be parsed when they are reinforced (weight or "
                    "positive advantage); false drops them, so a success never teaches a malformed answer.")
    grpo_min_group_size: int = Field(
        default=2, ge=2,
        description="grpo: a group needs at least this many judged, unblocked trajectories to count (blocked and "
                    "unjudged episodes leave a group).")
    grpo_target_groups: int = Field(
        default=8, ge=1,
        description="grpo: effective groups (reward variance > 0) one update wants; DAPO's dynamic sampling rolls "
                    "out more tasks until it is met, so accept reports groups_missing.")
    sft_max_per_website: int | None = Field(
        default=6, ge=1,
        description="sft: at most this many tasks per website (OpenWebRL 4.2: 412 trajectories over 70 websites, "
                    "about 6); null: no cap.")
    sft_oracle: bool = Field(
        default=True,
        description="sft: oracle trajectories (policy oracle) of train-split sites may serve as demonstrations "
                    "(AutoWebWorld); those of test-split sites never do.")


class DedupConfig(Section):
    """Exact and near-duplicate task filtering (WebGym's seed merge, OpenWebRL's task filtering)."""

    threshold: float = Field(
        default=0.9, gt=0, le=1,
        description="Cosine similarity (MiniLM sentence embeddings) at or above which two task texts are "
                    "near-duplicates. Lower drops more paraphrases and more distinct tasks; see benchmarks/dedup.py.")
    same_constraints: bool = Field(
        default=True,
        description="Near-duplicates must mention the same numbers (dates, prices, counts) and the same kinds of "
                    "constraint words (cheapest / most expensive, over / under, with / without): embeddings "
                    "barely see '100 reviews' vs '500 reviews' or 'cheapest' vs 'most expensive', the task does.")
    eval_sources: list[str] = Field(
        default_factory=list,
        description="Evaluation benchmarks (source names, e.g. [webvoyager, online-mind2web]): every other task "
                    "within the threshold of one of their tasks is dropped as eval_overlap.")
    source_priority: list[str] = Field(
        default=["synthetic", "webgym", "online-mind2web", "mind2web-live", "mind2web2", "webvoyager", "webarena",
                 "gaia", "browsecomp", "deepshop", "travelplanner", "agentsynth", "insta", "pae", "generic"],
        description="Which copy of a duplicate survives: sources earlier in the list first (human-verified "
                    "benchmarks before synthetic proposals); evaluation sources always come first.")
    cache_dir: str = Field(
        default=".cache/embeddings",
        description="Embedding cache keyed by text hash (relative to the project); reruns embed only new texts.")
    batch_size: int = Field(default=64, ge=1, description="Texts per embedding batch.")
    precision: Literal["float32", "bfloat16", "auto"] = Field(
        default="auto",
        description="MiniLM arithmetic: auto takes bfloat16 where the CPU computes it natively (2.5x faster on "
                    "AVX512-BF16, cosine 0.9999 to float32), float32 elsewhere; each precision has its own cache.")
    exact_search_below: int = Field(
        default=20000, ge=1,
        description="Task counts below this use exact search; above it an IVF index (approximate).")
    nprobe: int = Field(default=16, ge=1, description="IVF cells searched per query: higher finds more, slower.")
    exempt_sources: list[str] = Field(
        default=["synthetic"],
        description="Sources never dropped nor embedded: their tasks differ by construction (synthetic goals have "
                    "distinct exact checks, however alike their template texts read).")


class AnnotateConfig(Section):
    """Annotation of seed tasks: website and start URL, domain and subdomain, rubric as fact groups."""

    purpose: str = Field(
        default="rubric",
        description="LLM purpose of the annotation calls: llm.endpoints.<purpose>, else llm.default.")
    batch_size: int = Field(
        default=256, ge=1,
        description="Tasks annotated concurrently and then written as one part: an interrupted run keeps every "
                    "finished batch (LLM concurrency itself is bounded per endpoint by llm max_concurrency).")
    max_tokens: int = Field(
        default=2048, ge=256,
        description="Completion limit per annotation; an answer cut off at it is invalid and asked again.")


class DecomposeConfig(Section):
    """WebGym Algorithm 1: easier tasks from proper subsets of a task's fact groups."""

    max_subsets_per_task: int = Field(
        default=20, ge=1,
        description="Cap on decomposed tasks per parent (a task with n groups has up to 2^n - 2 subsets); the "
                    "plan keeps the subsets with the fewest groups first.")
    exclude_sources: list[str] = Field(
        default=["pae", "agentsynth"],
        description="Sources not decomposed: WebGym limits synthesis for PAE-WebVoyager and AgentSynth, whose "
                    "tasks are already synthetic and near-duplicate.")


class SplitConfig(Section):
    """WebGym's out-of-distribution test split by website."""

    test_websites: int = Field(default=1167, ge=0, description="Distinct websites held out for the test set "
                                                               "(WebGym: 1,167).")
    tasks_per_test_website: int = Field(default=1, ge=1, description="Test tasks drawn per held-out website "
                                                                     "(WebGym: 1).")
    whole_site_sources: list[str] = Field(
        default=["synthetic"],
        description="Sources whose held-out websites give all their (original) tasks to the test set.")
    held_out_websites: list[str] | None = Field(
        default=["streambox-b.test", "devtalk-b.test", "mail-b.test", "rail-b.test", "greenpantry-b.test",
                 "shop-b.test"],
        description="Websites of whole_site_sources held out by name: only these of those sources' websites are "
                    "test websites, and the random draw covers the other sources' websites. The default is one "
                    "shipped synthetic site of each graph (acct-b, forum-b, mail-b, rail-b, recipes-b, shop-b). "
                    "Null: whole-site sources' websites join the random draw.")
    seed: int = Field(default=0, description="Seed of the draw of test websites and tasks.")


class SampleConfig(Section):
    """How training batches are drawn from the task set."""

    ratio: dict[str, float] | None = Field(
        default={"easy": 2, "medium": 5, "hard": 3},
        description="Relative weight of the difficulty bands easy (1-3 facts), medium (4-6), hard (7+) in a batch; "
                    "null draws uniformly over tasks.")
    seed: int = Field(default=0, description="Seed of the draw; the same seed gives the same batch.")


class TasksetConfig(Section):
    """Task-set construction: dedup, annotation, decomposition, split, sampling."""

    dedup: DedupConfig = Field(default_factory=DedupConfig)
    annotate: AnnotateConfig = Field(default_factory=AnnotateConfig)
    decompose: DecomposeConfig = Field(default_factory=DecomposeConfig)
    split: SplitConfig = Field(default_factory=SplitConfig)
    sample: SampleConfig = Field(default_factory=SampleConfig)


class ServeConfig(Section):
    """How the policy endpoint moves to a new checkpoint after training (the `serve` flow, flows/serve.py)."""

    command: str | None = Field(
        default=None,
        description="Command template that serves a checkpoint until stopped, with {checkpoint}, {name} (the served "
                    "model name), {port} and {python} (this interpreter) filled in, e.g. `vllm serve {checkpoint} "
                    "--served-model-name {name} --port {port}` or `{python} -m webgym.cli serve --checkpoint "
                    "{checkpoint} --served-model-name {name} --port {port}`. null: no server (the local profile's "
                    "policies load the checkpoint in-process); the serve flow says so and returns.")
    port: int = Field(default=8000, ge=1, le=65535, description="Port filled into {port}.")
    base_url: str | None = Field(
        default=None,
        description="API root the server answers at, the same value as the llm `policy` endpoint's base_url "
                    "(e.g. http://gpu-1:8000/v1); null: http://127.0.0.1:{port}/v1.")
    startup_timeout_s: float = Field(
        default=900.0, gt=0,
        description="How long a new server may take until its /v1/models lists the served name (vLLM loads and "
                    "compiles a 7B model in minutes); past it the server is stopped and the flow fails with its log.")
    stop_grace_s: float = Field(
        default=30.0, ge=0,
        description="After SIGTERM, seconds the previous server gets to finish its requests before SIGKILL.")
    state_dir: str = Field(
        default=".cache/serve",
        description="Directory (relative to the project) of the state file server.json (pid, start time, served "
                    "name, checkpoint) and the server's log server.log (the one before: server.previous.log); on the "
                    "serving machine's own disk.")

    @field_validator("command")
    @classmethod
    def _known_placeholders(cls, value: str | None) -> str | None:
        if value is None:
            return value
        fields = {field for _, field, _, _ in string.Formatter().parse(value) if field is not None}
        unknown = fields - {"checkpoint", "name", "port", "python"}
        if unknown:
            raise ValueError(f"unknown placeholder(s) {sorted(unknown)}; use {{checkpoint}}, {{name}}, {{port}}, "
                             "{python} (double braces for a literal brace)")
        if not {"checkpoint", "name"} <= fields:
            raise ValueError("must contain {checkpoint} and {name}: the server has to load the checkpoint and list "
                             "it under the served name the flow waits for")
        return value


class SitesConfig(Section):
    """The synthetic verifiable websites (webgym/sites): where their specs are, how they are served."""

    specs_dir: str = Field(
        default="webgym/sites/specs",
        description="Directory of site specs (our YAML/JSON, or AutoWebWorld fsm.json), relative to the project.")
    host: str = Field(default="127.0.0.1", description="Address the site server listens on; keep it on loopback.")
    port: int = Field(
        default=8123, ge=0, le=65535,
        description="Port of `webgym sites serve`; browsers map every site host name to it (0: any free port).")
    max_states: int = Field(
        default=200_000, ge=1_000,
        description="Oracle search budget per goal: states explored before it gives up (raise it for larger sites).")
    replay_concurrency: int = Field(
        default=3, ge=1, description="Goals `webgym sites verify` replays at once (one browser context each).")
    reports_dir: str = Field(
        default="reports/sites", description="Where `webgym sites verify` saves screenshots of failing steps.")
    cache_dir: str | None = Field(
        default=".cache/sites",
        description="Where oracle paths are kept between runs, keyed by a hash of site and goal (null: search "
                    "again every run).")
    search_workers: int = Field(
        default=2, ge=1,
        description="Processes searching oracle paths that are not cached yet (verify, paths, export-tasks); "
                    "1 searches in the command's own process.")


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


class Config(Section):
    """The whole pipeline's configuration (a profile)."""

    profile: str = Field(default="local", description="Name of the profile, for logs and reports.")
    lake: LakeConfig = Field(default_factory=LakeConfig)
    warehouse: WarehouseConfig = Field(default_factory=WarehouseConfig)
    taskset: TasksetConfig = Field(default_factory=TasksetConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    serve: ServeConfig = Field(default_factory=ServeConfig)
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    sites: SitesConfig = Field(default_factory=SitesConfig)
    accept: AcceptConfig = Field(default_factory=AcceptConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    env: EnvConfig = Field(default_factory=EnvConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    nightly: NightlyConfig = Field(default_factory=NightlyConfig)

    def data_root(self) -> str:
        """The lake root as an absolute path or a URL."""
        root = self.lake.data_dir
        return root if "://" in root else str((PROJECT_ROOT / root).resolve())

    def warehouse_path(self) -> Path:
        return (PROJECT_ROOT / self.warehouse.path).resolve()


def _merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`base` with `changes` laid over it, section by section (a non-mapping value replaces)."""
    merged = dict(base)
    for key, value in changes.items():
        merged[key] = _merged(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) \
            else value
    return merged


def _read_profile(path: Path, seen: tuple[Path, ...]) -> dict[str, Any]:
    """A profile's YAML; `extends: other.yaml` (beside it) starts from that profile and changes only what
    this one sets."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError(f"config file {path} not found; pass --config configs/local.yaml") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"config file {path} is not valid YAML: {error}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path}: a profile is a mapping of sections, not {type(raw).__name__}")
    parent = raw.pop("extends", None)
    if parent is None:
        return raw
    base = (path.parent / str(parent)).resolve()
    if base in seen or base == path.resolve():
        raise ConfigError(f"config file {path}: `extends: {parent}` loops back to a profile already read")
    return _merged(_read_profile(base, (*seen, path.resolve())), raw)


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> Config:
    """Load a profile (default configs/local.yaml) and apply dotted overrides like {"lake.data_dir": ...}."""
    path = Path(path) if path else PROJECT_ROOT / "configs" / "local.yaml"
    raw = _read_profile(path, ())
    if os.environ.get("WEBGYM_DATA"):  # the environment beats the profile; explicit overrides beat both
        overrides = {"lake.data_dir": os.environ["WEBGYM_DATA"], **(overrides or {})}
    for dotted, value in (overrides or {}).items():
        node = raw
        *parents, leaf = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    try:
        return Config.model_validate(raw)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise ConfigError(f"config file {path}: {problems}") from None
