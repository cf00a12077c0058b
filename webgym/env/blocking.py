"""Signs that a website blocks automated agents (WebGym appendix B.2, OpenWebRL's host blacklist).

A cheap, rule-based detector over the main document's HTTP status and the page's visible text;
the judge's LLM check (blocking purpose) complements it after the episode.
"""

from __future__ import annotations

import re

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

BLOCKING_STATUS = {401: "HTTP 401", 403: "HTTP 403 Forbidden", 429: "HTTP 429 Too Many Requests",
                   451: "HTTP 451 Unavailable For Legal Reasons"}
TEXT_JS = "() => (document.title + ' ' + (document.body ? document.body.innerText : '')).slice(0, 4000)"
SIGNALS = re.compile(
    r"captcha|are you a (?:human|robot)|verify (?:that )?you are (?:a )?human|unusual traffic|access denied|"
    r"request (?:was )?blocked|bot detection|checking your browser|enable javascript and cookies to continue",
    re.I)


async def blocking_evidence(page: Page, status: int | None) -> str | None:
    """What shows the page is a block page, or None."""
    if status in BLOCKING_STATUS:
        return f"{BLOCKING_STATUS[status]} on {page.url}"
    try:
        text = await page.evaluate(TEXT_JS)
    except PlaywrightError as error:  # a failed navigation's error page replaced the document mid-read
        if "context was destroyed" not in str(error):
            raise
        await page.wait_for_load_state()
        text = await page.evaluate(TEXT_JS)
    match = SIGNALS.search(text)
    if match and len(text) < 3000:  # long pages that merely mention a captcha are content, not a block
        return f'"{match.group(0)}" on {page.url}'
    return None
