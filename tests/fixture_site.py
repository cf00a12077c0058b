"""Fixture pages served on 127.0.0.1 (imported as fixtures by the env and rollout tests), a second
loopback server that agents must never reach, and a helper that runs a scenario in a fresh Chromium."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.async_api import Browser, async_playwright

PAGES = {
    "/": """<html><head><title>Fixture shop</title></head><body style="margin:0">
      <a id="next" href="/next" style="position:absolute;left:20px;top:20px;width:120px;height:30px">Next page</a>
      <input id="q" aria-label="Search" style="position:absolute;left:20px;top:80px;width:200px;height:30px"
             oninput="this.value = this.value.toUpperCase()">
      <input id="plain" placeholder="Name" style="position:absolute;left:20px;top:130px;width:200px;height:30px">
      <button id="buy" style="position:absolute;left:20px;top:180px;width:120px;height:30px"
              onclick="document.title='bought'">Buy</button>
      <a href="/next" target="_blank" style="position:absolute;left:20px;top:230px;width:120px;height:30px">New tab</a>
      <div style="position:absolute;top:2000px">bottom</div></body></html>""",
    "/next": "<html><head><title>Next</title></head><body><p>second page</p></body></html>",
    "/slow": "<html><head><title>Slow</title></head><body><p>a slow page</p></body></html>",
    "/guarded": """<html><head><title>Just a moment...</title></head><body>
      <a href="/next" style="position:absolute;left:20px;top:20px;width:120px;height:30px">Next page</a>
      <p>Please complete the CAPTCHA to prove you are human.</p></body></html>""",
}


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.server.requests.append(self.path)
        redirect = self.server.redirects.get(self.path)
        if redirect:
            self.send_response(302)
            self.send_header("Location", redirect)
            self.end_headers()
            return
        if self.path.startswith("/slow"):
            time.sleep(1.0)  # a navigation that takes a while to commit
        if self.path.startswith("/down"):
            self.send_response(503)
            self.end_headers()
            return
        body = self.server.pages.get(self.path)
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write((body or "not found").encode())


def _serve(pages: dict[str, str]) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.pages, server.redirects, server.requests = dict(pages), {}, []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def site():
    server = _serve(PAGES)
    yield server
    server.shutdown()


@pytest.fixture
def secret():
    """A loopback service that is not a site: it must never see a request from an agent."""
    server = _serve({"/secret": "top secret"})
    yield server
    server.shutdown()


def url_of(server: ThreadingHTTPServer, path: str = "/") -> str:
    return f"http://127.0.0.1:{server.server_address[1]}{path}"


def run_in_browser(scenario: Callable[[Browser], Awaitable[None]]) -> None:
    async def main() -> None:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path="/usr/bin/chromium",
                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                      "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"])
            try:
                await scenario(browser)
            finally:
                await browser.close()

    asyncio.run(main())
