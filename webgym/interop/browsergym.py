"""The synthetic sites' goals as BrowserGym tasks, so agents written for BrowserGym (AgentLab's) run on them.

`register()` registers one task per (site, goal) of the default world (or of the sites given) with
browsergym-core's own `register_task`; then `gym.make("browsergym/webgym.<site>.<goal>")` is a BrowserGym
environment whose `reset` opens the goal's start page and returns its text as the goal, and whose every
`step` is judged by the project's exact verifier (webgym/sites/verify.py, as the rollout judge judges a
synthetic task) on the session's state snapshot, read by the harness (webgym/sites/harness.py), never the page:
reward 1 and done once the goal holds; done with reward 0 once the agent has answered (BrowserGym's
`send_msg_to_user`, the answer a question goal's facts judge) without it holding.

Browsers. BrowserGym launches its browsers (the task's, and the chat window's) from one global Playwright;
`register` puts a wrapper in its place that launches the project's Chromium (webgym/browser.py: Debian's build
by executable path when Playwright has none of its own) with the project's flags and host rules: the site hosts
of every site server started here go to that server; every other host goes to a proxy that does not exist, and
its name does not resolve, so the agent stays on the sites as in the project's own episodes. The site server of a registration starts with its first task and
serves every episode after it; each episode's browser context is a new session on it.

The oracle (webgym/sites/oracle.py) drives these environments too: `oracle_actions` turns one step of a goal's
oracle path into BrowserGym actions of the `coord` and `chat` subsets.

browsergym-core pins playwright 1.44, the project runs 1.65: it is installed without its dependencies (the
`browsergym` extra lists the others; scripts/setup.sh installs both), docs/browsergym.md.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from typing import Any

import browsergym.core
import playwright.sync_api
from browsergym.core.registration import register_task
from browsergym.core.task import AbstractBrowserTask

from schemas.steps import Action
from webgym.browser import VIEWPORT, chromium_args, chromium_executable
from webgym.sites.harness import read_snapshot
from webgym.sites.machine import Step
from webgym.sites.oracle import to_browser_actions
from webgym.sites.replay import IDLE_JS
from webgym.sites.server import SiteServer
from webgym.sites.site import Site
from webgym.sites.tasks import start_url, task_text
from webgym.sites.verify import verify
from webgym.sites.world import World

PREFIX = "webgym"
SETTLE_MS = 10_000
"""How long a step's effects may take to reach the site server before the verifier reads the state."""


class SharedServer:
    """The site server of one registration: started by its first task, then serving every episode."""

    started: list[SiteServer] = []
    """Every server started in this process: the browsers BrowserGym launches map their hosts."""

    def __init__(self, sites: dict[str, Site]) -> None:
        self.sites = sites
        self._server: SiteServer | None = None
        self._lock = threading.Lock()

    def get(self) -> SiteServer:
        with self._lock:
            if self._server is None:
                self._server = SiteServer(self.sites).start()
                SharedServer.started.append(self._server)
            return self._server

    def stop(self) -> None:
        """Stop the server (its sessions go with it); the next task starts a new one."""
        with self._lock:
            if self._server is not None:
                SharedServer.started.remove(self._server)
                self._server.stop()
                self._server = None


def host_map() -> dict[str, str]:
    """Site host name -> 'ip:port' over every started site server."""
    return {host: target for server in SharedServer.started for host, target in server.host_map().items()}


class _Chromium:
    """Playwright's chromium BrowserType, launching the project's Chromium with the project's flags."""

    def __init__(self, playwright: playwright.sync_api.Playwright) -> None:
        self._playwright = playwright

    def launch(self, *, args: list[str] | None = None, executable_path: str | None = None,
               headless: bool = True, **kwargs: Any) -> playwright.sync_api.Browser:
        """BrowserGym's own arguments kept; the site hosts mapped when the browser starts (after the task)."""
        return self._playwright.chromium.launch(
            executable_path=executable_path or chromium_executable(self._playwright, headless), headless=headless,
            args=[*(args or []), *chromium_args(host_map())], **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._playwright.chromium, name)


