"""The page with a keyboard and a screen reader: a card that needs a decision takes the focus
(never onto «Подтвердить»; its actions one Tab away) and is announced once, by that focus; an
answer is announced when it is finished, not token by token; the headings go in order; axe-core
finds nothing serious or critical, signed out and with a card, on a desktop and on a phone."""

from __future__ import annotations

import itertools
from typing import Any, Final, Protocol

import pytest
from playwright.sync_api import ViewportSize, expect

from local.browser import DESKTOP, PHONE, AgentPage, PageStack, axe_violations
from tests.support.seed import DASHBOARD_10_LINK


class Tabs(Protocol):
    def __call__(
        self, site: PageStack, token: str, viewport: ViewportSize | None = None
    ) -> AgentPage: ...


LIVE: Final = (
    '[aria-live]:not([aria-live="off"]), [role="alert"], [role="alertdialog"], '
    '[role="status"], [role="log"]'
)
"""What a screen reader reads out by itself when it changes."""

WATCH_JS: Final = """(live) => {
    // Every focus the page moves, and every text a live region shows, from now on
    window.__focused = [];
    document.addEventListener("focusin", (e) => {
        window.__focused.push(e.target.dataset.testid || e.target.tagName.toLowerCase());
    });
    window.__spoken = [];
    const last = new Map();
    new MutationObserver((records) => {
        for (const record of records) {
            const node = record.target;
            const target = node.nodeType === 1 ? node : node.parentElement;
            const region = target && target.closest(live);
            if (!region) continue;
            const text = region.textContent.replace(/\\s+/g, " ").trim();
            if (text && last.get(region) !== text) {
                last.set(region, text);
                window.__spoken.push(text);
            }
        }
    }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def watch(tab: AgentPage) -> None:
    tab.page.evaluate(WATCH_JS, LIVE)


def spoken(tab: AgentPage) -> list[str]:
    said: list[str] = tab.page.evaluate("() => window.__spoken")
    return said


def focused(tab: AgentPage) -> list[str]:
    moved: list[str] = tab.page.evaluate("() => window.__focused")
    return moved


def test_a_card_that_needs_a_decision_takes_the_focus_once(site: PageStack, tabs: Tabs):
    # Given an admin writing in the composer
    tab = tabs(site, site.token("admin"), DESKTOP)
    tab.open(**DASHBOARD_10_LINK)
    watch(tab)
    # When their message brings the production card
    tab.send("задеплой этот дашборд в prod")
    card = tab.by("confirm-card")
    expect(card).to_be_visible()
    tab.wait_answered()
    # Then the focus is on the card (not on its «Подтвердить»), and stays there after the stream
    expect(card).to_be_focused()
    assert focused(tab).count("confirm-card") == 1, focused(tab)
    assert "confirm-accept" not in focused(tab)
    # and it is said once, by that focus: its title and its question, from no live region
    described: dict[str, Any] = card.evaluate(
        """(el, live) => ({
            live: el.closest(live) !== null || el.querySelector(live) !== null,
            name: document.getElementById(el.getAttribute("aria-labelledby"))?.textContent,
            description: document.getElementById(el.getAttribute("aria-describedby"))?.textContent,
        })""",
        LIVE,
    )
    assert described["live"] is False
    assert "Деплой дашборда #10" in (described["name"] or "")
    assert "prod" in (described["description"] or "")
    assert not [text for text in spoken(tab) if "Деплой дашборда #10" in text], spoken(tab)
    # Its actions are one Tab away
    tab.page.keyboard.press("Tab")
    expect(tab.by("confirm-accept")).to_be_focused()
    tab.page.keyboard.press("Tab")
    expect(tab.by("confirm-deny")).to_be_focused()
    # and once answered, the conversation goes on in the composer
    tab.page.keyboard.press("Enter")
    expect(card).to_have_attribute("data-state", "denied")
    tab.wait_answered()
    expect(tab.by("composer")).to_be_focused()
    assert site.deploys() == 0


def test_an_answer_is_announced_once_when_it_is_finished(site: PageStack, tabs: Tabs):
    # Given an answer streamed token by token
    site.model.knobs.token_delay_s = 0.03
    tab = tabs(site, site.token("engineer"), DESKTOP)
    tab.open(**DASHBOARD_10_LINK)
    watch(tab)
    tab.send("какой статус у этого дашборда?")
    tab.wait_answered()
    answer = " ".join(tab.last_answer().split())
    assert answer
    # Then no bubble is read out as it grows: the finished answer is said once, whole
    bubbles = tab.by("message-assistant")
    for index in range(bubbles.count()):
        inside_live = bubbles.nth(index).evaluate(
            "(el, live) => el.closest(live) !== null || el.querySelector(live) !== null", LIVE
        )
        assert inside_live is False
    said = [text for text in spoken(tab) if "агент отвечает" not in text]
    assert said == [answer], said


def test_the_headings_go_in_order(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("admin"), DESKTOP)
    tab.open(**DASHBOARD_10_LINK)
    tab.send("задеплой этот дашборд в prod")
    expect(tab.by("confirm-card")).to_be_visible()
    tab.wait_answered()
    levels: list[int] = tab.page.evaluate(
        """() => [...document.querySelectorAll("h1, h2, h3, h4, h5, h6")]
            .filter((h) => !h.closest("[aria-hidden=true], [hidden], [inert]"))
            .map((h) => Number(h.tagName[1]))"""
    )
    assert levels[0] == 1, levels
    assert levels.count(1) == 1, levels
    assert all(b <= a + 1 for a, b in itertools.pairwise(levels)), levels


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=lambda v: v["width"])
def test_axe_finds_nothing_serious_signed_out(site: PageStack, tabs: Tabs, viewport: ViewportSize):
    tab = tabs(site, "", viewport)
    tab.open(**DASHBOARD_10_LINK)
    expect(tab.by("demo-signin")).to_be_visible()
    assert axe_violations(tab.page) == []


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=lambda v: v["width"])
def test_axe_finds_nothing_serious_around_a_card(
    site: PageStack, tabs: Tabs, viewport: ViewportSize
):
    tab = tabs(site, site.token("admin"), viewport)
    tab.open(**DASHBOARD_10_LINK)
    assert axe_violations(tab.page) == []
    tab.send("задеплой этот дашборд в prod")
    expect(tab.by("confirm-card")).to_be_visible()
    tab.wait_answered()
    assert axe_violations(tab.page) == []
    tab.by("confirm-edit").click()
    expect(tab.page.locator(".args-editor")).to_be_visible()
    assert axe_violations(tab.page) == []
    if viewport == PHONE:
        tab.by("conversations-toggle").click()
        expect(tab.by("sidebar")).to_be_visible()
        assert axe_violations(tab.page) == []
