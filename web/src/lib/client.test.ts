// @vitest-environment node
import { describe, expect, it, vi } from "vitest";
import { connect } from "./client";
import { ChatHttpError, ChatNetworkError } from "./errors";
import type { ChatMessage } from "./events";

const enc = new TextEncoder();

function sse(id: string, metadata: Record<string, unknown>, content = ""): string {
  return `id: ${id}\ndata: ${JSON.stringify({ role: "assistant", content, metadata })}\n\n`;
}
const token = (id: string, t: string) => sse(id, { type: "stream_token", token: t });
const end = (id: string, conversation = "c1") =>
  sse(id, {
    type: "stream_end",
    conversation_id: conversation,
    user_message_id: "u",
    assistant_message_id: "a",
  });

/** A streaming response of `chunks`; with `breakAfter` the body errors like a dropped socket. */
function streamResponse(chunks: string[], breakAfter = false, status = 200): Response {
  const queue = [...chunks];
  // pull, not start: an error() would discard chunks still queued
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const chunk = queue.shift();
      if (chunk !== undefined) controller.enqueue(enc.encode(chunk));
      else if (breakAfter) controller.error(new TypeError("network error"));
      else controller.close();
    },
  });
  return new Response(body, { status, headers: { "Content-Type": "text/event-stream" } });
}

function jsonResponse(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json" },
  });
}

