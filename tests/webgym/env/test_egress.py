"""The egress proxy: a connection goes out only to an address that was checked, the name resolved
once, by the proxy; refusals are recorded. Spoken to as Chromium does (SOCKS5, names unresolved),
and in Chromium itself for what no route handler sees (WebRTC with its page-level refusal gone)."""

from __future__ import annotations

import asyncio

import pytest
from playwright.async_api import async_playwright

from tests.webgym.env.conftest import CODE, Canary
from webgym.browser import launch_browser
from webgym.env import egress
from webgym.env.egress import EgressProxy
from webgym.env.safety import UrlPolicy, Violations


async def socks_connect(proxy: EgressProxy, host: str,
                        port: int) -> tuple[int, asyncio.StreamReader, asyncio.StreamWriter]:
    """Ask the proxy for host:port with the name unresolved, as Chromium does; (reply code, streams)."""
    address, proxy_port = proxy.browser_proxy()["server"].removeprefix("socks5://").split(":")
    reader, writer = await asyncio.open_connection(address, int(proxy_port))
    writer.write(b"\x05\x01\x00")
    assert await reader.readexactly(2) == b"\x05\x00"
    writer.write(b"\x05\x01\x00\x03" + bytes([len(host)]) + host.encode() + port.to_bytes(2, "big"))
    reply = await reader.readexactly(10)
    return reply[1], reader, writer


def through_proxy(policy: UrlPolicy, host: str, port: int, names: dict[str, list[str]],
                  monkeypatch: pytest.MonkeyPatch) -> tuple[int, bytes, Violations, list[str]]:
    """Connect through a fresh proxy (the resolver answering from `names`), send an HTTP request if
    connected; (reply code, what came back, the violations, the names resolved)."""
    violations, resolved = Violations(), []

    async def resolve(name: str, _: int) -> list[str]:
        resolved.append(name)
        return names.get(name, [name])
    monkeypatch.setattr(egress, "resolve", resolve)

    async def main() -> tuple[int, bytes]:
        proxy = await EgressProxy(policy, violations).start()
        try:
            code, reader, writer = await socks_connect(proxy, host, port)
            body = b""
            if code == 0:
                writer.write(f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
                body = await asyncio.wait_for(reader.read(4096), 5)
            writer.close()
            return code, body
        finally:
            await proxy.aclose()

    code, body = asyncio.run(main())
    return code, body, violations, resolved


@pytest.fixture
def canary():
    service = Canary()
    yield service
    service.close()


@pytest.mark.parametrize(("host", "names", "reason"), [
    ("127.0.0.1", {}, "127.0.0.1 is a loopback address"),
    ("0x7f000001", {}, "127.0.0.1 is a loopback address"),
    ("::1", {}, "[::1] is a loopback address"),
    ("localhost", {}, "local host name"),
    ("rebind.example", {"rebind.example": ["127.0.0.1"]}, "rebind.example resolves to 127.0.0.1"),
    ("mixed.example", {"mixed.example": ["93.184.216.34", "127.0.0.1"]}, "mixed.example resolves to 127.0.0.1"),
    ("v6.example", {"v6.example": ["::ffff:127.0.0.1"]}, "resolves to ::ffff:127.0.0.1, which is a loopback"),
])
def test_forbidden_targets_are_refused_and_recorded(canary, monkeypatch, host, names, reason):
    code, body, violations, _ = through_proxy(UrlPolicy(), host, canary.port, names, monkeypatch)
    assert code == egress.NOT_ALLOWED and body == b"" and canary.hits == []
    assert len(violations.refused) == 1 and reason in violations.refused[0]


def test_an_offline_policy_refuses_public_names_without_resolving_them(canary, monkeypatch):
    code, _, violations, resolved = through_proxy(UrlPolicy(allow_public=False), "example.com", 80, {}, monkeypatch)
    assert code == egress.NOT_ALLOWED and resolved == [] and "not one of the configured sites" in violations.refused[0]


def test_the_browsers_own_service_is_refused_without_counting_against_the_episode(canary, monkeypatch):
    """Chromium asks content-autofill.googleapis.com about every page with a form: refused, but the
    episode did nothing wrong, so its record stays clean (806 of the 1,294 trajectories of one
    learning-curve lake carried it)."""
    offline = UrlPolicy(allow_public=False)
    code, _, violations, resolved = through_proxy(offline, "content-autofill.googleapis.com", 443, {}, monkeypatch)
    assert code == egress.NOT_ALLOWED and resolved == [] and violations.refused == []
    code, _, violations, _ = through_proxy(offline, "autofill.example", 443, {}, monkeypatch)
    assert code == egress.NOT_ALLOWED and len(violations.refused) == 1


def test_an_allowed_host_is_reached_at_the_address_resolved_once_with_its_own_name(canary, monkeypatch):
    policy = UrlPolicy(allowed_hosts=frozenset({"intranet.example"}), allow_public=False)
    code, body, violations, resolved = through_proxy(policy, "intranet.example", canary.port,
                                                     {"intranet.example": ["127.0.0.1"]}, monkeypatch)
    assert code == 0 and body.endswith(CODE.encode()) and violations.refused == []
    assert resolved == ["intranet.example"]  # once, by the proxy; the connection went to that address
    assert canary.hits == [f"GET / HTTP/1.1\r\nHost: intranet.example:{canary.port}\r\n\r\n".encode()]


def test_webrtc_cannot_reach_loopback_even_without_the_page_level_refusal(canary):
    """The network layer alone: a context behind its egress proxy but without guard_context's init
    script. UDP (STUN) is off by the launch flags, TCP (TURN) goes to the proxy, which refuses it."""
    violations = Violations()
    script = """async (port) => {
      const pc = new RTCPeerConnection({iceServers: [
        {urls: `turn:127.0.0.1:${port}?transport=tcp`, username: 'u', credential: 'c'},
        {urls: `stun:127.0.0.1:${port}`}]});
      pc.createDataChannel('x');
      await pc.setLocalDescription(await pc.createOffer());
      await new Promise((done) => setTimeout(done, 3000));
      return pc.iceGatheringState;
    }"""

    async def main() -> None:
        proxy = await EgressProxy(UrlPolicy(), violations).start()
        async with async_playwright() as playwright:
            browser = await launch_browser(playwright)
            try:
                context = await browser.new_context(proxy=proxy.browser_proxy())
                page = await context.new_page()
                await page.evaluate(script, canary.port)
            finally:
                await browser.close()
                await proxy.aclose()

    asyncio.run(main())
    assert canary.hits == []
    assert any(f"127.0.0.1:{canary.port}: 127.0.0.1 is a loopback address" in v for v in violations.refused)
