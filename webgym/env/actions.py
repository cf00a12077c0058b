"""The agent's tools: WebGym's click/type/scroll/back/goto/answer plus OpenWebRL's hover, drag,
press_keys, wait and tab tools, and select_option for lists (a <select> has no clickable options on
the screenshot: Chromium draws its popup outside the page).

Each tool is a small async function over a `Browsing` handle. Its docstring, with examples, is
exactly what the prompt shows the model (`tool_docs`), and it returns the textual feedback of
OpenWebRL appendix A.2, computed from the browser state before and after the call.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from playwright.async_api import BrowserContext, Frame, Page, Request
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from schemas.steps import Action

log = logging.getLogger(__name__)

MAX_WAIT_S = 10.0
SETTLE_S = 0.06
"""Pause after pointer/keyboard actions so handlers that navigate or open tabs have started (not on pages
with the readiness hook, IDLE_HOOK_JS)."""
NAVIGATION_GRACE_S = 2.0
"""How long an action whose target usually navigates (link, submit) waits for a navigation that may not come."""
ANIMATION_WAIT_S = 2.0
"""The longest an action waits for the animations it started (ANIMATING_JS) to finish."""
HOVER_DELAY_S = 0.4
"""How long a hover waits before the page is read: menus open a submenu after a delay (jQuery UI's is 300 ms)."""


@dataclass
class Browsing:
    """What a tool acts on: the episode's context, its active page and the coordinate convention."""

    context: BrowserContext
    page: Page
    viewport: tuple[int, int] = (1280, 720)
    normalized: bool = False
    """Coordinates in 0-1000 of the viewport (Qwen3-VL) instead of CSS pixels."""
    answer: str | None = None
    marks: dict[int, tuple[float, float]] = field(default_factory=dict)
    """Set-of-marks number -> element centre in pixels, from the latest observation."""
    navigation_timeout_s: float = 15.0
    guard: Callable[[str], str | None] = lambda url: None
    """Why a URL may not be opened (None when it may): checked before goto / new_tab navigate."""

    def point(self, action: Action) -> tuple[float, float]:
        """Pixel coordinates for a click-like action given by mark or by (x, y)."""
        if action.mark is not None:
            if action.mark not in self.marks:
                raise ToolError(f"no element numbered {action.mark} on this page")
            return self.marks[action.mark]
        if action.x is None or action.y is None:
            raise ToolError("needs x and y (or an element mark)")
        return self.scale(action.x, action.y)

    def scale(self, x: float, y: float) -> tuple[float, float]:
        if self.normalized:
            return x * self.viewport[0] / 1000, y * self.viewport[1] / 1000
        return x, y


class ToolError(Exception):
    """A tool call that cannot run as given; its message becomes the failure feedback."""


@dataclass(frozen=True)
class Tool:
    name: str
    run: Callable[[Browsing, Action], Awaitable[str]]
    positional: tuple[str, ...]
    """Action fields filled, in order, by positional arguments: click(512, 86) -> x, y."""
    required: tuple[tuple[str, ...], ...]
    """Alternatives of required argument sets, e.g. (("x", "y"), ("mark",))."""
    aliases: tuple[str, ...] = ()

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.run.__doc__ or "")


def _check(browsing: Browsing, url: str) -> None:
    reason = browsing.guard(url)
    if reason:
        raise ToolError(f"refused {url}: {reason}")


async def _target_at(page: Page, x: float, y: float) -> tuple[str, bool]:
    """`<tag> role=... "text"` of the element under a point, and whether clicking it usually navigates."""
    info = await page.evaluate(
        """([x, y]) => { const e = document.elementFromPoint(x, y); if (!e) return null;
             const text = (e.innerText || e.value || e.getAttribute('aria-label') || e.getAttribute('placeholder') || '')
                          .trim().replace(/\\s+/g, ' ').slice(0, 60);
             const link = e.closest('a[href]');
             const href = link ? link.getAttribute('href') : '';
             const submit = e.closest('button, input[type=submit], input[type=image]');
             const submits = !!submit && !!submit.form && (submit.type === 'submit' || submit.type === 'image');
             const navigates = (!!link && !href.startsWith('#') && !href.startsWith('javascript:')) || submits;
             return {tag: e.tagName.toLowerCase(), role: e.getAttribute('role'), text, navigates}; }""", [x, y])
    if info is None:
        return "nothing", False
    role = f" role={info['role']}" if info["role"] else ""
    text = f' "{info["text"]}"' if info["text"] else ""
    return f"<{info['tag']}>{role}{text}", info["navigates"]


