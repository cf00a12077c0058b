"""The harness's side of the site server: session snapshots read over the harness's own HTTP
connection, with the server's secret.

The browser holds the session cookie; the client looks it up in the browser context and asks the
server for that session's snapshot directly, never through the page: observing changes nothing the
agent sees, works whatever page the agent is on, and the secret never enters the browser, so a page
or an agent asking for /__webgym/state gets a 404.
"""

from __future__ import annotations

from typing import Any

import httpx
from playwright.async_api import BrowserContext

from webgym.sites.server import COOKIE, HARNESS_HEADER, STATE_PATH, SiteServer


def session_of(cookies: list[dict[str, Any]]) -> str | None:
    """The site session id among a browser context's cookies for one site; None before it has one."""
    return next((c["value"] for c in cookies if c["name"] == COOKIE), None)


def state_headers(server: SiteServer, host: str, session: str) -> dict[str, str]:
    """What a state request for `session` on site `host` carries: the site, the session and the secret."""
    return {"Host": host, "Cookie": f"{COOKIE}={session}", HARNESS_HEADER: server.secret}


def read_snapshot(server: SiteServer, cookies: list[dict[str, Any]], host: str,
                  timeout_s: float = 10.0) -> dict[str, Any] | None:
    """The snapshot of the session these cookies (a sync Playwright context's) hold on site `host`; None before it
    has one. For callers in Playwright's sync API (the BrowserGym tasks, webgym/interop/browsergym.py)."""
    session = session_of(cookies)
    if session is None:
        return None
    response = httpx.get(f"http://{server.host}:{server.port}{STATE_PATH}", headers=state_headers(server, host, session),
                         timeout=timeout_s)
    response.raise_for_status()
    return response.json()


class StateClient:
    """`await client.snapshot(context, host)` -> the session's state snapshot; `aclose()` when done."""

    def __init__(self, server: SiteServer, timeout_s: float = 10.0) -> None:
        self.base_url, self.timeout_s = f"http://{server.host}:{server.port}", timeout_s
        self._server = server
        self._client: httpx.AsyncClient | None = None

    async def snapshot(self, context: BrowserContext, host: str) -> dict[str, Any] | None:
        """The state of the session `context` holds on site `host`; None before it has one."""
        session = session_of(await context.cookies(f"http://{host}/"))
        if session is None:
            return None
        if self._client is None:  # created on first use, inside the event loop that uses it
            self._client = httpx.AsyncClient(base_url=self.base_url, timeout=self.timeout_s)
        response = await self._client.get(STATE_PATH, headers=state_headers(self._server, host, session))
        response.raise_for_status()
        return response.json()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
