import { render, screen } from "@testing-library/svelte";
import { describe, expect, it } from "vitest";
import ToolCard from "./ToolCard.svelte";
import type { ToolItem } from "../ui/chatState.svelte";

function failed(code: string, error: string): ToolItem {
  const item: ToolItem = {
    kind: "tool",
    key: "t1",
    tool: "get_health_summary",
    toolCallId: "call-1",
    input: {},
    state: "error",
    hasOutput: false,
    code,
    error,
  };
  return item;
}

describe("a failed tool card", () => {
  it("leads with what happened and what to do, the upstream's words behind «Подробности»", () => {
    render(ToolCard, {
      item: failed("TOOL_FAILURE", "TOOL_FAILURE: upstream answered 503: injected fault 503"),
    });
    const advice = screen.getByTestId("tool-error");
    expect(advice.textContent).toContain("ss-tools ответил ошибкой, результата нет");
    expect(advice.textContent).not.toMatch(/TOOL_FAILURE|upstream/);
    const detail = screen.getByTestId("tool-error-detail");
    expect(detail.hasAttribute("open")).toBe(false);
    expect(detail.textContent).toContain("upstream answered 503");
  });

  it("says a write may have applied when the upstream's answer leaves its status unknown", () => {
    render(ToolCard, {
      item: failed(
        "TOOL_FAILURE",
        "upstream answered 502; operation status unknown — check status",
      ),
    });
    expect(screen.getByTestId("tool-error").textContent).toContain("изменение могло примениться");
  });

  it("says a timeout in words", () => {
    render(ToolCard, { item: failed("TOOL_TIMEOUT", "TOOL_TIMEOUT: no answer within 30 s") });
    expect(screen.getByTestId("tool-error").textContent).toBe(
      "ss-tools не ответил вовремя, результата нет. Повторите чуть позже.",
    );
  });
});