class _Effects:
    """Watches one action for navigations and new tabs, so feedback describes what really happened.

    Register before the action (`async with`), then `describe()` after it. Playwright reports a
    navigation asynchronously, possibly after the click returned, so an action whose target is
    expected to navigate (a link, a submit button, Enter in a form) waits for the frame to commit,
    and any navigation request seen is waited for, before the next action can abort it.
    """

    def __init__(self, browsing: Browsing, expect_navigation: bool, timeout_s: float) -> None:
        self.browsing, self.expect_navigation, self.timeout_s = browsing, expect_navigation, timeout_s
        self.page = browsing.page
        self.url = browsing.page.url
        self.tabs_before = len(browsing.context.pages)
        self.requested = False
        self.committed = asyncio.Event()
        self.new_tab = asyncio.Event()

    def _on_request(self, request: Request) -> None:
        if request.is_navigation_request() and request.frame == self.page.main_frame:
            self.requested = True

    def _on_navigated(self, frame: Frame) -> None:
        if frame == self.page.main_frame:
            self.committed.set()

    def _on_page(self, page: Page) -> None:
        self.new_tab.set()

    async def __aenter__(self) -> _Effects:
        self.page.on("request", self._on_request)
        self.page.on("framenavigated", self._on_navigated)
        self.browsing.context.on("page", self._on_page)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.page.remove_listener("request", self._on_request)
        self.page.remove_listener("framenavigated", self._on_navigated)
        self.browsing.context.remove_listener("page", self._on_page)

    async def describe(self) -> str:
        hooked = await has_idle_hook(self.page)
        if not hooked:
            await asyncio.sleep(SETTLE_S)
        await settle(self.page, self.timeout_s)
        await animations_done(self.page)
        # A page with the readiness hook that settled has no navigation coming (its handlers and links mark
        # theirs): only a navigation request already seen is waited for, not a guess from the target.
        expected = self.expect_navigation and not hooked
        if (expected or self.requested) and not (self.committed.is_set() or self.new_tab.is_set()):
            waits = [asyncio.ensure_future(self.committed.wait()), asyncio.ensure_future(self.new_tab.wait())]
            await asyncio.wait(waits, timeout=self.timeout_s if self.requested else NAVIGATION_GRACE_S,
                               return_when=asyncio.FIRST_COMPLETED)
            for waiting in waits:
                waiting.cancel()
        pages = self.browsing.context.pages
        if len(pages) > self.tabs_before:
            self.browsing.page = pages[-1]
            await _loaded(self.browsing.page)
            return f" A new tab opened ({self.browsing.page.url}) and is now active."
        if self.committed.is_set():
            await _loaded(self.page)
        if self.committed.is_set() or self.page.url != self.url:
            return f" Page navigated to {self.page.url}."
        return " Note: no visible navigation or new tab detected."


IDLE_JS = "() => document.readyState === 'complete' && (!window.__wg || window.__wg.idle())"
"""A page is settled when loaded and, if it exposes the readiness hook `window.__wg.idle()` (the
synthetic sites do: no action in flight, no navigation pending), when that says so."""


IDLE_HOOK_JS = "() => !!(window.__wg && window.__wg.idle)"
"""The page has the readiness hook: its handlers and links mark the work they start (a request, a
navigation) synchronously in the event that starts it, so once an action returns, `settle` sees it."""


async def has_idle_hook(page: Page) -> bool:
    """Whether the page exposes the readiness hook (False while its document is being replaced)."""
    try:
        return bool(await page.evaluate(IDLE_HOOK_JS))
    except PlaywrightError:
        return False


