"""The `taskset` block: dedup, annotation, decomposition, split and sampling of the task set."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field, field_validator

from schemas.values import WhichRevision
from webgym.config.base import EmbeddingPrecision, ProjectPath, Section

class IngestConfig(Section):
    """How much of a task file `webgym ingest` reads (stages/ingest/read.py): a file over a cap, an
    endless stream or binary data is refused with one line, never read into memory; and how many new
    seed tasks it holds before writing them (stages.ingest.seed_task_batches)."""

    max_file_bytes: int = Field(
        default=2 << 30, ge=1,
        description="Largest file read (bytes; default 2 GiB). JSON Lines are streamed a line at a time, so "
                    "memory stays small whatever this says.")
    max_whole_file_bytes: int = Field(
        default=256 << 20, ge=1,
        description="Largest file of a layout read whole (JSON arrays, concatenated JSON, CSV, other encodings "
                    "than UTF-8); bytes, default 256 MiB. Larger task lists should be JSON Lines.")
    max_record_bytes: int = Field(
        default=64 << 20, ge=1, description="Longest JSON Lines line (bytes); a longer one is a bad record.")
    batch_rows: int = Field(
        default=20_000, ge=1,
        description="New seed tasks written per seed_tasks part: an ingest holds one batch, so memory does not grow "
                    "with the file, and a killed ingest keeps the parts written (a rerun skips them).")
    batch_bytes: int = Field(
        default=64 << 20, ge=1,
        description="Bytes of records (their JSON) after which a batch is written even if short of batch_rows, so "
                    "batches of large records stay small too.")


class DedupConfig(Section):
    """Exact and near-duplicate task filtering (WebGym's seed merge, OpenWebRL's task filtering)."""

    threshold: float = Field(
        default=0.7, gt=0, le=1,
        description="Cosine similarity (MiniLM sentence embeddings) at or above which two task texts are "
                    "near-duplicates, when they also start in the same place and (same_constraints) ask for the same. "
                    "Lower finds more re-wordings (the constraint check keeps distinct tasks apart) and costs search "
                    "time. At 0.7, precision 0.99 and recall 0.83 on benchmarks/data/dedup_pairs.jsonl (tuned on), "
                    "0.98 and 0.71 on dedup_pairs_heldout.jsonl; see benchmarks/dedup.py.")
    same_constraints: bool = Field(
        default=True,
        description="Near-duplicates must ask for the same (stages/constraints.py): the same numbers (dates, prices, "
                    "counts, 'five' or 'fifth'), the same kinds of constraint words (cheapest / most expensive, over / "
                    "under, with / without / other than) and the same content words (entities, months, statuses: "
                    "'pending' vs 'completed' orders, 'Wendy's' vs 'McDonald's'), typos, acronyms and the site's own "
                    "name aside. Embeddings barely see these differences; the task does. Tasks must also start in "
                    "the same place (start URL, else website) whatever this says.")
    eval_sources: list[str] = Field(
        default_factory=list,
        description="Evaluation benchmarks (source names, e.g. [webvoyager, online-mind2web]): every other task "
                    "within the threshold of one of their tasks is dropped as eval_overlap.")
    source_priority: list[str] = Field(
        default=["synthetic", "webgym", "online-mind2web", "mind2web-live", "mind2web2", "webvoyager", "webarena-lite",
                 "webarena", "gaia", "browsecomp", "deepshop", "travelplanner", "agentsynth", "insta", "pae", "generic"],
        description="Which copy of a duplicate survives: sources earlier in the list first (human-verified "
                    "benchmarks before synthetic proposals; WebArena-Lite, whose eval blocks correct WebArena's, "
                    "before WebArena); evaluation sources always come first.")
    cache_dir: ProjectPath = Field(
        default=".cache/embeddings",
        description="Embedding cache keyed by text hash (relative to the project); reruns embed only new texts.")
    batch_size: int = Field(default=64, ge=1, description="Texts per embedding batch.")
    precision: EmbeddingPrecision = Field(
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
    purpose: str = Field(
        default="decompose",
        description="LLM purpose that writes each decomposed task's text (WebGym appendix E.6): "
                    "llm.endpoints.<purpose>, else llm.default; with neither, the template text is used.")
    max_tokens: int = Field(
        default=512, ge=64,
        description="Completion limit per decomposed task's text; an answer cut off at it is invalid and asked again.")


class StaleConfig(Section):
    """Tasks whose text plans something on a date that has passed (stages/stale.py): Online-Mind2Web and
    WebVoyager book hotels and flights on dates now past."""

    as_of: dt.date | None = Field(
        default=None, description="The date staleness is judged on (YYYY-MM-DD); null: the day of the run (UTC).")
    handle: Literal["keep", "drop", "rewrite"] = Field(
        default="keep",
        description="What `taskset build` does with stale tasks: keep them (flagged in stale_phrase), drop them "
                    "(they stay in seed_tasks and never become tasks), or rewrite them (the LLM moves their dates to "
                    "the future; original_text keeps the source's words).")
    purpose: str = Field(
        default="refresh",
        description="LLM purpose of the rewrites: llm.endpoints.<purpose>, else llm.default (handle: rewrite).")
    max_tokens: int = Field(
        default=512, ge=64, description="Completion limit per rewrite; an answer cut off at it is asked again.")

    def day(self) -> dt.date:
        """The 'as of' date: as_of, or today (UTC)."""
        return self.as_of or dt.datetime.now(dt.UTC).date()


class SplitConfig(Section):
    """WebGym's out-of-distribution test split by website, and for the synthetic sites by site family:
    families held out whole (unseen structure) and held-out sites of training families (unseen data)."""

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
    held_out_families: list[str] = Field(
        default_factory=list,
        description="Site families (webgym/sites/families, or a hand-written site's graph) held out whole: every "
                    "site of theirs is a test site, so the test split holds structures no training site has.")
    held_out_instances: int = Field(
        default=1, ge=0,
        description="Generated sites of every other family held out: the last this many seeds of each (new data "
                    "on a structure training knows), besides the hand-written held_out_websites.")
    validation_instances: int = Field(
        default=0, ge=0,
        description="Generated sites of every training family set apart as the validation split: the last this many "
                    "seeds before the held-out ones, so a checkpoint is checked on data it never saw on a structure "
                    "it knows, as the held-out sites test it; 0: none (validation_fraction alone).")
    validation_fraction: float = Field(
        default=0.0, ge=0, lt=1,
        description="Share of the training task lineages (an original task with its decompositions) set apart as the "
                    "validation split: tasks of training families never trained on, on which the nightly loop "
                    "checks a new checkpoint before serving it (nightly.validation_tasks), besides the "
                    "validation_instances sites. 0: no lineages drawn.")
    seed: int = Field(default=0, description="Seed of the draw of test websites and tasks (and of validation tasks).")


class SampleConfig(Section):
    """How training batches are drawn from the task set."""

    ratio: dict[str, float] | None = Field(
        default={"easy": 2, "medium": 5, "hard": 3},
        description="Relative weight of the difficulty bands easy (1-3 facts), medium (4-6), hard (7+) in a batch; "
                    "null draws uniformly over tasks.")
    seed: int = Field(default=0, description="Seed of the draw; the same seed gives the same batch.")
    source_shares: dict[str, float] = Field(
        default_factory=dict,
        description="The expected share of a training batch drawn from a source's train tasks (e.g. {miniwob: 0.25}); "
                    "the sources not named share the rest in proportion to their tasks. Empty: every train task "
                    "is as likely, whatever its source.")
    curriculum: Literal["uniform", "frontier"] = Field(
        default="uniform",
        description="uniform: every qualifying task of a band is as likely. frontier (stages/sample.py): part of "
                    "each batch re-draws training tasks the policy failed or half-solved in earlier iterations "
                    "(retry_share), the rest is drawn in proportion to p(1 - p), p the estimated success rate of "
                    "the task's goal on its site family, so goals the policy always or never solves come up less "
                    "often than those it half-solves (WebRL's curriculum from failures, DAPO's dynamic sampling).")
    retry_share: float = Field(
        default=0.25, ge=0, le=1,
        description="frontier: at most this share of a batch re-draws tried, not always solved tasks (half-solved "
                    "first).")

    @field_validator("source_shares")
    @classmethod
    def _shares_of_one_batch(cls, shares: dict[str, float]) -> dict[str, float]:
        if any(not 0 <= share <= 1 for share in shares.values()) or sum(shares.values()) > 1:
            raise ValueError(f"each share must lie in [0, 1] and together at most 1, got {shares}")
        return shares


class MiniwobConfig(Section):
    """MiniWoB++ as an external world (webgym/sites/miniwob.py): the build adds one test task per listed task and
    seed, held out as `external`, which every evaluation then measures and no rollout trains on; and, optionally,
    train tasks of other families, which the nights roll out and learn from by the pages' own reward."""

    tasks: list[str] = Field(
        default_factory=list,
        description="MiniWoB++ task names (e.g. click-button, login-user; the pages of the `miniwob` package minus "
                    "webgym.sites.miniwob.EXCLUDED); empty adds none.")
    seeds: int = Field(default=1, ge=1, description="Seeded episodes per task (as BrowserGym seeds them): each is a "
                                                    "task of its own, with its own utterance.")
    first_seed: int = Field(default=0, ge=0, description="The first seed: seeds first_seed to first_seed + seeds - 1.")
    train_tasks: list[str] = Field(
        default_factory=list,
        description="MiniWoB++ tasks to train on (train split): none may share a family (webgym.sites.miniwob."
                    "family_of) with a task of `tasks`, so the held-out kind stays pages of families never trained "
                    "on. The oracle has no plan for them: the warm start skips them and the nights learn them from "
                    "their own rollouts. Empty adds none.")
    train_seeds: int = Field(default=10, ge=1, description="Seeded episodes per train task, each a task of its own.")
    train_first_seed: int = Field(default=1000, ge=0,
                                  description="The first seed of the train tasks, apart from the held-out seeds.")


class TasksetConfig(Section):
    """Task-set construction: dedup, annotation, decomposition, stale dates, split, sampling."""

    revisions: WhichRevision = Field(
        default="newest",
        description="Which revision of a source's task the task set uses when a source was ingested again with "
                    "re-worded or revised records (seed_tasks.revision): newest, first (the benchmark as first "
                    "published, to compare with published results) or all. Dedup, annotation and the split "
                    "follow it; tasks of other revisions stay in the tasks table with no split.")
    ingest: IngestConfig = Field(default_factory=IngestConfig)
    dedup: DedupConfig = Field(default_factory=DedupConfig)
    annotate: AnnotateConfig = Field(default_factory=AnnotateConfig)
    decompose: DecomposeConfig = Field(default_factory=DecomposeConfig)
    stale: StaleConfig = Field(default_factory=StaleConfig)
    split: SplitConfig = Field(default_factory=SplitConfig)
    sample: SampleConfig = Field(default_factory=SampleConfig)
    miniwob: MiniwobConfig = Field(default_factory=MiniwobConfig)
