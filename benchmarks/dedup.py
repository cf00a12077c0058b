"""Dedup at WebGym scale: N synthetic task texts with planted near-duplicates and near-misses, and
precision and recall on a labelled set of pairs taken from real benchmark files.

    .venv/bin/python benchmarks/dedup.py [--tasks 300000] [--threshold 0.95]
    .venv/bin/python benchmarks/dedup.py --pairs-only      # only the labelled pairs (a minute)

Base tasks come from templates over shopping, travel, food, jobs, news, research and culture sites.
A share of them get a planted duplicate (same task reworded: politeness, synonyms, clause order,
case and punctuation) and another share a planted near-miss (a different task worded almost the
same: another product or city, another number, the opposite superlative). The run is done twice in
fresh processes, with a cold and then a warm embedding cache, and reports wall time (embedding,
search + filtering, end to end), peak memory, recall of planted duplicates and the rate of
near-misses wrongly dropped. Targets (issue #4): recall >= 0.95, wrong drops <= 2%, search +
filtering < 5 min, end to end cold < 15 min on the 2-core machine.

The labelled pairs (benchmarks/data/, see its README) are true duplicates and hard near-misses from
the real task files, in three sets: `dedup_pairs.jsonl`, the one dedup was tuned on (target: precision
>= 0.97 at recall >= 0.90), and two kept apart from tuning (issue 47: precision >= 0.97 at recall
>= 0.85), `dedup_pairs_heldout.jsonl` and `dedup_pairs_fresh.jsonl`. Each pair is deduplicated on its
own; precision and recall say how many pairs dedup merges that are true duplicates, and how many true
duplicates it merges. The tuning pairs it gets wrong are printed with their kind; of the held-out sets
only the counts by kind are shown (`--show-held-out` prints their wrong pairs too), so that tuning on
what a held-out set reveals does not happen by reading the output: once its pairs are read, the set is
no longer held out.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from stages.dedup import duplicate_tasks  # noqa: E402
from webgym.config import DedupConfig  # noqa: E402
from webgym.embeddings import Embedder  # noqa: E402

PRODUCTS = ["wireless earbuds", "running shoes", "coffee grinder", "standing desk", "hiking backpack", "air fryer",
            "mechanical keyboard", "yoga mat", "electric kettle", "gaming monitor", "winter jacket", "baby stroller",
            "robot vacuum", "office chair", "camping tent", "blender", "smartwatch", "portable charger", "desk lamp",
            "water bottle", "bluetooth speaker", "rice cooker", "trail bike", "dog bed", "sunglasses", "tablet case",
            "hair dryer", "wool socks", "board game", "espresso machine", "ski goggles", "phone tripod"]
CITIES = ["Boston", "Denver", "Lisbon", "Osaka", "Nairobi", "Toronto", "Seville", "Krakow", "Melbourne", "Austin",
          "Reykjavik", "Hanoi", "Chicago", "Prague", "Lima", "Cape Town", "Vancouver", "Munich", "Dubai", "Seattle",
          "Marrakesh", "Dublin", "Bogota", "Helsinki", "Phoenix", "Porto", "Kyoto", "Oslo", "Santiago", "Atlanta"]
DISHES = ["lasagna", "pad thai", "banana bread", "ramen", "paella", "chili", "pancakes", "falafel", "risotto",
          "brownies", "tacos", "curry", "gnocchi", "cheesecake", "dumplings", "quiche", "granola", "meatballs"]
DIETS = ["vegan", "gluten-free", "low-carb", "dairy-free", "keto", "high-protein"]
ROLES = ["data analyst", "nurse", "electrician", "product designer", "teacher", "accountant", "chef",
         "software engineer", "paralegal", "pharmacist", "welder", "marketing manager", "lab technician"]
TOPICS = ["climate policy", "electric cars", "the housing market", "vaccine research", "space launches",
          "football transfers", "inflation", "wildfires", "AI regulation", "the olympics", "crypto markets"]
FIELDS = ["graph neural networks", "protein folding", "quantum error correction", "dark matter", "soil microbes",
          "speech recognition", "coral reefs", "battery chemistry", "sleep research", "exoplanets"]
ARTISTS = ["a jazz pianist", "an indie band", "a string quartet", "a stand-up comedian", "a ballet company",
           "a hip-hop artist", "an opera singer", "a folk duo"]
SUPERLATIVES = [("cheapest", "most expensive"), ("highest rated", "lowest rated"), ("newest", "oldest"),
                ("shortest", "longest"), ("earliest", "latest")]

TEMPLATES = {  # category: (websites, templates); {sup} is a superlative, {n} a number
    "shop": (["amazon.com", "ebay.com", "walmart.com", "target.com", "bestbuy.com", "etsy.com", "ikea.com"], [
        "Find the {sup} {product} with at least {n} reviews",
        "Add the {sup} {product} rated 4 stars or more to the cart",
        "Compare the three {sup} {product} listings under ${n}",
        "Show {product} deals that ship to {city} within {n} days",
        "Find a {product} in stock at the store nearest to {city} priced under ${n}"]),
    "travel": (["booking.com", "expedia.com", "kayak.com", "google.com", "skyscanner.net", "airbnb.com"], [
        "Find the {sup} flight from {city} to {city2} on March {n}",
        "Book the {sup} hotel in {city} for {n} nights",
        "List train connections from {city} to {city2} leaving after {n} pm",
        "Find the {sup} rental car in {city} for a {n}-day trip",
        "Show guided tours in {city} that last under {n} hours"]),
    "food": (["allrecipes.com", "foodnetwork.com", "bbcgoodfood.com", "epicurious.com"], [
        "Find a {diet} {dish} recipe with more than {n} reviews",
        "Find the {sup} {diet} {dish} recipe that takes under {n} minutes",
        "Save a {dish} recipe that serves {n} people and is {diet}",
        "Find the {sup} restaurant serving {dish} in {city}"]),
    "jobs": (["indeed.com", "linkedin.com", "glassdoor.com", "monster.com"], [
        "Find {role} jobs in {city} paying over ${n}k a year",
        "List the {sup} {role} openings in {city}",
        "Find remote {role} positions posted in the last {n} days",
        "Show the average {role} salary in {city}"]),
    "news": (["bbc.com", "reuters.com", "nytimes.com", "theguardian.com", "apnews.com"], [
        "Find the {sup} article about {topic} and summarize it in {n} sentences",
        "List {n} headlines about {topic} from this week",
        "Find the {sup} report on {topic} in {city}"]),
    "research": (["arxiv.org", "scholar.google.com", "pubmed.ncbi.nlm.nih.gov", "semanticscholar.org"], [
        "Find the {sup} paper on {field} with over {n} citations",
        "List {n} recent preprints about {field}",
        "Find the {sup} survey of {field} and report its authors"]),
    "culture": (["ticketmaster.com", "eventbrite.com", "songkick.com", "imdb.com"], [
        "Find the {sup} concert by {artist} in {city}",
        "Buy {n} tickets for {artist} in {city}",
        "List shows by {artist} in {city} under ${n}"]),
}
POLITE = ["Please {t}.", "Could you {lt}?", "I need you to {lt}.", "{t}, please.", "Can you {lt} for me?",
          "Help me {lt}.", "{t} for me."]
SYNONYMS = [("Find ", "Look up "), ("Find ", "Search for "), ("List ", "Show me "), ("Show ", "Display "),
            ("Book ", "Reserve "), ("Buy ", "Purchase "), ("Save ", "Bookmark "), ("Compare ", "Contrast ")]


def _fill(rng: random.Random, template: str, slots: dict | None = None) -> tuple[str, dict]:
    slots = dict(slots or {})
    sup = rng.choice(SUPERLATIVES)[0]
    defaults = {"product": rng.choice(PRODUCTS), "city": rng.choice(CITIES), "city2": rng.choice(CITIES),
                "dish": rng.choice(DISHES), "diet": rng.choice(DIETS), "role": rng.choice(ROLES),
                "topic": rng.choice(TOPICS), "field": rng.choice(FIELDS), "artist": rng.choice(ARTISTS),
                "sup": sup, "n": str(rng.randint(2, 999))}
    for key, value in defaults.items():
        slots.setdefault(key, value)
    return template.format(**slots), slots


def _site_phrase(rng: random.Random, site: str) -> str:
    return rng.choice([f" on {site}", f" using {site}", f" at {site}", ""])


def paraphrase(rng: random.Random, text: str) -> str:
    """The same task reworded: synonyms, politeness, clause order, case and punctuation."""
    out = text
    for _ in range(2):
        kind = rng.choice(["polite", "synonym", "case", "reorder"])
        if kind == "polite":
            out = rng.choice(POLITE).format(t=out.rstrip("."), lt=out[0].lower() + out[1:].rstrip("."))
        elif kind == "synonym":
            old, new = rng.choice([s for s in SYNONYMS if s[0] in out] or [("the ", "the ")])
            out = out.replace(old, new, 1)
        elif kind == "case":
            out = rng.choice([out.lower(), out.upper(), out.rstrip(".") + "!", "  " + out.replace(" ", "  ")])
        elif " on " in out:
            head, _, site = out.rstrip(".").rpartition(" on ")
            out = f"On {site}, {head[0].lower()}{head[1:]}."
    return out


def near_miss(rng: random.Random, template: str, slots: dict) -> tuple[str, str]:
    """A different task worded almost the same: (text, kind)."""
    options = [k for k in ("product", "city", "dish", "role", "topic", "field", "artist") if "{" + k + "}" in template]
    kinds = (["entity"] if options else []) + (["number"] if "{n}" in template else []) + \
        (["superlative"] if "{sup}" in template else [])
    kind = rng.choice(kinds)
    changed = dict(slots)
    if kind == "entity":
        key = rng.choice(options)
        pool = {"product": PRODUCTS, "city": CITIES, "dish": DISHES, "role": ROLES, "topic": TOPICS,
                "field": FIELDS, "artist": ARTISTS}[key]
        changed[key] = rng.choice([v for v in pool if v != slots[key]])
    elif kind == "number":
        changed["n"] = str(int(slots["n"]) + rng.choice([1, 2, 5, 10, 50, 100]))
    else:
        changed["sup"] = next(b for a, b in SUPERLATIVES if a == slots["sup"])
    return template.format(**changed), kind


def build(n_tasks: int, seed: int = 0, dup_share: float = 0.1, miss_share: float = 0.1) -> pd.DataFrame:
    """n_tasks rows: role base | duplicate | near_miss, with the base row each planted one derives from."""
    rng = random.Random(seed)
    n_dup, n_miss = int(n_tasks * dup_share), int(n_tasks * miss_share)
    n_base = n_tasks - n_dup - n_miss
    categories = list(TEMPLATES)
    bases, seen = [], set()
    while len(bases) < n_base:
        category = rng.choice(categories)
        sites, templates = TEMPLATES[category]
        template, site = rng.choice(templates), rng.choice(sites)
        text, slots = _fill(rng, template)
        if (text, site) not in seen:  # one base per task and website, however the site is named
            seen.add((text, site))
            bases.append({"text": text + _site_phrase(rng, site) + ".", "website": site, "template": template,
                          "slots": slots})
    rows = [{"source": "bench", "source_id": f"b{i}", "text": b["text"], "website": b["website"],
             "role": "base", "base": f"b{i}", "kind": None} for i, b in enumerate(bases)]
    for j in range(n_dup):
        i = rng.randrange(n_base)
        rows.append({"source": "bench", "source_id": f"d{j}", "text": paraphrase(rng, bases[i]["text"]),
                     "website": bases[i]["website"], "role": "duplicate", "base": f"b{i}", "kind": None})
    for j in range(n_miss):
        i = rng.randrange(n_base)
        b = bases[i]
        text, kind = near_miss(rng, b["template"], b["slots"])
        tail = b["text"][len(b["template"].format(**b["slots"])):]
        rows.append({"source": "bench", "source_id": f"m{j}", "text": text + tail, "website": b["website"],
                     "role": "near_miss", "base": f"b{i}", "kind": kind})
    order = list(range(len(rows)))
    rng.shuffle(order)
    return pd.DataFrame([rows[k] for k in order])


PAIRS = ROOT / "benchmarks" / "data" / "dedup_pairs.jsonl"
HELD_OUT = ROOT / "benchmarks" / "data" / "dedup_pairs_heldout.jsonl"
FRESH = ROOT / "benchmarks" / "data" / "dedup_pairs_fresh.jsonl"
HELD_OUT_SETS = {"held_out_pairs": ("held-out pairs", HELD_OUT), "fresh_pairs": ("fresh held-out pairs", FRESH)}
"""The sets kept apart from tuning: the first was read while the constraint check was worked on; the fresh one was
labelled by someone who had not seen the check, and measured once on frozen code (benchmarks/data/README.md)."""


def load_pairs(path: Path = PAIRS) -> list[dict]:
    """The labelled pairs: {id, duplicate, kind, a, b, note}, a and b with source, text, website, start_url."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def merged_pairs(pairs: list[dict], embed, config: DedupConfig) -> list[bool]:
    """Whether dedup, run on each pair alone, drops one task of it as a duplicate of the other."""
    merged = []
    for pair in pairs:
        frame = pd.DataFrame([{**{k: pair[side].get(k) for k in ("source", "text", "website", "start_url")},
                               "source_id": f"{pair['id']}/{side}"} for side in ("a", "b")])
        merged.append(len(duplicate_tasks(frame, embed, config)) == 1)
    return merged


