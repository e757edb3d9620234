"""What the page tells the user when things go wrong: errors with their wording and a retry, a
tool's failure on its card, Stop, a reload mid-answer, a second tab, an unreachable backend, an
expired session, hostile text; and the conversations sidebar."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import httpx
from playwright.sync_api import Route, expect

from local.browser import AgentPage, PageStack, another_tab
from local.fault_injection import Fault, FaultKind
from tests.support.seed import DASHBOARD_10, DASHBOARD_10_LINK

Tabs = Callable[[PageStack, str], AgentPage]
STATUS = "какой статус у этого дашборда?"
LONG = "расскажи подробно"
FIRST_TOOL = "Начало ответа."
TAIL = "Конец ответа."
LONG_ANSWER = " ".join([FIRST_TOOL, *(f"слово{i}" for i in range(120)), TAIL])
"""What the model says to any message in the stream's tests (`long_answers`): 123 words, streamed
word by word, whose first and last words a test can wait for."""
"""Where that answer's last paragraph starts (the tools kept out of this page)."""


def test_a_model_outage_shows_the_error_card_and_retry_answers(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer")).open(**DASHBOARD_10_LINK)
    site.model.knobs.failures_left = 1
    tab.send(STATUS)
    card = tab.by("error-card")
    expect(card).to_have_attribute("data-code", "LLM_UNAVAILABLE")
    expect(card).to_contain_text("Модель недоступна")
    tab.wait_answered()  # the failed stream's end, before the retry's own
    tab.screenshot("error-llm")
    tab.by("error-retry").click()
    tab.wait_answered()
    assert DASHBOARD_10["objectName"] in tab.last_answer()


def test_no_service_token_is_a_tool_failure_card_and_retry_answers(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer")).open(**DASHBOARD_10_LINK)
    site.service_tokens.available = False
    tab.send(STATUS)
    expect(tab.by("error-card")).to_have_attribute("data-code", "TOOL_FAILURE")
    tab.wait_answered()  # the refused stream's end, before the retry's own
    site.service_tokens.available = True
    tab.by("error-retry").click()
    tab.wait_answered()
    assert DASHBOARD_10["objectName"] in tab.last_answer()
    expect(tab.by("error-card")).to_have_count(0)


def test_an_upstream_failure_shows_a_crossed_tool_card_with_the_detail(site: PageStack, tabs: Tabs):
    # Given the upstream answers 500 to every dashboard read (a read: retried once, then given up)
    for path in ("/api/environments/ss-dev/dashboards", "/api/environments/ss-dev/health"):
        site.stack.upstream.plan.add("GET", path, Fault(FaultKind.STATUS, status=500, times=None))
    tab = tabs(site, site.token("engineer")).open(**DASHBOARD_10_LINK)
    tab.send(STATUS)
    tab.wait_answered()
    card = tab.by("tool-card").first
    expect(card).to_have_attribute("data-state", "error")
    # What happened and what to do, in words; the upstream's own words behind «Подробности»
    advice = card.get_by_test_id("tool-error")
    expect(advice).to_contain_text("ss-tools ответил ошибкой, результата нет")
    assert not re.search(r"TOOL_FAILURE|upstream|[a-z]+_[a-z]+", advice.inner_text())
    detail = card.get_by_test_id("tool-error-detail")
    expect(detail).not_to_have_attribute("open", "")
    detail.locator("summary").click()
    expect(detail).to_contain_text("500")
    # and it is said once: the answer does not repeat the card's sentence
    for bubble in tab.by("message-assistant").all():
        assert "результата нет" not in bubble.inner_text(), bubble.inner_text()
    tab.screenshot("tool-error")


def test_a_failed_read_offers_retry_which_runs_that_read_again(site: PageStack, tabs: Tabs):
    # Given the upstream answers 503 to every read of the environments
    plan = site.stack.upstream.plan
    read = ("GET", "/api/environments")
    plan.add(*read, Fault(FaultKind.STATUS, status=503, times=None))
    tab = tabs(site, site.token("engineer")).open()  # a page with no object lists environments
    tab.send("какие есть окружения?")
    tab.wait_answered()
    # Then the failed read's card says what happened in words and offers «Повторить»
    card = tab.tool_card("list_environments").first
    expect(card).to_have_attribute("data-state", "error")
    expect(card.get_by_test_id("tool-error")).to_contain_text("ss-tools ответил ошибкой")
    retry = card.get_by_test_id("tool-retry")
    expect(retry).to_have_text("Повторить")
    tab.screenshot("read-retry-offered")
    before = plan.counts()
    # When the upstream is back and the user clicks «Повторить»
    plan.clear()
    retry.click()
    tab.wait_answered()
    # Then that read ran once more, nothing else was sent (no write, no other read) ...
    assert plan.counts() == {" ".join(read): 1}, before
    assert before == {" ".join(read): before[" ".join(read)]}
    # ... and its result is in the conversation, the failed card no longer offering a repeat
    cards = tab.tool_card("list_environments")
    expect(cards).to_have_count(2)
    expect(cards.last).to_have_attribute("data-state", "done")
    expect(retry).to_be_disabled()
    assert "ss-dev" in tab.last_answer()
    tab.screenshot("read-retry-done")


def test_a_write_that_may_have_applied_offers_its_status_check_never_retry(
    site: PageStack, tabs: Tabs
):
    # Given a deploy that the user confirms and the upstream answers 500 (it may have applied)
    plan = site.stack.upstream.plan
    plan.add("POST", "/api/dashboards/deploy", Fault(FaultKind.STATUS, status=500, times=None))
    tab = tabs(site, site.token("engineer")).open(**DASHBOARD_10_LINK)
    tab.send("задеплой дашборд 10 в staging")
    tab.wait_answered()  # the card's stream
    tab.by("confirm-accept").click()
    tab.wait_answered()
    card = tab.tool_card("deploy_dashboard").last
    expect(card).to_contain_text("изменение могло примениться")
    # Then its card has no «Повторить» (a write is never repeated by a click) but offers to
    # check its status
    expect(card.get_by_test_id("tool-retry")).to_have_count(0)
    check = card.get_by_test_id("tool-check-status")
    expect(check).to_contain_text("Проверить статус")
    tab.screenshot("write-status-check-offered")
    deploys = site.deploys()
    plan.clear()
    # When they click it
    check.click()
    tab.wait_answered()
    # Then the dashboard is read where the deploy went, and the deploy was not sent again
    expect(tab.tool_card("search_dashboards").last).to_have_attribute("data-state", "done")
    assert plan.counts() == {"GET /api/environments/staging/dashboards": 1}
    assert deploys >= 1
    assert "staging" in tab.last_answer()
    tab.screenshot("write-status-checked")


def test_stop_ends_the_answer_and_the_conversation_is_free_again(site: PageStack, tabs: Tabs):
    # the answer holds after its first tool's name for a minute: only a stop can end it sooner
    site.model.knobs.hold_after = FIRST_TOOL
    site.model.knobs.answer = LONG_ANSWER
    try:
        tab = tabs(site, site.token("engineer")).open()
        tab.send(LONG)
        expect(tab.by("message-assistant").last).to_contain_text(FIRST_TOOL)
        tab.by("stop").click()
        tab.wait_answered()
        stopped = tab.last_answer()
        assert FIRST_TOOL in stopped
        assert TAIL not in stopped  # the tail never came
        # the conversation is not held: the next message is answered
        site.model.knobs.hold_after = None
        site.model.knobs.answer = None
        site.model.knobs.token_delay_s = 0.0
        tab.send("какие есть окружения?")
        tab.wait_answered()
        expect(tab.by("busy-notice")).to_have_count(0)
        expect(tab.by("error-card")).to_have_count(0)
    finally:
        site.model.knobs.hold_after = None
        site.model.knobs.token_delay_s = 0.01


def test_a_reload_mid_answer_keeps_what_was_said_and_marks_it_cut_off(site: PageStack, tabs: Tabs):
    site.model.knobs.token_delay_s = 0.08
    site.model.knobs.answer = LONG_ANSWER
    try:
        tab = tabs(site, site.token("engineer")).open()
        tab.send(LONG)
        expect(tab.by("message-assistant").last).to_contain_text(FIRST_TOOL)
        # When the user reloads while the answer streams (the server sees the connection go and
        # stops the run: nothing streams to nobody)
        tab.page.reload()
        tab.wait_ready()
        # Then the tab re-attaches to its conversation: the question once, the answer as far as
        # it got, marked as cut off, never passed off as complete; and the user can go on
        expect(tab.by("message-user")).to_have_count(1)
        answer = tab.by("message-assistant").last
        expect(answer).to_contain_text(FIRST_TOOL)
        expect(answer).to_contain_text("ответ прерван")
        expect(tab.by("error-card")).to_have_count(0)
        site.model.knobs.token_delay_s = 0.0
        site.model.knobs.answer = None
        tab.send("какие есть окружения?")
        tab.wait_answered()
        expect(tab.by("message-user")).to_have_count(2)
    finally:
        site.model.knobs.token_delay_s = 0.01


def test_a_reload_with_a_pending_card_shows_the_card_again(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer")).open(**DASHBOARD_10_LINK)
    tab.send("задеплой этот дашборд в staging")
    expect(tab.by("confirm-card")).to_have_attribute("data-state", "pending")
    tab.wait_answered()
    tab.page.reload()
    tab.wait_ready()
    expect(tab.by("confirm-card").last).to_have_attribute("data-state", "pending")
    tab.by("confirm-accept").last.click()
    expect(tab.by("confirm-card").last).to_have_attribute("data-state", "confirmed")
    tab.wait_answered()
    assert site.deploys() == 1


def test_a_second_tab_on_the_same_conversation_waits_for_the_first(site: PageStack, tabs: Tabs):
    site.model.knobs.token_delay_s = 0.1
    try:
        first = tabs(site, site.token("engineer")).open()
        first.send(STATUS)  # starts the conversation
        first.wait_answered()
        conversation = first.conversation_id()
        second = another_tab(first)
        second.page.goto(f"{site.url}/agent#c={conversation}")
        second.wait_ready()
        # When the first tab is answering and the user sends from the second
        site.model.knobs.answer = LONG_ANSWER
        first.send(LONG)
        expect(first.by("message-assistant").last).to_contain_text(FIRST_TOOL)
        second.send("какие есть окружения?")
        # Then the second says another tab is answering, keeps the text, and does not send
        expect(second.by("busy-notice")).to_be_visible(timeout=10_000)
        expect(second.by("send")).to_be_disabled()
        expect(second.by("composer")).to_have_value("какие есть окружения?")
        second.screenshot("busy")
        first.wait_answered(timeout_ms=40_000)
        site.model.knobs.answer = None
        # and once the first is done, the second may send what it kept
        expect(second.by("busy-notice")).to_have_count(0, timeout=10_000)
        expect(second.by("send")).to_be_enabled()
        second.by("send").click()
        second.wait_answered()
        assert "ss-dev" in second.last_answer()
    finally:
        site.model.knobs.token_delay_s = 0.01


def test_a_tab_opened_as_an_answer_ends_shows_the_whole_answer(site: PageStack, tabs: Tabs):
    site.model.knobs.token_delay_s = 0.03
    site.model.knobs.answer = LONG_ANSWER
    try:
        token = site.token("engineer")
        first = tabs(site, token).open()
        first.send(LONG)
        expect(first.by("message-assistant").last).to_contain_text(FIRST_TOOL)
        conversation = first.conversation_id()
        # Given a second tab opens the conversation while the first is answering, and the answer
        # ends while the second tab is loading it (here: just before it reads whether a turn runs)
        second = another_tab(first)

        def once_answered(route: Route) -> None:
            wait_until_free(site, token, conversation)
            route.continue_()

        second.page.route(re.compile(r".*/active$"), once_answered)
        second.page.goto(f"{site.url}/agent#c={conversation}")
        second.wait_ready()
        first.wait_answered(timeout_ms=40_000)
        # Then the second tab shows the question and the whole answer, not the question alone
        expect(second.by("message-user")).to_have_count(1)
        expect(second.by("message-assistant").last).to_contain_text(TAIL)
        expect(second.by("message-assistant").last).not_to_contain_text("ответ прерван")
    finally:
        site.model.knobs.token_delay_s = 0.01


def wait_until_free(site: PageStack, token: str, conversation: str, limit_s: float = 40) -> None:
    """Until no turn runs in the conversation, as the REST API tells it."""
    deadline = time.monotonic() + limit_s
    url = f"{site.url}/api/agent/conversations/{conversation}/active"
    while httpx.get(url, headers={"Authorization": f"Bearer {token}"}).json()["active"]:
        assert time.monotonic() < deadline, "the turn did not end"
        time.sleep(0.1)


def test_a_409_from_the_chat_is_shown_not_swallowed(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer")).open()
    tab.send(STATUS)
    tab.wait_answered()

    # Given the gate said "free" but another tab took the conversation in between
    def busy(route: Route) -> None:
        route.fulfill(
            status=409,
            content_type="application/json",
            body='{"code": "CONVERSATION_BUSY", "detail": "another tab is answering"}',
        )

    tab.page.route(re.compile(r".*/api/agent/chat$"), busy)
    tab.send("а теперь для staging")
    expect(tab.by("error-card")).to_have_attribute("data-code", "CONVERSATION_BUSY")
    expect(tab.by("error-card")).to_contain_text("другой вкладке")
    # Nothing was sent, so nothing is shown as sent, and the text is still there to send later
    expect(tab.by("message-user")).to_have_count(1)
    expect(tab.by("composer")).to_have_value("а теперь для staging")


def test_an_unreachable_backend_turns_the_indicator_red_and_says_so(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer")).open(**DASHBOARD_10_LINK)
    expect(tab.by("connection")).to_have_attribute("data-state", "online")
    tab.page.route(re.compile(r".*/api/.*"), lambda route: route.abort("connectionrefused"))
    tab.send(STATUS)
    expect(tab.by("connection")).to_have_attribute("data-state", "offline", timeout=15_000)
    expect(tab.by("error-card")).to_have_attribute(
        "data-code", "SERVER_UNREACHABLE", timeout=15_000
    )
    expect(tab.by("error-card")).to_contain_text("Сервер недоступен")
    tab.screenshot("offline")
    # When the backend is back, a retry gets the answer and the indicator turns green
    tab.page.unroute(re.compile(r".*/api/.*"))
    tab.by("error-retry").click()
    tab.wait_answered()
    expect(tab.by("connection")).to_have_attribute("data-state", "online")
    assert DASHBOARD_10["objectName"] in tab.last_answer()


def test_the_deployable_page_sends_an_unauthenticated_user_to_the_login_url(sites, tabs: Tabs):
    # The page as deployed (no demo sign-in): a token ss-tools no longer accepts means sign in again
    site = sites("deployable")
    tab = tabs(site, "not-a-valid.jwt.token")
    tab.page.goto(f"{site.url}/agent?objectType=dashboard&objectId=10&envId=ss-dev")
    # Where the user ends up (a navigation the page starts twice is aborted once: the address is
    # polled, not the first navigation awaited)
    expect(tab.page).to_have_url(re.compile(r".*/login-page.*"), timeout=15_000)


def test_the_deployable_page_works_with_the_token_the_host_application_keeps(sites, tabs: Tabs):
    site = sites("deployable")
    tab = tabs(site, site.token("engineer")).open(**DASHBOARD_10_LINK)
    expect(tab.by("demo-signin")).to_have_count(0)
    tab.send(STATUS)
    tab.wait_answered()
    assert DASHBOARD_10["objectName"] in tab.last_answer()


def test_model_and_tool_text_cannot_inject_html(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer")).open()
    hostile = (
        'найди дашборд "<img src=x onerror=window.__pwned=1><script>window.__pwned=2</script>"'
    )
    tab.send(hostile)
    tab.wait_answered()
    expect(tab.by("message-user").last).to_contain_text("<img src=x")
    assert tab.page.evaluate("() => window.__pwned") is None
    assert tab.page.locator("main img[src=x], main script").count() == 0


def test_the_sidebar_searches_opens_and_deletes_conversations(site: PageStack, tabs: Tabs):
    token = site.token("engineer")
    tab = tabs(site, token).open(**DASHBOARD_10_LINK)
    tab.send("какой статус у этого дашборда?")
    tab.wait_answered()
    status_conversation = tab.conversation_id()
    tab.open()
    tab.send("какие есть окружения?")
    tab.wait_answered()
    sidebar = tab.by("sidebar")
    expect(sidebar.get_by_test_id("conversation-item")).to_have_count(2)
    # Search by title (case folded)
    tab.by("conversation-search").fill("СТАТУС")
    expect(sidebar.get_by_test_id("conversation-item")).to_have_count(1)
    # Open it: its history comes back with its tool card
    sidebar.get_by_test_id("conversation-item").first.click()
    expect(tab.by("message-user").first).to_contain_text("какой статус у этого дашборда?")
    expect(tab.by("tool-card").first).to_have_attribute("data-state", "done")
    assert tab.conversation_id() == status_conversation
    # Delete it: it leaves the list
    item = sidebar.locator(f"[data-testid=conversation-item][data-id='{status_conversation}']")
    item.get_by_test_id("conversation-delete").click()
    tab.by("conversation-delete-confirm").click()
    expect(item).to_have_count(0)
    tab.by("conversation-search").fill("")
    expect(sidebar.get_by_test_id("conversation-item")).to_have_count(1)


def test_an_old_conversation_without_context_says_context_unavailable(site: PageStack, tabs: Tabs):
    token = site.token("engineer")
    tab = tabs(site, token)
    # Given a conversation created before contexts existed (no ui_context stored)
    created = tab.page.request.post(
        f"{site.url}/api/assistant/conversations",
        headers={"Authorization": f"Bearer {token}"},
        data={"title": "Старый разговор"},
    )
    conversation = created.json()["id"]
    appended = tab.page.request.post(
        f"{site.url}/api/assistant/conversations/{conversation}/messages",
        headers={"Authorization": f"Bearer {token}", "Idempotency-Key": "old-message-1"},
        data={"role": "user", "content": "покажи статус"},
    )
    assert appended.status == 201, appended.text()
    tab.page.goto(f"{site.url}/agent#c={conversation}")
    tab.wait_ready()
    expect(tab.by("context-unavailable")).to_contain_text(re.compile("контекст недоступен", re.I))


def test_a_large_output_shows_its_summary_and_opens_whole_from_the_history(
    site: PageStack, tabs: Tabs
):
    # Given every ss-dev dashboard has a 24 000-character description: a search answers ~100 KB
    marker = "ДЛИННОЕ-ОПИСАНИЕ-"
    for number, found in enumerate(site.stack.upstream.state.dashboards["ss-dev"].values()):
        found["description"] = f"{marker}{number} " + "описание " * 2_700
    tab = tabs(site, site.token("engineer")).open(**DASHBOARD_10_LINK)
    tab.send("найди дашборды")
    tab.wait_answered()
    # The live stream carries the whole output: nothing to open
    expect(tab.by("tool-card").first).to_have_attribute("data-state", "done")
    expect(tab.by("tool-output-full")).to_have_count(0)
    # When the conversation is opened again, its history holds the summary the model saw
    tab.page.reload()
    tab.wait_ready()
    card = tab.by("tool-card").first
    expect(card).to_contain_text("сводка")
    summary = card.locator("pre").first.inner_text()
    # Then «Показать полный вывод» fetches the whole output, each description whole in it
    tab.by("tool-output-full").click()
    whole = tab.by("tool-output-whole")
    expect(whole).to_contain_text(marker)
    text = whole.inner_text()
    assert text.count("описание") >= 2_700 * text.count(marker) > 0
    assert len(text) > 10 * len(summary)
    tab.screenshot("tool-output-whole")


def test_keyboard_enter_sends_shift_enter_breaks_and_tab_reaches_the_cards_buttons(
    site: PageStack, tabs: Tabs
):
    tab = tabs(site, site.token("engineer")).open(**DASHBOARD_10_LINK)
    composer = tab.by("composer")
    composer.click()
    tab.page.keyboard.type("задеплой этот дашборд")
    tab.page.keyboard.press("Shift+Enter")
    tab.page.keyboard.type("в staging")
    expect(composer).to_have_value("задеплой этот дашборд\nв staging")
    expect(tab.by("message-user")).to_have_count(0)
    tab.page.keyboard.press("Enter")
    expect(tab.by("confirm-card")).to_have_attribute("data-state", "pending")
    tab.wait_answered()
    # Tab through the page until the card's Confirm button has the focus, then press Enter
    for _ in range(40):
        if tab.page.evaluate("() => document.activeElement?.dataset.testid") == "confirm-accept":
            break
        tab.page.keyboard.press("Tab")
    else:
        raise AssertionError("Tab never reached the card's Confirm button")
    tab.page.keyboard.press("Enter")
    expect(tab.by("confirm-card")).to_have_attribute("data-state", "confirmed")
    tab.wait_answered()
    assert site.deploys() == 1


def test_the_sidebar_pages_through_many_conversations(site: PageStack, tabs: Tabs):
    token = site.token("engineer")
    tab = tabs(site, token)
    for number in range(23):
        created = tab.page.request.post(
            f"{site.url}/api/assistant/conversations",
            headers={"Authorization": f"Bearer {token}"},
            data={"title": f"Разговор {number:02d}"},
        )
        assert created.status == 201
    tab.open()
    items = tab.by("sidebar").get_by_test_id("conversation-item")
    expect(items).to_have_count(20)
    tab.by("conversations-more").click()
    expect(items).to_have_count(23)
    expect(tab.by("conversations-more")).to_have_count(0)
    titles = items.all_inner_texts()
    assert len(set(titles)) == 23  # no page repeats or skips one


def test_a_message_over_the_limit_is_kept_whole_and_not_sent(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer")).open()
    long_text = "а" * 9_000
    tab.by("composer").fill(long_text)
    # The whole text stays (nothing cut silently); the page says why it cannot be sent
    expect(tab.by("composer")).to_have_value(long_text)
    expect(tab.by("composer-limit")).to_contain_text("8000")
    expect(tab.by("send")).to_be_disabled()
    tab.by("composer").press("Enter")
    expect(tab.by("message-user")).to_have_count(0)
    tab.by("composer").fill("какие есть окружения?")
    expect(tab.by("composer-limit")).to_have_count(0)
    tab.by("send").click()
    tab.wait_answered()
    expect(tab.by("message-user")).to_have_count(1)
