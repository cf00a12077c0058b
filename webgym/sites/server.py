"""The site server: one process serving every site on 127.0.0.1, each under its own host name.

Requests are dispatched by their Host header (shop-a.test, mail-b.test, ...); the browser maps those
names to this server (webgym/browser.py). Each browser session (a cookie per site) has its own
state, so concurrent episodes never see each other's carts. Routes, on every site:

    GET  /<page path>          the session's current page (another path redirects to it)
    POST /__site/act           {"action": ID, "params": {...}} -> {"ok", "url", "hash"} or
                               {"ok": false, "message"}: the page's script sends every click here

and the harness's endpoints, which answer only requests that carry the server's secret in the
HARNESS_HEADER (the harness's own HTTP client, webgym/sites/harness.py; the secret never reaches a
browser), and a plain 404 to anything else, so an agent cannot read the state the verifier judges:

    GET  /__webgym/state       {"site", "page", "state", "hash", "steps"}: the session's state snapshot
                               and its stable hash, what rollouts record and the verifier judges
    POST /__webgym/reset       back to the start state
"""

from __future__ import annotations

import json
import logging
import mimetypes
import re
import secrets
import sys
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from http import HTTPStatus
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from webgym.sites.machine import Rejected, State, Step, snapshot_hash
from webgym.sites.render import Renderer
from webgym.sites.site import Site

log = logging.getLogger(__name__)

COOKIE = "wg_session"
ACT_PATH = "/__site/act"
HARNESS_PATH = "/__webgym/"
STATE_PATH = HARNESS_PATH + "state"
RESET_PATH = HARNESS_PATH + "reset"
HARNESS_HEADER = "X-WebGym-Harness"
_SLASHES = re.compile(r"/+")
MAX_SESSIONS = 20_000
MAX_BODY = 64 * 1024


def is_harness_path(path: str) -> bool:
    """Whether a request path reaches for the harness's endpoints in any spelling: percent-encoded, with
    doubled slashes (`//__webgym/state`) or in another letter case. The server answers every such path
    with a 404 unless it is an endpoint asked with the secret; the agent's guard records it as a probe."""
    plain = _SLASHES.sub("/", unquote(path)).lower()
    return plain.startswith(HARNESS_PATH) or plain == HARNESS_PATH.rstrip("/")


def request_path(target: str) -> str:
    """The path of an HTTP request target. An origin-form target is a path already: urlsplit would read
    `//__webgym/state` as a host name and a path of `/state`."""
    if target.startswith("/"):
        return target.partition("?")[0].partition("#")[0]
    return urlsplit(target).path


@dataclass
class Session:
    state: State
    steps: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class Sessions:
    """States by (site, session id); the oldest are dropped past MAX_SESSIONS."""

    def __init__(self) -> None:
        self._items: OrderedDict[tuple[str, str], Session] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, site: Site, sid: str) -> Session:
        key = (site.name, sid)
        with self._lock:
            session = self._items.get(key)
            if session is None:
                session = self._items[key] = Session(site.machine.initial())
                while len(self._items) > MAX_SESSIONS:
                    self._items.popitem(last=False)
            else:
                self._items.move_to_end(key)
            return session


