"""Reading a synthetic site's session state for an episode, straight from the site server (the
harness's client, webgym/sites/harness.py: its own connection, the server's secret, never the page)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from webgym.env.episode import Episode
from webgym.policies.base import TaskSpec
from webgym.sites import miniwob
from webgym.sites.harness import StateClient
from webgym.sites.server import SiteServer


class SiteStateReader:
    """`await reader(episode, task)` -> the session snapshot, or None for tasks not on the server's sites."""

    def __init__(self, server: SiteServer, timeout_s: float = 10.0) -> None:
        self.hosts = set(server.sites)
        self._client = StateClient(server, timeout_s)

    async def __call__(self, episode: Episode, task: TaskSpec) -> dict[str, Any] | None:
        host = task.website or urlsplit(task.start_url).hostname
        if host not in self.hosts:
            return None
        return await self._client.snapshot(episode.browsing.context, host)

    async def aclose(self) -> None:
        await self._client.aclose()


class MiniwobStateReader:
    """`await reader(episode, task)` -> the MiniWoB++ task's own reward as the episode's state
    ({"raw_reward", "reward", "done"}, judged by webgym.sites.miniwob.judge), or None for tasks
    not on MiniWoB++'s host. Read from the page: the reward is the page's own script's, there is no
    server state to read."""

    async def __call__(self, episode: Episode, task: TaskSpec) -> dict[str, Any] | None:
        host = task.website or urlsplit(task.start_url).hostname
        if host != miniwob.HOST:
            return None
        return await episode.browsing.page.evaluate(miniwob.REWARD_JS)
