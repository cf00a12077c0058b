"""Launching Chromium for the pipeline.

`launch_browser` starts Playwright's Chromium (when Playwright has no build of its own: Debian's
chromium-headless-shell for headless work, else Debian's /usr/bin/chromium) with the flags
ENVIRONMENT.md found necessary, and host resolver rules that map the synthetic sites' host names to
the site server (every port of a name goes to the server's port, so URLs carry none:
http://shop-a.test/) and make every other name fail to resolve, so an agent cannot leave the sites
it was given.

Chromium's own network reaches nothing but the site hosts: everything else (loopback included) is
sent to a proxy that does not exist, unless a context names its own proxy, as every episode does
(its egress proxy, webgym/env/egress.py, which vets each connection's address). WebRTC may not use
UDP outside a proxy, so it has only TCP through that same proxy. The agent's tools live in
webgym/env/actions.py.
"""

from __future__ import annotations

import json
import os
from typing import Any

SYSTEM_CHROMIUM = "/usr/bin/chromium"
SYSTEM_HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"
"""Debian's build of Chromium's headless shell, the headless-only browser Playwright itself runs headless: the
same Blink and V8 without the full browser's UI layers; a scorer rollout's step costs half the CPU it costs in
the full browser's headless mode (README, "Throughput figures")."""
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic",
                  "--disable-extensions", "--mute-audio",
                  # WebRTC's UDP off: the full browser reads the first switch, the headless shell only the second.
                  "--webrtc-ip-handling-policy=disable_non_proxied_udp",
                  "--force-webrtc-ip-handling-policy=disable_non_proxied_udp"]
NO_EGRESS = "socks5://no-egress.invalid:1"
"""The launch-wide proxy: a name that never resolves (RFC 6761), so a context without a proxy of its own
reaches the site hosts (bypassed) and nothing else."""
VIEWPORT = {"width": 1280, "height": 720}


def host_rules(site_hosts: dict[str, str] | None, allow: list[str] | None = None) -> str:
    """Chromium --host-resolver-rules: each site host -> its 'ip:port' (every port of that name goes
    there), the names in `allow` resolve normally, everything else fails to resolve."""
    rules = [f"MAP {host} {target}" for host, target in sorted((site_hosts or {}).items())]
    rules.append("MAP * ~NOTFOUND")
    rules += [f"EXCLUDE {name}" for name in ["localhost", "127.0.0.1", *(allow or [])]]
    return ", ".join(rules)


def chromium_args(site_hosts: dict[str, str] | None = None, allow: list[str] | None = None) -> list[str]:
    bypass = ";".join([*sorted(site_hosts or {}), "<-loopback>"])  # <-loopback>: loopback goes to the proxy too
    return [*CHROMIUM_FLAGS, f"--host-resolver-rules={host_rules(site_hosts, allow)}",
            f"--proxy-server={NO_EGRESS}", f"--proxy-bypass-list={bypass}"]


def chromium_executable(playwright: Any, headless: bool = True) -> str | None:
    """The browser to launch: None when Playwright has its own build (it then picks its headless shell
    itself), else Debian's headless shell for headless work when installed, else Debian's chromium."""
    own = playwright.chromium.executable_path
    if own and os.path.exists(own):
        return None
    if headless and os.path.exists(SYSTEM_HEADLESS_SHELL):
        return SYSTEM_HEADLESS_SHELL
    return SYSTEM_CHROMIUM


def launch_browser(playwright: Any, site_hosts: dict[str, str] | None = None, headless: bool = True,
                   allow: list[str] | None = None) -> Any:
    """Launch Chromium through a Playwright object (sync or async API: with the async one, await
    the result). The browser is `chromium_executable`'s."""
    return playwright.chromium.launch(executable_path=chromium_executable(playwright, headless), headless=headless,
                                      args=chromium_args(site_hosts, allow))


def connect_browser(playwright: Any, endpoint: str, site_hosts: dict[str, str] | None = None,
                    allow: list[str] | None = None) -> Any:
    """Connect to a Playwright browser server for scale-out; it launches Chromium with the same flags
    and host mapping as `launch_browser` (async API: await it). Start the server with
    `python -m playwright run-server --unsafe --host HOST --port PORT`: without --unsafe it ignores
    the flags (host mapping, offline rules) that episodes need."""
    options = {"headless": True, "args": chromium_args(site_hosts, allow),
               "executablePath": chromium_executable(playwright) or playwright.chromium.executable_path}
    return playwright.chromium.connect(endpoint, headers={"x-playwright-launch-options": json.dumps(options)})
