"""The state an episode is judged on: a synthetic site's session state, read straight from the site server
(the harness's client, webgym/sites/harness.py: its own connection, the server's secret, never the page),
or a MiniWoB++ task's own reward, read from its page; and the seeded start of a MiniWoB++ episode."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from webgym.env.episode import Episode
from webgym.policies.base import TaskSpec
from webgym.sites import miniwob
from webgym.sites.harness import StateClient
from webgym.sites.server import SiteServer


def _host(task: TaskSpec) -> str | None:
    return task.website or urlsplit(task.start_url).hostname


class SiteStateReader:
    """`await reader(episode, task)` -> the session snapshot, or None for tasks not on the server's sites."""

    def __init__(self, server: SiteServer, timeout_s: float = 10.0) -> None:
        self.hosts = set(server.sites)
        self._client = StateClient(server, timeout_s)

    async def __call__(self, episode: Episode, task: TaskSpec) -> dict[str, Any] | None:
        host = _host(task)
        if host not in self.hosts:
            return None
        return await self._client.snapshot(episode.browsing.context, host)

    async def aclose(self) -> None:
        await self._client.aclose()


async def start_miniwob_episode(episode: Episode, task: TaskSpec) -> None:
    """Seed and start a MiniWoB++ episode on its freshly opened page, as BrowserGym does, so the page shows the
    utterance the task's text recorded (its seed is in source_id `<task>/<seed>`); other tasks are left alone."""
    if _host(task) == miniwob.HOST and task.source_id:
        _, seed = miniwob.seed_of(task.source_id)
        await episode.browsing.page.evaluate(miniwob.START_JS, seed)


class MiniwobStateReader:
    """`await reader(episode, task)` -> the MiniWoB++ task's own reward as the episode's state
    ({"raw_reward", "reward", "done"}, judged by webgym.sites.miniwob.judge), or None for tasks
    not on MiniWoB++'s host. Read from the page: the reward is the page's own script's, there is no
    server state to read."""

    async def __call__(self, episode: Episode, task: TaskSpec) -> dict[str, Any] | None:
        if _host(task) != miniwob.HOST:
            return None
        return await episode.browsing.page.evaluate(miniwob.REWARD_JS)


class StateReaders:
    """The readers of every world a rollout's tasks are on, asked in turn: the first state found is the episode's."""

    def __init__(self, *readers: SiteStateReader | MiniwobStateReader) -> None:
        self.readers = readers

    async def __call__(self, episode: Episode, task: TaskSpec) -> dict[str, Any] | None:
        for reader in self.readers:
            state = await reader(episode, task)
            if state is not None:
                return state
        return None
