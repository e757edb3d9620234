"""What a person reads in the conversation is words: the answer to «что ты умеешь?» names the
tools as the catalog labels them, with «Ещё доступно:» a paragraph of its own; a status answer
says the git status, the validation and the times in words. No snake_case id, no status as the
upstream spells it and no ISO time outside a closed disclosure (the raw data stays there)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from playwright.sync_api import expect

from local.browser import AgentPage, PageStack
from sstools_agent.domain.wording import ENUM_VALUES, ISO_TIMESTAMP
from tests.support.seed import DASHBOARD_10_LINK

Tabs = Callable[[PageStack, str], AgentPage]
ENVIRONMENT_NAMES: Final = frozenset({"ss-dev", "staging", "prod"})
"""Environments' own names (some are also tiers' values): names, not statuses."""
WORD: Final = re.compile(r"(?<![\w-])[A-Za-z_]\w*(?:-[A-Za-z0-9_]+)*")
SNAKE_CASE: Final = re.compile(r"(?<![\w.])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?!\w)")


def conversation_text(tab: AgentPage) -> str:
    """What the conversation shows a person: the messages and cards as rendered (a closed
    disclosure's content is not rendered, so not in `innerText`)."""
    return tab.page.locator(".messages").inner_text()


def not_words(text: str) -> list[str]:
    """Identifiers, English statuses and ISO times in a Russian text."""
    words = set(WORD.findall(text)) - ENVIRONMENT_NAMES
    found = [f"status {w!r}" for w in sorted(words & ENUM_VALUES)]
    found += [f"id {w!r}" for w in sorted(set(SNAKE_CASE.findall(text)))]
    found += [f"time {m!r}" for m in ISO_TIMESTAMP.findall(text)]
    return found


def test_what_can_you_do_lists_the_tools_in_words(site: PageStack, tabs: Tabs):
    # Given an engineer on a page without an object
    tab = tabs(site, site.token("engineer")).open()
    # When they ask what the assistant can do
    tab.send("что ты умеешь?")
    tab.wait_answered()
    tab.screenshot("capabilities-in-words")  # before the checks: docs/page.md shows what is said
    answer = tab.by("message-assistant").last
    # Then the tools are listed as the catalog names them, never by their ids
    expect(answer).to_contain_text("Список окружений")
    expect(answer).to_contain_text("после выбора окружения: поиск дашбордов")
    assert not_words(conversation_text(tab)) == [], conversation_text(tab)
    # and «Ещё доступно:» opens a paragraph of its own, not glued into the last item of a list
    also = answer.get_by_text("Ещё доступно:")
    expect(also).to_have_count(1)
    assert also.evaluate("e => e.closest('li')") is None
    for item in answer.locator("li").all():
        assert "Ещё доступно" not in item.inner_text(), item.inner_text()


def test_a_dashboards_status_is_said_in_words(site: PageStack, tabs: Tabs):
    # Given the user came from dashboard 10 in ss-dev (git behind, validation passed)
    tab = tabs(site, site.token("engineer")).open(**DASHBOARD_10_LINK)
    # When they ask for its status
    tab.send("какой статус у этого дашборда?")
    tab.wait_answered()
    answer = tab.last_answer()
    # Then the status, the validation and the times are words (the times said in UTC)
    assert "отстаёт от удалённой ветки" in answer, answer
    assert "пройдена" in answer, answer
    assert re.search(r"\d{1,2} ноября \d\d:\d\d UTC", answer), answer
    assert not_words(conversation_text(tab)) == [], conversation_text(tab)
    # while the raw data stays behind the tool card's disclosure
    result = tab.by("tool-card").first.locator("details", has_text="Результат")
    result.locator("summary").click()
    expect(result).to_contain_text('"status": "behind"')
    tab.screenshot("dashboard-status-in-words")


def test_the_check_reads_what_the_old_answers_showed():
    old = "git-статус — behind (ветка main), валидация — passed (2026-11-11T06:00:00Z)"
    assert not_words(old) == ["status 'behind'", "status 'passed'", "time '2026-11-11T06:00'"]
    assert not_words("- show_capabilities: что я умею") == ["id 'show_capabilities'"]
    assert not_words("ss-dev, staging и prod") == []
