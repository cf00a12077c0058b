"""Where an agent's browser may go.

Every request the page makes passes `UrlPolicy.refusal`, which judges a URL as Chromium reads it
(webgym/env/urls.py): only http(s) (and about:blank), never file:, chrome:, data:, javascript:,
view-source: in any letter case; never a private, loopback, link-local, reserved, multicast or
unspecified address however it is written, except the configured synthetic-site hosts and allowed
hosts. `guard_context` enforces it on a browser context in three places, because each alone has a
gap: tools check URLs before they navigate, a route handler vets every request and every redirect
hop (Playwright routes see only the first hop of a chain, so redirects are followed here, one hop
at a time; the trusted site server's own requests pass straight to Chromium), and a navigation
monitor catches schemes that never reach the network (data:, file:).
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from playwright.async_api import BrowserContext, Frame, Route

from webgym.env.urls import Address, BadUrl, BrowserUrl, read_url
from webgym.sites.server import HARNESS_PATH

log = logging.getLogger(__name__)

BROWSER_PAGES = ("about:", "chrome-error://")
"""Pages the browser itself shows (blank, failed-navigation errors): not agent navigations."""
LOCAL_NAMES = ("localhost", ".localhost", ".local", ".internal")
ADDRESS_KINDS = ("unspecified", "loopback", "link_local", "multicast", "private", "site_local", "reserved")
"""Address properties (ipaddress's is_...) that put an address off limits, in the order they are named."""
OFF_LIMITS = "private, loopback, link-local, reserved and multicast"
PRIVATE_KINDS = ("private", "loopback")
"""What an allowed host's address may be (self-hosted sites); never link-local (cloud metadata)."""


def non_public(address: Address) -> str | None:
    """What makes an address off limits ('loopback', 'private', ...), or None for a public unicast
    address; the IPv4 address inside an IPv4-mapped, 6to4 or Teredo address is judged first."""
    inner = []
    if isinstance(address, ipaddress.IPv6Address):
        inner = [a for a in (address.ipv4_mapped, address.sixtofour, (address.teredo or (None, None))[1]) if a]
    for candidate in (*inner, address):
        kind = next((k for k in ADDRESS_KINDS if getattr(candidate, f"is_{k}", False)), None)
        if kind or not candidate.is_global:
            return (kind or "non-global").replace("_", "-")
    return None


@dataclass(frozen=True)
class UrlPolicy:
    """Allow/deny rules for agent traffic."""

    site_hosts: frozenset[str] = frozenset()
    """Host names (or host:port) of our synthetic sites: allowed although they map to 127.0.0.1, and
    passed straight to Chromium, which alone resolves their names (our server's redirects are trusted)."""
    allowed_hosts: frozenset[str] = frozenset()
    """Hosts (or host:port) allowed even on private or loopback addresses, e.g. self-hosted WebArena
    sites; their connections and every redirect hop are still vetted."""
    allow_public: bool = True
    """Whether public hosts outside site_hosts may be reached (False for the offline profile)."""

    def is_site(self, url: str) -> bool:
        """Whether `url` is on one of the configured synthetic-site hosts."""
        try:
            return _listed(self.site_hosts, read_url(url))
        except BadUrl:
            return False

    def refusal(self, url: str) -> str | None:
        """Why `url` is refused, or None when it is allowed."""
        try:
            target = read_url(url)
        except BadUrl as error:
            return f"a browser would not read it as a URL: {error}"
        if target.scheme == "about" and target.rest == "blank":
            return None
        if target.scheme not in ("http", "https"):
            return f"the {target.scheme}: scheme is not allowed"
        if _listed(self.site_hosts, target):
            return None
        if target.address is not None:
            return self._address_reason(target, target.address, target.host)
        if _listed(self.allowed_hosts, target):
            return None
        if target.host == "localhost" or target.host.endswith(LOCAL_NAMES):
            return f"{target.host} is a local host name"
        if not self.allow_public:
            return f"{target.host} is not one of the configured sites"
        return None

    def _address_reason(self, target: BrowserUrl, address: Address, subject: str) -> str | None:
        kind = non_public(address)
        if kind is None or (kind in PRIVATE_KINDS and _listed(self.allowed_hosts, target)):
            return None
        article = "an" if kind[0] in "aeiou" else "a"
        return f"{subject} is {article} {kind} address ({OFF_LIMITS} addresses are off limits)"


def _listed(hosts: frozenset[str], target: BrowserUrl) -> bool:
    return target.host in hosts or f"{target.host}:{target.port}" in hosts


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
