"""`make bench` (part 4): the /agent page in headless Chromium against the local stack.

Same run, same browser, same stack (moto in its own process, the sample upstream, the stand-in
model, the page as deployed: `web/dist`):
- the seed's SC-002: from a `confirm_required` event's arrival in the page to the card painted with
  its risk classification and its plan (a staging deploy's: the dashboard, what staging holds
  now; the page's own `performance` marks, after Svelte's update and the next animation frame),
  p50 / p95 over CARDS cards; the seed asks <= 200 ms, we aim at <= 50 ms;
- from submit to the first token painted, beside submit to the first token's arrival in the page
  (both the page's marks, the same turns): their difference is the page's own share;
- the page's JS and CSS, gzipped (aim: <= 80 KB of JS).
"""

from __future__ import annotations

import gzip
import statistics
import sys
from pathlib import Path
from typing import Final

from playwright.sync_api import Page, sync_playwright

from local.agent_stack import local_aws_and_upstream
from local.browser import (
    CHROMIUM_ARGS,
    AgentPage,
    chromium_executable,
    page_stack,
    signed_in_context,
)
from local.page import DEPLOYABLE_BUILD

CARDS: Final = 30
TURNS: Final = 20
CARD_QUERY: Final = "objectType=dashboard&objectId=10&envId=ss-dev&route=/dashboards/10"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def _marks(page: Page, prefix: str) -> dict[str, float]:
    found: dict[str, float] = page.evaluate(
        """(prefix) => Object.fromEntries(performance.getEntriesByType("mark")
            .filter((m) => m.name.startsWith(prefix)).map((m) => [m.name.slice(prefix.length),
            m.startTime]))""",
        prefix,
    )
    return found


def card_paint_times(tab: AgentPage, origin: str) -> list[float]:
    """Milliseconds from each card's event arriving to the card painted, one card per visit."""
    times = []
    for _ in range(CARDS):
        tab.page.goto(f"{origin}/agent?{CARD_QUERY}")
        tab.wait_ready()
        tab.send("задеплой этот дашборд в staging")
        tab.by("confirm-card").wait_for()
        tab.page.wait_for_function(
            "() => performance.getEntriesByType('mark')"
            ".some((m) => m.name.startsWith('confirm-painted:'))"
        )
        received, painted = (
            _marks(tab.page, "confirm-received:"),
            _marks(tab.page, "confirm-painted:"),
        )
        [card] = painted
        times.append(painted[card] - received[card])
    return times


def first_token_times(tab: AgentPage, origin: str) -> tuple[list[float], list[float]]:
    """(submit -> first token painted, submit -> first token received), in ms, per turn."""
    painted, received = [], []
    for _ in range(TURNS):
        tab.page.goto(f"{origin}/agent?{CARD_QUERY}")
        tab.wait_ready()
        tab.send("какой статус у этого дашборда?")
        tab.wait_answered()
        sent = _marks(tab.page, "submit-sent:")
        shown = _marks(tab.page, "first-token-painted:")
        arrived = _marks(tab.page, "first-token-received:")
        [turn] = shown
        painted.append(shown[turn] - sent[turn])
        received.append(arrived[turn] - sent[turn])
    return painted, received


def bundle_sizes(build: Path) -> tuple[int, int]:
    """(JS, CSS) bytes of the built page, gzipped at level 9 as a CDN would serve them."""
    sizes = {"js": 0, "css": 0}
    for asset in (build / "assets").iterdir():
        kind = asset.suffix.lstrip(".")
        if kind in sizes:
            sizes[kind] += len(gzip.compress(asset.read_bytes(), compresslevel=9))
    return sizes["js"], sizes["css"]


def main() -> int:
    if not (DEPLOYABLE_BUILD / "index.html").is_file():
        print(f"{DEPLOYABLE_BUILD} is missing: `make web-test` builds it", file=sys.stderr)
        return 1
    with (
        local_aws_and_upstream("bench") as stack,
        page_stack(stack, build=DEPLOYABLE_BUILD, token_delay_s=0.0) as site,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(
            executable_path=chromium_executable(), args=list(CHROMIUM_ARGS)
        )
        tab = AgentPage(
            signed_in_context(browser, site.token("engineer")).new_page(), site.url, "bench"
        )
        cards = card_paint_times(tab, site.url)
        painted, received = first_token_times(tab, site.url)
        browser.close()
    js, css = bundle_sizes(DEPLOYABLE_BUILD)
    p50, p95 = statistics.median(cards), percentile(cards, 0.95)
    print(f"== The /agent page in headless Chromium ({CARDS} cards, {TURNS} turns) ==")
    print(
        f"  SC-002 card painted after its event   p50 {p50:6.1f} ms   p95 {p95:6.1f} ms   "
        f"max {max(cards):6.1f} ms   (seed <= 200 ms: p95 at {p95 / 200:4.2f} of it; aim 50 ms)"
    )
    token_p50, arrival_p50 = statistics.median(painted), statistics.median(received)
    print(
        f"  submit -> first token painted          p50 {token_p50:6.1f} ms   "
        f"p95 {percentile(painted, 0.95):6.1f} ms"
    )
    print(
        f"  submit -> first token received         p50 {arrival_p50:6.1f} ms   "
        f"(the page's own share: {token_p50 - arrival_p50:5.1f} ms, "
        f"ratio {token_p50 / arrival_p50:4.2f})"
    )
    print(
        f"  bundle gzipped                         JS {js / 1024:5.1f} KB (aim <= 80)   "
        f"CSS {css / 1024:5.1f} KB"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
