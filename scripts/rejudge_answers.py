"""Re-judge a lake's answers with today's checkers and count the successes that flip.

    .venv/bin/python scripts/rejudge_answers.py DATA_DIR

When the answer matcher (webgym/answers.py) changes, the rewards it pays change: this reads the
lake's trajectories, tasks and latest `exact` and `reference` judgments, judges every trajectory
again with the code of this checkout (nothing is written), and prints how many stored successes
become failures and the reverse, each flipped answer with its new reason. It also checks that
every task's own reference answer (what the oracle answers) still passes its answer checks.
Only the files are read; run it on a copy or while no nightly writes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from schemas.rubric import FactGroup, Rubric  # noqa: E402
from stages.judge.episode import episodes  # noqa: E402
from stages.judge.exact import exact_judgment  # noqa: E402
from stages.judge.reference import reference_verdict  # noqa: E402
from webgym.lake import Lake  # noqa: E402
from webgym.sites.tasks import reference_answer  # noqa: E402
from webgym.sites.verify import verify  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir")
    lake = Lake(parser.parse_args().data_dir)
    judgments = lake.read_table("judgments").sort_values("judged_at")
    stored = judgments.drop_duplicates(["trajectory_id", "judge"], keep="last").set_index(["trajectory_id", "judge"])
    tasks = lake.read_table("tasks")
    found, _ = episodes(lake.read_table("trajectories"), tasks, lake.read_table("steps"))
    flips = {"success -> failure": [], "failure -> success": []}
    judged = {"exact": 0, "reference": 0}
    for episode in found:
        for judge in judged:
            if (episode.trajectory_id, judge) not in stored.index:
                continue
            before = bool(stored.loc[(episode.trajectory_id, judge), "success"])
            if judge == "exact":
                after_row = exact_judgment(episode)
                after, why = after_row.success, after_row.rationale
            else:
                verdict = reference_verdict(episode.task, episode.answer, episode.final_url,
                                            episode.reference_answer, episode.evaluation)
                after, why = (verdict.success, verdict.rationale) if verdict else (False, "no reference")
            judged[judge] += 1
            if before != after:
                key = "success -> failure" if before else "failure -> success"
                flips[key].append(f"{judge} {episode.task_id}: {episode.answer!r}: {why}")
    print(f"re-judged {judged['exact']} exact and {judged['reference']} reference judgments "
          f"({sum(stored['success'])} stored successes in all judges)")
    for key, lines in flips.items():
        print(f"{key}: {len(lines)}")
        for line in lines:
            print("  " + line)
    asked = failed = 0
    for task in tasks.to_dict("records"):
        if task.get("rubric") is None:
            continue
        rubric = Rubric.model_validate(task["rubric"])
        if (answer := reference_answer(rubric)) is None:
            continue
        asked += 1
        answer_only = Rubric(groups=[
            FactGroup(description=g.description, facts=[f for f, c in zip(g.facts, g.checks) if '"answer"' in c],
                      checks=[c for c in g.checks if '"answer"' in c])
            for g in rubric.groups if any('"answer"' in c for c in g.checks or [])])
        verdict = verify(answer_only, {"state": {}, "page": None}, answer)
        if not verdict.success:
            failed += 1
            print(f"  task {task['task_id']}: its own answer {answer!r} fails: {verdict.rationale}")
    print(f"tasks asking an answer: {asked}; their own reference answer fails the answer checks: {failed}")


if __name__ == "__main__":
    main()
