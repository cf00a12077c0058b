"""Reading a synthetic site's session state for an episode, straight from the site server.

The browser holds the session cookie; the reader asks the server for that session's snapshot
over its own HTTP connection (not through the page), so observing never changes what the agent
sees and works whatever page the agent is on.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx

from webgym.env.episode import Episode
from webgym.policies.base import TaskSpec
from webgym.sites.server import COOKIE


class SiteStateReader:
    """`await reader(episode, task)` -> the session snapshot, or None for tasks not on these sites."""

    def __init__(self, address: str, hosts: set[str], timeout_s: float = 10.0) -> None:
        self.address, self.hosts, self.timeout_s = address, hosts, timeout_s
        self._client: httpx.AsyncClient | None = None

    async def __call__(self, episode: Episode, task: TaskSpec) -> dict[str, Any] | None:
        host = task.website or urlsplit(task.start_url).hostname
        if host not in self.hosts:
            return None
        cookies = await episode.browsing.context.cookies(f"http://{host}/")
        session = next((c["value"] for c in cookies if c["name"] == COOKIE), None)
        if session is None:
            return None
        if self._client is None:  # created on first use, inside the event loop that uses it
            self._client = httpx.AsyncClient(base_url=f"http://{self.address}", timeout=self.timeout_s)
        response = await self._client.get("/__webgym/state", headers={"Host": host, "Cookie": f"{COOKIE}={session}"})
        response.raise_for_status()
        return response.json()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
