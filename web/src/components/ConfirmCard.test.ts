import { fireEvent, render, screen } from "@testing-library/svelte";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { GuardrailDecision } from "../lib/events";
import type { ConfirmItem } from "../ui/chatState.svelte";
import ConfirmCard from "./ConfirmCard.svelte";

function decision(overrides: Partial<GuardrailDecision> = {}): GuardrailDecision {
  return {
    tool: "deploy_dashboard",
    operation: "write",
    risk: "dangerous",
    tone: "destructive",
    label: "изменение",
    environment: "prod",
    environment_tier: "prod",
    badge: "⚠️ PRODUCTION",
    impact: "3 дашборда будут изменены",
    permission: { allowed: true, user_role: "admin", required_role: "admin", reason: "ok" },
    requires_confirmation: true,
    prompt: "⚠️ PRODUCTION: развёртывание изменит рабочее окружение",
    ...overrides,
  };
}

function card(
  overrides: Partial<ConfirmItem> = {},
  d: Partial<GuardrailDecision> = {},
): ConfirmItem {
  return {
    kind: "confirm",
    key: "c-test",
    confirmationId: "conf-1",
    toolCallId: "call-1",
    prompt: "⚠️ PRODUCTION: развёртывание изменит рабочее окружение",
    decision: decision(d),
    input: { dashboard_ids: [1, 2, 3] },
    expiresAt: new Date(Date.now() + 5 * 60_000).toISOString(),
    state: "pending",
    sending: false,
    ...overrides,
  };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("ConfirmCard", () => {
  it.each([
    ["destructive", "write", "⚠️ PRODUCTION"],
    ["warning", "write", "STAGING"],
    ["info", "write", "DEV"],
    ["success", "read", "PRODUCTION"],
  ] as const)("renders tone %s (%s) with its class and badge", (tone, operation, badge) => {
    render(ConfirmCard, { props: { item: card({}, { tone, operation, badge }) } });
    const el = screen.getByTestId("confirm-card");
    expect(el.dataset.tone).toBe(tone);
    expect(el.classList.contains(`tone-${tone}`)).toBe(true);
    for (const other of ["destructive", "warning", "info", "success"].filter((t) => t !== tone)) {
      expect(el.classList.contains(`tone-${other}`)).toBe(false);
    }
    expect(el.dataset.state).toBe("pending");
    expect(el.getAttribute("role")).toBe("alertdialog");
    const labelled = el.getAttribute("aria-labelledby")!;
    expect(document.getElementById(labelled)).not.toBeNull();
    expect(screen.getByTestId("confirm-badge").textContent).toBe(badge);
  });

  it("labels a write «изменение» with a warning icon", () => {
    render(ConfirmCard, { props: { item: card() } });
    const op = screen.getByTestId("confirm-operation");
    expect(op.textContent).toContain("изменение");
    expect(op.querySelector("[data-icon=warning]")).not.toBeNull();
    expect(screen.getByTestId("confirm-impact").textContent).toBe("3 дашборда будут изменены");
    expect(screen.getByTestId("confirm-prompt").textContent).toContain("PRODUCTION");
    expect(screen.getByText(/dashboard_ids/)).toBeTruthy();
  });

  it("labels a read «чтение данных» with no warning icon", () => {
    render(ConfirmCard, {
      props: {
        item: card(
          {},
          { operation: "read", tone: "success", risk: "safe", badge: "DEV", impact: null },
        ),
      },
    });
    const op = screen.getByTestId("confirm-operation");
    expect(op.textContent?.replace(/\s+/g, " ").trim()).toBe("чтение данных");
    expect(op.textContent).not.toContain("⚠");
    expect(op.querySelector("[data-icon=warning]")).toBeNull();
    expect(screen.queryByTestId("confirm-impact")).toBeNull();
  });

  it("sends one decision however often it is clicked, and disables both buttons", async () => {
    const onDecide = vi.fn(() => new Promise<void>(() => undefined));
    render(ConfirmCard, { props: { item: card(), onDecide } });
    const accept = screen.getByTestId("confirm-accept") as HTMLButtonElement;
    const deny = screen.getByTestId("confirm-deny") as HTMLButtonElement;
    expect(accept.tagName).toBe("BUTTON");
    await fireEvent.click(accept);
    await fireEvent.click(accept);
    await fireEvent.click(deny);
    expect(onDecide).toHaveBeenCalledTimes(1);
    expect(onDecide).toHaveBeenCalledWith("confirm");
    expect(accept.disabled).toBe(true);
    expect(deny.disabled).toBe(true);
  });

  it("enables the buttons again when the decision asks for it (403: the card stays pending)", async () => {
    const onDecide = vi.fn(async () => "retry" as const);
    render(ConfirmCard, { props: { item: card(), onDecide } });
    const deny = screen.getByTestId("confirm-deny") as HTMLButtonElement;
    await fireEvent.click(deny);
    await Promise.resolve();
    await new Promise((r) => setTimeout(r, 0));
    expect(onDecide).toHaveBeenCalledWith("deny");
    expect(deny.disabled).toBe(false);
  });

  it("counts down mm:ss and removes the buttons at expiry", async () => {
    vi.useFakeTimers();
    vi.setSystemTime(new Date("2026-01-01T10:00:00Z"));
    const onExpired = vi.fn();
    render(ConfirmCard, {
      props: { item: card({ expiresAt: "2026-01-01T10:01:05Z" }), onExpired },
    });
    expect(screen.getByTestId("confirm-countdown").textContent).toContain("01:05");
    await vi.advanceTimersByTimeAsync(60_000);
    expect(screen.getByTestId("confirm-countdown").textContent).toContain("00:05");
    expect(screen.getByTestId("confirm-accept")).toBeTruthy();
    await vi.advanceTimersByTimeAsync(6_000);
    expect(screen.queryByTestId("confirm-accept")).toBeNull();
    expect(screen.queryByTestId("confirm-deny")).toBeNull();
    expect(screen.getByTestId("confirm-card").dataset.state).toBe("expired");
    expect(screen.getByText("Время подтверждения истекло")).toBeTruthy();
    expect(onExpired).toHaveBeenCalled();
  });

  it.each([
    ["confirmed", "Подтверждено"],
    ["denied", "Отклонено"],
    ["expired", "Истекло"],
    ["cancelled", "Отменено"],
  ] as const)("collapses a resolved card (%s) with no buttons", (state, label) => {
    render(ConfirmCard, { props: { item: card({ state }) } });
    const el = screen.getByTestId("confirm-card");
    expect(el.dataset.state).toBe(state);
    expect(el.getAttribute("role")).toBe("group");
    expect(el.textContent).toContain(label);
    expect(screen.queryByTestId("confirm-accept")).toBeNull();
    expect(screen.queryByTestId("confirm-countdown")).toBeNull();
  });
});
