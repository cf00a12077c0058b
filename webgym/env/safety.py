"""Where an agent's browser may go.

Every request the page makes passes `UrlPolicy.refusal`: only http(s) (and about:blank), never
file:, chrome:, data:, javascript: navigations; never private, loopback, link-local or reserved
addresses, except the configured synthetic-site hosts. `guard_context` enforces it on a browser
context in three places, because each alone has a gap: tools check URLs before they navigate,
a route handler vets every request and every redirect hop (Playwright routes see only the first
hop of a chain, so redirects are followed here, one hop at a time; the trusted site server's own
requests pass straight to Chromium), and a navigation monitor
catches schemes that never reach the network (data:, file:).
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from playwright.async_api import BrowserContext, Frame, Route

from webgym.sites.server import HARNESS_PATH

log = logging.getLogger(__name__)

BROWSER_PAGES = ("about:", "chrome-error://")
"""Pages the browser itself shows (blank, failed-navigation errors): not agent navigations."""
BLOCKED_NAMES = ("localhost", ".localhost", ".local", ".internal", "metadata.google.internal")


@dataclass(frozen=True)
class UrlPolicy:
    """Allow/deny rules for agent traffic."""

    site_hosts: frozenset[str] = frozenset()
    """Host names (or host:port) of our synthetic sites: allowed although they map to 127.0.0.1, and
    passed straight to Chromium, which alone resolves their names (our server's redirects are trusted)."""
    allowed_hosts: frozenset[str] = frozenset()
    """Hosts (or host:port) allowed even on private addresses, e.g. self-hosted WebArena sites;
    their requests and every redirect hop are still vetted."""
    allow_public: bool = True
    """Whether public hosts outside site_hosts may be reached (False for the offline profile)."""

    def is_site(self, url: str) -> bool:
        """Whether `url` is on one of the configured synthetic-site hosts."""
        parts = urlsplit(url)
        return (parts.hostname or "").lower() in self.site_hosts or parts.netloc.lower() in self.site_hosts

    def refusal(self, url: str) -> str | None:
        """Why `url` is refused, or None when it is allowed."""
        if url == "about:blank":
            return None
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            return f"the {scheme or 'empty'}: scheme is not allowed"
        host = (parts.hostname or "").lower().rstrip(".")
        if not host:
            return "the URL has no host"
        if self.is_site(url) or host in self.allowed_hosts or parts.netloc.lower() in self.allowed_hosts:
            return None
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            address = None
        if address is not None and (address.is_private or address.is_loopback or address.is_link_local
                                    or address.is_reserved or address.is_multicast or address.is_unspecified):
            return f"{host} is a private, loopback or link-local address"
        if host == "localhost" or any(host.endswith(name) for name in BLOCKED_NAMES if name.startswith(".")):
            return f"{host} is a local host name"
        if not self.allow_public:
            return f"{host} is not one of the configured sites"
        return None


@dataclass
class Violations:
    """Refused requests of one episode, for the trajectory record."""

    refused: list[str] = field(default_factory=list)

    def add(self, url: str, reason: str) -> None:
        message = f"refused {url[:200]}: {reason}"
        log.info(message)
        self.refused.append(message)


async def guard_context(context: BrowserContext, policy: UrlPolicy, violations: Violations) -> None:
    """Install the route handler and the navigation monitor on a context."""

    async def handle(route: Route) -> None:
        request = route.request
        url = request.url
        reason = policy.refusal(url)
        if reason:
            violations.add(url, reason)
            await route.abort("blockedbyclient")
            return
        if policy.is_site(url):
            # Our own site server: Chromium resolves its host names (route.fetch would resolve
            # them in Playwright's driver, where the --host-resolver-rules mapping does not apply).
            # Its harness endpoints answer the agent with a plain 404; the attempt is recorded.
            if urlsplit(url).path.startswith(HARNESS_PATH):
                violations.add(url, "the site server's harness endpoints are not for agents")
            await route.continue_()
            return
        try:
            response = await route.fetch(max_redirects=0)
        except Exception as error:  # connection refused, timeouts: let the page see a failed request
            log.debug("fetch of %s failed: %s", url, error)
            await route.abort("failed")
            return
        location = response.headers.get("location")
        if 300 <= response.status < 400 and location:
            target = urljoin(url, location)
            reason = policy.refusal(target)
            if reason:
                violations.add(target, f"redirect from {url}: {reason}")
                await route.abort("blockedbyclient")
                return
        await route.fulfill(response=response)

    async def watch(frame: Frame) -> None:
        if frame.url.startswith(BROWSER_PAGES):
            return
        reason = policy.refusal(frame.url)
        if reason and not frame.url.startswith(("http://", "https://")):
            violations.add(frame.url, reason)
            if frame.parent_frame is None:
                await frame.goto("about:blank")

    await context.route("**/*", handle)
    context.on("page", lambda page: page.on("framenavigated", watch))
    for page in context.pages:
        page.on("framenavigated", watch)