async def settle(page: Page, timeout_s: float) -> None:
    """Wait until the page is settled, riding through navigations that replace the document."""
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        try:
            await page.wait_for_function(IDLE_JS, timeout=left * 1000, polling=10)
            return
        except PlaywrightTimeoutError:
            log.debug("page %s did not settle within %.1f s", page.url, timeout_s)
            return
        except PlaywrightError:  # the execution context was destroyed by a navigation: wait for the new one
            await _loaded(page)


ANIMATING_JS = """() => !document.getAnimations().some(a => a.playState === 'running' && a.effect
    && a.effect.getComputedTiming().endTime !== Infinity) && !(window.jQuery && (jQuery.timers || []).length)"""
"""No finite CSS transition or animation is running and jQuery animates nothing: a date picker that fades out or
a section that slides open has arrived, so the next observation shows the page where it ends up, not a frame on
the way (a spinner that turns forever does not count)."""


async def animations_done(page: Page, timeout_s: float = ANIMATION_WAIT_S) -> None:
    """Wait, at most `timeout_s`, until the page animates nothing (ANIMATING_JS)."""
    try:
        await page.wait_for_function(ANIMATING_JS, timeout=timeout_s * 1000, polling=20)
    except PlaywrightError as error:  # still animating, or navigating: observe it as it is
        log.debug("page %s still animating: %s", page.url, error)


async def _loaded(page: Page) -> None:
    try:
        await page.wait_for_load_state("domcontentloaded")
    except Exception as error:  # a navigation that fails still leaves a page to observe
        log.debug("waiting for load: %s", error)


async def click(browsing: Browsing, action: Action) -> str:
    """click(x, y) or click(mark): left-click a point (or a numbered element).
    Examples: click(512, 86)  |  {"name": "click", "arguments": {"x": 512, "y": 86}}  |  click(mark=7)"""
    x, y = browsing.point(action)
    target, navigates = await _target_at(browsing.page, x, y)
    async with _Effects(browsing, navigates, browsing.navigation_timeout_s) as effects:
        await browsing.page.mouse.click(x, y)
        return f"Succeed: 'click' on {target} at ({x:.0f}, {y:.0f}) executed." + await effects.describe()


async def hover(browsing: Browsing, action: Action) -> str:
    """hover(x, y): move the pointer to a point to reveal menus or tooltips.
    Example: hover(300, 40)"""
    x, y = browsing.point(action)
    target, _ = await _target_at(browsing.page, x, y)
    await browsing.page.mouse.move(x, y)
    await asyncio.sleep(HOVER_DELAY_S)
    await animations_done(browsing.page)
    return f"Succeed: 'hover' over {target} at ({x:.0f}, {y:.0f}) executed."


async def drag(browsing: Browsing, action: Action) -> str:
    """drag(x, y, to_x, to_y): press at one point, move to another and release.
    Example: drag(100, 400, 600, 400)"""
    x, y = browsing.point(action)
    if action.to_x is None or action.to_y is None:
        raise ToolError("needs to_x and to_y")
    to_x, to_y = browsing.scale(action.to_x, action.to_y)
    await browsing.page.mouse.move(x, y)
    await browsing.page.mouse.down()
    await browsing.page.mouse.move(to_x, to_y, steps=8)
    await browsing.page.mouse.up()
    return f"Succeed: 'drag' from ({x:.0f}, {y:.0f}) to ({to_x:.0f}, {to_y:.0f}) executed."


COVERED_JS = """([x, y]) => { const e = document.elementFromPoint(x, y);
  return !!e && !e.isContentEditable && !e.closest('input, textarea, select, label'); }"""
"""Page function: whether something other than a field is on top at a point. A marked field was on top when the
page was observed, so what covers it now opened since, such as the suggestion list an autocomplete opened under
the field typed into before; Escape closes such a popup before the click. At bare coordinates nothing is pressed:
a point beside a field says nothing about popups, and Escape could close the dialog the field is in."""


