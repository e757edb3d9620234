"""Story 2 from the page: the confirmation card's badge, tone, operation, impact and timer; the
permission card; and what runs after a click: exactly the call the card showed, once."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest
from playwright.sync_api import expect

from local.fault_injection import Fault, FaultKind
from tests.integration.browser.test_page_context import DASHBOARD_10
from tests.support.browser import AgentPage, PageStack

Tabs = Callable[[PageStack, str], AgentPage]


def ask_for_card(tab: AgentPage, text: str) -> None:
    tab.open(**DASHBOARD_10)
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
    tab.open(**DASHBOARD_10)
    tab.send("задеплой этот дашборд в prod")
    tab.wait_answered()
    card = tab.by("permission-card")
    expect(card).to_contain_text("Недостаточно прав")
    expect(tab.by("permission-role")).to_contain_text("admin")
    expect(tab.by("confirm-accept")).to_have_count(0)
    expect(card.get_by_role("button")).to_have_count(1)  # only Dismiss
    tab.screenshot("card-permission")
    # Dismissing it leaves the agent's explicit word that nothing ran
    tab.by("permission-dismiss").click()
    expect(tab.by("permission-card")).to_have_count(0)
    assert "не запускал" in tab.last_answer()
    assert site.deploys() == 0


def test_deny_collapses_the_card_and_the_agent_says_it_was_cancelled(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer"))
    ask_for_card(tab, "задеплой этот дашборд в staging")
    tab.by("confirm-deny").click()
    card = tab.by("confirm-card")
    expect(card).to_have_attribute("data-state", "denied")
    expect(tab.by("confirm-accept")).to_have_count(0)
    tab.wait_answered()
    assert "отмен" in tab.last_answer().lower(), tab.last_answer()
    assert site.deploys() == 0
    tab.screenshot("card-denied")


def test_confirm_runs_the_deploy_once_and_the_answer_follows(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer"))
    ask_for_card(tab, "задеплой этот дашборд в staging")
    # A double click is one decision
    tab.by("confirm-accept").dblclick()
    expect(tab.by("confirm-card")).to_have_attribute("data-state", "confirmed")
    tab.wait_answered()
    deploy = tab.by("tool-card").filter(has_text="deploy_dashboard").last
    expect(deploy).to_have_attribute("data-state", "done")
    assert tab.last_answer().strip(), "no answer after the tool"
    expect(tab.by("error-card")).to_have_count(0)
    assert site.deploys() == 1
    tab.screenshot("card-confirmed")


def test_the_timer_reaches_zero_and_the_card_says_it_expired(sites, upstream_server, tabs: Tabs):
    upstream_server.reset()
    site = sites("quick_expiry")
    tab = tabs(site, site.token("engineer"))
    ask_for_card(tab, "задеплой этот дашборд в staging")
    expect(tab.by("confirm-countdown")).to_be_visible()
    card = tab.by("confirm-card")
    expect(card).to_have_attribute("data-state", "expired", timeout=10_000)
    expect(card).to_contain_text("истекло")
    expect(tab.by("confirm-accept")).to_have_count(0)
    expect(tab.by("confirm-deny")).to_have_count(0)
    assert site.deploys() == 0
    tab.screenshot("card-expired")


def confirmed_deploy_in_flight(site: PageStack, tab: AgentPage) -> str:
    """A staging deploy confirmed from the page whose upstream call takes 3 s; the conversation."""
    ask_for_card(tab, "задеплой этот дашборд в staging")
    site.stack.upstream.plan.add(
        "POST", "/api/dashboards/deploy", Fault(FaultKind.DELAY, seconds=3, times=1)
    )
    tab.by("confirm-accept").click()
    deploy = tab.by("tool-card").filter(has_text="deploy_dashboard").last
    expect(deploy).to_have_attribute("data-state", "running")
    tab.page.wait_for_timeout(500)  # the call has left for the upstream
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
    expect(again.page.get_by_text("Статус операции неизвестен")).to_be_visible(timeout=15_000)
    expect(again.by("error-card")).to_have_count(0)
    expect(again.by("connection")).to_have_attribute("data-state", "online")
    assert site.deploys() == 1
    again.screenshot("status-unknown")


def test_stop_during_a_confirmed_deploy_says_its_status_is_unknown(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer"))
    confirmed_deploy_in_flight(site, tab)
    tab.by("stop").click()
    tab.wait_answered()
    deploy = tab.by("tool-card").filter(has_text="deploy_dashboard").last
    expect(deploy).to_have_attribute("data-state", "error")
    expect(deploy).to_contain_text("TOOL_OUTCOME_UNKNOWN")
    expect(tab.by("error-card")).to_have_count(0)
    assert site.deploys() == 1


def test_a_denied_card_leaves_its_call_marked_not_run(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer"))
    ask_for_card(tab, "задеплой этот дашборд в staging")
    deploy = tab.by("tool-card").filter(has_text="deploy_dashboard").last
    expect(deploy).to_have_attribute("data-state", "waiting")
    expect(deploy).to_contain_text("ждёт подтверждения")
    tab.by("confirm-deny").click()
    tab.wait_answered()
    expect(deploy).to_have_attribute("data-state", "not_run")
    expect(deploy).to_contain_text("ничего не изменено")
    # and so it reads after a reload, from the history
    tab.page.reload()
    tab.wait_ready()
    deploy = tab.by("tool-card").filter(has_text="deploy_dashboard").last
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
