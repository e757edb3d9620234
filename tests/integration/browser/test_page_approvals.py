"""A second approver from the page (issue 32, part 3): with `PROD_APPROVERS=2` an admin's prod
deploy, confirmed by that admin, waits for another admin, who approves it from the approvals
view; the first admin's open page then shows the deploy run, once.

The state machine's invocation of the chat function (a Lambda task moto cannot run) is handed
to a chat function instance of its own, as Lambda would start one (`local.state_machine_tasks`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

import pytest
from playwright.sync_api import expect

from local.agent_stack import SampleUpstream, chat_app
from local.browser import AgentPage, PageStack
from local.servers import serve
from local.state_machine_tasks import deliver_over_http, start_lambda_task_pump
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.agent.standin_model import StandinChatModel
from sstools_agent.chat.approval_routes import SECOND_DECISION_PATH
from tests.integration.browser.test_page_cards import ask_for_card

Tabs = Callable[[PageStack, str], AgentPage]


@pytest.fixture
def two_approvers(
    sites: Callable[[str], PageStack], upstream_server: SampleUpstream
) -> Iterator[PageStack]:
    upstream_server.reset()
    site = sites("two_approvers")
    settings = site.stack.settings
    app, _, _ = chat_app(site.stack, StandinChatModel(), MemoryAuditSink())
    with serve(app, lifespan="on") as url:
        stop = start_lambda_task_pump(
            settings.aws_endpoint_url or "",
            settings.aws_region,
            settings.confirmation_state_machine_arn,
            partial(deliver_over_http, f"{url}{SECOND_DECISION_PATH}"),
        )
        try:
            yield site
        finally:
            stop.set()


def test_the_second_admin_approves_from_the_approvals_view(two_approvers: PageStack, tabs: Tabs):
    site = two_approvers
    # Given an admin's prod deploy, confirmed by that admin: the first of two approvals
    first = tabs(site, site.token("admin", "alla.admin"))
    ask_for_card(first, "задеплой этот дашборд в prod")
    first.by("confirm-accept").click()
    card = first.by("confirm-card")
    expect(card).to_have_attribute("data-state", "awaiting_approval")
    first.wait_answered()
    assert "подтверждено (1 из 2)" in first.last_answer()
    assert "подтвердил alla.admin" in first.last_answer()
    assert site.deploys() == 0
    # When another admin opens the page, finds it in the approvals view and approves it
    second = tabs(site, site.token("admin", "boris.admin")).open()
    # (other tests' cards may wait in the same table: this test reads its requester's own)
    approval = second.by("approval-card").filter(has_text="alla.admin")
    expect(approval).to_have_count(1)
    expect(approval).to_contain_text("alla.admin")
    expect(approval).to_contain_text("подтверждено (1 из 2)")
    expect(approval).to_contain_text("ss-dev → prod")  # the plan the requester saw
    second.screenshot("approvals-view")
    approval.get_by_test_id("approval-accept").click()
    expect(second.by("approval-told")).to_contain_text("подтверждено (2 из 2)")
    expect(second.by("approval-card").filter(has_text="alla.admin")).to_have_count(0)
    # Then the first admin's page shows the deploy run, once, with who approved it
    deploy = first.tool_card("deploy_dashboard").last
    expect(deploy).to_have_attribute("data-state", "done")
    expect(card).to_have_attribute("data-state", "confirmed")
    expect(first.page.get_by_text("boris.admin дал второе подтверждение")).to_be_visible()
    first.screenshot("approved-by-second-admin")
    assert site.deploys() == 1