class ProjectPlaywright:
    """What browsergym.core's global Playwright becomes: the real one (started on first use, in the thread
    that uses it, as browsergym starts its own) whose Chromium is `_Chromium`."""

    def __init__(self, real: playwright.sync_api.Playwright | None = None) -> None:
        self._real = real

    def _playwright(self) -> playwright.sync_api.Playwright:
        if self._real is None:
            self._real = playwright.sync_api.sync_playwright().start()
        return self._real

    @property
    def chromium(self) -> _Chromium:
        return _Chromium(self._playwright())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._playwright(), name)

    def stop(self) -> None:
        """Stop the real Playwright, if started; the next use starts a new one."""
        if self._real is not None:
            self._real.stop()
            self._real = None


def release_browsers() -> None:
    """Stop the Playwright BrowserGym's browsers run on. Playwright's sync API keeps an event loop running in the
    thread that started it until it stops, so `asyncio.run` (the project's own rollouts) fails in that thread until
    then; call this when done with the environments (the next episode starts it again)."""
    current = browsergym.core._PLAYWRIGHT
    if isinstance(current, ProjectPlaywright):
        current.stop()


def use_project_browser() -> None:
    """Make browsergym launch the project's Chromium (module docstring); once per process."""
    current = browsergym.core._PLAYWRIGHT
    if not isinstance(current, ProjectPlaywright):
        browsergym.core._set_global_playwright(ProjectPlaywright(current))


def agent_answer(chat_messages: list[dict[str, Any]]) -> str | None:
    """The agent's last message to the user after the goal was given: its answer, what answer facts judge."""
    asked = next((i for i, message in enumerate(chat_messages) if message["role"] == "user"), None)
    said = [m["message"] for m in chat_messages[asked + 1:] if m["role"] == "assistant"] if asked is not None else []
    return said[-1] if said else None


def settle(page: playwright.sync_api.Page) -> None:
    """Wait until the site's script has sent every action (a page that is not a site's is left as it is)."""
    try:
        page.wait_for_function(IDLE_JS, timeout=SETTLE_MS)
    except playwright.sync_api.Error:
        pass


class SiteGoalTask(AbstractBrowserTask):
    """One goal of one synthetic site. The seed changes nothing: a site's start state is fixed."""

    def __init__(self, seed: int, server: SharedServer, site: str, goal: str) -> None:
        super().__init__(seed)
        self.site, self.goal_id = server.sites[site], goal
        self.rubric = self.site.rubric(goal)
        self.server = server.get()  # before BrowserGym launches the browser, which maps the server's hosts
        self.viewport = dict(VIEWPORT)
        self.slow_mo = 0  # the project's episodes run at full speed; `settle` waits for the site's script
        self.timeout = SETTLE_MS

    def setup(self, page: playwright.sync_api.Page) -> tuple[str, dict[str, Any]]:
        page.goto(start_url(self.site))
        settle(page)
        goal = next(g for g in self.site.spec.goals if g.id == self.goal_id)
        return task_text(self.site, goal), {"site": self.site.name, "goal": self.goal_id,
                                            "rubric": self.rubric.model_dump()}

    def validate(self, page: playwright.sync_api.Page,
                 chat_messages: list[dict[str, Any]]) -> tuple[float, bool, str, dict[str, Any]]:
        settle(page)
        host = self.site.spec.hostname
        snapshot = read_snapshot(self.server, page.context.cookies(f"http://{host}/"), host)
        answer = agent_answer(chat_messages)
        verdict = verify(self.rubric, snapshot, answer)
        done = verdict.success or answer is not None
        return verdict.reward if done else 0.0, done, "", {"success": verdict.success, "rationale": verdict.rationale}