class _Server(ThreadingHTTPServer):
    """A request that fails is logged, not printed: the standard server writes a traceback between
    rows of dashes to whatever stderr is at that moment (a rollout's terminal, another command's output).
    A browser dropping a connection is routine, so that is a debug line."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: tuple[str, int]) -> None:
        error = sys.exc_info()[1]
        level = logging.DEBUG if isinstance(error, ConnectionError) else logging.WARNING
        log.log(level, "site server: request from %s failed: %r", client_address[0], error,
                exc_info=level == logging.WARNING)


class SiteServer:
    """Serves the given sites; use as a context manager or call start()/stop()."""

    def __init__(self, sites: dict[str, Site] | list[Site], host: str = "127.0.0.1", port: int = 0,
                 static: dict[str, Path] | None = None) -> None:
        listed = list(sites.values()) if isinstance(sites, dict) else list(sites)
        self.sites: dict[str, Site] = {site.spec.hostname: site for site in listed}
        self.static: dict[str, Path] = {name.lower(): Path(folder).resolve() for name, folder in (static or {}).items()}
        """Host name -> folder served read-only as plain files (pages this project did not write: MiniWoB++)."""
        self.renderers = {hostname: Renderer(site.machine) for hostname, site in self.sites.items()}
        self.sessions = Sessions()
        self.secret = secrets.token_urlsafe(32)
        """What the harness sends in HARNESS_HEADER; made per server, never given to a browser."""
        self.httpd = _Server((host, port), _handler(self))
        self._thread: threading.Thread | None = None

    @property
    def host(self) -> str:
        return self.httpd.server_address[0]

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def host_map(self) -> dict[str, str]:
        """Site host name -> 'ip:port', what the browser's host resolver rules need."""
        return {hostname: f"{self.host}:{self.port}" for hostname in [*self.sites, *self.static]}

    def start(self) -> SiteServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="site-server", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> SiteServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _handler(server: SiteServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s %s", self.headers.get("Host"), format % args)

        def _site(self) -> Site | None:
            host = (self.headers.get("Host") or "").split(":")[0].lower()
            return server.sites.get(host)

        def _sid(self) -> tuple[str, bool]:
            cookie = SimpleCookie(self.headers.get("Cookie") or "")
            if COOKIE in cookie and cookie[COOKIE].value:
                return cookie[COOKIE].value, False
            return uuid.uuid4().hex, True

        def _send(self, status: int, body: bytes, content_type: str, sid: str | None = None,
                  headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            if sid:
                self.send_header("Set-Cookie", f"{COOKIE}={sid}; Path=/; HttpOnly; SameSite=Lax")
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _json(self, payload: dict[str, Any], status: int = 200, sid: str | None = None) -> None:
            self._send(status, json.dumps(payload, ensure_ascii=False).encode(), "application/json", sid)

        def _harness(self) -> bool:
            """Whether the request comes from the harness (it carries the server's secret)."""
            sent = (self.headers.get(HARNESS_HEADER) or "").encode("utf-8", "replace")
            return secrets.compare_digest(sent, server.secret.encode())

        def _not_found(self) -> None:
            # the connection closes: a request body may be left unread
            self._send(HTTPStatus.NOT_FOUND, b"Not Found", "text/plain", headers={"Connection": "close"})

        def _unknown_host(self) -> None:
            items = "".join(f"<li>{s.spec.title}: http://{h}/</li>" for h, s in sorted(server.sites.items()))
            body = (f"<!doctype html><title>WebGym sites</title><h1>No site at this host name</h1>"
                    f"<p>Sites served here (map their host names to this server):</p><ul>{items}</ul>").encode()
            self._send(HTTPStatus.NOT_FOUND, body, "text/html; charset=utf-8")

        def _file(self, folder: Path) -> None:
            """A file of a static host's folder; a 404 for anything outside it or not a file."""
            target = (folder / unquote(request_path(self.path)).lstrip("/")).resolve()
            if not target.is_relative_to(folder) or not target.is_file():
                return self._not_found()
            kind = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
            self._send(HTTPStatus.OK, target.read_bytes(), kind)

        def do_HEAD(self) -> None:
            self.do_GET()

        def do_GET(self) -> None:
            folder = server.static.get((self.headers.get("Host") or "").split(":")[0].lower())
            if folder is not None:
                return self._file(folder)
            site = self._site()
            if site is None:
                return self._unknown_host()
            path = request_path(self.path)
            if is_harness_path(path) and (path != STATE_PATH or not self._harness()):
                return self._not_found()
            sid, new = self._sid()
            session = server.sessions.get(site, sid)
            if path == "/favicon.ico":
                return self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
            if path == STATE_PATH:
                with session.lock:
                    return self._json(_snapshot(site, session), sid=sid if new else None)
            with session.lock:
                state = session.state
            current = site.spec.pages[state.page].path
            if path != current:
                return self._send(HTTPStatus.FOUND, b"", "text/plain", sid if new else None, {"Location": current})
            try:
                html = server.renderers[site.spec.hostname].render(state)
            except Exception:
                log.exception("rendering %s page %s failed", site.name, state.page)
                return self._send(HTTPStatus.INTERNAL_SERVER_ERROR, b"the page could not be rendered",
                                  "text/plain", sid if new else None)
            self._send(HTTPStatus.OK, html.encode(), "text/html; charset=utf-8", sid if new else None)

        def do_POST(self) -> None:
            site = self._site()
            if site is None:
                return self._unknown_host()
            path = request_path(self.path)
            if is_harness_path(path) and (path != RESET_PATH or not self._harness()):
                return self._not_found()
            sid, new = self._sid()
            session = server.sessions.get(site, sid)
            if path == RESET_PATH:
                with session.lock:
                    session.state, session.steps = site.machine.initial(), 0
                    return self._json(_snapshot(site, session), sid=sid if new else None)
            if path != ACT_PATH:
                return self._json({"ok": False, "message": f"no such endpoint {path}"}, HTTPStatus.NOT_FOUND)
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                return self._json({"ok": False, "message": "request too large"}, HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
            try:
                request = json.loads(self.rfile.read(length) or b"{}")
                step = Step.of(str(request["action"]), request.get("params") or {})
            except (ValueError, KeyError, TypeError, AttributeError):
                return self._json({"ok": False, "message": 'send {"action": ID, "params": {...}}'},
                                  HTTPStatus.BAD_REQUEST)
            with session.lock:
                try:
                    session.state = site.machine.apply(session.state, step)
                except Rejected as reason:
                    return self._json({"ok": False, "message": f"That is not possible: {reason}"},
                                      sid=sid if new else None)
                session.steps += 1
                snapshot = _snapshot(site, session)
            self._json({"ok": True, "url": site.spec.pages[snapshot["page"]].path, "hash": snapshot["hash"]},
                       sid=sid if new else None)

    return Handler


def _snapshot(site: Site, session: Session) -> dict[str, Any]:
    snapshot = site.machine.snapshot(session.state)
    return {**snapshot, "hash": snapshot_hash(snapshot), "steps": session.steps}
