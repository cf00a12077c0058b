"""One episode's browser: an isolated context behind its own egress proxy, observation, tool
execution and URL guard.

The rollout engine decides when an episode ends; this module only reports facts (answered,
navigation failed, refused URLs) and never raises for an agent's bad action.
"""

from __future__ import annotations

import asyncio
import logging

from playwright.async_api import Browser, BrowserContext, Page, Response

from schemas.steps import Action, Element
from webgym.config import EnvConfig
from webgym.env.actions import Browsing, execute
from webgym.env.blocking import BLOCKING_STATUS, blocking_evidence
from webgym.env.egress import EgressProxy
from webgym.env.observe import Observation, draw_marks, page_state, screenshot, watch_listeners
from webgym.env.safety import UrlPolicy, Violations, guard_context

log = logging.getLogger(__name__)


class NavigationFailed(Exception):
    """The start URL could not be opened after every retry."""


class Episode:
    """A fresh browser context for one episode; `async with Episode(...)` closes it."""

    def __init__(self, browser: Browser, config: EnvConfig, policy: UrlPolicy) -> None:
        self.browser, self.config, self.policy = browser, config, policy
        self.violations = Violations()
        self._context: BrowserContext | None = None
        self._egress: EgressProxy | None = None
        self.browsing: Browsing | None = None
        self.document_status: int | None = None
        """HTTP status of the latest main-document response in any tab."""

    async def __aenter__(self) -> Episode:
        try:
            page = await self._open_context()
        except BaseException:  # the proxy (and a half-made context) must not outlive a failed start
            await self.__aexit__()
            raise
        self.browsing = Browsing(self._context, page, (self.config.viewport_width, self.config.viewport_height),
                                 self.config.normalized_coordinates,
                                 navigation_timeout_s=self.config.navigation_timeout_s, guard=self._refusal)
        return self

    async def _open_context(self) -> Page:
        """The guarded context behind a fresh egress proxy, and its first page."""
        viewport = {"width": self.config.viewport_width, "height": self.config.viewport_height}
        self._egress = await EgressProxy(self.policy, self.violations, self.config.egress_host).start()
        self._context = await self.browser.new_context(
            viewport=viewport, device_scale_factor=self.config.device_scale_factor, proxy=self._egress.browser_proxy())
        self._context.set_default_navigation_timeout(self.config.navigation_timeout_s * 1000)
        self._context.set_default_timeout(self.config.action_timeout_s * 1000)
        await guard_context(self._context, self.policy, self.violations)
        await watch_listeners(self._context)
        self._context.on("response", self._on_response)
        return await self._context.new_page()

    def _on_response(self, response: Response) -> None:
        request = response.request
        if request.is_navigation_request() and request.frame.parent_frame is None:
            self.document_status = response.status

    async def blocked(self) -> str | None:
        """Evidence that the active page is a block page (status or CAPTCHA/access-denied text)."""
        return await blocking_evidence(self.browsing.page, self.document_status)

    def _refusal(self, url: str) -> str | None:
        reason = self.policy.refusal(url)
        if reason:
            self.violations.add(url, reason)
        return reason

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self._context is not None:
                await self._context.close()
        finally:
            if self._egress is not None:
                await self._egress.aclose()

    @property
    def answer(self) -> str | None:
        return self.browsing.answer if self.browsing else None

    async def open(self, url: str) -> None:
        """Navigate to the start URL, retrying transient failures; NavigationFailed when it never loads."""
        reason = self._refusal(url)
        if reason:
            raise NavigationFailed(f"start URL {url} refused: {reason}")
        last = ""
        for attempt in range(self.config.navigation_retries + 1):
            try:
                response = await self.browsing.page.goto(url)
                if response is None or response.status < 500 or response.status in BLOCKING_STATUS:
                    return
                last = f"HTTP {response.status}"
            except Exception as error:  # Playwright's navigation errors have several types
                last = str(error).splitlines()[0]
            log.debug("navigation to %s failed (try %d): %s", url, attempt + 1, last)
            await asyncio.sleep(0.2 * (attempt + 1))
        raise NavigationFailed(f"could not open {url}: {last}")

    async def observe(self) -> Observation:
        """Screenshot (with marks in set-of-marks mode), URL, title and tabs of the active page."""
        page = self.browsing.page
        png = await screenshot(page, self.config.screenshot_timeout_s)
        elements: list[Element] | None = None
        text: str | None = None
        if self.config.observation == "set_of_marks":
            elements, text, title = await page_state(page)
            png = await asyncio.to_thread(draw_marks, png, elements)
            self.browsing.marks = {e.mark: (e.x + e.width / 2, e.y + e.height / 2) for e in elements}
        else:
            title = await page.title()
        pages = self._context.pages
        return Observation(url=page.url, title=title, tabs=[p.url for p in pages],
                           active_tab=pages.index(page), screenshot=png, elements=elements, page_text=text)

    async def act(self, actions: list[Action]) -> list[Action]:
        """Execute calls in order, each with its feedback; stop after an answer."""
        done = []
        for action in actions:
            done.append(await execute(self.browsing, action, self.config.action_timeout_s))
            if action.name == "answer":
                break
        return done