NOT_IN_GYM_ID = re.compile(r"[^\w.:-]")
"""What gymnasium does not take in an environment's name (generated goals' ids have spaces: `search-duvet cover`)."""


def task_id(site: str, goal: str) -> str:
    """The BrowserGym task id of a goal, `webgym.<site>.<goal>` with every character gymnasium does not take in a
    name as `_`; gym.make takes it after "browsergym/"."""
    return NOT_IN_GYM_ID.sub("_", f"{PREFIX}.{site}.{goal}")


def default_sites() -> dict[str, Site]:
    """The sites of the default profile's world (webgym/sites/world.py)."""
    from webgym.config import load_config
    from webgym.sites.world import world_of

    return dict(world_of(load_config().sites).sites)


def register(sites: World | dict[str, Site] | None = None) -> tuple[list[str], SharedServer]:
    """Register every goal of the sites (default: the default world's) as a BrowserGym task: the gym ids, and
    the server their episodes share (`stop()` it when done; daemon threads end with the process anyway)."""
    chosen = default_sites() if sites is None else dict(sites.sites if isinstance(sites, World) else sites)
    goals = {(name, goal.id): task_id(name, goal.id) for name, site in chosen.items() for goal in site.spec.goals}
    clashes = sorted(tid for tid, n in Counter(goals.values()).items() if n > 1)
    if clashes:
        raise ValueError(f"goals whose BrowserGym ids coincide: {', '.join(clashes)}")
    use_project_browser()
    server = SharedServer(chosen)
    for (name, goal), tid in goals.items():
        register_task(tid, SiteGoalTask, task_kwargs={"server": server, "site": name, "goal": goal})
    return [f"browsergym/{tid}" for tid in goals.values()], server


def browsergym_action(action: Action, viewport: dict[str, int] = VIEWPORT) -> str:
    """One of the project's browser actions (schemas/steps.py, the tools of webgym/env/actions.py) as BrowserGym
    action code of its `coord` and `chat` subsets, doing what the tool does."""
    if action.name == "click":
        return f"mouse_click({action.x}, {action.y})"
    if action.name == "type":
        text = action.text or ""
        lines = [f"mouse_click({action.x}, {action.y})"] if action.x is not None else []
        lines += ['keyboard_press("Control+a")', 'keyboard_press("Delete")', f"keyboard_type({text.rstrip(chr(10))!r})"]
        return "\n".join(lines + (['keyboard_press("Enter")'] if text.endswith("\n") else []))
    if action.name == "scroll":
        amount = action.amount if action.amount is not None else 0.5
        sign = -1 if action.direction == "up" else 1
        return (f"scroll_at({viewport['width'] / 2}, {viewport['height'] / 2}, 0, "
                f"{sign * amount * viewport['height']})")
    if action.name == "answer":
        return f"send_msg_to_user({action.text or ''!r})"
    raise ValueError(f"no BrowserGym action for the project's {action.name!r}")


class _AsyncPage:
    """A sync Playwright page as the async page `to_browser_actions` reads (it only evaluates script): its
    `evaluate` returns without suspending, so the coroutine runs to its end in one `send`. No event loop is
    needed, and none can be started: Playwright's sync API keeps one running in this thread."""

    def __init__(self, page: playwright.sync_api.Page) -> None:
        self.page = page

    async def evaluate(self, script: str, arg: Any = None) -> Any:
        return self.page.evaluate(script, arg)


def oracle_actions(page: playwright.sync_api.Page, step: Step) -> list[str]:
    """BrowserGym actions that perform one oracle step on the page (webgym/sites/oracle.py's to_browser_actions).
    When the element is out of view the last one is the scroll that brings it in: run them, then ask again."""
    located = to_browser_actions(_AsyncPage(page), step)
    try:
        located.send(None)
    except StopIteration as finished:
        return [browsergym_action(action) for action in finished.value]
    located.close()
    raise RuntimeError("to_browser_actions waited on something other than the page's script")
