import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../lib/events";
import { TOOL_STATE_LABELS } from "./labels";
import { ChatState } from "./chatState.svelte";

const ev = (metadata: Record<string, unknown>, content = "") =>
  ({ role: "assistant", content, metadata }) as unknown as ChatMessage;

describe("ChatState", () => {
  it("appends tokens to the last assistant message and plain text as its own paragraph", () => {
    const chat = new ChatState();
    chat.addUser("вопрос");
    chat.apply(ev({ type: "stream_token", token: "Первое." }));
    chat.apply(ev({}, "Второе."));
    chat.apply(ev({ type: "stream_token", token: " Третье" }));
    chat.apply(ev({ type: "stream_token", token: " слово." }));
    const assistant = chat.items.filter((i) => i.kind === "assistant");
    expect(assistant).toHaveLength(1);
    // a whole message is never glued to the tokens around it, on either side
    expect(assistant[0].kind === "assistant" && assistant[0].text).toBe(
      "Первое.\n\nВторое.\n\nТретье слово.",
    );
  });

  it("says which streamed message is finished: once, when what follows starts", () => {
    const chat = new ChatState();
    chat.addUser("вопрос");
    chat.apply(ev({ type: "stream_token", token: "Смотрю " }));
    chat.apply(ev({ type: "stream_token", token: "дашборд." }));
    expect(chat.finished).toBeNull(); // still streaming: nothing to say yet
    chat.apply(ev({ type: "tool_start", tool: "get_dashboard", input: {}, tool_call_id: "t1" }));
    expect(chat.finished?.text).toBe("Смотрю дашборд.");
    chat.apply(ev({ type: "stream_token", token: "Готово." }));
    chat.endTurn();
    expect(chat.finished?.text).toBe("Готово.");
  });

  it("announces nothing read from the history", () => {
    const chat = new ChatState();
    chat.loadHistory([
      { role: "user", content: "вопрос" },
      { role: "assistant", content: "ответ" },
    ] as never);
    chat.endTurn();
    expect(chat.finished).toBeNull();
  });

  it("starts the tokens after a whole message on a new paragraph even without a space", () => {
    const chat = new ChatState();
    chat.apply(ev({}, "Операция отменена, ничего не изменено."));
    chat.apply(ev({ type: "stream_token", token: "Хорошо" }));
    const [assistant] = chat.items;
    expect(assistant.kind === "assistant" && assistant.text).toBe(
      "Операция отменена, ничего не изменено.\n\nХорошо",
    );
  });

  it("tracks a tool call from start to end or error", () => {
    const chat = new ChatState();
    chat.apply(
      ev({ type: "tool_start", tool: "list_dashboards", input: { q: 1 }, tool_call_id: "t1" }),
    );
    chat.apply(ev({ type: "tool_start", tool: "get_dataset", input: {}, tool_call_id: "t2" }));
    chat.apply(
      ev({
        type: "tool_end",
        tool: "list_dashboards",
        output: [1],
        tool_call_id: "t1",
        output_ref: "/x",
        output_bytes: 9,
        truncated: true,
      }),
    );
    chat.apply(
      ev({
        type: "tool_error",
        tool: "get_dataset",
        error: "boom",
        code: "TOOL_FAILURE",
        tool_call_id: "t2",
      }),
    );
    const tools = chat.items.filter((i) => i.kind === "tool");
    expect(tools.map((t) => t.kind === "tool" && [t.state, t.outputRef ?? t.code])).toEqual([
      ["done", "/x"],
      ["error", "TOOL_FAILURE"],
    ]);
  });

  it("shows a call sent and never answered as of unknown outcome, never as a failure", () => {
    const chat = new ChatState();
    // The history of a run that ended mid-call keeps the call as started, with no verdict
    chat.loadHistory([
      {
        id: "m1",
        role: "assistant",
        content: "",
        created_at: "",
        seq: 2,
        tool_calls: [
          { tool: "deploy_dashboard", tool_call_id: "t2", input: {}, status: "started" },
        ],
      },
    ]);
    const [fromHistory] = chat.items.filter((i) => i.kind === "tool");
    expect(fromHistory.kind === "tool" && [fromHistory.state, fromHistory.error]).toEqual([
      "unknown",
      "Ответ на вызов не получен.",
    ]);
    const live = new ChatState();
    live.apply(ev({ type: "tool_start", tool: "deploy_dashboard", input: {}, tool_call_id: "t1" }));
    live.apply(
      ev({
        type: "tool_error",
        tool: "deploy_dashboard",
        error: "x",
        code: "TOOL_OUTCOME_UNKNOWN",
        tool_call_id: "t1",
      }),
    );
    const [call] = live.items;
    expect(call.kind === "tool" && call.state).toBe("unknown");
  });

  it("resolves the pending card and keeps one card when a resume re-emits it", () => {
    const chat = new ChatState();
    const card = ev({
      type: "confirm_required",
      prompt: "p",
      thread_id: "th",
      tool_call_id: "t1",
      interrupt_id: "i",
      confirmation_id: "conf-1",
      expires_at: null,
      decision: { tone: "info", operation: "write" },
      input: {},
    });
    chat.apply(card);
    chat.apply(card);
    expect(chat.items.filter((i) => i.kind === "confirm")).toHaveLength(1);
    chat.apply(ev({ type: "confirm_resolved", result: "denied" }));
    const item = chat.items.find((i) => i.kind === "confirm");
    expect(item?.kind === "confirm" && item.state).toBe("denied");
  });

  it("renders history with tool calls and resolved cards", () => {
    const chat = new ChatState();
    chat.loadHistory([
      { id: "m1", role: "user", content: "разверни", created_at: "", seq: 1 },
      {
        id: "m2",
        role: "assistant",
        content: "Жду подтверждения",
        created_at: "",
        seq: 5,
        tool_calls: [
          { tool: "get_dashboard", input: { id: 1 }, status: "tool_end", output: { ok: true } },
        ],
        confirmations: [
          {
            type: "confirm_required",
            confirmation_id: "c1",
            prompt: "p",
            decision: undefined,
            expires_at: null,
          },
          { type: "confirm_resolved", result: "confirmed" },
        ],
      },
    ]);
    expect(chat.items.map((i) => i.kind)).toEqual(["user", "tool", "confirm", "assistant"]);
    const card = chat.items[2];
    expect(card.kind === "confirm" && card.state).toBe("confirmed");
  });
});