async def type_text(browsing: Browsing, action: Action) -> str:
    """type(text) or type(text, x, y): clear the focused field (or the field at x, y) and type text.
    End the text with "\\n" to press Enter afterwards.
    Examples: type("red mug")  |  type("red mug\\n", 640, 88)"""
    page = browsing.page
    if action.x is not None or action.mark is not None:
        x, y = browsing.point(action)
        if action.mark is not None and await page.evaluate(COVERED_JS, [x, y]):
            await page.keyboard.press("Escape")
        await page.mouse.click(x, y)
    text = action.text or ""
    submit = text.endswith("\n")
    text = text.rstrip("\n")
    focused = await page.evaluate(
        """() => { const e = document.activeElement; if (!e || e === document.body) return null;
             return {tag: e.tagName.toLowerCase(), role: e.getAttribute('role'),
                     name: e.getAttribute('aria-label') || e.getAttribute('placeholder') || e.name || '',
                     editable: e.isContentEditable || ['input', 'textarea', 'select'].includes(e.tagName.toLowerCase()),
                     in_form: !!e.form}; }""")
    if not focused or not focused["editable"]:
        raise ToolError("no text field is focused; click one first or pass x and y")
    await page.keyboard.press("Control+A")
    await page.keyboard.press("Delete")
    await page.keyboard.type(text)
    actual = await page.evaluate("() => document.activeElement && (document.activeElement.value ?? document.activeElement.innerText)")
    role = f" role={focused['role']}" if focused["role"] else ""
    feedback = f"Succeed: 'type' typed \"{text}\" into <{focused['tag']}>{role} \"{focused['name']}\"."
    if actual is not None and actual != text:
        feedback += f' Note: the field\'s actual value is "{actual}", which differs from the typed text.'
    if submit:
        async with _Effects(browsing, focused["in_form"], browsing.navigation_timeout_s) as effects:
            await page.keyboard.press("Enter")
            feedback += " Pressed Enter." + await effects.describe()
    return feedback


SELECT_JS = """([x, y, wanted]) => {
  const hit = document.elementFromPoint(x, y);
  const list = hit && hit.closest('select, [role=listbox]');
  if (!list) return {error: 'there is no list (select or listbox) there'};
  const norm = (s) => (s || '').trim().replace(/\\s+/g, ' ');
  const native = list.tagName === 'SELECT';
  const options = native ? Array.from(list.options) : Array.from(list.querySelectorAll('[role=option]'));
  const text = (o) => norm(native ? o.text : o.innerText);
  const want = norm(wanted).toLowerCase();
  const option = options.find(o => text(o) === norm(wanted)) || options.find(o => text(o).toLowerCase() === want)
                 || (native ? options.find(o => o.value === wanted) : null);
  const name = norm(list.getAttribute('aria-label') || (list.labels && list.labels.length ? list.labels[0].innerText : '') || list.id);
  if (!option) return {error: `no option "${norm(wanted)}"; its options are ` + options.slice(0, 20).map(o => `"${text(o)}"`).join(', ')};
  if (option.disabled || option.getAttribute('aria-disabled') === 'true') return {error: `option "${text(option)}" is disabled`};
  if (native) {  // what choosing in the popup does: select it, then input and change events
    option.selected = true;
    list.dispatchEvent(new Event('input', {bubbles: true}));
    list.dispatchEvent(new Event('change', {bubbles: true}));
    return {chosen: text(option), tag: 'select', name};
  }
  option.scrollIntoView({block: 'nearest'});
  const r = option.getBoundingClientRect();
  return {chosen: text(option), tag: 'listbox', name, x: r.left + r.width / 2, y: r.top + r.height / 2};
}"""
"""Page function: chooses an option of the select at a point, or returns where a listbox's option is to
be clicked; an error names the options there are."""


async def select_option(browsing: Browsing, action: Action) -> str:
    """select_option(mark, text): choose the option with this text in a list (a drop-down <select> or a listbox)
    at a numbered element (or at x, y).
    Examples: select_option(8, "Green")  |  {"name": "select_option", "arguments": {"mark": 8, "text": "Green"}}"""
    x, y = browsing.point(action)
    if not action.text:
        raise ToolError("needs the text of the option to choose")
    async with _Effects(browsing, False, browsing.navigation_timeout_s) as effects:
        result = await browsing.page.evaluate(SELECT_JS, [x, y, action.text])
        if "error" in result:
            raise ToolError(result["error"])
        if result["tag"] == "listbox":
            await browsing.page.mouse.click(result["x"], result["y"])
        name = f' "{result["name"]}"' if result["name"] else ""
        feedback = f"Succeed: 'select_option' chose \"{result['chosen']}\" in <{result['tag']}>{name}."
        return feedback + await effects.describe()