def pair_figures(pairs: list[dict], merged: list[bool]) -> dict:
    """Precision and recall of merging true duplicates, per-kind results and the pairs judged wrongly."""
    true_positive = sum(m and p["duplicate"] for p, m in zip(pairs, merged, strict=True))
    predicted, actual = sum(merged), sum(p["duplicate"] for p in pairs)
    by_kind: dict[str, list[int]] = {}
    for pair, was_merged in zip(pairs, merged, strict=True):
        right = by_kind.setdefault(f"{'duplicate' if pair['duplicate'] else 'near-miss'}:{pair['kind']}", [0, 0])
        right[0] += was_merged == pair["duplicate"]
        right[1] += 1
    return {"pairs": len(pairs), "true_duplicates": actual, "near_misses": len(pairs) - actual, "merged": predicted,
            "precision": round(true_positive / predicted, 4) if predicted else None,
            "recall": round(true_positive / actual, 4) if actual else None,
            "right_by_kind": {k: f"{v[0]}/{v[1]}" for k, v in sorted(by_kind.items())},
            "wrong": [{"id": p["id"], "duplicate": p["duplicate"], "kind": p["kind"], "a": p["a"]["text"],
                       "b": p["b"]["text"]} for p, m in zip(pairs, merged, strict=True) if m != p["duplicate"]]}


