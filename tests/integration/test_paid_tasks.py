"""Work with a cost is never started by a question (issue 27, item 4).

`run_llm_validation` starts a paid LLM task: a question about the last review is answered from
what ss-tools already holds, and a request to run a new one gets a card that says what it costs
and what the last review found, before anything is sent. Through the chat function over HTTP and
the sample upstream (what it received is counted by its request log).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from local.agent_stack import AgentStack
from tests.support.chat_http import confirmation_item, wait_for
from tests.support.chat_server import ChatServer, answer_card, make_chat, post_stream
from tests.support.seed import DASHBOARD_10

pytestmark = pytest.mark.anyio
REVIEWS = ("POST", "/api/environments/ss-dev/dashboards/42/validation")
DASHBOARD_42 = DASHBOARD_10 | {
    "objectId": "42",
    "objectName": "Потери электроэнергии",
    "route": "/dashboards/42",
}


@pytest.fixture
def chat(stack: AgentStack) -> Iterator[ChatServer]:
    yield from make_chat(stack)


def said(events: list[Any]) -> str:
    """What the answer says: its texts and its streamed tokens."""
    return "".join(
        e.data.get("content", "") + e.data["metadata"].get("token", "")
        for e in events
        if e.type in (None, "stream_token")
    )


@pytest.mark.parametrize(
    "question",
    [
        "а какие у него проблемы с валидацией?",
        "что показала последняя валидация?",
        "прошёл ли он LLM-проверку?",
    ],
)
async def test_a_question_about_the_last_review_starts_no_paid_task(chat: ChatServer, question):
    status, events, _ = await post_stream(
        chat, {"message": question, "ui_context": DASHBOARD_42}, role="analyst"
    )
    assert status == 200
    # answered from the last review ss-tools holds, with no card and nothing started
    assert "kwh_total" in said(events)
    assert "confirm_required" not in [e.type for e in events]
    assert chat.stack.upstream.plan.requests(*REVIEWS) == 0


async def test_a_request_for_a_new_review_gets_a_card_with_its_cost_and_the_last_review(
    chat: ChatServer,
):
    # When an analyst asks for a new review of dashboard 42
    body = {"message": "Проверь этот дашборд на ошибки в логике", "ui_context": DASHBOARD_42}
    status, events, _ = await post_stream(chat, body, role="analyst")
    assert status == 200
    # Then a card asks first, calmly, saying what it costs and what the last review found
    [card] = [e.data["metadata"] for e in events if e.type == "confirm_required"]
    assert card["decision"]["tone"] == "info"
    assert card["decision"]["label"] == "запускает платную LLM-задачу"
    assert card["decision"]["impact"] is None  # said once: the label
    assert card["prompt"] == "Запустить LLM-ревью дашборда в окружении ss-dev?"
    assert card["plan"]["title"] == "LLM-ревью дашборда #42 «Потери электроэнергии» (ss-dev)"
    [last, paid] = card["plan"]["lines"]
    assert last.startswith("последнее ревью ")
    assert "не пройдено — 2 графика ссылаются на удалённую колонку kwh_total" in last
    assert paid == "результат нового ревью заменит результат последнего"
    assert chat.stack.upstream.plan.requests(*REVIEWS) == 0
    # And confirmed, it runs once and says what it found
    conversation = events[-1].data["metadata"]["conversation_id"]
    await wait_for(lambda: "task_token" in confirmation_item(chat, card["confirmation_id"]))
    status, events, _ = await answer_card(chat, conversation, card, "confirm", role="analyst")
    assert status == 200
    assert events[0].data["metadata"]["result"] == "confirmed"
    assert "kwh_total" in said(events)
    assert chat.stack.upstream.plan.requests(*REVIEWS) == 1
