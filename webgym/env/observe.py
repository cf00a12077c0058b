"""Observation extractors: free functions of a page (BrowserGym's split).

Set-of-marks numbers the visible, topmost interactive elements and draws the numbers onto the
screenshot with Pillow, so the page's own DOM is never modified by observing it.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont
from playwright.async_api import BrowserContext, Page

from schemas.steps import Element

LISTENERS_JS = """(() => {
  if (window.__wgClicks) return;
  const kinds = new Set(['click', 'mousedown', 'mouseup', 'pointerdown', 'pointerup', 'dblclick', 'touchstart']);
  const marked = new WeakSet();
  const add = EventTarget.prototype.addEventListener;
  EventTarget.prototype.addEventListener = function (type, listener, options) {
    if (listener && kinds.has(type) && this instanceof Element) marked.add(this);
    return add.call(this, type, listener, options);
  };
  Object.defineProperty(window, '__wgClicks', {value: (e) => marked.has(e), enumerable: false});
})();"""
"""Context init script: remembers, before any page script runs, which elements get a pointer listener
through addEventListener (what jQuery, d3 and frameworks use), so INTERACTIVE_JS can offer a span that
is clickable only by script. A WeakSet lookup per element is free at observation time, where the
DevTools protocol's DOMDebugger.getEventListeners costs a round trip per element. A listener removed
later still counts (the element stays a candidate; clicking it does nothing)."""

INTERACTIVE_JS = """() => {
  const controls = 'a[href], button, input:not([type=hidden]), select, textarea, summary, label[for],' +
    '[role=button], [role=link], [role=checkbox], [role=radio], [role=tab], [role=menuitem], [role=option],' +
    '[role=combobox], [role=textbox], [onclick], [contenteditable=true],' +
    '[role=switch], [role=treeitem], [role=menuitemcheckbox], [role=menuitemradio], [role=listbox],' +
    '[role=searchbox], [role=spinbutton], [contenteditable=""], [contenteditable=plaintext-only]';
  const selector = controls + ', [tabindex]:not([tabindex="-1"])';
  const roles = new Set(['checkbox', 'radio', 'switch', 'tab', 'option', 'menuitem', 'menuitemcheckbox',
    'menuitemradio', 'treeitem', 'listbox', 'combobox', 'slider', 'spinbutton', 'textbox', 'searchbox', 'link', 'button']);
  const submitWords = /^(submit|log ?in|sign ?in|sign ?up|register|send|search|go|ok|continue|next|save|apply|confirm|done|post|reply|forward|enter)\\b/i;
  const listened = window.__wgClicks || (() => false);
  // A link that wraps has several boxes; the middle of their union may be outside all of them.
  const first = (node) => node.getClientRects().length ? node.getClientRects()[0] : node.getBoundingClientRect();
  const clean = (s) => (s || '').trim().replace(/\\s+/g, ' ').slice(0, 80);
  const isField = (e) => e.tagName === 'TEXTAREA' || e.tagName === 'SELECT' || (e.tagName === 'INPUT'
    && !['checkbox', 'radio', 'submit', 'button', 'image', 'reset', 'file', 'range', 'color'].includes(e.type));
  const byIds = (ids) => ids.split(/\\s+/).map(id => document.getElementById(id)).filter(Boolean)
    .map(n => n.innerText || n.textContent).join(' ');
  // An input no label names is named by the nearest short text left of it on its row, or just above it,
  // searched in its own container first and then outwards, no further than the first one holding other fields.
  // A sentence (more than six words: the task's instruction above a form) names no field.
  const nearby = (e, r) => {
    let best = '', bestGap = Infinity;
    for (let box = e.parentElement, depth = 0; box && box !== document.documentElement && depth < 4; box = box.parentElement, depth++) {
      const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
      for (let t = walker.nextNode(); t; t = walker.nextNode()) {
        const words = t.data.trim();
        const owner = t.parentElement;
        if (!words || words.length > 60 || words.split(/\\s+/).length > 6 || !owner || owner.closest('button, a, select, textarea, option, script, style, [role=button], [role=link]')) continue;
        const label = owner.closest('label');
        if (label && label.control && label.control !== e) continue;
        let block = owner;  // a label is short: a word of a sentence or paragraph (an instruction) is none
        while (block.parentElement && getComputedStyle(block).display.startsWith('inline')) block = block.parentElement;
        if ((block.innerText || '').trim().length > 60) continue;
        const range = document.createRange();
        range.selectNodeContents(t);
        const q = range.getBoundingClientRect();
        if (q.width < 1 || q.height < 1) continue;
        let gap = Infinity;
        if (q.right <= r.left + 2 && Math.min(q.bottom, r.bottom) - Math.max(q.top, r.top) > 0 && r.left - q.right <= 150) gap = r.left - q.right;
        else if (q.bottom <= r.top + 2 && Math.abs(q.left - r.left) <= 40 && r.top - q.bottom <= 40) gap = r.top - q.bottom;
        if (gap < bestGap) { best = words; bestGap = gap; }
      }
      if (best || Array.from(box.querySelectorAll('input, textarea, select')).some(f => f !== e && isField(f))) break;
    }
    return best;
  };
  // An icon with no text (a trash can drawn by CSS) is named by its image's file name or its class words.
  // A box with neither (a colour swatch) is named by its background colour: the CSS name where it is one,
  // else the hue's family ("shades of red"), greys by lightness. A drawn SVG shape is named by its fill
  // colour and its kind ("yellow circle").
  const shapes = {rect: 'rectangle', circle: 'circle', ellipse: 'ellipse', polygon: 'polygon'};
  const shape = (e) => e.tagName === 'polygon' && (e.getAttribute('points') || '').trim().split(/[\\s,]+/).length === 6
    ? 'triangle' : shapes[e.tagName] || '';
  const icon = (e) => {
    const image = e.tagName === 'IMG' ? e.src : (getComputedStyle(e).content.match(/url\\("?([^")]*)/) || [])[1];
    const words = [image ? image.split('/').pop().split('.')[0] : colour(e), shape(e),  // class selected: a state
                   ...Array.from(e.classList).filter(c => /^[a-z-]+$/i.test(c) && c !== 'selected')];
    return [...new Set(words.filter(Boolean))].slice(0, 3).join(' ').replace(/[-_]/g, ' ');
  };
  const named = {'255,0,0': 'red', '0,128,0': 'green', '0,0,255': 'blue', '255,255,0': 'yellow', '255,165,0': 'orange',
    '128,0,128': 'purple', '255,192,203': 'pink', '0,255,255': 'cyan', '255,0,255': 'magenta', '0,255,0': 'lime',
    '128,128,0': 'olive', '0,0,128': 'navy', '128,0,0': 'maroon', '0,128,128': 'teal', '165,42,42': 'brown',
    '192,192,192': 'silver', '128,128,128': 'grey', '0,0,0': 'black', '255,255,255': 'white'};
  const colour = (e) => {
    if (isField(e) || e.querySelector('img, svg')) return '';  // an empty field is its label's, not a swatch
    const drawn = e instanceof SVGGeometryElement || e instanceof SVGTextContentElement;  // not an <svg> or <g>
    const paint = drawn ? getComputedStyle(e).fill : getComputedStyle(e).backgroundColor;
    const rgba = (paint.match(/[\\d.]+/g) || []).map(Number);
    if (rgba.length < 3 || (rgba.length > 3 && rgba[3] < 0.5)) return '';
    const css = named[rgba.slice(0, 3).join()];
    if (css) return css;
    const [r, g, b] = rgba.map(v => v / 255), max = Math.max(r, g, b), min = Math.min(r, g, b);
    const light = (max + min) / 2, chroma = max - min;
    const saturation = chroma ? chroma / (1 - Math.abs(2 * light - 1)) : 0;
    if (saturation < 0.2 || light < 0.08 || light > 0.95) return light < 0.2 ? 'black' : light > 0.85 ? 'white' : 'grey';
    const hue = (max === r ? ((g - b) / chroma + 6) % 6 : max === g ? (b - r) / chroma + 2 : (r - g) / chroma + 4) * 60;
    const families = [[15, 'red'], [45, 'orange'], [70, 'yellow'], [165, 'green'], [195, 'cyan'], [260, 'blue'],
                      [290, 'purple'], [345, 'pink'], [360, 'red']];
    return families.find(([upTo]) => hue < upTo)[1];
  };
  const control = (e, field) => {
    const role = (e.getAttribute('role') || '').toLowerCase();
    if (roles.has(role)) return role;
    if (e.tagName === 'INPUT' && (e.type === 'checkbox' || e.type === 'radio')) return e.type;
    if (e.tagName === 'SELECT') return e.multiple ? 'listbox' : 'select';  // ARIA's role for a multiple select
    if (field || e.isContentEditable) return 'textbox';
    if (e.form && (e.type === 'submit' || e.type === 'image')) return 'submit';
    if (e.tagName === 'A' && e.hasAttribute('href')) return 'link';
    if (e.tagName === 'BUTTON' || e.tagName === 'SUMMARY' || (e.tagName === 'INPUT' && ['button', 'reset'].includes(e.type))) return 'button';
    return null;
  };
  // A day of a calendar (a cell holding only a day's number, in a table whose head names the seven days of the
  // week) is named by its full date, "December 30, 2016": the month and year come from the table's caption or the
  // nearest text above it (a date picker's title), so a task's date can name the day it means.
  const weekday = /^(mo|tu|we|th|fr|sa|su)/i;
  const monthYear = /\\b((?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*)\\.?\\s+(\\d{4})\\b/;
  const calendarDay = (e, text) => {
    const cell = /^\\d{1,2}$/.test(text) ? e.closest('td') : null;
    const table = cell && cell.closest('table');
    const head = table && (table.tHead ? table.tHead.rows[0] : table.rows[0]);
    const days = head ? Array.from(head.cells).map(c => c.innerText.trim()) : [];
    if (days.length !== 7 || !days.every(d => weekday.test(d))) return '';
    let title = (table.caption && table.caption.innerText) || '';
    for (let n = table, depth = 0; n && depth < 3 && !monthYear.test(title); n = n.parentElement, depth++) {
      for (let s = n.previousElementSibling; s && !monthYear.test(title); s = s.previousElementSibling) {
        title = s.innerText || '';
      }
    }
    const found = title.match(monthYear);
    return found ? `${found[1]} ${Number(text)}, ${found[2]}` : '';
  };
  const flag = (e, name) => { const v = e.getAttribute(name); return v === 'true' ? true : v === 'false' ? false : null; };
  // An element that opens a popup (aria-haspopup) without saying whether it is open (jQuery UI's menu items mark
  // only their submenu) is expanded while its popup shows: the element aria-controls names, else the one after it.
  const popupShown = (e) => {
    const opens = e.getAttribute('aria-haspopup');
    if (!opens || opens === 'false') return null;
    const controlled = e.getAttribute('aria-controls');
    const popup = (controlled && document.getElementById(controlled)) || e.nextElementSibling;
    return popup ? popup.getClientRects().length > 0 && getComputedStyle(popup).visibility !== 'hidden' : null;
  };
  const body = document.body;
  const all = body ? Array.from(body.querySelectorAll('*')) : [];
  // Why each element may be acted on: native (a control), focus (only a tabindex: a menu's or a list's
  // box, which holds its items rather than being one), script (a pointer listener of its own) or
  // pointer (cursor: pointer, only the outermost element of such a subtree, and only when nothing
  // inside it is native or scripted, so a styled label or card adds no second mark for its control).
  const reason = new Map();
  const natives = new Set(body ? body.querySelectorAll(selector) : []);
  for (const e of all) {
    if (natives.has(e)) reason.set(e, e.matches(controls) ? 'native' : 'focus');
    else if (listened(e) || typeof e.onclick === 'function') reason.set(e, 'script');
  }
  // A scripted or focusable wrapper whose every word belongs to a control inside it (a widget's box around
  // its checkbox and label, a menu around its items) adds no mark: the control is clicked, and its click
  // reaches the wrapper's listener.
  const wordsOutsideControls = (e) => {
    const walker = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
    for (let t = walker.nextNode(); t; t = walker.nextNode()) {
      const inner = t.data.trim() && t.parentElement.closest('label, ' + selector);
      if (t.data.trim() && (!inner || !e.contains(inner) || inner === e)) return true;
    }
    return false;
  };
  for (const [e, why] of reason) {
    if (why !== 'native' && e.querySelector(selector) && !wordsOutsideControls(e)) reason.delete(e);
  }
  const holds = new Set();
  for (const e of reason.keys()) for (let p = e.parentElement; p && !holds.has(p); p = p.parentElement) holds.add(p);
  const pointer = new Set();
  for (const e of all) {  // document order: a parent is seen before its children
    if (getComputedStyle(e).cursor !== 'pointer') continue;
    pointer.add(e);
    if (!reason.has(e) && !holds.has(e) && !pointer.has(e.parentElement)) reason.set(e, 'pointer');
  }
  const found = [];
  for (const e of all) {
    const why = reason.get(e);
    if (!why) continue;
    const r = first(e);
    if (r.width < 2 || r.height < 2 || r.bottom < 0 || r.right < 0 || r.top > innerHeight || r.left > innerWidth) continue;
    const style = getComputedStyle(e);
    if (style.visibility === 'hidden' || style.display === 'none' || Number(style.opacity) === 0) continue;
    const cx = Math.min(Math.max(r.left + r.width / 2, 0), innerWidth - 1);
    const cy = Math.min(Math.max(r.top + r.height / 2, 0), innerHeight - 1);
    const top = document.elementFromPoint(cx, cy);
    if (top && top !== e && !e.contains(top) && !top.contains(e)) continue;
    // Inside a native control (a link's span) there is nothing more to click; inside a scripted row
    // (an e-mail in a list) its own controls (star, trash) are marks of their own.
    if (found.some(f => f.node.contains(e) && (f.why === 'native' || why === 'pointer'))) continue;
    const wrapper = e.labels && e.labels.length ? e.labels[0] : null;
    // A read-only input (a date picker's) takes no typing: it is clicked, named by its label and value.
    const editable = isField(e);
    const readonly = editable && e.tagName === 'INPUT' && e.readOnly;
    const field = editable && !readonly;
    const labelledBy = e.getAttribute('aria-labelledby');
    const own = clean((wrapper && wrapper.innerText) || (labelledBy && byIds(labelledBy)) || e.getAttribute('aria-label')
                      || e.getAttribute('placeholder') || (field || readonly ? nearby(e, r) : ''));
    // A checkbox or radio is named by its label (its value is 'on' or an id) and clicked through it.
    const toggle = e.type === 'checkbox' || e.type === 'radio';
    const box = toggle && wrapper && wrapper.contains(e) ? first(wrapper) : r;
    const chosen = e.tagName === 'SELECT' && e.selectedIndex >= 0 ? e.options[e.selectedIndex].text : '';
    const shown = toggle && own ? own : readonly ? clean([own, e.value].filter(Boolean).join(' ')) : clean(chosen
                  || (e.innerText ?? e.textContent) || e.value || e.getAttribute('aria-label')
                  || e.getAttribute('placeholder') || e.getAttribute('title') || e.getAttribute('alt') || icon(e));
    const tint = e instanceof SVGTextContentElement ? colour(e) : '';  // a drawn letter's colour
    const text = calendarDay(e, shown) || (tint && tint !== 'black' ? `${tint} ${shown}` : shown);
    const group = e.parentElement && e.parentElement.closest('[role=radiogroup], [role=group], fieldset, nav[aria-label]');
    const legend = group && group.querySelector('legend');
    const groupName = group ? clean(group.getAttribute('aria-label') || (legend && legend.innerText)) : '';
    const kind = readonly ? 'readonly' : control(e, field);
    const options = e.tagName === 'SELECT' ? Array.from(e.options).filter(o => !o.disabled && !o.hidden).map(o => clean(o.text))
                  : kind === 'listbox' ? Array.from(e.querySelectorAll('[role=option]')).map(o => clean(o.innerText)) : null;
    found.push({node: e, why, tag: e.tagName.toLowerCase(), role: e.getAttribute('role') || e.getAttribute('type'),
                text, x: box.left, y: box.top, width: box.width, height: box.height,
                form: e.form ? Array.prototype.indexOf.call(document.forms, e.form) : null,
                label: (field || readonly ? own : groupName) || null, value: field ? e.value : null, control: kind,
                checked: toggle ? e.checked : (flag(e, 'aria-checked') ?? flag(e, 'aria-pressed')),
                selected: e.tagName === 'OPTION' ? e.selected
                          : flag(e, 'aria-selected') ?? (e.classList.contains('selected') ? true : null),
                expanded: e.tagName === 'SUMMARY' ? e.parentElement.open : flag(e, 'aria-expanded') ?? popupShown(e),
                options: options && options.filter(Boolean).slice(0, 50)});
  }
  // Text fields outside any <form> that share a close container with a submit-like button (Submit, Log in,
  // Search, ...) form a group of their own, numbered after the page's forms: one fill types into them all
  // and clicks the button. The container is the button's nearest ancestor holding such a field.
  const formless = found.filter(f => f.form === null && f.control === 'textbox' && f.tag !== 'select');
  const buttons = found.filter(b => (b.control === 'button' || b.control === 'submit') && !b.node.closest('form')
                                    && submitWords.test(b.text));
  let groups = 0;
  for (const button of buttons) {
    let box = button.node.parentElement;
    for (let depth = 0; box && depth < 4 && !formless.some(f => box.contains(f.node)); depth++) box = box.parentElement;
    const fields = box ? formless.filter(f => f.form === null && box.contains(f.node)) : [];
    if (!fields.length || buttons.find(b => box.contains(b.node)) !== button) continue;
    button.form = document.forms.length + groups++;
    button.control = 'submit';
    for (const f of fields) f.form = button.form;
  }
  // Buttons and links that read alike ("Add", "Book", "☆ Save" on every item of a list) are told apart by the
  // item each sits in: the text of its largest ancestor holding none of the others, less its own text.
  const alike = new Map();
  for (const f of found) {
    if (f.label || !['button', 'link', 'submit'].includes(f.control)) continue;
    alike.set(f.text, [...(alike.get(f.text) || []), f]);
  }
  for (const same of alike.values()) {
    if (same.length < 2) continue;
    for (const f of same) {
      let item = f.node;
      const holdsAnother = (box) => same.some(o => o !== f && box.contains(o.node));
      while (item.parentElement && !holdsAnother(item.parentElement)) item = item.parentElement;
      f.label = clean((item.innerText || '').replace(f.node.innerText || '', ' ')) || null;
    }
  }
  return found.map(({node, why, ...rest}) => rest);
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


async def watch_listeners(context: BrowserContext) -> None:
    """Let observations of this context's pages see elements made clickable by script (LISTENERS_JS)."""
    await context.add_init_script(LISTENERS_JS)


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