def run_pairs(threshold: float, cache_dir: str, path: Path = PAIRS) -> dict:
    """The labelled real pairs of `path`: precision, recall, and what went wrong."""
    config = DedupConfig(threshold=threshold, cache_dir=cache_dir, source_priority=[])
    pairs = load_pairs(path)
    return pair_figures(pairs, merged_pairs(pairs, Embedder(cache_dir, config.batch_size, precision=config.precision),
                                            config))


def run_phase(n_tasks: int, threshold: float, cache_dir: str) -> dict:
    """One dedup run in this process: timings, memory and quality figures as a dict."""
    frame = build(n_tasks)
    config = DedupConfig(threshold=threshold, cache_dir=cache_dir, source_priority=[])
    embedder = Embedder(cache_dir, config.batch_size, precision=config.precision)
    embed_seconds = 0.0

    def embed(texts: list[str]):
        nonlocal embed_seconds
        started = time.perf_counter()
        vectors = embedder(texts)
        embed_seconds = time.perf_counter() - started
        return vectors

    started = time.perf_counter()
    duplicates = duplicate_tasks(frame[["source", "source_id", "text", "website"]], embed, config)
    total = time.perf_counter() - started
    parent = dict(zip(duplicates["source_id"], duplicates["duplicate_of_source_id"], strict=True))

    def root(task: str) -> str:  # the kept task a dropped one ends up merged into
        while task in parent:
            task = parent[task]
        return task

    # A planted pair is merged when both end up represented by the same kept task, whichever survived.
    frame["merged"] = [row.role != "base" and root(row.source_id) == root(row.base) for row in frame.itertuples()]
    planted = frame[frame["role"] == "duplicate"]
    misses = frame[frame["role"] == "near_miss"]
    bases = frame[frame["role"] == "base"]
    kinds = {k: float(misses.loc[misses["kind"] == k, "merged"].mean()) for k in sorted(misses["kind"].unique())}
    return {
        "tasks": len(frame), "planted_duplicates": len(planted), "planted_near_misses": len(misses),
        "threshold": threshold, "precision": embedder.precision, "cpu_count": os.cpu_count(), "load_average_1min": os.getloadavg()[0],
        "embedded_texts": embedder.stats.embedded, "cached_texts": embedder.stats.cached,
        "embed_seconds": round(embed_seconds, 1), "search_and_filter_seconds": round(total - embed_seconds, 1),
        "dedup_seconds": round(total, 1),
        "peak_memory_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        "recall_planted_duplicates": round(float(planted["merged"].mean()), 4),
        "wrongly_dropped_near_misses": round(float(misses["merged"].mean()), 4),
        "wrongly_dropped_near_misses_by_kind": {k: round(v, 4) for k, v in kinds.items()},
        "dropped_base_tasks": round(float(bases["source_id"].isin(parent).mean()), 4),
        "dropped_by_kind": duplicates["kind"].value_counts().to_dict(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=300_000)
    parser.add_argument("--threshold", type=float, default=DedupConfig().threshold)
    parser.add_argument("--phase", choices=["cold", "warm"], help=argparse.SUPPRESS)
    parser.add_argument("--cache-dir", help=argparse.SUPPRESS)
    parser.add_argument("--pairs-only", action="store_true", help="Only the labelled real pairs.")
    parser.add_argument("--show-held-out", action="store_true",
                        help="Also print and write the held-out pairs judged wrongly (spends the held-out set).")
    parser.add_argument("--out", default=str(ROOT / "reports" / "dedup-benchmark.json"))
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(run_phase(args.tasks, args.threshold, args.cache_dir)))
        return
    results = {}
    with tempfile.TemporaryDirectory() as cache_dir:
        results["pairs"] = run_pairs(args.threshold, cache_dir)
        print_pairs(results["pairs"], "tuning pairs")
        for key, (name, path) in HELD_OUT_SETS.items():
            results[key] = run_pairs(args.threshold, cache_dir, path)
            if not args.show_held_out:
                del results[key]["wrong"]
            print_pairs(results[key], name)
        if args.pairs_only:
            return
        for phase in ("cold", "warm"):
            started = time.perf_counter()
            done = subprocess.run([sys.executable, __file__, "--phase", phase, "--cache-dir", cache_dir,
                                   "--tasks", str(args.tasks), "--threshold", str(args.threshold)],
                                  check=True, capture_output=True, text=True)
            results[phase] = json.loads(done.stdout.strip().splitlines()[-1])
            results[phase]["end_to_end_seconds"] = round(time.perf_counter() - started, 1)
            print(f"{phase}: " + json.dumps(results[phase]), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2))
    cold = results["cold"]
    pairs = results["pairs"]
    held_out, fresh = results["held_out_pairs"], results["fresh_pairs"]
    print(f"\nreal pairs: precision {pairs['precision']} (target >= 0.97), recall {pairs['recall']} (target >= 0.90); "
          f"held out: precision {held_out['precision']} (target >= 0.97), recall {held_out['recall']} (target >= 0.85); "
          f"fresh: precision {fresh['precision']}, recall {fresh['recall']} (same targets)")
    print(f"recall {cold['recall_planted_duplicates']:.3f} (target >= 0.95), wrong drops "
          f"{cold['wrongly_dropped_near_misses']:.2%} (target <= 2%), search + filtering "
          f"{cold['search_and_filter_seconds']:.0f} s (target < 300 s), end to end cold "
          f"{cold['end_to_end_seconds']:.0f} s (target < 900 s); written to {args.out}")


def print_pairs(figures: dict, name: str) -> None:
    summary = {k: v for k, v in figures.items() if k != "wrong"}
    print(f"{name}: " + json.dumps(summary), flush=True)
    for wrong in figures.get("wrong", []):
        verdict = "missed duplicate" if wrong["duplicate"] else "merged near-miss"
        print(f"  {wrong['id']} {verdict} ({wrong['kind']}): {wrong['a']!r} | {wrong['b']!r}")


if __name__ == "__main__":
    main()
