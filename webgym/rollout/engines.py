"""The two rollout engines over the same EpisodeRun phases.

`run_async`: a fixed number of episodes in flight, no barrier between episodes or steps; a new
episode starts the moment a slot frees; environment failures restart the episode in a fresh
context; a straggler cut-off ends the iteration once a fraction of episodes is done.
`run_sync`: the baseline of synchronous systems: a batch advances step by step, every phase
waits for the slowest episode, and the next batch starts when the whole batch has ended.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable

from playwright.async_api import Error as PlaywrightError

from webgym.rollout.episode_run import EpisodeResult, EpisodeRun, EpisodeSpec

log = logging.getLogger(__name__)

ENV_ERRORS = (PlaywrightError, ConnectionError, TimeoutError)
"""Failures of the browser or the site, as opposed to the agent's behaviour."""

NewRun = Callable[[EpisodeSpec], EpisodeRun]
OnResult = Callable[[EpisodeResult], Awaitable[None] | None]


async def _deliver(on_result: OnResult, result: EpisodeResult) -> None:
    outcome = on_result(result)
    if asyncio.iscoroutine(outcome):
        await outcome


def failure(error: BaseException) -> str:
    """An unexpected error as one line for the trajectory's `error`."""
    message = str(error).splitlines()[0][:300] if str(error) else ""
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


async def drive(run: EpisodeRun, stop: asyncio.Event) -> EpisodeResult:
    """One episode start to finish, restarting in a fresh context after an environment failure; an
    unexpected error ends it as `failed` with the error, so the other episodes go on."""
    try:
        await _steps(run, stop)
    except Exception as error:
        log.warning("episode %s failed: %s", run.spec.trajectory_id, failure(error))
        run.end("failed", failure(error))
    return await run.finish()


async def _steps(run: EpisodeRun, stop: asyncio.Event) -> None:
    await run.start()
    while True:
        if run.termination == "navigation_failed" and run.attempt <= run.limits.env_retries:
            await run.restart()
            continue
        if run.done:
            break
        if stop.is_set():
            run.end("cut", "straggler cut-off")
            break
        try:
            for phase in (run.observe, run.decide, run.execute):
                await phase()
                if run.done:
                    break
        except ENV_ERRORS as error:
            message = str(error).splitlines()[0] if str(error) else type(error).__name__
            if run.attempt > run.limits.env_retries:
                run.end("env_error", message)
            else:
                log.info("episode %s: environment failure (%s), retrying", run.spec.trajectory_id, message)
                await run.restart()


async def run_async(specs: list[EpisodeSpec], new_run: NewRun, concurrency: int, on_result: OnResult,
                    straggler_fraction: float = 1.0) -> None:
    """Run every spec with `concurrency` episodes in flight."""
    pending = list(reversed(specs))
    running: set[asyncio.Task] = set()
    stop = asyncio.Event()
    finished = 0
    enough = math.ceil(straggler_fraction * len(specs))
    while pending or running:
        while pending and len(running) < concurrency and not stop.is_set():
            running.add(asyncio.create_task(drive(new_run(pending.pop()), stop)))
        if stop.is_set() and pending:
            for spec in reversed(pending):
                run = new_run(spec)
                run.end("cut", "straggler cut-off before it started")
                await _deliver(on_result, await run.finish())
            pending = []
        if not running:
            break
        done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            await _deliver(on_result, task.result())
            finished += 1
        if finished >= enough and straggler_fraction < 1.0:
            stop.set()


async def _phase(run: EpisodeRun, phase: Callable[[], Awaitable[None]]) -> None:
    try:
        await phase()
    except ENV_ERRORS as error:
        run.end("env_error", str(error).splitlines()[0] if str(error) else type(error).__name__)
    except Exception as error:
        run.end("failed", failure(error))


async def run_sync(specs: list[EpisodeSpec], new_run: NewRun, concurrency: int, on_result: OnResult) -> None:
    """Run every spec in synchronous batches of `concurrency`."""
    for first in range(0, len(specs), concurrency):
        runs = [new_run(spec) for spec in specs[first:first + concurrency]]
        await asyncio.gather(*(_phase(r, r.start) for r in runs))
        while live := [r for r in runs if not r.done]:
            for phase in ("observe", "decide", "execute"):
                await asyncio.gather(*(_phase(r, getattr(r, phase)) for r in live if not r.done))
        for run in runs:
            await _deliver(on_result, await run.finish())
