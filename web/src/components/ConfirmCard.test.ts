import { cleanup, fireEvent, render, screen } from "@testing-library/svelte";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { GuardrailDecision } from "../lib/events";
import type { ConfirmItem } from "../ui/chatState.svelte";
import ConfirmCard from "./ConfirmCard.svelte";
import { argumentLabel } from "../ui/labels";

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
    plan: null,
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
  it("titles the card with its plan and lists what will change, no tool id", () => {
    const plan = {
      title: "Деплой дашборда #10 «Отчёт по энергопотреблению»: ss-dev → prod",
      lines: ["#10 «Отчёт по энергопотреблению»: версия 1 в prod будет заменена версией из ss-dev"],
      unread: null,
      digest: "d1",
      statement: null,
    };
    render(ConfirmCard, { props: { item: card({ plan }) } });
    expect(screen.getByTestId("confirm-title").textContent).toContain(plan.title);
    expect(screen.getByTestId("confirm-plan").textContent).toContain("версия 1 в prod");
    expect(screen.getByTestId("confirm-card").querySelector("h3")?.textContent).not.toContain(
      "deploy_dashboard",
    );
    expect(screen.queryByTestId("confirm-plan-unread")).toBeNull();
  });

  it("says why a plan could not be read, and is still a card to decide", () => {
    const plan = {
      title: "Деплой дашборда #10: ss-dev → prod",
      lines: [],
      unread: "План изменения прочитать не удалось: ss-tools не ответил за 5 с.",
      digest: null,
      statement: null,
    };
    render(ConfirmCard, { props: { item: card({ plan }) } });
    expect(screen.getByTestId("confirm-plan-unread").textContent).toBe(plan.unread);
    expect(screen.queryByTestId("confirm-plan")).toBeNull();
    expect(screen.getByTestId("confirm-accept")).toBeTruthy();
  });

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
    // a group named by its title and described by its question: said once, when it takes the
    // focus (no alert role, no live region: nothing says it a second time)
    expect(el.getAttribute("role")).toBe("group");
    const labelled = el.getAttribute("aria-labelledby")!;
    expect(document.getElementById(labelled)).not.toBeNull();
    const described = el.getAttribute("aria-describedby")!;
    expect(document.getElementById(described)?.textContent).toContain("PRODUCTION");
    expect(screen.getByTestId("confirm-badge").textContent).toBe(badge);
  });

  it("takes the focus when it waits for a decision, its buttons the next Tab", () => {
    render(ConfirmCard, { props: { item: card() } });
    const el = screen.getByTestId("confirm-card");
    expect(document.activeElement).toBe(el);
    const focusable = [...el.querySelectorAll<HTMLElement>("button, summary, input, select")];
    expect(focusable[0]).toBe(screen.getByTestId("confirm-accept"));
  });

  it("leaves the focus alone when it is already answered", () => {
    const before = document.activeElement;
    render(ConfirmCard, { props: { item: card({ state: "denied" }) } });
    expect(document.activeElement).toBe(before);
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

  it("labels a paid task with its cost, as the decision says, calmly", () => {
    render(ConfirmCard, {
      props: {
        item: card(
          {},
          {
            operation: "read",
            tone: "info",
            risk: "safe",
            badge: "DEV",
            impact: null,
            label: "запускает платную LLM-задачу",
          },
        ),
      },
    });
    const op = screen.getByTestId("confirm-operation");
    expect(op.textContent?.replace(/\s+/g, " ").trim()).toBe("запускает платную LLM-задачу");
    expect(op.querySelector("[data-icon=warning]")).toBeNull();
  });

  it("labels a read «чтение данных» with no warning icon", () => {
    render(ConfirmCard, {
      props: {
        item: card(
          {},
          {
            operation: "read",
            tone: "success",
            risk: "safe",
            badge: "DEV",
            impact: null,
            label: "чтение данных",
          },
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

  it.each(["confirmed", "denied", "cancelled"] as const)(
    "does not ask its question again once answered (%s)",
    (state) => {
      const prompt =
        "Изменения в staging-окружении: деплой дашбордов в другое окружение. Подтвердить?";
      render(ConfirmCard, { props: { item: card({ state, prompt }) } });
      const el = screen.getByTestId("confirm-card");
      expect(el.textContent).not.toContain("Подтвердить?");
      expect(screen.getByTestId("confirm-resolved-prompt").textContent).toBe(
        "Изменения в staging-окружении: деплой дашбордов в другое окружение.",
      );
      const plan = { title: "Деплой дашборда #10: ss-dev → staging", lines: [], unread: null };
      cleanup();
      render(ConfirmCard, {
        props: { item: card({ state, prompt, plan: { ...plan, digest: null, statement: null } }) },
      });
      // with a plan, its heading names what was answered; nothing else is said
      expect(screen.queryByTestId("confirm-resolved-prompt")).toBeNull();
      expect(screen.getByTestId("confirm-card").textContent).toContain(plan.title);
    },
  );

  it("does not name the plan's object on a card confirmed with edits (another one ran)", () => {
    const plan = { title: "Деплой дашборда #10: ss-dev → staging", lines: [], unread: null };
    render(ConfirmCard, {
      props: {
        item: card({
          state: "confirmed",
          ranEdited: true,
          plan: { ...plan, digest: "d", statement: null },
        }),
      },
    });
    expect(screen.getByTestId("confirm-title").textContent).toBe("Подтверждено с вашими правками");
    expect(screen.getByTestId("confirm-card").textContent).not.toContain("#10");
  });

  it.each(["confirmed", "superseded", "expired"] as const)(
    "offers no edit on a card that no longer waits (%s)",
    (state) => {
      render(ConfirmCard, { props: { item: card({ state }) } });
      expect(screen.queryByTestId("confirm-edit")).toBeNull();
      expect(screen.queryByTestId("confirm-edit-form")).toBeNull();
    },
  );

  it("says a superseded card was replaced and nothing ran", () => {
    render(ConfirmCard, { props: { item: card({ state: "superseded" }) } });
    expect(screen.getByTestId("confirm-card").textContent).toContain(
      "Заменено изменённым вызовом — ничего не изменено",
    );
  });
});

describe("ConfirmCard: «Изменить»", () => {
  const input = {
    dashboard_ids: [10],
    target_env_id: "staging",
    limit: 5,
    dry_run: false,
    options: null,
  };
  const field = (key: string) => screen.getByTestId(`confirm-edit-field-${key}`);

  type OnDecide = (...args: unknown[]) => Promise<void | { refused: string }>;

  const environments = [
    { id: "ss-dev", tier: "dev" },
    { id: "staging", tier: "staging" },
    { id: "prod", tier: "prod" },
  ];

  async function openEditor(onDecide = vi.fn<OnDecide>(async () => undefined)) {
    render(ConfirmCard, { props: { item: card({ input }), onDecide, environments } });
    const toggle = screen.getByTestId("confirm-edit");
    expect(toggle.getAttribute("aria-expanded")).toBe("false");
    await fireEvent.click(toggle);
    expect(toggle.getAttribute("aria-expanded")).toBe("true");
    expect(toggle.getAttribute("aria-controls")).toBe(screen.getByTestId("confirm-edit-form").id);
    return onDecide;
  }

  it("labels one input per argument in words, of the argument's kind, and focuses the first", async () => {
    await openEditor();
    const target = field("target_env_id") as HTMLSelectElement;
    expect(target.tagName).toBe("SELECT");
    expect([...target.options].map((o) => o.textContent)).toEqual([
      "ss-dev — окружение разработки",
      "staging — предрелизное окружение",
      "prod — рабочее окружение",
    ]);
    expect(target.value).toBe("staging");
    expect((field("limit") as HTMLInputElement).type).toBe("number");
    expect((field("dry_run") as HTMLInputElement).type).toBe("checkbox");
    expect((field("dashboard_ids") as HTMLInputElement).value).toBe("10");
    expect(field("options").tagName).toBe("TEXTAREA");
    for (const key of Object.keys(input)) {
      expect(screen.getByLabelText(argumentLabel(key))).toBe(field(key));
    }
    expect(screen.getByLabelText("Дашборды")).toBe(field("dashboard_ids"));
    expect(screen.getByLabelText("Куда (окружение)")).toBe(target);
    expect(document.activeElement).toBe(field("dashboard_ids"));
  });

  it("shows the ids as chips, each removable, and sends what the chips show", async () => {
    const onDecide = vi.fn<OnDecide>(async () => undefined);
    render(ConfirmCard, {
      props: { item: card({ input: { dashboard_ids: [10, 11] } }), onDecide, environments },
    });
    await fireEvent.click(screen.getByTestId("confirm-edit"));
    const chips = () => screen.getAllByTestId("confirm-edit-chip").map((c) => c.textContent);
    expect(chips().map((t) => t?.replace(/\s+/g, " ").trim())).toEqual(["#10 ×", "#11 ×"]);
    await fireEvent.click(screen.getByRole("button", { name: "Убрать #10" }));
    expect((field("dashboard_ids") as HTMLInputElement).value).toBe("11");
    expect(chips()).toHaveLength(1);
    await fireEvent.input(field("dashboard_ids"), { target: { value: "11, 12, 13" } });
    expect(chips()).toHaveLength(3);
    await fireEvent.click(screen.getByTestId("confirm-edit-submit"));
    expect(onDecide).toHaveBeenCalledWith("edit", { dashboard_ids: [11, 12, 13] });
  });

  it("offers one confirm button at a time: the form's, while it is open", async () => {
    await openEditor();
    expect(screen.queryByTestId("confirm-accept")).toBeNull();
    expect(screen.getAllByRole("button", { name: /Подтвердить/ })).toHaveLength(1);
    await fireEvent.click(screen.getByTestId("confirm-edit-cancel"));
    expect(screen.getByTestId("confirm-accept")).toBeTruthy();
  });

  it("sends every argument with its JSON type kept", async () => {
    const onDecide = await openEditor();
    await fireEvent.change(field("target_env_id"), { target: { value: "prod" } });
    await fireEvent.input(field("limit"), { target: { value: "12" } });
    await fireEvent.click(field("dry_run"));
    await fireEvent.input(field("dashboard_ids"), { target: { value: "10, 11" } });
    await fireEvent.click(screen.getByTestId("confirm-edit-submit"));
    expect(onDecide).toHaveBeenCalledTimes(1);
    expect(onDecide).toHaveBeenCalledWith("edit", {
      dashboard_ids: [10, 11],
      target_env_id: "prod",
      limit: 12,
      dry_run: true,
      options: null,
    });
  });

  it("shows a JSON field's parse error and sends nothing while it is invalid", async () => {
    const onDecide = await openEditor();
    const submit = screen.getByTestId("confirm-edit-submit") as HTMLButtonElement;
    await fireEvent.input(field("options"), { target: { value: "[10," } });
    const problem = screen.getByTestId("confirm-edit-invalid");
    expect(problem.textContent).toContain("Некорректный JSON");
    expect(field("options").getAttribute("aria-invalid")).toBe("true");
    expect(field("options").getAttribute("aria-describedby")).toBe(problem.id);
    expect(submit.disabled).toBe(true);
    await fireEvent.submit(screen.getByTestId("confirm-edit-form"));
    expect(onDecide).not.toHaveBeenCalled();
    await fireEvent.input(field("options"), { target: { value: "[12]" } });
    expect(screen.queryByTestId("confirm-edit-invalid")).toBeNull();
    expect(submit.disabled).toBe(false);
    // ids are numbers, typed as a list
    await fireEvent.input(field("dashboard_ids"), { target: { value: "10, одиннадцать" } });
    expect(screen.getByTestId("confirm-edit-invalid").textContent).toBe(
      "Введите номера через запятую, например 10, 11",
    );
    expect(submit.disabled).toBe(true);
  });

  it("sends one edit however often it is submitted, and disables every button meanwhile", async () => {
    const onDecide = await openEditor(vi.fn<OnDecide>(() => new Promise<void>(() => undefined)));
    const submit = screen.getByTestId("confirm-edit-submit") as HTMLButtonElement;
    await fireEvent.click(submit);
    await fireEvent.click(submit);
    await fireEvent.submit(screen.getByTestId("confirm-edit-form"));
    await fireEvent.click(screen.getByTestId("confirm-deny"));
    expect(onDecide).toHaveBeenCalledTimes(1);
    for (const id of ["confirm-deny", "confirm-edit", "confirm-edit-cancel"]) {
      expect(screen.getByTestId(id).matches(":disabled")).toBe(true);
    }
    expect(submit.matches(":disabled")).toBe(true);
    expect(field("target_env_id").matches(":disabled")).toBe(true);
  });

  it("keeps the card open with what was typed and the server's reason when the edit is refused", async () => {
    const detail = "deploy_dashboard: invalid arguments: limit: bad";
    const onDecide = vi.fn<OnDecide>(async () => ({ refused: detail }));
    await openEditor(onDecide);
    await fireEvent.input(field("limit"), { target: { value: "0" } });
    await fireEvent.click(screen.getByTestId("confirm-edit-submit"));
    await vi.waitFor(() =>
      expect(screen.getByTestId("confirm-edit-error").textContent).toBe(detail),
    );
    expect(screen.getByTestId("confirm-edit-error").getAttribute("role")).toBe("alert");
    expect((field("limit") as HTMLInputElement).value).toBe("0");
    expect(document.activeElement).toBe(field("limit")); // the field it names
    expect(screen.getByTestId("confirm-card").dataset.state).toBe("pending");
    // answerable again: fix the edit, or deny (the original is confirmed once the form closes)
    expect((screen.getByTestId("confirm-edit-submit") as HTMLButtonElement).disabled).toBe(false);
    await fireEvent.click(screen.getByTestId("confirm-deny"));
    expect(onDecide).toHaveBeenLastCalledWith("deny");
  });

  it("closes with «Отмена» or Escape, sends nothing, and gives the focus back", async () => {
    const onDecide = await openEditor();
    await fireEvent.click(screen.getByTestId("confirm-edit-cancel"));
    expect(screen.queryByTestId("confirm-edit-form")).toBeNull();
    await vi.waitFor(() => expect(document.activeElement).toBe(screen.getByTestId("confirm-edit")));
    await fireEvent.click(screen.getByTestId("confirm-edit"));
    await fireEvent.keyDown(field("target_env_id"), { key: "Escape" });
    expect(screen.queryByTestId("confirm-edit-form")).toBeNull();
    expect(onDecide).not.toHaveBeenCalled();
  });

  it("takes the form away when the card expires", async () => {
    vi.useFakeTimers();
    vi.setSystemTime(new Date("2026-01-01T10:00:00Z"));
    render(ConfirmCard, { props: { item: card({ input, expiresAt: "2026-01-01T10:00:03Z" }) } });
    await fireEvent.click(screen.getByTestId("confirm-edit"));
    expect(screen.getByTestId("confirm-edit-form")).toBeTruthy();
    await vi.advanceTimersByTimeAsync(4_000);
    expect(screen.queryByTestId("confirm-edit-form")).toBeNull();
    expect(screen.queryByTestId("confirm-edit")).toBeNull();
  });
});
