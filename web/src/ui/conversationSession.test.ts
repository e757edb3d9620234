import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DEFAULT_CONFIG } from "../lib/config";
import { ChatHttpError } from "../lib/errors";
import type { ChatMessage } from "../lib/events";
import type { HistoryMessage } from "../lib/rest";
import type { ConfirmItem } from "./chatState.svelte";
import { ConversationSession, type SessionOptions } from "./conversationSession.svelte";
import { Backend, json, message, ScriptedChat } from "./fakeBackend";

const ev = (metadata: Record<string, unknown>, content = "") =>
  ({ role: "assistant", content, metadata }) as unknown as ChatMessage;
const token = (text: string) => ev({ type: "stream_token", token: text });
const end = (conversationId: string) => ev({ type: "stream_end", conversation_id: conversationId });
const card = (confirmationId: string) =>
  ev({
    type: "confirm_required",
    prompt: "Изменения в ss-dev",
    tool_call_id: "call-1",
    confirmation_id: confirmationId,
    expires_at: new Date(Date.now() + 60_000).toISOString(),
    input: { id: 10 },
    decision: { tool: "update_dashboard", operation: "write", tone: "info" },
  });

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

let backend: Backend;

function sessionWith(chat: ScriptedChat, options: SessionOptions = {}) {
  const session = new ConversationSession(options);
  session.visit(window.location.search);
  const begun = session.begin(
    { ...DEFAULT_CONFIG, reconnectAttempts: 0 },
    { chat, rest: backend.rest },
  );
  return { session, begun };
}

beforeEach(() => {
  backend = new Backend();
  window.history.replaceState(null, "", "/agent/?objectType=dashboard&objectId=10&envId=ss-dev");
});

afterEach(() => {
  vi.useRealTimers();
});

