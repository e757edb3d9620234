"""Story 2 from the page: the confirmation card's badge, tone, operation, impact and timer; the
permission card; and what runs after a click: exactly the call the card showed (or the edit the
user made on it), once."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest
from playwright.sync_api import expect

from local.browser import AgentPage, PageStack
from local.fault_injection import Fault, FaultKind
from tests.support.seed import DASHBOARD_10_LINK

Tabs = Callable[[PageStack, str], AgentPage]


def ask_for_card(tab: AgentPage, text: str) -> None:
    tab.open(**DASHBOARD_10_LINK)
    tab.send(text)
    expect(tab.by("confirm-card")).to_be_visible()
    tab.wait_answered()


def test_an_admins_prod_deploy_shows_the_destructive_production_card(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("admin"))
    ask_for_card(tab, "задеплой этот дашборд в prod")
    card = tab.by("confirm-card")
    expect(card).to_have_attribute("data-tone", "destructive")
    expect(card).to_have_attribute("data-state", "pending")
    expect(tab.by("confirm-badge")).to_have_text("⚠️ PRODUCTION")
    # The card names the dashboard, where it goes and what prod holds now, without a click
    expect(tab.by("confirm-title")).to_have_text(
        "Деплой дашборда #10 «Отчёт по энергопотреблению»: ss-dev → prod"
    )
    prod = site.stack.upstream.state.dashboards["prod"][10]
    expect(tab.by("confirm-plan")).to_contain_text(f"версия {prod['version']} в prod")
    expect(tab.by("confirm-plan")).to_contain_text(prod["last_change"]["by"])
    expect(tab.by("confirm-card").locator("h3")).not_to_contain_text("deploy_dashboard")
    expect(tab.by("confirm-impact")).to_contain_text("1 дашборд будет изменён")
    expect(tab.by("confirm-prompt")).to_contain_text("prod")
    expect(tab.by("confirm-operation")).not_to_contain_text("чтение данных")
    expect(tab.by("confirm-countdown")).to_have_text(re.compile(r"\b0?[45]:[0-9]{2}\b"))
    expect(tab.by("confirm-accept")).to_be_visible()
    expect(tab.by("confirm-deny")).to_be_visible()
    assert site.deploys() == 0
    tab.screenshot("card-destructive")


def test_a_staging_deploy_shows_the_calmer_info_card(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer"))
    ask_for_card(tab, "задеплой этот дашборд в staging")
    expect(tab.by("confirm-card")).to_have_attribute("data-tone", "info")
    expect(tab.by("confirm-badge")).to_have_text("STAGING")
    expect(tab.by("confirm-prompt")).to_contain_text("Изменения в staging-окружении")
    tab.screenshot("card-info")


def test_a_confirmed_read_is_labelled_reading_in_success_tone(sites, upstream_server, tabs: Tabs):
    upstream_server.reset()
    site = sites("confirm_reads")
    tab = tabs(site, site.token("engineer"))
    ask_for_card(tab, "найди дашборды про энергию")
    expect(tab.by("confirm-card")).to_have_attribute("data-tone", "success")
    operation = tab.by("confirm-operation")
    expect(operation).to_contain_text("чтение данных")
    expect(operation).not_to_contain_text("⚠")
    expect(tab.by("confirm-card").locator("[data-icon=warning]")).to_have_count(0)
    tab.screenshot("card-read")


def test_an_engineers_prod_deploy_shows_the_permission_card_without_confirm(
    site: PageStack, tabs: Tabs
):
    tab = tabs(site, site.token("engineer"))
    tab.open(**DASHBOARD_10_LINK)
    tab.send("задеплой этот дашборд в prod")
    tab.wait_answered()
    card = tab.by("permission-card")
    expect(card).to_contain_text("Недостаточно прав")
    expect(tab.by("permission-role")).to_contain_text("«администратор»")
    expect(tab.by("confirm-accept")).to_have_count(0)
    expect(card.get_by_role("button")).to_have_count(1)  # only Dismiss
    # said once, in words: no tool card beside it, no identifier, the role prod needs
    expect(tab.tool_card("deploy_dashboard")).to_have_count(0)
    expect(card).to_contain_text(
        "«Деплой дашбордов в другое окружение» требует роль «администратор»."
    )
    expect(card).not_to_contain_text("deploy_dashboard")
    tab.screenshot("card-permission")
    # Dismissing it leaves the agent's explicit word that nothing ran
    tab.by("permission-dismiss").click()
    expect(tab.by("permission-card")).to_have_count(0)
    assert re.search(r"не запус|не запущ", tab.last_answer()), tab.last_answer()
    assert site.deploys() == 0


def test_deny_collapses_the_card_and_the_agent_says_it_was_cancelled(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer"))
    ask_for_card(tab, "задеплой этот дашборд в staging")
    tab.by("confirm-deny").click()
    card = tab.by("confirm-card")
    expect(card).to_have_attribute("data-state", "denied")
    expect(tab.by("confirm-accept")).to_have_count(0)
    tab.wait_answered()
    # The outcome is said once: the card says «Отклонено», the answer one line that nothing changed
    answer = tab.last_answer().strip()
    assert answer == (
        "Операция «деплой дашбордов в другое окружение» (дашборд 10, окружение staging) "
        "отменена (отклонено пользователем); ничего не изменено."
    ), answer
    expect(card).not_to_contain_text("Подтвердить?")
    expect(tab.by("error-card")).to_have_count(0)
    assert site.deploys() == 0
    tab.screenshot("card-denied")


def test_confirm_runs_the_deploy_once_and_the_answer_follows(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer"))
    ask_for_card(tab, "задеплой этот дашборд в staging")
    # A double click is one decision
    tab.by("confirm-accept").dblclick()
    expect(tab.by("confirm-card")).to_have_attribute("data-state", "confirmed")
    tab.wait_answered()
    deploy = tab.tool_card("deploy_dashboard").last
    expect(deploy).to_have_attribute("data-state", "done")
    assert tab.last_answer().strip(), "no answer after the tool"
    expect(tab.by("error-card")).to_have_count(0)
    assert site.deploys() == 1
    tab.screenshot("card-confirmed")
    # and after a reload the history shows the one call, done (not a second, unfinished one)
    tab.page.reload()
    tab.wait_ready()
    expect(tab.tool_card("deploy_dashboard")).to_have_count(1)
    expect(deploy).to_have_attribute("data-state", "done")


def test_a_card_prod_changed_under_runs_nothing_and_a_new_card_shows_prod_as_it_is(
    site: PageStack, tabs: Tabs
):
    # Given the same prod deploy waiting on cards in two conversations (two tabs)
    token = site.token("admin")
    first, second = tabs(site, token), tabs(site, token)
    ask_for_card(first, "задеплой этот дашборд в prod")
    ask_for_card(second, "задеплой этот дашборд в prod")
    # When the second is confirmed (prod changes), then the first
    second.by("confirm-accept").click()
    second.wait_answered()
    assert site.deploys() == 1
    first.by("confirm-accept").click()
    first.wait_answered()
    # Then the first card says it went stale and nothing ran; a new card shows prod as it is now
    cards = first.by("confirm-card")
    expect(cards).to_have_count(2)
    expect(cards.first).to_have_attribute("data-state", "stale")
    expect(first.by("confirm-stale")).to_contain_text("Окружение prod изменилось")
    expect(first.by("confirm-stale")).to_contain_text("ничего не выполнено")
    expect(cards.last).to_have_attribute("data-state", "pending")
    prod = site.stack.upstream.state.dashboards["prod"][10]
    expect(first.by("confirm-plan")).to_contain_text(f"версия {prod['version']} в prod")
    deploy = first.tool_card("deploy_dashboard")
    expect(deploy).to_have_count(1)
    expect(deploy).to_have_attribute("data-state", "waiting")
    assert site.deploys() == 1
    first.screenshot("card-stale")


def test_a_delete_card_shows_the_statement_and_the_rows_it_would_delete(
    site: PageStack, tabs: Tabs
):
    tab = tabs(site, site.token("engineer"))
    tab.open(objectType="dataset", objectId="15", envId="staging", route="/datasets/15")
    tab.send("выполни sql `delete from mart.employees where id < 10`")
    expect(tab.by("confirm-card")).to_be_visible()
    tab.wait_answered()
    # Without opening anything: the statement as code, and how many rows it would delete
    expect(tab.by("confirm-statement")).to_have_text("DELETE FROM mart.employees\nWHERE\n  id < 10")
    expect(tab.by("confirm-plan")).to_have_text("DELETE в mart.employees: удалит 9 строк")
    expect(tab.by("confirm-title")).to_have_text("SQL в staging: DELETE")
    assert site.stack.upstream.sql_writes() == []
    tab.screenshot("card-delete")


def test_a_paid_review_asks_first_calmly_with_its_cost_and_the_last_review(
    site: PageStack, tabs: Tabs
):
    # Given an analyst on dashboard 10 asking for a new LLM review (a paid task)
    tab = tabs(site, site.token("analyst"))
    ask_for_card(tab, "проверь этот дашборд")
    # Then a calm card asks first: what it is, what it costs, what the last review found
    card = tab.by("confirm-card")
    expect(card).to_have_attribute("data-tone", "info")
    expect(tab.by("confirm-title")).to_have_text(
        "LLM-ревью дашборда #10 «Отчёт по энергопотреблению» (ss-dev)"
    )
    expect(tab.by("confirm-prompt")).to_have_text(
        "Запустить LLM-ревью дашборда в окружении ss-dev?"
    )
    expect(tab.by("confirm-plan")).to_contain_text("последнее ревью")
    expect(tab.by("confirm-operation")).to_have_text("запускает платную LLM-задачу")
    assert card.inner_text().count("платн") == 1  # the cost, said once
    expect(card).not_to_contain_text("run_llm_validation")
    tab.screenshot("card-paid-review")
    assert site.stack.upstream.plan.requests() == site.stack.upstream.plan.requests("GET")


def test_the_timer_reaches_zero_and_the_card_says_it_expired(sites, upstream_server, tabs: Tabs):
    upstream_server.reset()
    site = sites("quick_expiry")
    tab = tabs(site, site.token("engineer"))
    ask_for_card(tab, "задеплой этот дашборд в staging")
    # (the card lives 8 s: long enough to be seen counting on a busy machine)
    expect(tab.by("confirm-countdown")).to_be_visible()
    card = tab.by("confirm-card")
    expect(card).to_have_attribute("data-state", "expired", timeout=20_000)
    expect(card).to_contain_text("истекло")
    expect(tab.by("confirm-accept")).to_have_count(0)
    expect(tab.by("confirm-deny")).to_have_count(0)
    # and its call says so at the same moment, without a new message
    deploy = tab.tool_card("deploy_dashboard")
    expect(deploy).to_have_attribute("data-state", "expired")
    expect(deploy).to_contain_text("не выполнялся — время подтверждения истекло")
    assert site.deploys() == 0
    tab.screenshot("card-expired")


def confirmed_deploy_in_flight(site: PageStack, tab: AgentPage) -> str:
    """A staging deploy confirmed from the page whose upstream call never answers (the tool's
    15 s deadline ends it, if nothing else does first); the conversation, once the call reached
    the upstream."""
    ask_for_card(tab, "задеплой этот дашборд в staging")
    site.stack.upstream.plan.add(
        "POST", "/api/dashboards/deploy", Fault(FaultKind.HANG, seconds=60, times=1)
    )
    tab.by("confirm-accept").click()
    deploy = tab.tool_card("deploy_dashboard").last
    expect(deploy).to_have_attribute("data-state", "running")
    deadline = time.monotonic() + 15
    while site.deploys() == 0:  # the call has left for the upstream
        assert time.monotonic() < deadline, "the confirmed deploy never reached the upstream"
        tab.page.wait_for_timeout(50)
    return tab.conversation_id()


def test_a_tab_closed_during_a_confirmed_deploy_is_told_the_status_is_unknown(
    site: PageStack, tabs: Tabs
):
    # Given a confirmed deploy on its way when the tab goes (the server sees the connection drop)
    token = site.token("engineer")
    first = tabs(site, token)
    conversation = confirmed_deploy_in_flight(site, first)
    first.page.close()
    # When the user opens the conversation again
    again = tabs(site, token)
    again.page.goto(f"{site.url}/agent#c={conversation}")
    again.wait_ready()
    # Then the page says the truth: the deploy left and its outcome is unknown; no false outage
    unknown = again.by("message-assistant").get_by_text("Статус операции неизвестен")
    expect(unknown).to_be_visible(timeout=15_000)
    expect(again.by("error-card")).to_have_count(0)
    expect(again.by("connection")).to_have_attribute("data-state", "online")
    assert site.deploys() == 1
    again.screenshot("status-unknown")


def test_stop_during_a_confirmed_deploy_says_its_status_is_unknown(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer"))
    confirmed_deploy_in_flight(site, tab)
    tab.by("stop").click()
    tab.wait_answered()
    deploy = tab.tool_card("deploy_dashboard").last
    # Its card says the outcome is unknown, never a failure (it may have changed something)
    expect(deploy).to_have_attribute("data-state", "unknown")
    expect(deploy).to_contain_text("статус неизвестен — проверьте статус")
    expect(tab.by("error-card")).to_have_count(0)
    assert site.deploys() == 1


def test_a_denied_card_leaves_its_call_marked_not_run(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer"))
    ask_for_card(tab, "задеплой этот дашборд в staging")
    deploy = tab.tool_card("deploy_dashboard").last
    expect(deploy).to_have_attribute("data-state", "waiting")
    expect(deploy).to_contain_text("ждёт подтверждения")
    tab.by("confirm-deny").click()
    tab.wait_answered()
    expect(deploy).to_have_attribute("data-state", "not_run")
    expect(deploy).to_contain_text("ничего не изменено")
    # and so it reads after a reload, from the history
    tab.page.reload()
    tab.wait_ready()
    deploy = tab.tool_card("deploy_dashboard").last
    expect(deploy).to_have_attribute("data-state", "not_run")
    assert site.deploys() == 0


@pytest.mark.parametrize("skew_s", [6 * 60, -60 * 60], ids=["6 min fast", "1 h slow"])
def test_the_countdown_keeps_the_servers_time_whatever_the_device_clock_says(
    site: PageStack, tabs: Tabs, skew_s: int
):
    # Given a device whose clock is off (the card's expiry is the server's time)
    tab = tabs(site, site.token("engineer"))
    tab.page.clock.install(time=time.time() + skew_s)
    ask_for_card(tab, "задеплой этот дашборд в staging")
    # Then the card waits with the server's five minutes, and may be confirmed
    expect(tab.by("confirm-card")).to_have_attribute("data-state", "pending")
    expect(tab.by("confirm-countdown")).to_have_text(re.compile(r"\b0?[45]:[0-9]{2}\b"))
    tab.by("confirm-accept").click()
    expect(tab.by("confirm-card")).to_have_attribute("data-state", "confirmed")
    tab.wait_answered()
    assert site.deploys() == 1


# «Изменить»: the card's arguments edited and approved in one step. An edit that keeps the risk,
# the environment, the impact and what the plan is about runs on the card's approval; one that
# does not brings a card of its own; one that does not validate is refused on the card, which
# still waits.


def edit_card(tab: AgentPage, **fields: str) -> None:
    """Opens the card's edit form and types `fields` (argument → the input's new text; an
    environment is chosen from its list)."""
    tab.by("confirm-edit").click()
    expect(tab.by("confirm-edit-form")).to_be_visible()
    for key, value in fields.items():
        field = tab.by(f"confirm-edit-field-{key}")
        if field.evaluate("element => element.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)


def commits_of(site: PageStack) -> list[str]:
    """The message of each commit the upstream made."""
    return [commit["message"] for commit in site.stack.upstream.state.commits]


def test_an_edit_the_card_covers_runs_once_with_the_edited_input(site: PageStack, tabs: Tabs):
    # Given an engineer's card for committing dashboard 10's changes
    tab = tabs(site, site.token("engineer"))
    ask_for_card(tab, "закоммить изменения: «обновлены графики»")
    expect(tab.by("confirm-title")).to_contain_text("Коммит дашборда #10")
    # When they edit its message (what the plan is about stays) and approve twice
    edit_card(tab, message="исправлены цвета")
    tab.screenshot("edit-form")
    tab.by("confirm-edit-submit").dblclick()
    # Then the card's approval covers the edit: it runs once, with the edited input
    expect(tab.by("confirm-card")).to_have_attribute("data-state", "confirmed")
    tab.wait_answered()
    expect(tab.by("confirm-card")).to_have_count(1)
    commit = tab.tool_card("commit_changes")
    expect(commit).to_have_count(1)
    expect(commit).to_have_attribute("data-state", "done")
    expect(commit).to_contain_text("исправлены цвета")
    expect(tab.by("error-card")).to_have_count(0)
    assert commits_of(site) == ["исправлены цвета"]
    # The card's plan quoted the model's message: its heading does not claim what ran
    expect(tab.by("confirm-title")).to_have_text("Подтверждено с вашими правками")
    tab.screenshot("edit-confirmed")
    # and so it reads after a reload, from the history
    tab.page.reload()
    tab.wait_ready()
    expect(tab.by("confirm-card")).to_have_attribute("data-state", "confirmed")
    expect(commit).to_have_count(1)
    expect(commit).to_have_attribute("data-state", "done")
    expect(commit).to_contain_text("исправлены цвета")


def test_an_admins_edit_to_production_asks_again_on_a_destructive_card(site: PageStack, tabs: Tabs):
    # Given an admin's staging deploy card
    tab = tabs(site, site.token("admin"))
    ask_for_card(tab, "задеплой этот дашборд в staging")
    expect(tab.by("confirm-card")).to_have_attribute("data-tone", "info")
    # When they edit its target to prod
    edit_card(tab, target_env_id="prod")
    tab.by("confirm-edit-submit").click()
    tab.wait_answered()
    # Then the staging card is closed as replaced, nothing ran, and production asks on its own
    cards = tab.by("confirm-card")
    expect(cards).to_have_count(2)
    old, new = cards.first, cards.last
    expect(old).to_have_attribute("data-state", "superseded")
    expect(old).to_contain_text("Заменено изменённым вызовом — ничего не изменено")
    expect(old.get_by_role("button")).to_have_count(0)
    expect(new).to_have_attribute("data-state", "pending")
    expect(new).to_have_attribute("data-tone", "destructive")
    expect(new.get_by_test_id("confirm-badge")).to_have_text("⚠️ PRODUCTION")
    deploy = tab.tool_card("deploy_dashboard")
    expect(deploy).to_have_count(1)
    expect(deploy).to_have_attribute("data-state", "waiting")
    expect(deploy).to_contain_text('"target_env_id": "prod"')
    assert site.deploys() == 0
    tab.screenshot("edit-superseded")
    # and so it reads after a reload, from the history
    tab.page.reload()
    tab.wait_ready()
    expect(cards).to_have_count(2)
    expect(old).to_have_attribute("data-state", "superseded")
    expect(new).to_have_attribute("data-state", "pending")
    expect(deploy).to_contain_text('"target_env_id": "prod"')
    tab.wait_answered()  # the re-attach's resume
    # and the new card is answered as any card
    new.get_by_test_id("confirm-accept").click()
    expect(new).to_have_attribute("data-state", "confirmed")
    tab.wait_answered()
    expect(deploy).to_have_attribute("data-state", "done")
    expect(old).to_have_attribute("data-state", "superseded")
    assert site.deploys() == 1


def test_an_invalid_edit_is_refused_on_the_card_which_still_waits(site: PageStack, tabs: Tabs):
    # Given an engineer's staging deploy card
    tab = tabs(site, site.token("engineer"))
    ask_for_card(tab, "задеплой этот дашборд в staging")
    # When they edit the dashboards to a number no dashboard has
    edit_card(tab, dashboard_ids="0")
    tab.by("confirm-edit-submit").click()
    # Then the server's reason shows on the card, beside what they typed, and nothing ran
    refusal = tab.by("confirm-edit-error")
    expect(refusal).to_contain_text("dashboard_ids")
    tab.wait_answered()  # the refused request counts as a stream that ended
    card = tab.by("confirm-card")
    expect(card).to_have_attribute("data-state", "pending")
    expect(tab.by("confirm-edit-field-dashboard_ids")).to_have_value("0")
    expect(tab.by("error-card")).to_have_count(0)
    assert site.deploys() == 0
    tab.screenshot("edit-refused")
    # and it may still be answered: here, the form closed and confirmed as it was shown
    tab.by("confirm-edit-cancel").click()
    tab.by("confirm-accept").click()
    expect(card).to_have_attribute("data-state", "confirmed")
    tab.wait_answered()
    deploy = tab.tool_card("deploy_dashboard")
    expect(deploy).to_have_attribute("data-state", "done")
    expect(deploy).to_contain_text('"target_env_id": "staging"')
    assert site.deploys() == 1


def test_an_edit_the_user_may_not_run_is_refused_on_the_card(site: PageStack, tabs: Tabs):
    # Given an engineer's staging deploy card
    tab = tabs(site, site.token("engineer"))
    ask_for_card(tab, "задеплой этот дашборд в staging")
    # When they edit the target to prod, which only an admin may deploy to
    edit_card(tab, target_env_id="prod")
    tab.by("confirm-edit-submit").click()
    # Then the card says so and still waits; nothing ran, and denying it still works
    expect(tab.by("confirm-edit-error")).to_contain_text("Недостаточно прав")
    tab.wait_answered()
    card = tab.by("confirm-card")
    expect(card).to_have_count(1)
    expect(card).to_have_attribute("data-state", "pending")
    expect(tab.by("confirm-edit-field-target_env_id")).to_have_value("prod")
    assert site.deploys() == 0
    tab.by("confirm-deny").click()
    expect(card).to_have_attribute("data-state", "denied")
    tab.wait_answered()
    assert site.deploys() == 0
