"""The page's layout from 320 to 1920 px wide, as a person sees it: the sign-in and the chat
take the window (never a sidebar's track), no word is cut across lines, nothing sticks out past
the edge; on a phone the conversations are a drawer with «Новый разговор», and the header and the
context banner leave the screen to the conversation."""

from __future__ import annotations

from typing import Protocol

import pytest
from playwright.sync_api import ViewportSize, expect

from local.browser import (
    DESKTOP,
    NARROWEST,
    PHONE,
    AgentPage,
    PageStack,
    broken_words,
    overflowing,
)
from tests.support.seed import DASHBOARD_10_LINK

WIDEST = ViewportSize(width=1920, height=1080)
SLID_IN = "() => document.querySelector('[data-testid=sidebar]').getBoundingClientRect().left >= 0"


class Tabs(Protocol):
    def __call__(
        self, site: PageStack, token: str, viewport: ViewportSize | None = None
    ) -> AgentPage: ...


def assert_laid_out(tab: AgentPage) -> None:
    """Nothing cut letter by letter, nothing past the right edge."""
    assert broken_words(tab.page) == []
    assert overflowing(tab.page) == []


@pytest.mark.parametrize("viewport", [WIDEST, DESKTOP, PHONE, NARROWEST], ids=lambda v: v["width"])
def test_the_sign_in_and_the_chat_behind_it_take_the_window(
    site: PageStack, tabs: Tabs, viewport: ViewportSize
):
    # Given nobody is signed in (the local build's demo sign-in)
    tab = tabs(site, "", viewport)
    tab.open(**DASHBOARD_10_LINK)
    expect(tab.by("demo-signin")).to_be_visible()
    # Then the chat behind it spans the window, not the sidebar's 260 px track
    chat = tab.page.locator("main.chat").bounding_box()
    assert chat is not None
    assert chat["width"] >= viewport["width"] - 1, chat
    signin = tab.by("demo-signin").bounding_box()
    assert signin is not None
    assert signin["x"] >= 0, signin
    assert signin["x"] + signin["width"] <= viewport["width"], signin
    assert_laid_out(tab)
    tab.screenshot(f"signin-{viewport['width']}")


@pytest.mark.parametrize("viewport", [WIDEST, DESKTOP, NARROWEST], ids=lambda v: v["width"])
def test_a_card_and_its_edit_form_fit_the_window(
    site: PageStack, tabs: Tabs, viewport: ViewportSize
):
    tab = tabs(site, site.token("engineer"), viewport)
    tab.open(**DASHBOARD_10_LINK)
    tab.send("задеплой этот дашборд в staging")
    expect(tab.by("confirm-card")).to_be_visible()
    tab.wait_answered()
    assert_laid_out(tab)
    tab.by("confirm-edit").click()
    expect(tab.page.locator(".args-editor")).to_be_visible()
    assert_laid_out(tab)
    tab.screenshot(f"card-edit-{viewport['width']}")


def test_on_a_phone_the_header_is_short_and_the_history_is_a_drawer(site: PageStack, tabs: Tabs):
    # Given an engineer on a phone, come from dashboard 10
    tab = tabs(site, site.token("engineer"), PHONE)
    tab.open(**DASHBOARD_10_LINK)
    # Then the header and the context banner leave the screen to the conversation
    header = tab.page.locator("header.topbar").bounding_box()
    banner = tab.by("context-banner").bounding_box()
    assert header is not None
    assert banner is not None
    assert header["height"] + banner["height"] <= 0.14 * PHONE["height"], (header, banner)
    expect(tab.by("context-banner")).to_contain_text("Отчёт по энергопотреблению")
    # and the history is closed until asked for
    expect(tab.by("sidebar")).not_to_be_visible()
    tab.send("задеплой этот дашборд в staging")
    expect(tab.by("confirm-card")).to_be_visible()
    tab.wait_answered()
    assert_laid_out(tab)
    tab.screenshot("phone-card")
    first = tab.conversation_id()
    # When they open the conversations
    toggle = tab.by("conversations-toggle")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    drawer = tab.by("sidebar")
    expect(drawer).to_be_visible()
    expect(tab.by("new-conversation")).to_be_focused()
    tab.page.wait_for_function(SLID_IN)
    expect(drawer.locator(f'[data-testid="conversation-item"][data-id="{first}"]')).to_be_visible()
    assert_laid_out(tab)
    tab.screenshot("phone-drawer")
    # «Новый разговор» starts one and gives the screen back
    tab.by("new-conversation").click()
    expect(drawer).not_to_be_visible()
    expect(tab.by("confirm-card")).to_have_count(0)
    assert "#c=" not in tab.page.url
    # and the first conversation is one tap away again
    toggle.click()
    drawer.locator(f'[data-testid="conversation-item"][data-id="{first}"] button.open').click()
    expect(drawer).not_to_be_visible()
    expect(tab.by("confirm-card")).to_have_count(1)
    assert tab.conversation_id() == first
    # Escape closes the drawer and the focus goes back to where it was opened from
    toggle.click()
    expect(drawer).to_be_visible()
    tab.page.keyboard.press("Escape")
    expect(drawer).not_to_be_visible()
    expect(toggle).to_be_focused()


def test_on_a_phone_the_edit_form_fits(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer"), PHONE)
    tab.open(**DASHBOARD_10_LINK)
    tab.send("задеплой этот дашборд в staging")
    expect(tab.by("confirm-card")).to_be_visible()
    tab.wait_answered()
    tab.by("confirm-edit").click()
    expect(tab.page.locator(".args-editor")).to_be_visible()
    assert_laid_out(tab)
    for button in ("confirm-deny", "confirm-edit"):
        box = tab.by(button).bounding_box()
        assert box is not None
        assert box["x"] + box["width"] <= PHONE["width"], (button, box)
    tab.screenshot("phone-edit")


def test_on_a_desktop_the_history_stays_beside_the_chat(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer"), DESKTOP)
    tab.open(**DASHBOARD_10_LINK)
    expect(tab.by("sidebar")).to_be_visible()
    expect(tab.by("new-conversation")).to_be_visible()
    expect(tab.by("conversations-toggle")).not_to_be_visible()
    header = tab.page.locator("header.topbar").bounding_box()
    assert header is not None
    assert header["height"] <= 64, header
    assert_laid_out(tab)
