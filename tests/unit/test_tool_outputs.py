"""Which tool outputs are kept by reference: sizes in UTF-8 bytes, per output and per turn."""

from __future__ import annotations

from sstools_agent.domain.chat_events import StreamToken, ToolEnd
from sstools_agent.domain.tool_outputs import (
    MAX_INLINE_OUTPUT_BYTES,
    TURN_INLINE_OUTPUT_BYTES,
    TurnOutputBudget,
    json_bytes,
    referenced,
)


def tool_end(text: str, call: str = "call_1") -> ToolEnd:
    return ToolEnd("search_dashboards", {"text": text}, call)


def test_sizes_are_bytes_so_cyrillic_counts_double():
    chars = MAX_INLINE_OUTPUT_BYTES // 2  # fits in characters, twice too large in bytes
    plan = TurnOutputBudget().plan(tool_end("я" * chars))
    assert plan is not None
    assert plan.keep_by_reference
    assert len(plan.full) > MAX_INLINE_OUTPUT_BYTES
    small = TurnOutputBudget().plan(tool_end("z" * chars))
    assert small is not None
    assert not small.keep_by_reference


def test_a_turn_keeps_its_outputs_inline_only_within_its_budget():
    budget, each = TurnOutputBudget(), "z" * (MAX_INLINE_OUTPUT_BYTES - 100)
    plans = [budget.plan(tool_end(each, f"call_{n}")) for n in range(10)]
    inline = [p for p in plans if p is not None and not p.keep_by_reference]
    assert sum(len(p.full) for p in inline) <= TURN_INLINE_OUTPUT_BYTES
    assert len(inline) < 10
    assert budget.plan(StreamToken("x")) is None


def test_a_referenced_event_carries_the_summary_and_where_the_whole_is():
    event = tool_end("слово " * 50_000, "call_7")
    stored = referenced(event, "c1", len(json_bytes(event.metadata["output"])), kept=True)
    meta = stored.metadata
    assert meta["output_ref"] == "/api/assistant/conversations/c1/tool-outputs/call_7"
    assert meta["truncated"] is True
    assert meta["output_bytes"] > 500_000
    assert len(json_bytes(meta["output"])) < 16_000
    failed = referenced(event, "c1", 10, kept=False)
    assert failed.metadata["output_ref"] is None
