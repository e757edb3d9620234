"""The /agent page in headless Chromium (Debian's package, driven by Playwright) against the real
local stack: the chat and REST API functions behind the local gateway with the built page on the
same origin, moto and the sample upstream behind them, the stand-in model answering."""

from __future__ import annotations

import asyncio
import json
import os
import re
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode

from langchain_core.messages import AIMessage, BaseMessage
from playwright.sync_api import Browser, BrowserContext, Locator, Page, ViewportSize, expect
from pydantic import Field

from functions.api.app import create_app as create_api_app
from local.agent_stack import (
    AgentStack,
    RecordingStandinModel,
    chat_app,
    minted_service_tokens,
    user_issuer,
)
from local.gateway import LocalGateway
from local.page import LOCAL_BUILD, PageConfig, page_app
from local.servers import serve
from sstools_agent.adapters.dynamodb.conversations import DynamoDBConversationStore
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.adapters.service_tokens import ServiceTokenUnavailable
from sstools_agent.wiring.api import build_api

ROOT: Final = Path(__file__).resolve().parents[1]
ARTIFACTS: Final = ROOT / "build" / "test-artifacts" / "browser"
TOKEN_KEY: Final = "ss-tools.auth.token"  # noqa: S105 (the storage key's name, not a secret)
DESKTOP: Final = ViewportSize(width=1440, height=900)
PHONE: Final = ViewportSize(width=390, height=844)
NARROWEST: Final = ViewportSize(width=320, height=640)
"""The widths the page must lay out at: a desktop, a phone, and the narrowest a phone gets."""
AXE_SOURCE: Final = ROOT / "web" / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM_ARGS: Final = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""Without the background-networking flags Chromium keeps dialling out, which this closed network
refuses, many connections at a time."""


def chromium_executable() -> str:
    """Debian's Chromium (`make chromium` installs it; `CHROMIUM_PATH` names another)."""
    for candidate in (
        os.environ.get("CHROMIUM_PATH"),
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise RuntimeError("no Chromium: `make chromium` installs Debian's package (make test does)")


@dataclass
class ModelKnobs:
    """What a test turns on the model while the site runs: binding tools copies the model, and
    every copy shares this one object."""

    failures_left: int = 0
    """The next calls that fail, as when the provider is down."""
    token_delay_s: float = 0.01
    """The pause before each streamed word (a slow answer, to stop or reload in the middle)."""
    hold_after: str | None = None
    """Once the streamed answer contains this, the stream holds for a minute (until its run is
    cancelled): what comes after it can only come if nothing stopped the run."""
    answer: str | None = None
    """An answer to say instead of the stand-in's, whatever was asked: for tests of the stream
    (stop, reload, another tab), which need a long answer, not a reading of the message."""


HOLD_S: Final = 60.0
"""How long `ModelKnobs.hold_after` holds an answer."""


class FlakyStandinModel(RecordingStandinModel):
    """The stand-in model, which a test can slow down or make fail (`knobs`)."""

    knobs: ModelKnobs = Field(default_factory=ModelKnobs)

    def _fail_if_told(self) -> None:
        if self.knobs.failures_left > 0:
            self.knobs.failures_left -= 1
            raise ConnectionError("the model provider is unreachable")

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        self._fail_if_told()
        return super()._generate(*args, **kwargs)

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        if self.knobs.answer is not None:
            return AIMessage(content=self.knobs.answer)
        return super().respond(messages)

    async def _astream(self, *args: Any, **kwargs: Any) -> Any:
        self._fail_if_told()
        self.token_delay_s = self.knobs.token_delay_s
        said, held = "", False
        async for chunk in super()._astream(*args, **kwargs):
            yield chunk
            said += chunk.text
            if not held and self.knobs.hold_after and self.knobs.hold_after in said:
                held = True
                await asyncio.sleep(HOLD_S)


@dataclass
class ServiceTokenSwitch:
    """The chat's service tokens, which a test can make unavailable (the token endpoint down)."""

    stack: AgentStack
    available: bool = True

    async def __call__(self) -> str:
        if not self.available:
            raise ServiceTokenUnavailable("the service-token endpoint is unreachable")
        return await minted_service_tokens(self.stack.settings)()


@dataclass
class PageStack:
    """The local stack's one origin with the page on it, and what tests observe behind it."""

    url: str
    stack: AgentStack
    store: DynamoDBConversationStore
    model: FlakyStandinModel
    service_tokens: ServiceTokenSwitch

    def token(self, role: str, subject: str | None = None) -> str:
        """A JWT of a new user of `role` (each test's users see only their own conversations)."""
        subject = subject or f"{role}-{uuid.uuid4().hex[:10]}"
        return user_issuer(self.stack.settings).issue(subject, 3600, {"roles": [role]}).token

    def deploys(self) -> int:
        """How many deploys the upstream received."""
        return self.stack.upstream.plan.requests("POST", "/api/dashboards/deploy")


@contextmanager
def page_stack(
    stack: AgentStack, *, build: Path = LOCAL_BUILD, token_delay_s: float = 0.01
) -> Iterator[PageStack]:
    """The chat and REST functions and the built page behind the local gateway, under uvicorn."""
    model = FlakyStandinModel(knobs=ModelKnobs(token_delay_s=token_delay_s))
    switch = ServiceTokenSwitch(stack)
    chat, store, _ = chat_app(stack, model, audit=MemoryAuditSink(), service_token=switch)
    api = create_api_app(build_api(stack.settings))
    # Tests do not wait 5 x 5 s for an unreachable backend: the page's config says how long.
    config: PageConfig = {
        "loginUrl": "/login-page",
        "reconnectAttempts": 3,
        "reconnectDelayMs": 300,
    }
    page = page_app(stack.settings, build=build, config=config)
    gateway = LocalGateway({"ChatFunction": chat, "ApiFunction": api}, page=page)
    with serve(gateway, lifespan="on") as url:
        yield PageStack(url, stack, store, model, switch)


@dataclass
class AgentPage:
    """One browser tab on /agent, signed in as one user."""

    page: Page
    origin: str
    name: str
    shots: list[Path] = field(default_factory=list)
    streams_seen: int = 0
    """Streams the test has waited for on the current page load (`wait_answered`)."""

    def open(self, **query: str) -> AgentPage:
        """Opens /agent with these URL parameters, as «Спросить агента» does."""
        suffix = f"?{urlencode(query)}" if query else ""
        self.page.goto(f"{self.origin}/agent{suffix}")
        self.wait_ready()
        return self

    def wait_ready(self) -> None:
        """Until the page's first load is done (a re-attach included); a new load counts anew."""
        self.page.wait_for_function("() => window.__agentPage && window.__agentPage.ready")
        self.streams_seen = 0

    def by(self, test_id: str) -> Locator:
        return self.page.get_by_test_id(test_id)

    def tool_card(self, tool: str) -> Locator:
        """The cards of `tool`'s calls (the card names it in words; its id is an attribute)."""
        return self.page.locator(f'[data-testid="tool-card"][data-tool="{tool}"]')

    def send(self, text: str) -> None:
        """Types the message and presses Enter, as a person does."""
        composer = self.by("composer")
        expect(composer).to_be_enabled()
        composer.fill(text)
        composer.press("Enter")

    def wait_answered(self, timeout_ms: float = 20_000) -> None:
        """Until one more stream (the one the last send or click started) has ended, and the
        page is ready for the next message (no Stop button)."""
        self.page.wait_for_function(
            "(seen) => window.__agentPage.streamsEnded > seen",
            arg=self.streams_seen,
            timeout=timeout_ms,
        )
        self.streams_seen = self.page.evaluate("() => window.__agentPage.streamsEnded")
        expect(self.by("stop")).to_have_count(0, timeout=timeout_ms)

    def last_answer(self) -> str:
        return self.by("message-assistant").last.inner_text()

    def conversation_id(self) -> str:
        """The tab's conversation, as its URL names it (`#c=<id>`)."""
        match = re.search(r"#c=([A-Za-z0-9-]+)", self.page.url)
        if match is None:
            raise AssertionError(f"no conversation in {self.page.url}")
        return match.group(1)

    def screenshot(self, state: str) -> Path:
        """A picture of the page in this state, kept as a test artifact (not committed)."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{self.name}-{state}.png"
        self.page.screenshot(path=str(path), full_page=True)
        self.shots.append(path)
        return path


def signed_in_context(
    browser: Browser, token: str, viewport: ViewportSize | None = None
) -> BrowserContext:
    """A fresh browser profile in which ss-tools has stored this user's token (none: nobody is
    signed in)."""
    size = viewport or ViewportSize(width=1280, height=900)
    context = browser.new_context(viewport=size, locale="ru-RU", is_mobile=size["width"] < 500)
    if token:
        context.add_init_script(
            f"localStorage.setItem({json.dumps(TOKEN_KEY)}, {json.dumps(token)})"
        )
    return context


def another_tab(tab: AgentPage, name: str = "tab2") -> AgentPage:
    """A second tab in the same browser profile (the same signed-in user)."""
    return AgentPage(tab.page.context.new_page(), tab.origin, f"{tab.name}-{name}")


def axe_violations(page: Page, impacts: tuple[str, ...] = ("serious", "critical")) -> list[str]:
    """What axe-core (web/node_modules, pinned in web/package.json) finds on the page as it is
    now, at these impacts: one line per rule, with the elements it names. It is evaluated through
    the DevTools protocol, which the page's content security policy does not govern (an injected
    <script> would be refused, and rightly)."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE_SOURCE.read_text(encoding="utf-8") + "\n;undefined")
    found: list[dict[str, Any]] = page.evaluate(
        """async (impacts) => {
            const result = await window.axe.run(document, {resultTypes: ["violations"]});
            return result.violations
                .filter((v) => impacts.includes(v.impact))
                .map((v) => ({id: v.id, impact: v.impact, help: v.help,
                              targets: v.nodes.map((n) => n.target.join(" ")).slice(0, 5)}));
        }""",
        list(impacts),
    )
    return [f"{v['impact']} {v['id']}: {v['help']} ({', '.join(v['targets'])})" for v in found]