async def press_keys(browsing: Browsing, action: Action) -> str:
    """press_keys(keys): press keys together as one chord, e.g. ["Control", "L"], or a single key.
    Examples: press_keys(["Enter"])  |  press_keys(["Control", "A"])"""
    keys = [k.strip() for k in action.keys or [] if k.strip()]
    if not keys:
        raise ToolError("needs at least one key")
    chord = "+".join(k[:1].upper() + k[1:] if len(k) > 1 else k for k in keys)
    in_form = await browsing.page.evaluate("() => !!(document.activeElement && document.activeElement.form)")
    async with _Effects(browsing, "Enter" in keys and in_form, browsing.navigation_timeout_s) as effects:
        await browsing.page.keyboard.press(chord)
        return f"Succeed: 'press_keys' {keys} executed." + await effects.describe()


async def scroll(browsing: Browsing, action: Action) -> str:
    """scroll(direction, amount): scroll the page up/down/left/right by a fraction of the viewport
    (default 0.5). Examples: scroll("down")  |  scroll("up", 1.0)"""
    direction = (action.direction or "down").lower()
    if direction not in ("up", "down", "left", "right"):
        raise ToolError(f"direction must be up, down, left or right, not {direction!r}")
    amount = action.amount if action.amount is not None else 0.5
    width, height = browsing.viewport
    dx = {"left": -width, "right": width}.get(direction, 0) * amount
    dy = {"up": -height, "down": height}.get(direction, 0) * amount
    position = "() => [window.scrollX, window.scrollY]"
    before = await browsing.page.evaluate(position)
    if browsing.page.url != "about:blank":
        await browsing.page.mouse.move(width / 2, height / 2)
    await browsing.page.mouse.wheel(dx, dy)
    await browsing.page.wait_for_timeout(100)
    after = await browsing.page.evaluate(position)
    feedback = f"Succeed: 'scroll' {direction} by {amount:.0%} executed."
    if after == before:
        feedback += " Note: page scroll position did not change and may be at a boundary."
    return feedback


async def goto(browsing: Browsing, action: Action) -> str:
    """goto(url): open a URL in the current tab.
    Example: goto("http://shop-a.test/")"""
    if not action.url:
        raise ToolError("needs a url")
    _check(browsing, action.url)
    response = await browsing.page.goto(action.url)
    status = f" (HTTP {response.status})" if response is not None and response.status >= 400 else ""
    return f"Succeed: 'goto' opened {browsing.page.url}{status}."


async def _earlier_page(browsing: Browsing) -> str | None:
    """The URL back() would open: the tab's previous history entry (None when there is none), read through
    the DevTools protocol, since a page's script sees only the history's length."""
    session = await browsing.context.new_cdp_session(browsing.page)
    try:
        history = await session.send("Page.getNavigationHistory")
    finally:
        await session.detach()
    index = history["currentIndex"]
    return history["entries"][index - 1]["url"] if index > 0 else None


async def back(browsing: Browsing, action: Action) -> str:
    """back(): go back in the tab's history.
    Example: back()"""
    earlier = await _earlier_page(browsing)
    if earlier is None or earlier == "about:blank":  # a single-page task must not be left for a blank tab
        raise ToolError("there is no earlier page in this tab's history")
    before = browsing.page.url
    await browsing.page.go_back()
    if browsing.page.url == before:
        return "Succeed: 'back' executed. Note: there was no earlier page; the URL did not change."
    return f"Succeed: 'back' returned to {browsing.page.url}."


async def wait(browsing: Browsing, action: Action) -> str:
    """wait(seconds): let the page settle (at most 10 s, default 1).
    Example: wait(2)"""
    seconds = min(max(action.amount if action.amount is not None else 1.0, 0.0), MAX_WAIT_S)
    await browsing.page.wait_for_timeout(seconds * 1000)
    return f"Succeed: 'wait' for {seconds:g} s executed."