describe("ConversationSession", () => {
  it("sends the message, streams the answer and names the conversation in the tab's hash", async () => {
    // Given a page opened from a dashboard in ss-dev
    const chat = new ScriptedChat([
      { conversationId: "c1", events: [token("Готово"), token("."), end("c1")] },
    ]);
    const focusComposer = vi.fn();
    const { session, begun } = sessionWith(chat, { focusComposer });
    await begun;
    expect(session.probe.ready).toBe(true);
    expect(session.envId).toBe("ss-dev");
    expect(session.tier).toBe("dev");

    // When the person sends a message
    session.draft = "  обнови дашборд ";
    expect(session.canSend).toBe(true);
    await session.send();

    // Then the chat got it with the page's context, and the answer is in the chat
    expect(chat.requests[0].input).toEqual({ text: "обнови дашборд", files: [] });
    expect(chat.requests[0].target).toEqual([null, null]);
    expect(chat.requests[0].extra.uiContext).toMatchObject({ objectId: "10", envId: "ss-dev" });
    expect(session.chat.items.map((item) => [item.kind, "text" in item && item.text])).toEqual([
      ["user", "обнови дашборд"],
      ["assistant", "Готово."],
    ]);
    expect(session.conversationId).toBe("c1");
    expect(window.location.hash).toBe("#c=c1");
    expect(session.draft).toBe("");
    expect(session.streaming).toBe(false);
    expect(session.probe.streamsEnded).toBe(1);
    expect(focusComposer).toHaveBeenCalled();
  });

  it("keeps a message over the chat's limit in the composer, unsent", async () => {
    const chat = new ScriptedChat();
    const { session, begun } = sessionWith(chat);
    await begun;
    session.draft = "я".repeat(8001);
    expect(session.tooLong).toBe(true);
    expect(session.canSend).toBe(false);
    await session.send();
    expect(chat.requests).toHaveLength(0);
    expect(session.draft).toHaveLength(8001);
  });

  it("puts a message another tab's turn refused back in the composer, and waits for that turn", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    // Given a conversation this tab started
    const chat = new ScriptedChat([
      { conversationId: "c1", events: [token("Первый ответ."), end("c1")] },
      { refusal: new ChatHttpError(409, "CONVERSATION_BUSY", "другая вкладка") },
    ]);
    const { session, begun } = sessionWith(chat);
    await begun;
    session.draft = "первое";
    await session.send();

    // When another tab takes it between the gate's check and the send
    backend.active.c1 = [{ active: false }, { active: true }];
    session.draft = "второе";
    await session.send();

    // Then the refusal shows (nothing to retry), the message is back, and sending waits
    expect(session.draft).toBe("второе");
    const users = session.chat.items.filter((item) => item.kind === "user");
    expect(users).toHaveLength(1);
    const error = session.chat.items.at(-1);
    expect(error).toMatchObject({ kind: "error", code: "CONVERSATION_BUSY", retry: false });
    await vi.waitFor(() => expect(session.busyElsewhere).toBe(true));
    expect(session.canSend).toBe(false);

    // And when the other tab's turn ends, its turn is read before this tab goes on
    backend.histories.c1 = [message("user", 1, "из другой вкладки"), message("assistant", 3, "ок")];
    backend.active.c1 = [{ active: false }];
    await vi.advanceTimersByTimeAsync(2000);
    await vi.waitFor(() => expect(session.busyElsewhere).toBe(false));
    await vi.waitFor(() =>
      expect(session.chat.items.map((item) => item.kind)).toEqual(["user", "assistant"]),
    );
    expect(backend.asked.at(-1)).toBe("/api/assistant/history");
    expect(session.canSend).toBe(true);
  });

  it("«Повторить» repeats the failed message alone, and its card gives way to the new attempt", async () => {
    const chat = new ScriptedChat([
      {
        conversationId: "c2",
        events: [ev({ type: "error", code: "LLM_UNAVAILABLE", detail: "нет модели" }), end("c2")],
      },
      { conversationId: "c2", events: [token("Теперь ответ."), end("c2")] },
    ]);
    const { session, begun } = sessionWith(chat);
    await begun;
    session.draft = "вопрос";
    await session.send();
    const error = session.chat.items.at(-1);
    expect(error).toMatchObject({ kind: "error", code: "LLM_UNAVAILABLE", retry: true });

    session.retry(error!.key);
    await vi.waitFor(() => expect(session.probe.streamsEnded).toBe(2));
    expect(chat.requests[1].input).toEqual({ text: "вопрос", files: [] });
    expect(chat.requests[1].target).toEqual(["c2", null]);
    expect(session.chat.items.map((item) => item.kind)).toEqual(["user", "assistant"]);
  });

  it("offers no retry where there is nothing to repeat", async () => {
    const chat = new ScriptedChat();
    const { session, begun } = sessionWith(chat);
    await begun;
    session.showError(new ChatHttpError(503, "LLM_UNAVAILABLE", "нет модели"));
    expect(session.chat.items.at(-1)).toMatchObject({ kind: "error", retry: false });
  });

  it("sends a card's decision, then gives the conversation back to the composer", async () => {
    const chat = new ScriptedChat([
      { conversationId: "c3", events: [card("conf-1"), end("c3")] },
      {
        conversationId: "c3",
        events: [ev({ type: "confirm_resolved", result: "confirmed" }), end("c3")],
      },
    ]);
    const focusComposer = vi.fn();
    const { session, begun } = sessionWith(chat, { focusComposer });
    await begun;
    session.draft = "обнови";
    await session.send();
    focusComposer.mockClear();
    const pending = session.chat.items.at(-1) as ConfirmItem;

    expect(await session.decide(pending, "confirm")).toBeUndefined();

    expect(chat.requests[1].target).toEqual(["c3", "confirm"]);
    expect(chat.requests[1].extra).toMatchObject({ confirmationId: "conf-1" });
    expect(pending.state).toBe("confirmed");
    expect(focusComposer).toHaveBeenCalled();
  });

  it("waits for the running stream's end before it sends a card's decision", async () => {
    let finish = () => {};
    const hold = new Promise<void>((resolve) => (finish = resolve));
    const chat = new ScriptedChat([
      { conversationId: "c4", events: [card("conf-1"), end("c4")], hold },
      { conversationId: "c4", events: [ev({ type: "confirm_resolved", result: "denied" })] },
    ]);
    const { session, begun } = sessionWith(chat);
    await begun;
    session.draft = "обнови";
    const sending = session.send();
    await vi.waitFor(() => expect(session.chat.items.at(-1)?.kind).toBe("confirm"));
    const pending = session.chat.items.at(-1) as ConfirmItem;

    const deciding = session.decide(pending, "deny");
    await settle();
    expect(pending.sending).toBe(true);
    expect(chat.requests).toHaveLength(1);

    finish();
    await Promise.all([sending, deciding]);
    expect(chat.requests[1].target).toEqual(["c4", "deny"]);
    expect(pending.state).toBe("denied");
  });

  it("keeps a card waiting when its edit is refused, and says why on the card", async () => {
    const chat = new ScriptedChat([
      { conversationId: "c5", events: [card("conf-1"), end("c5")] },
      { refusal: new ChatHttpError(422, "VALIDATION_ERROR", "dashboard_ids: bad") },
      { refusal: new ChatHttpError(410, "CONFIRMATION_EXPIRED", "истекло") },
    ]);
    const { session, begun } = sessionWith(chat);
    await begun;
    session.draft = "обнови";
    await session.send();
    const pending = session.chat.items.at(-1) as ConfirmItem;

    const refused = await session.decide(pending, "edit", { id: 0 });
    expect(refused).toEqual({ refused: "dashboard_ids: bad" });
    expect(chat.requests[1].extra).toMatchObject({ editedArgs: { id: 0 } });
    expect(pending).toMatchObject({ state: "pending", sending: false });
    expect(session.chat.items.some((item) => item.kind === "error")).toBe(false);

    // A confirm the server says came too late: the card says so, nothing ran
    expect(await session.decide(pending, "confirm")).toBeUndefined();
    expect(pending.state).toBe("expired");
  });

  it("re-reads the conversation when a decision is refused as made elsewhere", async () => {
    const chat = new ScriptedChat([
      { conversationId: "c6", events: [card("conf-1"), end("c6")] },
      { refusal: new ChatHttpError(409, "ALREADY_DECIDED", "уже решено") },
    ]);
    const { session, begun } = sessionWith(chat);
    await begun;
    session.draft = "обнови";
    await session.send();
    backend.histories.c6 = [message("user", 1, "обнови"), message("assistant", 3, "Отклонено.")];

    await session.decide(session.chat.items.at(-1) as ConfirmItem, "confirm");

    await vi.waitFor(() => expect(session.chat.items.at(-1)).toMatchObject({ text: "Отклонено." }));
    expect(backend.asked.slice(-2)).toEqual([
      "/api/agent/conversations/c6/active",
      "/api/assistant/history",
    ]);
  });

  it("re-attaches the tab's conversation: state, then history, then the rest of a running turn", async () => {
    // Given a reload while a turn runs in the conversation the hash names
    window.location.hash = "#c=c7";
    backend.active.c7 = [{ active: true }];
    const stored = { contextVersion: 1, objectType: "dataset", objectId: "5", envId: "ss-dev" };
    backend.histories.c7 = [
      message("user", 1, "первый", { ui_context: stored as HistoryMessage["ui_context"] }),
      message("assistant", 4, "ответ"),
      message("user", 5, "второй"),
    ];
    const chat = new ScriptedChat([
      { conversationId: "c7", events: [token("Продолжение."), end("c7")] },
    ]);

    // When the page starts
    const { session, begun } = sessionWith(chat);
    await begun;

    // Then it read the state before the history, and resumed from the running turn's start
    expect(
      backend.asked.filter((path) => !path.includes("environments") && !path.includes("limits")),
    ).toEqual(["/api/agent/conversations/c7/active", "/api/assistant/history"]);
    expect(chat.requests[0].target).toEqual(["c7", "resume"]);
    expect(chat.requests[0].extra.lastEventId).toBe("c7:4");
    expect(session.chat.items.at(-1)).toMatchObject({ kind: "assistant", text: "Продолжение." });
    // and the conversation goes on in the context its messages were written in
    expect(session.uiContext).toMatchObject({ objectType: "dataset", objectId: "5" });
    expect(session.contextUnavailable).toBe(false);
  });

  it("goes on without a context in a conversation from before page contexts", async () => {
    backend.histories.old = [message("user", 1, "старый"), message("assistant", 2, "да")];
    const { session, begun } = sessionWith(new ScriptedChat());
    await begun;
    await session.openConversation("old");
    expect(session.contextUnavailable).toBe(true);
    expect(session.envId).toBeNull();
    expect(session.uiContext.objectId).toBeNull();
  });

  it("shows only the last conversation opened while another still loads", async () => {
    let release = () => {};
    backend.holdHistory.a = new Promise<void>((resolve) => (release = resolve));
    backend.histories.a = [message("user", 1, "из A")];
    backend.histories.b = [message("user", 1, "из B")];
    const { session, begun } = sessionWith(new ScriptedChat());
    await begun;

    const openingA = session.openConversation("a");
    await vi.waitFor(() => expect(backend.asked).toContain("/api/assistant/history"));
    await session.openConversation("b");
    release();
    await openingA;

    expect(session.conversationId).toBe("b");
    expect(session.chat.items).toMatchObject([{ kind: "user", text: "из B" }]);
    expect(session.loadingConversation).toBe(false);
  });

  it("says so when the conversation is not there (or not the user's), and starts afresh", async () => {
    const { session, begun } = sessionWith(new ScriptedChat());
    await begun;
    await session.openConversation("gone");
    expect(session.chat.items).toMatchObject([{ kind: "error", code: "NOT_FOUND" }]);
    expect(session.conversationId).toBeNull();
    expect(window.location.hash).toBe("");
  });

  it("stops the run: the submission is cancelled and the stream ends", async () => {
    const chat = new ScriptedChat([
      {
        conversationId: "c8",
        events: [token("Долгий "), token("ответ"), end("c8")],
        hold: new Promise(() => {}),
      },
    ]);
    const { session, begun } = sessionWith(chat);
    await begun;
    session.draft = "долго";
    const sending = session.send();
    await vi.waitFor(() => expect(session.streaming).toBe(true));
    await session.stop();
    await sending;
    expect(chat.requests[0].submission.cancelled).toBe(true);
    expect(session.streaming).toBe(false);
  });

  it("starts a new conversation in the visit's context, dropping an environment nobody knows", async () => {
    window.history.replaceState(null, "", "/agent/?objectType=dashboard&objectId=10&envId=nowhere");
    const chat = new ScriptedChat([{ conversationId: "c9", events: [token("да"), end("c9")] }]);
    const { session, begun } = sessionWith(chat);
    await begun;
    expect(session.envId).toBeNull();
    session.draft = "привет";
    await session.send();

    await session.newConversation();

    expect(session.conversationId).toBeNull();
    expect(session.chat.items).toEqual([]);
    expect(window.location.hash).toBe("");
    expect(session.uiContext).toMatchObject({ objectId: "10", envId: null });
  });

  it("opens the demo sign-in on a 401 where there is one, and sends nothing meanwhile", async () => {
    backend.environments = json(401, { code: "UNAUTHORIZED", detail: "нет входа" });
    const forget = vi.fn();
    const { session, begun } = sessionWith(new ScriptedChat(), {
      demoSignin: { signedOut: () => false, forget },
    });
    await begun;
    expect(forget).toHaveBeenCalled();
    expect(session.signinOpen).toBe(true);
    session.draft = "привет";
    expect(session.canSend).toBe(false);
    expect(session.chat.items).toEqual([]);
  });

  it("shows an unreachable server as offline, with «Повторить» that starts again", async () => {
    backend.environments = "offline";
    const { session, begun } = sessionWith(new ScriptedChat());
    await begun;
    expect(session.online).toBe(false);
    const error = session.chat.items.at(-1);
    expect(error).toMatchObject({ kind: "error", code: "SERVER_UNREACHABLE", retry: true });

    backend.environments = { items: [{ id: "prod", tier: "prod" }] };
    session.retry(error!.key);
    await vi.waitFor(() => expect(session.environments).toHaveLength(1));
    expect(session.online).toBe(true);
    expect(session.chat.items).toEqual([]);
  });
});
