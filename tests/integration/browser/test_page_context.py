"""Story 1 from the page: what the URL says the user came from is what the agent is told, the
banner shows it, the tools follow it, and a new visit never keeps an old context."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from playwright.sync_api import expect

from local.browser import ROOT, TOKEN_KEY, AgentPage, PageStack
from local.gateway import template_routes
from local.page import LOCAL_BUILD
from sstools_agent.domain.glossary import tool_label
from tests.support.seed import DASHBOARD_10_LINK, SEED_DASHBOARD_TOOLS, SEED_DATASET_TOOLS
from tests.support.standin_gaps import THIS_WITHOUT_AN_OBJECT_SEARCHES

Tabs = Callable[[PageStack, str], AgentPage]


def stored_context(site: PageStack, tab: AgentPage) -> dict[str, object] | None:
    """The page context the conversation was started with, as the chat function stored it."""
    history = tab.page.evaluate(
        """async ([id, key]) => {
            const token = localStorage.getItem(key);
            const answer = await fetch(`/api/assistant/history?conversation_id=${id}`,
                {headers: {Authorization: `Bearer ${token}`}});
            return await answer.json();
        }""",
        [tab.conversation_id(), TOKEN_KEY],
    )
    users = [item for item in history["items"] if item["role"] == "user"]
    context: dict[str, object] | None = users[-1]["ui_context"]
    return context


def tools_shown(tab: AgentPage) -> set[str]:
    cards = tab.by("tool-card")
    return {cards.nth(i).get_attribute("data-tool") or "" for i in range(cards.count())}


def test_a_dashboard_page_answers_about_that_dashboard_with_dashboard_tools(
    site: PageStack, tabs: Tabs
):
    # Given the user came from dashboard 10 in ss-dev («Спросить агента»)
    tab = tabs(site, site.token("engineer")).open(**DASHBOARD_10_LINK)
    banner = tab.by("context-banner")
    expect(banner).to_contain_text("10")
    expect(banner).to_contain_text("Отчёт по энергопотреблению")
    expect(banner).to_contain_text("ss-dev")
    # When they ask about "this dashboard" without naming it
    tab.send("какой статус у этого дашборда?")
    tab.wait_answered()
    # Then the answer is about dashboard 10 in ss-dev: git status, change date, validation
    answer = tab.last_answer()
    assert "Отчёт по энергопотреблению" in answer, answer  # dashboard 10's title
    assert "ss-dev" in answer, answer
    assert "git-статус" in answer, answer
    assert "валидация" in answer, answer
    # and only dashboard tools were offered and used
    assert site.model.bindings[-1]
    assert set(site.model.bindings[-1]) <= SEED_DASHBOARD_TOOLS
    assert tools_shown(tab)
    assert tools_shown(tab) <= SEED_DASHBOARD_TOOLS
    expect(tab.by("tool-card")).to_have_attribute("data-state", "done")
    assert stored_context(site, tab) == {"contextVersion": 1, **DASHBOARD_10_LINK}
    tab.screenshot("dashboard-answer")


def test_a_dataset_page_uses_dataset_tools_only(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer"))
    tab.open(objectType="dataset", objectId="15", envId="staging", route="/datasets/15")
    expect(tab.by("context-banner")).to_contain_text("15")
    tab.send("есть ли проблемы с этим датасетом?")
    tab.wait_answered()
    answer = tab.last_answer()
    assert "employees" in answer, answer  # dataset 15, by its table
    assert "staging" in answer, answer
    assert "маппинг" in answer, answer
    assert set(site.model.bindings[-1]) <= SEED_DATASET_TOOLS
    assert tools_shown(tab) <= SEED_DATASET_TOOLS


def test_a_page_without_context_works_in_general_mode(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer")).open()
    expect(tab.by("context-banner")).to_contain_text("общий режим")
    tab.send("что ты умеешь?")
    tab.wait_answered()
    # the tools are listed in the catalog's words (their ids stay out of what a person reads)
    assert tool_label("list_environments").casefold() in tab.last_answer().casefold()
    context = stored_context(site, tab)
    assert context is not None  # the page says there is no object, rather than saying nothing
    assert context["objectType"] is None
    assert context["envId"] is None
    # every tool the role may use without an environment is offered, not one page's share
    assert not set(site.model.bindings[-1]) <= SEED_DASHBOARD_TOOLS


def test_an_unknown_object_type_is_treated_as_no_object(site: PageStack, tabs: Tabs):
    # Seed edge case: ?objectType=invalid → the page sends objectType null, the chat accepts it
    tab = tabs(site, site.token("engineer")).open(
        objectType="invalid", objectId="10", envId="ss-dev"
    )
    # what the agent sees names no object; the link's is named only as dropped
    banner = tab.by("context-banner")
    expect(banner.locator(".chip", has_text="invalid")).to_have_count(0)
    expect(tab.by("context-dropped")).to_contain_text("не распознан")
    tab.send("какие есть окружения?")
    tab.wait_answered()
    expect(tab.by("error-card")).to_have_count(0)
    context = stored_context(site, tab)
    assert context is not None
    assert context["objectType"] is None
    assert context["objectId"] is None
    assert context["envId"] == "ss-dev"


def test_a_new_visit_from_another_dashboard_gets_a_fresh_context(site: PageStack, tabs: Tabs):
    tab = tabs(site, site.token("engineer")).open(**DASHBOARD_10_LINK)
    tab.send("какой статус у этого дашборда?")
    tab.wait_answered()
    first = tab.conversation_id()
    # When the user goes back and asks from dashboard 21 (a new visit: a new URL, no #c=)
    tab.open(
        **{**DASHBOARD_10_LINK, "objectId": "21", "objectName": "Энергопотребление по объектам"}
    )
    expect(tab.by("context-banner")).to_contain_text("21")
    expect(tab.by("context-banner")).not_to_contain_text("Отчёт по энергопотреблению")
    tab.send("какой статус у этого дашборда?")
    tab.wait_answered()
    # Then it is a new conversation told about dashboard 21, and the answer is about 21
    assert tab.conversation_id() != first
    assert "Энергопотребление по объектам" in tab.last_answer()  # dashboard 21's title
    context = stored_context(site, tab)
    assert context is not None
    assert context["objectId"] == "21"


def test_the_environment_selector_lists_the_backends_environments_and_changes_env_id(
    site: PageStack, tabs: Tabs
):
    tab = tabs(site, site.token("engineer")).open(**DASHBOARD_10_LINK)
    select = tab.by("env-select")
    options = select.locator("option").evaluate_all("(options) => options.map((o) => o.value)")
    assert [value for value in options if value] == list(site.stack.settings.environments().ids)
    expect(select).to_have_value("ss-dev")
    # When the user switches to staging, later messages carry envId staging
    select.select_option("staging")
    expect(tab.by("context-banner")).to_contain_text("staging")
    tab.send("какой статус у этого дашборда?")
    tab.wait_answered()
    assert "staging" in tab.last_answer()
    context = stored_context(site, tab)
    assert context is not None
    assert context["envId"] == "staging"


def test_the_demo_sign_in_picks_a_role_and_the_page_then_works(site: PageStack, browser):
    # A profile with no token (nobody signed in): the local build offers the demo sign-in
    context = browser.new_context()
    try:
        page = context.new_page()
        tab = AgentPage(page, site.url, "demo-signin")
        tab.open(**DASHBOARD_10_LINK)
        expect(tab.by("demo-signin")).to_be_visible()
        tab.by("demo-role-analyst").click()
        expect(tab.by("demo-signin")).to_have_count(0)
        # The page starts again after the sign-in (environments, file limits): Enter sends once
        # Send is enabled, and before that keeps the text unsent, as a person would see it
        composer = tab.by("composer")
        composer.fill("задеплой этот дашборд в staging")
        expect(tab.by("send")).to_be_enabled()
        composer.press("Enter")
        tab.wait_answered()
        # The analyst's token is the one sent: the agent is not even offered the write
        assert "роль «инженер»" in tab.last_answer()
        expect(tab.by("confirm-card")).to_have_count(0)
    finally:
        context.close()


def test_the_deployable_build_neither_bundles_nor_calls_the_demo_sign_in(tmp_path):
    # Given the page built as it is deployed (production mode), into a scratch directory
    web = ROOT / "web"
    out = tmp_path / "dist"
    subprocess.run(
        ["npm", "run", "-s", "build", "--", "--outDir", str(out), "--emptyOutDir"],
        cwd=web,
        check=True,
        capture_output=True,
        timeout=300,
    )
    built = "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    # Then neither the sign-in component nor the local token endpoint is in it
    assert "demo-signin" not in built
    assert "/local/demo-token" not in built
    # while the local build, which `make run` serves, has it (the check can fail)
    local = "".join(p.read_text(errors="replace") for p in LOCAL_BUILD.rglob("*.js"))
    assert "demo-signin" in local
    assert "/local/demo-token" in local


def test_no_deployed_route_serves_the_demo_sign_in():
    # API Gateway's routes, as the template declares them (CloudFront's are checked with the
    # template in tests/infrastructure): none answers the local stack's sign-in path
    assert not [route for route in template_routes() if route.pattern.match("/local/demo-token")]


@THIS_WITHOUT_AN_OBJECT_SEARCHES
def test_a_link_whose_object_was_dropped_says_so_and_what_the_agent_sees(
    site: PageStack, tabs: Tabs
):
    # Given a link whose object type the page does not know (its object is dropped)
    tab = tabs(site, site.token("engineer")).open(
        objectType="invalid", objectId="10", envId="ss-dev", route="/dashboards/10"
    )
    # Then the banner says the link's object was not recognised, and what the agent sees instead
    dropped = tab.by("context-dropped")
    expect(dropped).to_contain_text("не распознан")
    expect(dropped).to_contain_text("«invalid» #10")
    expect(dropped).to_contain_text("без объекта")
    expect(tab.by("context-banner")).to_contain_text("ss-dev")
    # And an answer about "this dashboard" does not claim there is none: it asks which one
    tab.send("какой статус у этого дашборда?")
    tab.wait_answered()
    tab.screenshot("link-object-dropped")  # before the checks: docs/page.md shows what is said
    answer = tab.last_answer()
    assert "не найдены" not in answer, answer
    assert "номер" in answer, answer


def test_a_link_to_a_dashboard_that_does_not_exist_is_said_plainly(site: PageStack, tabs: Tabs):
    # Given a link to a dashboard id that ss-dev does not have
    tab = tabs(site, site.token("engineer")).open(
        objectType="dashboard", objectId="99999", envId="ss-dev"
    )
    # When the user asks about it
    tab.send("какой статус у этого дашборда?")
    tab.wait_answered()
    # Then the answer says that dashboard is not in that environment
    answer = tab.last_answer()
    assert "99999" in answer, answer
    assert "нет" in answer or "не найден" in answer, answer
    tab.screenshot("link-object-missing")