BROKEN_WORDS_JS: Final = """() => {
    // Words of the page's own text that a line break cuts (a track too narrow: «Соо/бще/ние»).
    // Longer runs (ids, paths) may break anywhere by design and are not counted.
    const broken = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const parent = node.parentElement;
        if (!parent || !parent.checkVisibility()) continue;
        for (const match of node.data.matchAll(/[\\p{L}\\p{N}]{2,24}/gu)) {
            const range = document.createRange();
            range.setStart(node, match.index);
            range.setEnd(node, match.index + match[0].length);
            const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
            if (tops.size > 1) broken.push(match[0]);
        }
    }
    for (const field of document.querySelectorAll("textarea, input:not([type=checkbox])")) {
        // a placeholder is not text the walker sees: a field narrower than ten letters cuts it
        if (field.checkVisibility() && field.clientWidth < 120) {
            broken.push(`field ${field.clientWidth}px`);
        }
    }
    return broken;
}"""


def broken_words(page: Page) -> list[str]:
    """Words the page shows cut across lines, and fields too narrow to read (should be none)."""
    found: list[str] = page.evaluate(BROKEN_WORDS_JS)
    return found


OVERFLOW_JS: Final = """() => {
    // Elements that reach past the viewport's right edge (a page wider than the phone)
    const width = document.documentElement.clientWidth;
    const out = [];
    for (const el of document.querySelectorAll("body *")) {
        if (!el.checkVisibility()) continue;
        const box = el.getBoundingClientRect();
        if (box.width === 0) continue;
        // inside a scrolled box (a <pre>, the message list scrolled) the box clips it
        let clipped = false;
        for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
            const style = getComputedStyle(p);
            if (style.overflowX !== "visible" && p.getBoundingClientRect().right <= width + 1) {
                clipped = true;
                break;
            }
        }
        if (!clipped && box.right > width + 1) {
            out.push(`${el.tagName.toLowerCase()}.${el.className} ${Math.round(box.right)}px`);
        }
    }
    const page = document.documentElement.scrollWidth;
    if (page > width + 1) out.push(`page ${page}px`);
    return out.slice(0, 10);
}"""


def overflowing(page: Page) -> list[str]:
    """Elements that stick out past the viewport's right edge (should be none)."""
    found: list[str] = page.evaluate(OVERFLOW_JS)
    return found
