"""The site server over real HTTP: host dispatch, per-session state, the harness's state endpoint."""

from __future__ import annotations

import socket
import struct
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from webgym.sites.machine import snapshot_hash
from webgym.sites.server import HARNESS_HEADER, SiteServer, is_harness_path
from webgym.sites.site import Site
from webgym.sites.specfiles import parse_site
from tests.webgym.sites.conftest import mini_spec


@pytest.fixture
def served(mini):
    other = Site(parse_site(mini_spec(name="mini2", hostname="mini2.test"), "mini2.yaml"))
    with SiteServer([mini, other]) as server:
        yield server


def client(server: SiteServer, host: str = "mini.test", harness: bool = True) -> httpx.Client:
    """A browser stand-in: its own cookie jar, every request sent to the server with the site's Host,
    and (unless `harness` is False) the server's secret, as the harness sends it."""
    headers = {"Host": host, **({HARNESS_HEADER: server.secret} if harness else {})}
    return httpx.Client(base_url=f"http://{server.host}:{server.port}", headers=headers, timeout=10)


def act(browser: httpx.Client, action: str, **params) -> dict:
    return browser.post("/__site/act", json={"action": action, "params": params}).json()


def test_pages_and_state_follow_the_session(served):
    with client(served) as browser:
        home = browser.get("/")
        assert home.status_code == 200 and "Mini Mart" in home.text and 'data-wg-action="search"' in home.text
        assert act(browser, "search", q="mug") == {"ok": True, "url": "/search", "hash": browser.get("/__webgym/state").json()["hash"]}
        assert browser.get("/", follow_redirects=False).headers["location"] == "/search"  # the session is on /search
        page = browser.get("/search").text
        assert "Red Mug" in page and "Blue Mug" in page and "Green Kettle" not in page
        state = browser.get("/__webgym/state").json()
        assert state["site"] == "mini" and state["page"] == "results" and state["state"]["query"] == "mug"
        assert state["hash"] == snapshot_hash(state) and state["steps"] == 1


def test_refused_actions_say_why_and_change_nothing(served):
    with client(served) as browser:
        before = browser.get("/__webgym/state").json()
        refused = act(browser, "add")
        assert refused["ok"] is False and "not offered on this page" in refused["message"]
        assert browser.post("/__site/act", content=b"nonsense").status_code == 400
        assert browser.get("/__webgym/state").json()["hash"] == before["hash"]


def test_concurrent_sessions_do_not_share_state(served):
    def shopper(item: str) -> dict:
        with client(served) as browser:
            for action, params in [("search", {"q": "mug"}), ("open", {"item": item}), ("add", {}), ("go_cart", {})]:
                assert act(browser, action, **params)["ok"]
            return browser.get("/__webgym/state").json()

    with ThreadPoolExecutor(8) as pool:
        states = list(pool.map(shopper, ["p1", "p2"] * 8))
    assert all(s["state"]["cart"] == [{"id": item, "qty": 1}] for s, item in zip(states, ["p1", "p2"] * 8))
    assert len({s["hash"] for s in states}) == 2  # equal states, equal hashes


def test_sites_are_told_apart_by_host_and_unknown_hosts_get_a_list(served):
    with client(served, "mini.test") as one, client(served, "mini2.test:8123") as two, client(served, "x.test") as nobody:
        act(one, "search", q="mug")
        assert two.get("/__webgym/state").json()["page"] == "home"  # its own site, its own session
        assert two.get("/__webgym/state").json()["site"] == "mini2"
        missing = nobody.get("/")
        assert missing.status_code == 404 and "http://mini.test/" in missing.text


def test_reset_starts_over(served):
    with client(served) as browser:
        act(browser, "search", q="kettle")
        reset = browser.post("/__webgym/reset").json()
        assert reset["page"] == "home" and reset["steps"] == 0 and reset["state"]["query"] is None


def test_harness_endpoints_answer_only_the_secret(served):
    with client(served, harness=False) as browser, client(served) as harness:
        act(browser, "search", q="mug")
        session = {"Cookie": f"wg_session={browser.cookies['wg_session']}"}
        for method, path in [("GET", "/__webgym/state"), ("POST", "/__webgym/reset"), ("GET", "/__webgym/other")]:
            for headers in [{}, {HARNESS_HEADER: "guess"}, {HARNESS_HEADER: ""}]:
                response = browser.request(method, path, headers=headers)
                assert (response.status_code, response.text) == (404, "Not Found"), (method, path, headers)
        assert harness.get("/__webgym/state", headers=session).json()["state"]["query"] == "mug"
        assert harness.get("/__webgym/other").status_code == 404


def _raw_get(server: SiteServer, target: str) -> bytes:
    """The status line of a GET of `target` sent as written (an HTTP client would normalise it)."""
    with socket.create_connection((server.host, server.port)) as raw:
        raw.sendall(f"GET {target} HTTP/1.1\r\nHost: mini.test\r\nConnection: close\r\n\r\n".encode())
        return raw.recv(4096).split(b"\r\n", 1)[0]


@pytest.mark.parametrize("target", ["//__webgym/state", "///__webgym//state", "/%5F%5Fwebgym/state",
                                    "/__WEBGYM/state", "/__webgym", "//__webgym/reset?x=1"])
def test_every_spelling_of_a_harness_path_is_not_found(served, target):
    assert is_harness_path(target.partition("?")[0])
    assert _raw_get(served, target) == b"HTTP/1.1 404 Not Found", target


def test_pages_are_not_harness_paths():
    assert not any(is_harness_path(path) for path in ["/", "/search", "/__site/act", "/__webgymnastics", "/a/__webgym/"])


def test_a_browser_dropping_its_connection_prints_nothing(served, capsys):
    """A reset mid-request is routine in rollouts: it must not print a traceback into the terminal or
    into another command's output."""
    for _ in range(3):
        raw = socket.create_connection((served.host, served.port))
        raw.sendall(b"GET / HTTP/1.1\r\nHost: mini.test\r\n")
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
        raw.close()
    time.sleep(0.5)
    with client(served) as browser:
        assert browser.get("/").status_code == 200
    assert capsys.readouterr().err == ""
