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

describe("«Повторить» on a failed tool card", () => {
  const onRetry = () => undefined;

  it("is offered on a read that failed or timed out", () => {
    for (const code of ["TOOL_FAILURE", "TOOL_TIMEOUT"]) {
      const { unmount } = render(ToolCard, { item: failed(code, code), onRetry });
      expect(screen.getByTestId("tool-retry").textContent).toContain("Повторить");
      unmount();
    }
  });

  it("is never offered on a write, nor on a read the same call would refuse again", () => {
    const write = { ...failed("TOOL_FAILURE", "503"), tool: "deploy_dashboard" };
    render(ToolCard, { item: write, onRetry });
    expect(screen.queryByTestId("tool-retry")).toBeNull();
    render(ToolCard, { item: failed("FORBIDDEN", "no"), onRetry });
    expect(screen.queryByTestId("tool-retry")).toBeNull();
  });
});

describe("«Проверить статус» on a write that may have applied", () => {
  const onCheckStatus = () => undefined;
  const onRetry = () => undefined;

  it("offers the catalog's status read, and never «Повторить»", () => {
    const write = {
      ...failed("TOOL_FAILURE", "upstream answered 500; operation status unknown — check status"),
      tool: "deploy_dashboard",
    };
    render(ToolCard, { item: write, onRetry, onCheckStatus });
    expect(screen.getByTestId("tool-check-status").textContent).toContain(
      "Проверить статус: Поиск дашбордов",
    );
    expect(screen.queryByTestId("tool-retry")).toBeNull();
  });

  it("is not offered on a write that was refused (nothing applied)", () => {
    const refused = { ...failed("FORBIDDEN", "upstream answered 403"), tool: "deploy_dashboard" };
    render(ToolCard, { item: refused, onCheckStatus });
    expect(screen.queryByTestId("tool-check-status")).toBeNull();
  });
});