async def new_tab(browsing: Browsing, action: Action) -> str:
    """new_tab(url=None): open a new tab (optionally at a URL) and make it active.
    Examples: new_tab()  |  new_tab("http://mail-b.test/")"""
    if action.url:
        _check(browsing, action.url)
    browsing.page = await browsing.context.new_page()
    if action.url:
        await browsing.page.goto(action.url)
    return f"Succeed: 'new_tab' opened tab {len(browsing.context.pages) - 1} ({browsing.page.url})."


async def switch_tab(browsing: Browsing, action: Action) -> str:
    """switch_tab(tab): make the tab with this 0-based index active.
    Example: switch_tab(0)"""
    pages = browsing.context.pages
    if action.tab is None or not 0 <= action.tab < len(pages):
        raise ToolError(f"tab must be between 0 and {len(pages) - 1}")
    browsing.page = pages[action.tab]
    await browsing.page.bring_to_front()
    return f"Succeed: 'switch_tab' switched to tab {action.tab} ({browsing.page.url})."


async def close_tab(browsing: Browsing, action: Action) -> str:
    """close_tab(): close the active tab; the last remaining tab cannot be closed.
    Example: close_tab()"""
    pages = browsing.context.pages
    if len(pages) == 1:
        raise ToolError("the last tab cannot be closed")
    await browsing.page.close()
    browsing.page = browsing.context.pages[-1]
    return f"Succeed: 'close_tab' closed the tab; tab {len(browsing.context.pages) - 1} ({browsing.page.url}) is active."


async def answer(browsing: Browsing, action: Action) -> str:
    """answer(text): end the task and give the final answer (for tasks that ask nothing, say what was done).
    Example: answer("The cheapest flight is AX 204 at $129.")"""
    browsing.answer = action.text or ""
    return f"Succeed: task marked as done. Response: {browsing.answer}"


TOOLS: dict[str, Tool] = {t.name: t for t in [
    Tool("click", click, ("x", "y"), (("x", "y"), ("mark",)), ("left_click", "tap")),
    Tool("hover", hover, ("x", "y"), (("x", "y"), ("mark",)), ("mouse_move", "move")),
    Tool("drag", drag, ("x", "y", "to_x", "to_y"), (("x", "y", "to_x", "to_y"), ("mark", "to_x", "to_y")),
         ("left_click_drag",)),
    Tool("type", type_text, ("text", "x", "y"), (("text",),), ("write", "input_text", "fill")),
    Tool("press_keys", press_keys, ("keys",), (("keys",),), ("key", "press", "hotkey", "keypress")),
    Tool("select_option", select_option, ("mark", "text"), (("mark", "text"), ("x", "y", "text")),
         ("select", "choose_option")),
    Tool("scroll", scroll, ("direction", "amount"), ((),)),
    Tool("goto", goto, ("url",), (("url",),), ("goto_url", "navigate", "open_url")),
    Tool("back", back, (), ((),), ("go_back", "history_back")),
    Tool("wait", wait, ("amount",), ((),), ("sleep",)),
    Tool("new_tab", new_tab, ("url",), ((),), ("open_tab",)),
    Tool("switch_tab", switch_tab, ("tab",), (("tab",),), ("tab_focus",)),
    Tool("close_tab", close_tab, (), ((),)),
    Tool("answer", answer, ("text",), (("text",),), ("done", "terminate", "finish", "finished", "stop")),
]}

ALIASES: dict[str, str] = {alias: t.name for t in TOOLS.values() for alias in (t.name, *t.aliases)}


def tool_docs() -> str:
    """The tool list as the prompt shows it."""
    return "\n\n".join(t.doc for t in TOOLS.values())


async def execute(browsing: Browsing, action: Action, timeout_s: float) -> Action:
    """Run one call; return it with `ok` and `feedback` set. Never raises for a bad call."""
    tool = TOOLS[action.name]
    try:
        feedback = await asyncio.wait_for(tool.run(browsing, action), timeout_s)
        return action.model_copy(update={"ok": True, "feedback": feedback})
    except ToolError as error:
        message = str(error)
    except TimeoutError:
        message = f"timed out after {timeout_s:g} s"
    except Exception as error:  # Playwright raises many error types; each is feedback, not a crash
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
    return action.model_copy(update={"ok": False, "feedback": f"Failed: '{action.name}' execution failed: {message}"})
