"""Chromium launched for the pipeline: site host names go to the site server, nothing else is reached
(other names and loopback addresses go to a proxy that does not exist)."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import async_playwright

from webgym import browser as browser_module
from webgym.browser import chromium_executable, host_rules, launch_browser


def test_host_rules_map_sites_and_refuse_everything_else():
    rules = host_rules({"shop-a.test": "127.0.0.1:8123"}, allow=["example.org"])
    assert rules == ("MAP shop-a.test 127.0.0.1:8123, MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1, "
                     "EXCLUDE example.org")


def test_the_headless_shell_runs_headless_work_when_playwright_has_no_browser_of_its_own(tmp_path: Path, monkeypatch):
    shell, full = tmp_path / "chromium-headless-shell", tmp_path / "chromium"
    monkeypatch.setattr(browser_module, "SYSTEM_HEADLESS_SHELL", str(shell))
    monkeypatch.setattr(browser_module, "SYSTEM_CHROMIUM", str(full))
    without_own = SimpleNamespace(chromium=SimpleNamespace(executable_path=str(tmp_path / "ms-playwright" / "chrome")))
    assert chromium_executable(without_own) == str(full)  # no headless shell installed
    shell.touch()
    assert chromium_executable(without_own) == str(shell)
    assert chromium_executable(without_own, headless=False) == str(full)  # a window needs the full browser
    own = tmp_path / "chrome"
    own.touch()
    assert chromium_executable(SimpleNamespace(chromium=SimpleNamespace(executable_path=str(own)))) is None


class _Echo(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = f"host {self.headers['Host']}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_site_host_reaches_the_server_on_any_port_and_nothing_else_is_reached():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    seen: dict[str, str] = {}

    async def main() -> None:
        async with async_playwright() as playwright:
            browser = await launch_browser(playwright, {"shop-a.test": f"127.0.0.1:{server.server_address[1]}"})
            page = await browser.new_page()
            loopback = f"http://127.0.0.1:{server.server_address[1]}/"
            for url in ["http://shop-a.test/", "http://shop-a.test:9999/x", "http://example.com/", loopback]:
                try:
                    await page.goto(url, timeout=10_000)
                    seen[url] = await page.inner_text("body")
                except PlaywrightError as error:
                    seen[url] = str(error).splitlines()[0]
            await browser.close()

    try:
        asyncio.run(main())
    finally:
        server.shutdown()
    assert seen["http://shop-a.test/"] == "host shop-a.test"  # no port in the URL or the Host header
    assert seen["http://shop-a.test:9999/x"] == "host shop-a.test:9999"
    assert "ERR_PROXY_CONNECTION_FAILED" in seen["http://example.com/"]
    assert "ERR_PROXY_CONNECTION_FAILED" in seen[f"http://127.0.0.1:{server.server_address[1]}/"]  # the server itself
