"""Observation extractors: free functions of a page (BrowserGym's split).

Set-of-marks numbers the visible, topmost interactive elements and draws the numbers onto the
screenshot with Pillow, so the page's own DOM is never modified by observing it.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont
from playwright.async_api import Page

from schemas.steps import Element

INTERACTIVE_JS = """() => {
  const selector = 'a[href], button, input:not([type=hidden]), select, textarea, summary, label[for],' +
    '[role=button], [role=link], [role=checkbox], [role=radio], [role=tab], [role=menuitem], [role=option],' +
    '[role=combobox], [role=textbox], [onclick], [contenteditable=true], [tabindex]:not([tabindex="-1"])';
  // A link that wraps has several boxes; the middle of their union may be outside all of them.
  const first = (node) => node.getClientRects().length ? node.getClientRects()[0] : node.getBoundingClientRect();
  const clean = (s) => (s || '').trim().replace(/\\s+/g, ' ').slice(0, 80);
  const found = [];
  for (const e of document.querySelectorAll(selector)) {
    const r = first(e);
    if (r.width < 2 || r.height < 2 || r.bottom < 0 || r.right < 0 || r.top > innerHeight || r.left > innerWidth) continue;
    const style = getComputedStyle(e);
    if (style.visibility === 'hidden' || style.display === 'none' || Number(style.opacity) === 0) continue;
    const cx = Math.min(Math.max(r.left + r.width / 2, 0), innerWidth - 1);
    const cy = Math.min(Math.max(r.top + r.height / 2, 0), innerHeight - 1);
    const top = document.elementFromPoint(cx, cy);
    if (top && top !== e && !e.contains(top) && !top.contains(e)) continue;
    if (found.some(f => f.node.contains(e))) continue;
    const wrapper = e.labels && e.labels.length ? e.labels[0] : null;
    const own = clean((wrapper && wrapper.innerText) || e.getAttribute('aria-label') || e.getAttribute('placeholder'));
    // A checkbox or radio is named by its label (its value is 'on' or an id) and clicked through it.
    const toggle = e.type === 'checkbox' || e.type === 'radio';
    const box = toggle && wrapper && wrapper.contains(e) ? first(wrapper) : r;
    const text = toggle && own ? own : clean(e.innerText || e.value || e.getAttribute('aria-label')
                  || e.getAttribute('placeholder') || e.getAttribute('title') || e.getAttribute('alt'));
    const field = e.tagName === 'TEXTAREA' || e.tagName === 'SELECT' || (e.tagName === 'INPUT'
                  && !['checkbox', 'radio', 'submit', 'button', 'image', 'reset', 'file', 'range', 'color'].includes(e.type));
    const group = e.parentElement && e.parentElement.closest('[role=radiogroup], [role=group], fieldset, nav[aria-label]');
    const legend = group && group.querySelector('legend');
    const groupName = group ? clean(group.getAttribute('aria-label') || (legend && legend.innerText)) : '';
    found.push({node: e, tag: e.tagName.toLowerCase(), role: e.getAttribute('role') || e.getAttribute('type'),
                text, x: box.left, y: box.top, width: box.width, height: box.height,
                form: e.form ? Array.prototype.indexOf.call(document.forms, e.form) : null,
                label: (field ? own : groupName) || null, value: field ? e.value : null});
  }
  return found.map(({node, ...rest}) => rest);
}"""

PAGE_TEXT_JS = "() => document.body ? document.body.innerText : ''"
STATE_JS = f"() => ({{elements: ({INTERACTIVE_JS})(), text: ({PAGE_TEXT_JS})(), title: document.title}})"
"""Elements, text and title in one round trip to the page (one state read per step)."""
MAX_PAGE_TEXT = 20_000
"""Characters of page text kept per observation (a long article is cut, not dropped)."""
PNG_LEVEL = 3
"""zlib level of the marked screenshot: a third faster to encode than Pillow's 6 (14 against 19 ms a
viewport here, once per set-of-marks step) for a fifth more bytes; the pixels are the same."""


@dataclass(frozen=True)
class Observation:
    """What the policy sees at one step."""

    url: str
    title: str
    tabs: list[str]
    """URL of every open tab, in order."""
    active_tab: int
    screenshot: bytes
    """PNG as the policy sees it (with numbered marks in set-of-marks mode); stored as the step's blob."""
    elements: list[Element] | None
    """Numbered elements in set-of-marks mode, None in coordinate mode."""
    page_text: str | None = None
    """Set-of-marks mode: the page's visible text, one line per block (what text-reading policies read)."""


def element_at(elements: Sequence[Element], x: float, y: float, slack: float = 0.0) -> Element | None:
    """The smallest numbered element containing the point, else the nearest one within `slack` pixels."""
    inside = [e for e in elements if e.x <= x <= e.x + e.width and e.y <= y <= e.y + e.height]
    if inside:
        return min(inside, key=lambda e: e.width * e.height)

    def distance(e: Element) -> float:
        dx = max(e.x - x, 0.0, x - e.x - e.width)
        dy = max(e.y - y, 0.0, y - e.y - e.height)
        return (dx * dx + dy * dy) ** 0.5
    near = min(elements, key=distance, default=None)
    return near if near is not None and distance(near) <= slack else None


async def screenshot(page: Page, timeout_s: float) -> bytes:
    """Viewport PNG."""
    return await page.screenshot(type="png", timeout=timeout_s * 1000)


def _lines(text: str) -> str:
    return "\n".join(line.strip() for line in text.splitlines() if line.strip())[:MAX_PAGE_TEXT]


async def page_state(page: Page) -> tuple[list[Element], str, str]:
    """(interactive elements, page text, title) of a page, read in one round trip."""
    state = await page.evaluate(STATE_JS)
    return [Element(mark=i, **item) for i, item in enumerate(state["elements"], 1)], _lines(state["text"]), state["title"]


def draw_marks(png: bytes, elements: list[Element]) -> bytes:
    """The screenshot with each element boxed and numbered (CPU work: callers on an event loop run it
    in a thread, where Pillow's decode and encode release the GIL)."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=13)
    for element in elements:
        box = (element.x, element.y, element.x + element.width, element.y + element.height)
        draw.rectangle(box, outline=(230, 30, 30), width=2)
        label = str(element.mark)
        left, top, right, bottom = draw.textbbox((element.x, element.y), label, font=font)
        draw.rectangle((left - 2, top - 1, right + 2, bottom + 1), fill=(230, 30, 30))
        draw.text((element.x, element.y), label, fill="white", font=font)
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=PNG_LEVEL)
    return out.getvalue()
