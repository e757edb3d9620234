"""The conversation list and a new conversation, as a person reads them: each row says what the
conversation was about (its object in words, the environment, the first request, when; no ISO
time), the search narrows the list by any of these, and a new conversation greets with three
questions for the page's object that this user's role can have answered."""

from __future__ import annotations

import re
from typing import Protocol

from playwright.sync_api import Locator, ViewportSize, expect

from local.browser import DESKTOP, PHONE, AgentPage, PageStack, broken_words, overflowing
from tests.support.seed import DASHBOARD_10_LINK, DATASET_15

DATASET_15_LINK = {key: value for key, value in DATASET_15.items() if key != "contextVersion"}
ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
TODAY = r"сегодня, \d{2}:\d{2}"
ANALYST_ON_A_DASHBOARD = [
    "Какое здоровье у этого дашборда?",
    "Проверь этот дашборд LLM-валидацией",
    "Найди другие дашборды в этом окружении",
]


class Tabs(Protocol):
    def __call__(
        self, site: PageStack, token: str, viewport: ViewportSize | None = None
    ) -> AgentPage: ...


def rows(tab: AgentPage) -> Locator:
    return tab.by("sidebar").get_by_test_id("conversation-item")


def search(tab: AgentPage, text: str) -> None:
    tab.by("conversation-search").fill(text)


def test_rows_say_what_each_conversation_was_about_and_the_search_narrows_them(
    site: PageStack, tabs: Tabs
):
    # Given an analyst who asked on dashboard 10 (ss-dev) and then on dataset 15 (staging)
    tab = tabs(site, site.token("analyst"), DESKTOP)
    tab.open(**DASHBOARD_10_LINK)
    tab.send("какой статус у этого дашборда?")
    tab.wait_answered()
    tab.open(**DATASET_15_LINK)
    tab.send("где используется этот датасет?")
    tab.wait_answered()
    # Then each row reads as the request, the object in words, the environment and when
    expect(rows(tab)).to_have_count(2)
    dataset, dashboard = rows(tab).nth(0), rows(tab).nth(1)
    expect(dashboard.get_by_test_id("conversation-request")).to_have_text(
        "какой статус у этого дашборда?"
    )
    expect(dashboard.get_by_test_id("conversation-object")).to_have_text(
        "Дашборд «Отчёт по энергопотреблению» (#10)"
    )
    expect(dashboard.get_by_test_id("conversation-where")).to_have_text(
        re.compile(rf"^ss-dev · {TODAY}$")
    )
    expect(dataset.get_by_test_id("conversation-object")).to_have_text("Датасет #15")
    expect(dataset.get_by_test_id("conversation-where")).to_have_text(
        re.compile(rf"^staging · {TODAY}$")
    )
    sidebar_text = tab.by("sidebar").inner_text()
    assert not ISO_TIME.search(sidebar_text), sidebar_text
    assert overflowing(tab.page) == []
    tab.screenshot("list-desktop")
    # When they search by the object's type, by its name, by the environment and request words
    search(tab, "датасет")
    expect(rows(tab)).to_have_count(1)
    expect(rows(tab).get_by_test_id("conversation-request")).to_have_text(
        "где используется этот датасет?"
    )
    search(tab, "энергопотреблению")
    expect(rows(tab)).to_have_count(1)
    expect(rows(tab).get_by_test_id("conversation-request")).to_have_text(
        "какой статус у этого дашборда?"
    )
    search(tab, "статус ss-dev")
    expect(rows(tab)).to_have_count(1)
    search(tab, "статус staging")
    expect(rows(tab)).to_have_count(0)
    expect(tab.by("conversations-empty")).to_have_text(
        "Ничего не найдено по запросу «статус staging»"
    )
    tab.screenshot("search-empty-desktop")
    search(tab, "")
    expect(rows(tab)).to_have_count(2)


def test_a_new_conversation_greets_with_questions_for_the_page_and_the_role(
    site: PageStack, tabs: Tabs
):
    # Given an analyst and an engineer come from dashboard 10
    analyst = tabs(site, site.token("analyst"), DESKTOP)
    analyst.open(**DASHBOARD_10_LINK)
    engineer = tabs(site, site.token("engineer"), DESKTOP)
    engineer.open(**DASHBOARD_10_LINK)
    # Then the analyst is greeted with three questions about the dashboard, none of them a deploy
    expect(analyst.by("greeting")).to_contain_text("Чем помочь?")
    expect(analyst.by("starter-question")).to_have_text(ANALYST_ON_A_DASHBOARD)
    # and the engineer is also offered a deploy plan
    expect(engineer.by("starter-question")).to_have_count(3)
    expect(engineer.by("starter-question").nth(1)).to_have_text(
        "Подготовь деплой этого дашборда в staging"
    )
    analyst.screenshot("greeting-desktop")
    # When the analyst clicks the first one, it is asked, and answered with the dashboard's health
    analyst.by("starter-question").first.click()
    expect(analyst.by("message-user")).to_have_text(ANALYST_ON_A_DASHBOARD[0])
    analyst.wait_answered()
    expect(analyst.tool_card("get_health_summary")).to_have_count(1)
    expect(analyst.page.get_by_test_id("permission-card")).to_have_count(0)
    expect(analyst.by("greeting")).to_have_count(0)
    # And a page with no object greets with general questions
    analyst.open()
    expect(analyst.by("starter-question").first).to_have_text("Что ты умеешь?")
    expect(analyst.by("starter-question")).to_have_count(3)


def test_on_a_phone_the_greeting_and_the_rows_fit(site: PageStack, tabs: Tabs):
    # Given an analyst on a phone, come from dataset 15
    tab = tabs(site, site.token("analyst"), PHONE)
    tab.open(**DATASET_15_LINK)
    # Then the greeting's questions are about the dataset, and fit the screen
    expect(tab.by("starter-question")).to_have_count(3)
    expect(tab.by("starter-question").first).to_have_text("Из каких таблиц собран этот датасет?")
    assert broken_words(tab.page) == []
    assert overflowing(tab.page) == []
    tab.screenshot("greeting-phone")
    # When one is asked and the drawer opened, its row reads whole within the drawer
    tab.by("starter-question").nth(1).click()
    tab.wait_answered()
    tab.by("conversations-toggle").click()
    expect(rows(tab)).to_have_count(1)
    expect(rows(tab).get_by_test_id("conversation-object")).to_have_text("Датасет #15")
    expect(rows(tab).get_by_test_id("conversation-where")).to_have_text(
        re.compile(rf"^staging · {TODAY}$")
    )
    tab.page.wait_for_function(
        "() => document.querySelector('[data-testid=sidebar]').getBoundingClientRect().left >= 0"
    )
    assert overflowing(tab.page) == []
    tab.screenshot("list-phone")