interface Call {
  url: string;
  init: RequestInit;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

function fakeFetch(responses: Array<Response | Error | (() => Response | Promise<Response>)>) {
  const calls: Call[] = [];
  const impl = vi.fn(async (url: string | URL | Request, init: RequestInit = {}) => {
    calls.push({
      url: String(url),
      init,
      body: init.body ? JSON.parse(String(init.body)) : {},
      headers: { ...(init.headers as Record<string, string>) },
    });
    const next = responses.shift();
    if (next === undefined) throw new Error(`unexpected fetch ${String(url)}`);
    if (next instanceof Error) throw next;
    return typeof next === "function" ? next() : next;
  });
  return { impl: impl as unknown as typeof fetch, calls };
}

async function collect(iterable: AsyncIterable<ChatMessage>): Promise<ChatMessage[]> {
  const out: ChatMessage[] = [];
  for await (const event of iterable) out.push(event);
  return out;
}

const tokens = (events: ChatMessage[]) =>
  events
    .map((e) => (e.metadata as { token?: string }).token)
    .filter(Boolean)
    .join("");

const noSleep = async () => undefined;

describe("connect().submit", () => {
  it("posts the message with the headers and yields events until stream_end", async () => {
    const { impl, calls } = fakeFetch([
      streamResponse([token("c1:1", "Привет"), token("c1:2", ", мир"), end("c1:3")]),
    ]);
    const client = connect("https://api.example", { getToken: async () => "jwt", fetch: impl });
    const submission = client.submit({ text: "Здравствуй", files: [] }, [null, null], {
      uiContext: {
        contextVersion: 1,
        objectType: null,
        objectId: null,
        objectName: null,
        envId: "ss-dev",
        route: null,
      },
    });
    expect(submission.conversationId).toBeNull();
    const events = await collect(submission);
    expect(tokens(events)).toBe("Привет, мир");
    expect(events.at(-1)?.metadata).toMatchObject({ type: "stream_end" });
    expect(submission.conversationId).toBe("c1");
    expect(submission.lastEventId).toBe("c1:3");
    expect(calls).toHaveLength(1);
    expect(calls[0].url).toBe("https://api.example/api/agent/chat");
    expect(calls[0].init.method).toBe("POST");
    expect(calls[0].headers).toMatchObject({
      Authorization: "Bearer jwt",
      "Content-Type": "application/json",
      Accept: "text/event-stream",
    });
    expect(calls[0].headers["Last-Event-ID"]).toBeUndefined();
    // null fields and empty files are omitted
    expect(calls[0].body).toEqual({
      message: "Здравствуй",
      ui_context: {
        contextVersion: 1,
        objectType: null,
        objectId: null,
        objectName: null,
        envId: "ss-dev",
        route: null,
      },
    });
  });

  it("sends confirm with the card's confirmation id and no message", async () => {
    const { impl, calls } = fakeFetch([
      streamResponse([
        sse("c1:9", { type: "confirm_resolved", result: "confirmed" }),
        end("c1:10"),
      ]),
    ]);
    const client = connect("", { getToken: () => "jwt", fetch: impl });
    await collect(client.submit({ text: "" }, ["c1", "confirm"], { confirmationId: "conf-1" }));
    expect(calls[0].url).toBe("/api/agent/chat");
    expect(calls[0].body).toEqual({
      conversation_id: "c1",
      action: "confirm",
      confirmation_id: "conf-1",
    });
  });

  it("sends edit with the card's id and the edited arguments, and resumes without them", async () => {
    const { impl, calls } = fakeFetch([
      streamResponse([sse("c1:9", { type: "confirm_resolved", result: "confirmed" })], true),
      streamResponse([end("c1:10")]),
    ]);
    const client = connect("", { getToken: () => "jwt", fetch: impl, sleep: noSleep });
    const editedArgs = { dashboard_ids: [11], target_env_id: "staging", dry_run: false };
    await collect(
      client.submit({ text: "" }, ["c1", "edit"], { confirmationId: "conf-1", editedArgs }),
    );
    expect(calls[0].body).toEqual({
      conversation_id: "c1",
      action: "edit",
      confirmation_id: "conf-1",
      edited_args: editedArgs,
    });
    // a broken edit stream is resumed like any other: the edit is never sent twice
    expect(calls[1].body).toEqual({ conversation_id: "c1", action: "resume" });
  });

  it("refuses an edit before the stream with the server's code and detail", async () => {
    const { impl } = fakeFetch([
      jsonResponse(422, {
        code: "VALIDATION_ERROR",
        detail: "deploy_dashboard: invalid arguments: target_env_id: bad",
      }),
    ]);
    const client = connect("", { getToken: () => "jwt", fetch: impl });
    const submission = client.submit({ text: "" }, ["c1", "edit"], {
      confirmationId: "conf-1",
      editedArgs: { target_env_id: "bad env" },
    });
    await expect(collect(submission)).rejects.toMatchObject({
      status: 422,
      code: "VALIDATION_ERROR",
      detail: "deploy_dashboard: invalid arguments: target_env_id: bad",
    });
  });

  it("sends resume with Last-Event-ID and drops replayed events it already has", async () => {
    const { impl, calls } = fakeFetch([
      streamResponse([token("c1:4", "old"), token("c1:5", "new"), end("c1:6")]),
    ]);
    const client = connect("", { getToken: () => "jwt", fetch: impl });
    const events = await collect(
      client.submit({ text: "" }, ["c1", "resume"], { lastEventId: "c1:4" }),
    );
    expect(calls[0].headers["Last-Event-ID"]).toBe("c1:4");
    expect(calls[0].body).toEqual({ conversation_id: "c1", action: "resume" });
    expect(tokens(events)).toBe("new");
  });

  it("reconnects after a broken stream with resume + Last-Event-ID and de-duplicates by seq", async () => {
    const { impl, calls } = fakeFetch([
      streamResponse(
        [token("c1:1", "A"), token("c1:2", "B"), 'id: c1:3\ndata: {"role":"assis'],
        true,
      ),
      // the replay repeats 1 and 2, then continues
      streamResponse([token("c1:1", "A"), token("c1:2", "B"), token("c1:3", "C"), end("c1:4")]),
    ]);
    const sleep = vi.fn(noSleep);
    const online: boolean[] = [];
    const client = connect("", {
      getToken: () => "jwt",
      fetch: impl,
      reconnectDelayMs: 1234,
      sleep,
      onConnectionChange: (value) => online.push(value),
    });
    const events = await collect(client.submit({ text: "вопрос" }, [null, null]));
    expect(tokens(events)).toBe("ABC");
    expect(calls).toHaveLength(2);
    expect(calls[1].headers["Last-Event-ID"]).toBe("c1:2");
    expect(calls[1].body).toEqual({ conversation_id: "c1", action: "resume" });
    expect(sleep).toHaveBeenCalledWith(1234, expect.anything());
    expect(online).toEqual([true, false, true]);
  });

  it("treats a stream that closes without stream_end as broken, and gives up after the attempts", async () => {
    const { impl, calls } = fakeFetch([
      streamResponse([token("c1:1", "A")]),
      new TypeError("Failed to fetch"),
      new TypeError("Failed to fetch"),
    ]);
    const client = connect("", {
      getToken: () => "jwt",
      fetch: impl,
      reconnectAttempts: 2,
      sleep: noSleep,
    });
    const seen: ChatMessage[] = [];
    await expect(
      (async () => {
        for await (const e of client.submit({ text: "q" }, [null, null])) seen.push(e);
      })(),
    ).rejects.toBeInstanceOf(ChatNetworkError);
    expect(tokens(seen)).toBe("A");
    expect(calls).toHaveLength(3);
  });

  it("resumes after a stall (no bytes, no heartbeat) and a heartbeat keeps the stream alive", async () => {
    vi.useFakeTimers();
    try {
      let stalledController: ReadableStreamDefaultController<Uint8Array> | undefined;
      const stalled = new ReadableStream<Uint8Array>({
        start(controller) {
          stalledController = controller;
          controller.enqueue(enc.encode(token("c1:1", "A")));
        },
      });
      const { impl, calls } = fakeFetch([
        new Response(stalled, { status: 200 }),
        streamResponse([token("c1:2", "B"), end("c1:3")]),
      ]);
      const client = connect("", {
        getToken: () => "jwt",
        fetch: impl,
        stallTimeoutMs: 1000,
        sleep: noSleep,
      });
      const done = collect(client.submit({ text: "q" }, [null, null]));
      await vi.advanceTimersByTimeAsync(800);
      stalledController!.enqueue(enc.encode(": heartbeat\n\n"));
      await vi.advanceTimersByTimeAsync(800);
      expect(calls).toHaveLength(1); // the heartbeat re-armed the timer
      await vi.advanceTimersByTimeAsync(500);
      const events = await done;
      expect(tokens(events)).toBe("AB");
      expect(calls).toHaveLength(2);
      expect(calls[1].headers["Last-Event-ID"]).toBe("c1:1");
    } finally {
      vi.useRealTimers();
    }
  });

  it("retries a request that found no server, then reports it unreachable", async () => {
    const { impl, calls } = fakeFetch([
      new TypeError("Failed to fetch"),
      new TypeError("Failed to fetch"),
      new TypeError("Failed to fetch"),
    ]);
    const sleep = vi.fn(noSleep);
    const client = connect("", {
      getToken: () => "jwt",
      fetch: impl,
      reconnectAttempts: 2,
      reconnectDelayMs: 10,
      sleep,
    });
    await expect(collect(client.submit({ text: "q" }, [null, null]))).rejects.toBeInstanceOf(
      ChatNetworkError,
    );
    expect(calls).toHaveLength(3);
    expect(sleep).toHaveBeenCalledTimes(2);
  });

  it.each([
    [409, { code: "CONVERSATION_BUSY", detail: "another tab" }],
    [
      422,
      { code: "INVALID_CONTEXT", detail: "bad", problems: [{ reason: "unknown_environment" }] },
    ],
    [401, { code: "UNAUTHORIZED", detail: "expired" }],
    [503, { code: "TOOL_FAILURE", detail: "no service token" }],
  ])("maps a %i before the stream to ChatHttpError", async (status, body) => {
    const { impl } = fakeFetch([jsonResponse(status, body)]);
    const client = connect("", { getToken: () => "jwt", fetch: impl });
    const error = await collect(client.submit({ text: "q" }, ["c1", null])).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ChatHttpError);
    expect(error).toMatchObject({ status, code: body.code, detail: body.detail });
  });

  it("on a reconnect shows what the server says anew (no id) and reads to the stream's own end", async () => {
    const anew = (content: string, metadata: Record<string, unknown> = {}) =>
      `data: ${JSON.stringify({ role: "assistant", content, metadata })}\n\n`;
    const unknown = "Статус операции неизвестен — проверьте статус.";
    const { impl } = fakeFetch([
      streamResponse([
        token("c1:3", "A"), // seen before the drop
        end("c1:4"), // the turn's stored end, seen too
        anew(unknown), // said anew: no id
        anew("", {
          type: "stream_end",
          conversation_id: "c1",
          user_message_id: null,
          assistant_message_id: null,
        }),
      ]),
    ]);
    const client = connect("", { getToken: () => "jwt", fetch: impl });
    const seen = await collect(
      client.submit({ text: "" }, ["c1", "resume"], { lastEventId: "c1:4" }),
    );
    expect(seen.map((e) => e.content || (e.metadata as { type?: string }).type)).toEqual([
      unknown,
      "stream_end",
    ]);
  });

  it("maps a body that is not JSON to a ChatHttpError too", async () => {
    const { impl } = fakeFetch([new Response("Bad gateway", { status: 502 })]);
    const client = connect("", { getToken: () => "jwt", fetch: impl });
    const error = await collect(client.submit({ text: "q" })).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 502, code: "INTERNAL_ERROR", detail: "Bad gateway" });
  });

  /** A chat stream that stays open until the test says; the cancel endpoint answers `cancelStatus`. */
  function openStream(
    cancelStatus: number,
    onCancel?: (body: ReadableStreamDefaultController<Uint8Array>) => void,
  ) {
    let bodyController: ReadableStreamDefaultController<Uint8Array> | undefined;
    const state: { chatSignal?: AbortSignal; calls: Call[] } = { calls: [] };
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        bodyController = controller;
        controller.enqueue(enc.encode(token("c7:1", "A")));
      },
    });
    const impl = (async (url: string, init: RequestInit = {}) => {
      state.calls.push({
        url,
        init,
        body: JSON.parse(String(init.body)),
        headers: init.headers as Record<string, string>,
      });
      if (url.endsWith("/api/agent/chat")) {
        state.chatSignal = init.signal ?? undefined;
        state.chatSignal?.addEventListener("abort", () =>
          bodyController?.error(new DOMException("aborted", "AbortError")),
        );
        return new Response(body, { status: 200 });
      }
      if (bodyController) onCancel?.(bodyController);
      return cancelStatus === 202
        ? new Response(null, { status: 202 })
        : jsonResponse(409, { code: "NOT_RUNNING", detail: "nothing runs" });
    }) as unknown as typeof fetch;
    return { impl, state };
  }

  it("cancel() asks the server to stop and lets the stream say what became of the run", async () => {
    const stopped = "Генерация остановлена по запросу; ход сохранён до этого места.";
    const { impl, state } = openStream(202, (body) => {
      // The server stops the run: its closing word, then stream_end
      body.enqueue(enc.encode(sse("c7:2", {}, stopped) + end("c7:3", "c7")));
      body.close();
    });
    const client = connect("", { getToken: () => "jwt", fetch: impl });
    const submission = client.submit({ text: "q" });
    const seen: ChatMessage[] = [];
    let cancelled: Promise<void> | undefined;
    for await (const event of submission) {
      seen.push(event);
      cancelled ??= submission.cancel();
    }
    await cancelled;
    expect(seen.map((e) => e.content || (e.metadata as { type?: string }).type)).toEqual([
      "stream_token",
      stopped,
      "stream_end",
    ]);
    expect(state.calls.map((c) => c.url)).toEqual(["/api/agent/chat", "/api/agent/chat/cancel"]);
    expect(state.calls[1].body).toEqual({ conversation_id: "c7" });
    expect(state.calls[1].headers).toMatchObject({ Authorization: "Bearer jwt" });
  });

  it("cancel() aborts the stream when the server does not end it in time; 409 NOT_RUNNING is fine", async () => {
    const { impl, state } = openStream(409);
    const client = connect("", { getToken: () => "jwt", fetch: impl, cancelGraceMs: 20 });
    const submission = client.submit({ text: "q" });
    const seen: ChatMessage[] = [];
    let cancelled: Promise<void> | undefined;
    for await (const event of submission) {
      seen.push(event);
      cancelled ??= submission.cancel();
    }
    await cancelled;
    expect(seen).toHaveLength(1);
    expect(state.chatSignal?.aborted).toBe(true);
    expect(state.calls.map((c) => c.url)).toEqual(["/api/agent/chat", "/api/agent/chat/cancel"]);
  });

  it("cancel() surfaces an unexpected refusal", async () => {
    const { impl } = fakeFetch([jsonResponse(401, { code: "UNAUTHORIZED", detail: "no" })]);
    const client = connect("", { getToken: () => "jwt", fetch: impl });
    await expect(client.cancel("c1")).rejects.toMatchObject({ status: 401 });
  });
});
