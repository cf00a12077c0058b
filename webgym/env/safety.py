"""Where an agent's browser may go.

`UrlPolicy.refusal` judges a URL as Chromium reads it (webgym/env/urls.py): only http(s) (and
about:blank), never file:, chrome:, data:, javascript:, view-source: in any letter case; never a
private, loopback, link-local, reserved, multicast or unspecified address however it is written,
except the configured synthetic-site hosts and allowed hosts. `address_refusal` judges the address a
name resolved to. They are enforced at four points, because each alone has a gap:
- tools check URLs before they navigate (the agent reads why);
- `guard_context`'s route handler vets every request a page makes and records probes of the site
  server's harness endpoints in any spelling (`//__webgym/...`, percent-encoded), and of redirect
  hops to them (the server itself answers them with a plain 404). Where only the
  synthetic sites may be reached (`UrlPolicy.sites_only`, the offline default) nothing is left for
  it to stop: the resolver rules send the site hosts to the site server and everything else to the
  egress proxy, which refuses it. There a request listener only records, so no request waits on a
  round trip to Python;
- the episode's egress proxy (webgym/env/egress.py) carries every connection that is not to the
  site server (page requests, redirect hops, which routes never see, workers, WebSockets, WebRTC
  over TCP) and connects only to vetted addresses; refused redirect hops are also named, with the
  URL they came from, by a request listener;
- a navigation monitor catches schemes that never reach the network (data:, file:), and an init
  script refuses WebRTC, whose UDP the browser flags switch off (webgym/browser.py).
Every refusal is recorded in the episode's `Violations`, which the trajectory keeps.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from playwright.async_api import BrowserContext, Frame, Request, Route

from webgym.env.urls import Address, BadUrl, BrowserUrl, read_url
from webgym.sites.server import is_harness_path

log = logging.getLogger(__name__)

BROWSER_PAGES = ("about:", "chrome-error://")
"""Pages the browser itself shows (blank, failed-navigation errors): not agent navigations."""
LOCAL_NAMES = ("localhost", ".localhost", ".local", ".internal")
ADDRESS_KINDS = ("unspecified", "loopback", "link_local", "multicast", "private", "site_local", "reserved")
"""Address properties (ipaddress's is_...) that put an address off limits, in the order they are named."""
OFF_LIMITS = "private, loopback, link-local, reserved and multicast"
PRIVATE_KINDS = ("private", "loopback")
"""What an allowed host's address may be (self-hosted sites); never link-local (cloud metadata)."""
MAX_VIOLATIONS = 100
WEBRTC_BINDING = "__webgymWebRtc"
WEBRTC_SCRIPT = """(() => {
  const report = window.%s;
  for (const name of ["RTCPeerConnection", "webkitRTCPeerConnection"]) {
    if (!(name in window)) continue;
    Object.defineProperty(window, name, {configurable: false, writable: false, value: function (config) {
      let servers = "";
      try { servers = (config.iceServers || []).flatMap((s) => [].concat(s.urls || [])).join(" "); } catch (e) {}
      report(servers || "peer-to-peer");
      throw new DOMException("WebRTC is disabled in this browser", "NotSupportedError");
    }});
  }
})();""" % WEBRTC_BINDING
"""Replaces the RTCPeerConnection constructors in every frame: WebRTC is refused and reported."""


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
    """Host names (or host:port) of our synthetic sites: allowed although they map to 127.0.0.1; Chromium
    reaches them directly (its host resolver rules map them), never through the egress proxy."""
    allowed_hosts: frozenset[str] = frozenset()
    """Hosts (or host:port) allowed even on private or loopback addresses, e.g. self-hosted WebArena
    sites; their connections and every redirect hop are still vetted."""
    allow_public: bool = True
    """Whether public hosts outside site_hosts may be reached (False for the offline profile)."""

    @property
    def sites_only(self) -> bool:
        """Whether nothing but the synthetic sites may be reached (no allowed host, no public web)."""
        return not self.allowed_hosts and not self.allow_public

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

    def address_refusal(self, url: str, address: str) -> str | None:
        """Why connecting to `address`, which the host of `url` (already allowed) resolved to, is refused."""
        target = read_url(url)
        return self._address_reason(target, ipaddress.ip_address(address.partition("%")[0]),
                                    f"{target.host} resolves to {address}, which")

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
    """Refused requests of one episode, for the trajectory record: each distinct refusal once (the
    browser retries a refused connection), the first MAX_VIOLATIONS of them (page scripts can make
    refusals in a loop)."""

    refused: list[str] = field(default_factory=list)

    def add(self, url: str, reason: str) -> None:
        message = f"refused {url[:200]}: {reason}"
        if message not in self.refused and len(self.refused) < MAX_VIOLATIONS:
            log.info(message)
            self.refused.append(message)


async def guard_context(context: BrowserContext, policy: UrlPolicy, violations: Violations) -> None:
    """Install the request guard, the WebRTC refusal and the navigation monitor on a context."""

    def probe(url: str, hop: Request | None = None) -> None:
        """Record a request for the site server's harness endpoints (any spelling), naming the URL a
        redirect `hop` came from."""
        if policy.is_site(url) and is_harness_path(urlsplit(url).path):
            reason = "the site server's harness endpoints are not for agents"
            violations.add(url, f"redirect from {hop.url}: {reason}" if hop else reason)

    async def handle(route: Route) -> None:
        url = route.request.url
        reason = policy.refusal(url)
        if reason:
            violations.add(url, reason)
            await route.abort("blockedbyclient")
            return
        probe(url)
        await route.continue_()

    def refused(request: Request, reason: str) -> None:
        hop = request.redirected_from
        violations.add(request.url, f"redirect from {hop.url}: {reason}" if hop else reason)

    def redirected(request: Request) -> None:  # redirect hops never reach the route: name them here
        if request.redirected_from is None:
            return
        reason = policy.refusal(request.url)
        if reason:
            refused(request, reason)
        else:
            probe(request.url, request.redirected_from)

    def recorded(request: Request) -> None:  # sites only: the egress proxy refuses, this names the URL
        reason = policy.refusal(request.url)
        if reason:
            refused(request, reason)
        else:
            probe(request.url, request.redirected_from)

    async def watch(frame: Frame) -> None:
        if frame.url.startswith(BROWSER_PAGES):
            return
        reason = policy.refusal(frame.url)
        if reason and not frame.url.startswith(("http://", "https://")):
            violations.add(frame.url, reason)
            if frame.parent_frame is None:
                await frame.goto("about:blank")

    await context.expose_binding(
        WEBRTC_BINDING, lambda source, servers: violations.add(f"webrtc:{servers}", "WebRTC is disabled for agents"))
    await context.add_init_script(WEBRTC_SCRIPT)
    if policy.sites_only:
        context.on("request", recorded)
    else:
        await context.route("**/*", handle)
        context.on("request", redirected)
    context.on("page", lambda page: page.on("framenavigated", watch))
    for page in context.pages:
        page.on("framenavigated", watch)