describe("ChatState: a card confirmed with edits", () => {
  const card = (confirmationId: string, input: Record<string, unknown>, tone = "info") =>
    ev({
      type: "confirm_required",
      prompt: "p",
      thread_id: "th",
      tool_call_id: "call-1",
      interrupt_id: "i",
      confirmation_id: confirmationId,
      expires_at: null,
      decision: { tool: "deploy_dashboard", tone, operation: "write" },
      input,
    });
  const original = { dashboard_ids: [10], source_env_id: "ss-dev", target_env_id: "staging" };
  const start = (input: Record<string, unknown>) =>
    ev({ type: "tool_start", tool: "deploy_dashboard", input, tool_call_id: "call-1" });

  function waiting(): ChatState {
    const chat = new ChatState();
    chat.apply(start(original));
    chat.apply(card("conf-1", original));
    return chat;
  }

  it("runs the edited call on the call's own card, showing the edited input", () => {
    const chat = waiting();
    const edited = { ...original, dashboard_ids: [11] };
    chat.apply(ev({ type: "confirm_resolved", result: "confirmed" }));
    const again = chat.apply(start(edited));
    chat.apply(
      ev({ type: "tool_end", tool: "deploy_dashboard", output: {}, tool_call_id: "call-1" }),
    );
    const tools = chat.items.filter((i) => i.kind === "tool");
    expect(tools).toHaveLength(1);
    expect(again).toBe(tools[0]);
    expect(tools[0].kind === "tool" && [tools[0].state, tools[0].input]).toEqual(["done", edited]);
    // its card no longer claims the plan it showed (of dashboard 10): it ran with the edits
    const [answered] = chat.items.filter((i) => i.kind === "confirm");
    expect(answered.kind === "confirm" && answered.ranEdited).toBe(true);
  });

  it("closes a superseded card as nothing run and waits on the edited call's new card", () => {
    const chat = waiting();
    const edited = { ...original, target_env_id: "prod" };
    chat.apply(ev({ type: "confirm_resolved", result: "superseded" }));
    chat.apply(card("conf-2", edited, "destructive"));
    const cards = chat.items.filter((i) => i.kind === "confirm");
    expect(cards.map((c) => c.kind === "confirm" && [c.confirmationId, c.state])).toEqual([
      ["conf-1", "superseded"],
      ["conf-2", "pending"],
    ]);
    const tools = chat.items.filter((i) => i.kind === "tool");
    expect(tools).toHaveLength(1);
    expect(tools[0].kind === "tool" && [tools[0].state, tools[0].input]).toEqual([
      "waiting",
      edited,
    ]);
    // the new card is answered like any card: its resolution is its own, the old one stays
    chat.apply(ev({ type: "confirm_resolved", result: "denied" }));
    expect(cards.map((c) => c.kind === "confirm" && c.state)).toEqual(["superseded", "denied"]);
    expect(tools[0].kind === "tool" && tools[0].state).toBe("not_run");
  });

  it("says at once, on the card and on its call, that the card's time ran out", () => {
    const chat = waiting();
    const [card] = chat.items.filter((i) => i.kind === "confirm");
    const [tool] = chat.items.filter((i) => i.kind === "tool");
    expect(tool.kind === "tool" && tool.state).toBe("waiting");
    if (card.kind === "confirm") chat.expire(card);
    expect(card.kind === "confirm" && card.state).toBe("expired");
    expect(tool.kind === "tool" && tool.state).toBe("expired");
    // (not while a decision is on its way: its answer says how the card ended)
    const [other] = waiting().items.filter((i) => i.kind === "confirm");
    if (other.kind === "confirm") {
      other.sending = true;
      chat.expire(other);
      expect(other.state).toBe("pending");
    }
    expect(TOOL_STATE_LABELS.expired).toBe(
      "не выполнялся — время подтверждения истекло, ничего не изменено",
    );
  });

  it("closes a stale card as nothing run and waits on the same call's new card", () => {
    const chat = waiting();
    chat.apply(ev({ type: "confirm_resolved", result: "stale" }));
    chat.apply(card("conf-2", original, "destructive"));
    const cards = chat.items.filter((i) => i.kind === "confirm");
    expect(cards.map((c) => c.kind === "confirm" && [c.confirmationId, c.state])).toEqual([
      ["conf-1", "stale"],
      ["conf-2", "pending"],
    ]);
    const tools = chat.items.filter((i) => i.kind === "tool");
    expect(tools.map((t) => t.kind === "tool" && t.state)).toEqual(["waiting"]);
  });

  it("reads a call behind a card as one tool card from the history, edited or not", () => {
    const edited = { ...original, dashboard_ids: [11] };
    for (const [later, shown] of [
      [undefined, original],
      [edited, edited],
    ] as const) {
      const chat = new ChatState();
      chat.loadHistory([
        {
          id: "m1",
          role: "assistant",
          content: "",
          created_at: "",
          seq: 2,
          tool_calls: [
            {
              tool: "deploy_dashboard",
              tool_call_id: "call-1",
              input: original,
              status: "started",
            },
          ],
          confirmations: [
            {
              type: "confirm_required",
              confirmation_id: "c1",
              tool_call_id: "call-1",
              prompt: "p",
              expires_at: null,
              input: original,
            },
          ],
        },
        {
          id: "m2",
          role: "assistant",
          content: "Готово",
          created_at: "",
          seq: 5,
          tool_calls: [
            {
              tool: "deploy_dashboard",
              tool_call_id: "call-1",
              input: later,
              status: "tool_end",
              output: { ok: true },
            },
          ],
          confirmations: [{ type: "confirm_resolved", result: "confirmed" }],
        },
      ]);
      const tools = chat.items.filter((i) => i.kind === "tool");
      expect(tools).toHaveLength(1);
      const [call] = tools;
      expect(call.kind === "tool" && [call.state, call.error, call.input]).toEqual([
        "done",
        undefined,
        shown,
      ]);
    }
  });

  it("reads a superseded card from the history, the call showing the edited input", () => {
    const prod = { ...original, target_env_id: "prod" };
    const chat = new ChatState();
    chat.loadHistory(
      [
        {
          id: "m2",
          role: "assistant",
          content: "",
          created_at: "",
          seq: 5,
          tool_calls: [
            {
              tool: "deploy_dashboard",
              tool_call_id: "call-1",
              input: original,
              status: "started",
            },
          ],
          confirmations: [
            { type: "confirm_required", confirmation_id: "c1", prompt: "p", expires_at: null },
            { type: "confirm_resolved", result: "superseded" },
            {
              type: "confirm_required",
              confirmation_id: "c2",
              tool_call_id: "call-1",
              prompt: "p",
              expires_at: null,
              input: prod,
            },
          ],
        },
      ],
      "c2",
    );
    const states = chat.items.map((i) => (i.kind === "confirm" ? i.state : i.kind));
    expect(states).toEqual(["tool", "superseded", "pending"]);
    const [call] = chat.items;
    expect(call.kind === "tool" && [call.state, call.input]).toEqual(["waiting", prod]);
  });
});
