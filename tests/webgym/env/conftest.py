"""Fixtures of the sandbox tests: a synthetic site whose answer is a code, loopback canaries that hold
the code as a leaky internal service would, and a redirector on an allowed host."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
import yaml

from tests.fixture_site import secret, site  # noqa: F401 (fixtures)
from webgym.sites.site import Site
from webgym.sites.specfiles import parse_site

CODE = "K7-2291"
VAULT = yaml.safe_load(f"""
name: vault
hostname: vault.test
title: Vault
domain: shopping
graph: vault
start_page: lobby
state:
  code: {{type: text, default: {CODE}, description: the vault code}}
pages:
  lobby:
    title: Lobby
    path: /
    main: [{{type: text, text: Welcome to the vault.}}, {{type: controls, actions: [enter]}}]
  vault:
    title: Vault
    path: /vault
    main: [{{type: notice, text: "The code is {{code}}."}}]
actions:
  enter:
    pages: [lobby]
    element: {{kind: link, label: Enter the vault}}
    to: vault
goals:
  - id: code
    text: What is the vault code on {{title}}?
    groups:
      - description: answer
        facts:
          - {{answer: true, op: contains, value: {CODE}, evidence: [{{page: true, op: eq, value: vault}}]}}
""")


@pytest.fixture(scope="module")
def vault() -> Site:
    """A site whose goal is to read a code: its state holds the code, so a leaked state pays."""
    return Site(parse_site(VAULT, "vault.yaml"))


class Canary:
    """A service an agent must never reach: TCP and UDP on one port of 127.0.0.1 and ::1. It records
    every connection and datagram, and answers HTTP requests with the vault code."""

    def __init__(self) -> None:
        self.hits: list[bytes] = []
        self.port, self._sockets = _bind_everywhere()
        for sock in self._sockets:
            target = self._accept if sock.type == socket.SOCK_STREAM else self._receive
            threading.Thread(target=target, args=(sock,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            connection.settimeout(2)
            try:
                data = connection.recv(4096)
            except OSError:
                data = b""
            self.hits.append(data[:80] or b"(connection)")
            if data[:4] in (b"GET ", b"POST", b"HEAD"):
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n"
                                   b"Content-Length: %d\r\n\r\n%s" % (len(CODE), CODE.encode()))

    def _receive(self, sock: socket.socket) -> None:
        while True:
            try:
                self.hits.append(sock.recv(4096)[:80])
            except OSError:
                return

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()


def _bind_everywhere() -> tuple[int, list[socket.socket]]:
    """One free port number bound for TCP and UDP on both loopback addresses."""
    for _ in range(20):
        first = socket.create_server(("127.0.0.1", 0))
        port = first.getsockname()[1]
        sockets = [first]
        try:
            for family, kind, host in [(socket.AF_INET6, socket.SOCK_STREAM, "::1"),
                                       (socket.AF_INET, socket.SOCK_DGRAM, "127.0.0.1"),
                                       (socket.AF_INET6, socket.SOCK_DGRAM, "::1")]:
                sock = socket.socket(family, kind)
                sockets.append(sock)
                sock.bind((host, port))
                if kind == socket.SOCK_STREAM:
                    sock.listen()
            return port, sockets
        except OSError:
            for sock in sockets:
                sock.close()
    raise RuntimeError("no port free on both loopback addresses")


class _Redirect(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(302)
        self.send_header("Location", urlsplit(self.path).query)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture(scope="module")
def redirector() -> Iterator[str]:
    """'127.0.0.1:PORT' of a server that answers /to?URL with a redirect to URL (allow it as a self-hosted site)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
