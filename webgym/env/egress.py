"""The egress proxy of one episode: every connection its browser context opens outside the site
server goes out only to an address that was checked.

Chromium sends each episode context's traffic, except the synthetic sites' host names, to this
SOCKS5 proxy (Playwright's per-context `proxy` option), with host names unresolved. So the proxy
sees every TCP connection the context makes: page requests, redirect hops (which Playwright's
routes never see), workers, WebSockets and WebRTC over TCP (WebRTC's UDP is switched off,
webgym/browser.py). For each it judges the host with the URL policy, resolves the name once, here,
judges every address the name resolved to, and connects to a vetted one. Nothing resolves the name a
second time, so a public name that answers 127.0.0.1 or 169.254.169.254 (wildcard DNS, rebinding)
cannot reach the machine or the cloud metadata service. TLS stays end to end (the browser speaks it
through the tunnel), so Host and SNI are the name's and certificates are checked as usual.
Refusals are recorded in the episode's violations. The proxy applies the agent's own policy, so
reaching it from elsewhere grants nothing the agent does not already have.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket

from webgym.env.safety import UrlPolicy, Violations

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10.0
HANDSHAKE_TIMEOUT_S = 10.0
CHUNK = 64 * 1024
# SOCKS5 (RFC 1928) bytes
VERSION, NO_AUTH, NO_METHOD, CONNECT = 5, 0, 0xFF, 1
SUCCEEDED, NOT_ALLOWED, UNREACHABLE, UNSUPPORTED, BAD_ADDRESS_TYPE = 0, 2, 4, 7, 8
ADDRESS_TYPES = {1: 4, 4: 16}
"""IPv4 and IPv6 address types and their lengths; type 3 is a host name."""


BROWSER_SERVICES = frozenset({"content-autofill.googleapis.com"})
"""Hosts Chromium itself calls in the background, whatever the page does (autofill field predictions
on every page with a form; Playwright's flags switch off its other services): refused like any
host that is not allowed, but not recorded on the episode, which did not ask for them. A page's own
request to one is still recorded by the request guard (webgym/env/safety.py)."""


class Refused(Exception):
    """A SOCKS request the proxy answers with an error reply instead of a connection."""

    def __init__(self, reply: bytes, message: str) -> None:
        super().__init__(message)
        self.reply = reply


async def resolve(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to, in the resolver's order (tests replace this function)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


class EgressProxy:
    """A SOCKS5 proxy for one browser context; `await EgressProxy(...).start()`, then `aclose()`."""

    def __init__(self, policy: UrlPolicy, violations: Violations, host: str = "127.0.0.1") -> None:
        self.policy, self.violations, self.host = policy, violations, host
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()

    async def start(self) -> EgressProxy:
        self._server = await asyncio.start_server(self._serve, self.host, 0)
        return self

    def browser_proxy(self) -> dict[str, str]:
        """Playwright's `proxy` option for the context: every host but the site hosts goes through here."""
        port = self._server.sockets[0].getsockname()[1]
        settings = {"server": f"socks5://{self.host}:{port}"}
        if self.policy.site_hosts:
            settings["bypass"] = ",".join(sorted(self.policy.site_hosts))
        return settings

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._open):
                writer.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open.add(writer)
        upstream: asyncio.StreamWriter | None = None
        try:
            try:
                host, port = await asyncio.wait_for(_request(reader, writer), HANDSHAKE_TIMEOUT_S)
                upstream_reader, upstream = await self._connect(host, port)
            except Refused as refused:
                log.debug("egress refused: %s", refused)
                writer.write(refused.reply)
                return
            self._open.add(upstream)
            writer.write(_reply(SUCCEEDED))
            await asyncio.gather(_pipe(reader, upstream), _pipe(upstream_reader, writer))
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError) as error:
            log.debug("egress connection ended: %r", error)
        finally:
            for stream in (writer, upstream):
                if stream is not None:
                    stream.close()
                    self._open.discard(stream)

    async def _connect(self, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to a vetted address of host:port; Refused (and recorded, unless the browser's own
        service asked for it) when the policy forbids it."""
        target = f"{f'[{host}]' if ':' in host else host}:{port}"
        url = f"http://{target}/"
        reason = self.policy.refusal(url)
        try:
            addresses = [] if reason else await resolve(host, port)
        except OSError as error:
            raise Refused(_reply(UNREACHABLE), f"{host} does not resolve: {error}") from None
        reason = reason or next(filter(None, (self.policy.address_refusal(url, a) for a in addresses)), None)
        if reason:
            if host not in BROWSER_SERVICES:
                self.violations.add(target, reason)
            raise Refused(_reply(NOT_ALLOWED), reason)
        for address in addresses:
            with contextlib.suppress(OSError, TimeoutError):
                return await asyncio.wait_for(asyncio.open_connection(address, port), CONNECT_TIMEOUT_S)
        raise Refused(_reply(UNREACHABLE), f"no address of {host} accepted a connection")


async def _request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> tuple[str, int]:
    """Read the SOCKS5 greeting and CONNECT request: the target host (name or address) and port."""
    version, count = await reader.readexactly(2)
    if version != VERSION or NO_AUTH not in await reader.readexactly(count):
        raise Refused(bytes([VERSION, NO_METHOD]), "not a SOCKS5 client without authentication")
    writer.write(bytes([VERSION, NO_AUTH]))
    _, command, _, kind = await reader.readexactly(4)
    if kind == 3:
        host = (await reader.readexactly((await reader.readexactly(1))[0])).decode("ascii", "replace")
    elif kind in ADDRESS_TYPES:
        host = str(ipaddress.ip_address(await reader.readexactly(ADDRESS_TYPES[kind])))
    else:
        raise Refused(_reply(BAD_ADDRESS_TYPE), f"address type {kind}")
    port = int.from_bytes(await reader.readexactly(2), "big")
    if command != CONNECT:
        raise Refused(_reply(UNSUPPORTED), f"command {command}")
    return host, port


def _reply(code: int) -> bytes:
    return bytes([VERSION, code, 0, 1, 0, 0, 0, 0, 0, 0])


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(CHUNK):
            sink.write(data)
            await sink.drain()
    except ConnectionError:
        pass
    finally:
        sink.close()
