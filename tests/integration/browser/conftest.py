"""The /agent page in headless Chromium against the real local stack (local/browser.py).

Sites are built once per module and configuration (and stopped after it, so nothing of them
runs beside the rest of the suite): the default one, one whose cards expire in
a few seconds, and one that asks to confirm reads (`CONFIRM_READ_TOOLS`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any, Final

import pytest
from playwright.sync_api import Browser, ViewportSize, expect, sync_playwright

from local.agent_stack import AgentStack, SampleUpstream
from local.browser import (
    CHROMIUM_ARGS,
    AgentPage,
    PageStack,
    chromium_executable,
    page_stack,
    signed_in_context,
)
from local.page import DEPLOYABLE_BUILD, LOCAL_BUILD
from sstools_agent.settings import Settings

# What a page is expected to show, it shows within 30 s (Playwright's default is 5 s): `make test`
# runs two browser stacks at once on two cores beside the evaluation set, and a card (its plan
# read, its item and its Step Functions execution written) once took longer than 15 s there.
# A wait that must be short says so with its own timeout.
EXPECT_TIMEOUT_MS: Final = 30_000
expect.set_options(timeout=EXPECT_TIMEOUT_MS)

# The integration suite's 2 s tool timeout is for its timeout tests; a page on a loaded CI machine
# gets the upstream's answers in the time a person would wait.
PAGE_TOOL_TIMEOUT: dict[str, Any] = {"tool_timeout_s": 15}
SITES: dict[str, dict[str, Any]] = {
    "default": PAGE_TOOL_TIMEOUT,
    "quick_expiry": {**PAGE_TOOL_TIMEOUT, "confirmation_timeout_s": 8},
    "confirm_reads": {**PAGE_TOOL_TIMEOUT, "confirm_read_tools": ["search_dashboards"]},
    # a deployment with limits of its own on files
    "small_files": {**PAGE_TOOL_TIMEOUT, "attachment_max_bytes": 2048, "attachment_max_files": 2},
    # a prod write needs a second person (the approvals view)
    "two_approvers": {**PAGE_TOOL_TIMEOUT, "prod_approvers": 2},
    # served from the production build (web/dist), as CloudFront serves it
    "deployable": PAGE_TOOL_TIMEOUT,
}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # Per module, not per session: Playwright's sync API runs an event loop in this thread for as
    # long as it lives, and the async tests after these modules need the thread's loop free.
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_executable(), args=list(CHROMIUM_ARGS)
        )
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def sites(
    stack_settings: Settings, upstream_server: SampleUpstream
) -> Iterator[Callable[[str], PageStack]]:
    built: dict[str, PageStack] = {}
    with ExitStack() as stack:

        def site(name: str) -> PageStack:
            if name not in built:
                settings = stack_settings.model_copy(
                    update={"upstream_base_url": upstream_server.base_url, **SITES[name]}
                )
                build = DEPLOYABLE_BUILD if name == "deployable" else LOCAL_BUILD
                if not (build / "index.html").is_file():
                    pytest.fail(f"{build} is not built: `make test` builds it (make web web-test)")
                served = page_stack(AgentStack(settings, upstream_server), build=build)
                built[name] = stack.enter_context(served)
            return built[name]

        yield site


@pytest.fixture
def site(sites: Callable[[str], PageStack], upstream_server: SampleUpstream) -> PageStack:
    upstream_server.reset()
    built = sites("default")
    built.model.knobs.failures_left = 0
    built.model.knobs.token_delay_s = 0.01
    built.model.knobs.hold_after = None
    built.model.knobs.answer = None
    built.service_tokens.available = True
    return built


@pytest.fixture
def tabs(
    browser: Browser, request: pytest.FixtureRequest
) -> Iterator[Callable[[PageStack, str], AgentPage]]:
    """Opens a tab on a site as a user (`role`, or a token from `site.token`); the same token
    opens a second tab of the same user (another browser profile: another page visit). An empty
    token opens it signed out; `viewport` sets the window's size (1280×900 unless told)."""
    contexts = []
    refused: list[str] = []

    def open_tab(site: PageStack, token: str, viewport: ViewportSize | None = None) -> AgentPage:
        context = signed_in_context(browser, token, viewport)
        # Anything the page's security policy refuses is a defect of the page (or an injection)
        context.on(
            "console",
            lambda message: (
                refused.append(message.text) if "Content Security Policy" in message.text else None
            ),
        )
        contexts.append(context)
        name = f"{request.node.name}-{len(contexts)}".replace("/", "_")
        return AgentPage(context.new_page(), site.url, name)

    yield open_tab
    for context in contexts:
        context.close()
    assert not refused, f"the page broke its own content security policy: {refused}"
