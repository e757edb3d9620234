/**
 * The chat transport: `POST /api/agent/chat` read as Server-Sent Events over fetch, with
 * automatic resume (`action: "resume"` + `Last-Event-ID`) when the stream breaks before
 * `stream_end`, de-duplicated by the event's seq.
 */
import type { TokenSource } from "./auth";
import { DEFAULT_CONFIG } from "./config";
import {
  ChatHttpError,
  ChatNetworkError,
  httpErrorFrom,
  isAbort,
  isNetworkFailure,
} from "./errors";
import { isStreamEnd, parseChatMessage, parseEventId, type ChatMessage } from "./events";
import { SseParser } from "./sse";
import type { UIContext } from "./uiContext";

export type ChatAction = null | "confirm" | "deny" | "edit" | "resume" | "retry" | "check_status";

/** A file uploaded through `POST /api/assistant/files`, sent with a message by its id. */
export interface FileRef {
  file_id: string;
}

export interface SubmitInput {
  text: string;
  files?: FileRef[];
}

export interface SubmitExtra {
  confirmationId?: string | null;
  /** With `edit`: the card's arguments as the user edited them (all of them, same keys). */
  editedArgs?: Record<string, unknown> | null;
  uiContext?: UIContext | null;
  /** With `resume`: replay after this id (`<conversation_id>:<seq>`). */
  lastEventId?: string | null;
  /** With `retry`: the failed read to run again; with `check_status`: the write to check. */
  toolCallId?: string | null;
}

export interface ConnectOptions {
  getToken: TokenSource;
  fetch?: typeof fetch;
  /** Resume attempts after a broken stream, and retries of a request that found no server. */
  reconnectAttempts?: number;
  reconnectDelayMs?: number;
  /** No bytes for this long (events or `:` heartbeats) counts as a broken stream. */
  stallTimeoutMs?: number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** After a cancel, how long the stream may take to end by itself (default CANCEL_GRACE_MS). */
  cancelGraceMs?: number;
  /** Told each chat response's `Date` header (the server's clock; cards expire by it). */
  onServerDate?: (date: string | null) => void;
  /** Told false when the server cannot be reached, true when a response arrives. */
  onConnectionChange?: (online: boolean) => void;
}

export interface Submission extends AsyncIterable<ChatMessage> {
  /** The conversation, once the first event id (or `stream_end`) named it. */
  readonly conversationId: string | null;
  /** The id of the last event yielded. */
  readonly lastEventId: string | null;
  /** Aborts the stream and asks the server to stop the run. */
  cancel(): Promise<void>;
}

export interface ChatClient {
  readonly origin: string;
  submit(
    input: SubmitInput,
    target?: [conversationId: string | null, action: ChatAction],
    extra?: SubmitExtra,
  ): Submission;
  cancel(conversationId: string): Promise<void>;
}

function defaultSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

function joinUrl(origin: string, path: string): string {
  return origin.replace(/\/+$/, "") + path;
}

type ReadOutcome = "end" | "broken" | "aborted";

/** After asking the server to stop, how long the stream may take to say what became of the run. */
export const CANCEL_GRACE_MS = 5000;

class StreamSubmission implements Submission {
  conversationId: string | null;
  lastEventId: string | null;
  private lastSeq = -1;
  private readonly controller = new AbortController();
  private iterated = false;
  private cancelling = false;
  private markEnded: () => void = () => undefined;
  /** Settles when the stream is over (its `stream_end`, an error, or an abort). */
  private readonly ended = new Promise<void>((resolve) => (this.markEnded = resolve));

  constructor(
    private readonly client: Client,
    private readonly input: SubmitInput,
    conversationId: string | null,
    private readonly action: ChatAction,
    private readonly extra: SubmitExtra,
  ) {
    this.conversationId = conversationId;
    this.lastEventId = extra.lastEventId ?? null;
    const known = parseEventId(this.lastEventId);
    if (known && (conversationId === null || known.conversationId === conversationId)) {
      this.lastSeq = known.seq;
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<ChatMessage> {
    if (this.iterated) throw new Error("a submission is read once");
    this.iterated = true;
    return this.runToEnd();
  }

  private async *runToEnd(): AsyncGenerator<ChatMessage, void, undefined> {
    try {
      yield* this.run();
    } finally {
      this.markEnded();
    }
  }

  async cancel(): Promise<void> {
    if (this.cancelling) return;
    this.cancelling = true;
    if (this.conversationId) {
      // Ask the server first and keep reading: the run ends with the server's word on what became
      // of it (a stopped answer, a call that did not run or may have) and `stream_end`. Aborting
      // first would leave the user without that word.
      try {
        await this.client.cancel(this.conversationId);
      } catch {
        // not delivered: the abort below still stops the run (the server sees the connection go)
      }
      const graceMs = this.client.options.cancelGraceMs ?? CANCEL_GRACE_MS;
      const grace = new Promise<"late">((resolve) => setTimeout(() => resolve("late"), graceMs));
      if ((await Promise.race([this.ended, grace])) !== "late") return;
    }
    this.controller.abort();
  }

  private body(resuming: boolean): Record<string, unknown> {
    const body: Record<string, unknown> = {};
    const action = resuming ? "resume" : this.action;
    if (!action) body.message = this.input.text;
    if (!resuming && this.input.files && this.input.files.length > 0) body.files = this.input.files;
    if (this.conversationId) body.conversation_id = this.conversationId;
    if (action) body.action = action;
    if (!resuming && this.extra.confirmationId) body.confirmation_id = this.extra.confirmationId;
    if (!resuming && action === "edit" && this.extra.editedArgs) {
      body.edited_args = this.extra.editedArgs;
    }
    if (!resuming && (action === "retry" || action === "check_status") && this.extra.toolCallId) {
      body.tool_call_id = this.extra.toolCallId;
    }
    if (this.extra.uiContext) body.ui_context = this.extra.uiContext;
    return body;
  }

  private async open(resuming: boolean, signal: AbortSignal): Promise<Response> {
    const token = await this.client.options.getToken();
    if (!token) throw new ChatHttpError(401, "UNAUTHORIZED", "Нет токена входа");
    const headers: Record<string, string> = {
      Authorization: `Bearer ${token}`,
      "Content-Type": "application/json",
      Accept: "text/event-stream",
    };
    const action = resuming ? "resume" : this.action;
    if (action === "resume" && this.lastEventId) headers["Last-Event-ID"] = this.lastEventId;
    return this.client.fetch(joinUrl(this.client.origin, "/api/agent/chat"), {
      method: "POST",
      headers,
      body: JSON.stringify(this.body(resuming)),
      signal,
      cache: "no-store",
    });
  }

  private async *run(): AsyncGenerator<ChatMessage, void, undefined> {
    const opts = this.client.options;
    const attempts = opts.reconnectAttempts ?? DEFAULT_CONFIG.reconnectAttempts;
    const delay = opts.reconnectDelayMs ?? DEFAULT_CONFIG.reconnectDelayMs;
    const sleep = opts.sleep ?? defaultSleep;
    let resuming = false;
    let failures = 0;
    for (;;) {
      if (this.controller.signal.aborted) return;
      const attempt = new AbortController();
      const forward = () => attempt.abort();
      this.controller.signal.addEventListener("abort", forward, { once: true });
      try {
        let response: Response;
        try {
          response = await this.open(resuming, attempt.signal);
        } catch (error) {
          if (this.controller.signal.aborted || isAbort(error)) return;
          if (!isNetworkFailure(error)) throw error;
          opts.onConnectionChange?.(false);
          failures += 1;
          if (failures > attempts) {
            throw new ChatNetworkError("Сервер недоступен", error);
          }
          await sleep(delay, this.controller.signal);
          continue;
        }
        opts.onServerDate?.(response.headers.get("date"));
        if (!response.ok) throw await httpErrorFrom(response);
        opts.onConnectionChange?.(true);
        const seqBefore = this.lastSeq;
        const outcome = yield* this.read(response, attempt);
        if (outcome !== "broken" || this.cancelling) return;
        if (this.lastSeq > seqBefore) failures = 0; // progress was made: a fresh budget
        if (!this.conversationId || !this.lastEventId) {
          throw new ChatNetworkError("Поток прервался до первого события", null);
        }
        opts.onConnectionChange?.(false);
        failures += 1;
        if (failures > attempts) throw new ChatNetworkError("Сервер недоступен", null);
        resuming = true;
        await sleep(delay, this.controller.signal);
      } finally {
        this.controller.signal.removeEventListener("abort", forward);
      }
    }
  }

  /** Yields the response's events; says how the stream ended. */
  private async *read(
    response: Response,
    attempt: AbortController,
  ): AsyncGenerator<ChatMessage, ReadOutcome, undefined> {
    if (!response.body) return "broken";
    const reader = response.body.getReader();
    const decoder = new TextDecoder("utf-8");
    const stallMs = this.client.options.stallTimeoutMs ?? DEFAULT_CONFIG.stallTimeoutMs;
    let stalled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      if (timer !== undefined) clearTimeout(timer);
      timer = setTimeout(() => {
        stalled = true;
        attempt.abort();
        void reader.cancel().catch(() => undefined);
      }, stallMs);
    };
    // Heartbeats (`:` comment lines) arrive as bytes, so any chunk re-arms the timer.
    const parser = new SseParser();
    let ended = false;
    arm();
    try {
      for (;;) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (error) {
          if (this.controller.signal.aborted) return "aborted";
          if (stalled || isNetworkFailure(error) || isAbort(error)) return "broken";
          return "broken";
        }
        if (stalled) return "broken";
        if (chunk.done) {
          parser.push(decoder.decode());
          return ended ? "end" : "broken"; // closed without stream_end: broken
        }
        arm();
        const events = parser.push(decoder.decode(chunk.value, { stream: true }));
        for (const sse of events) {
          const id = parseEventId(sse.id);
          if (id) {
            if (this.conversationId === null) this.conversationId = id.conversationId;
            if (id.conversationId === this.conversationId && id.seq <= this.lastSeq) continue;
            this.lastSeq = id.seq;
            this.lastEventId = sse.id;
          }
          const message = parseChatMessage(sse.data);
          if (message === null) continue;
          if (isStreamEnd(message)) {
            this.conversationId = message.metadata.conversation_id || this.conversationId;
            // A replay holds the ends of the turns it replays and ends with its own: the stream
            // is over when the server closes it after a `stream_end`.
            ended = true;
          }
          if (this.controller.signal.aborted) return "aborted";
          yield message;
        }
      }
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      reader.releaseLock?.();
      if (!attempt.signal.aborted) attempt.abort();
    }
  }
}

class Client implements ChatClient {
  readonly fetch: typeof fetch;
  constructor(
    readonly origin: string,
    readonly options: ConnectOptions,
  ) {
    const impl = options.fetch;
    this.fetch = impl ? (...args) => impl(...args) : (...args) => fetch(...args);
  }

  submit(
    input: SubmitInput,
    target: [string | null, ChatAction] = [null, null],
    extra: SubmitExtra = {},
  ): Submission {
    const [conversationId, action] = target;
    return new StreamSubmission(this, input, conversationId, action, extra);
  }

  /** `POST /api/agent/chat/cancel`: 202, or 409 NOT_RUNNING (nothing to stop); both are fine. */
  async cancel(conversationId: string): Promise<void> {
    const token = await this.options.getToken();
    try {
      const response = await this.fetch(joinUrl(this.origin, "/api/agent/chat/cancel"), {
        method: "POST",
        headers: {
          ...(token ? { Authorization: `Bearer ${token}` } : {}),
          "Content-Type": "application/json",
        },
        body: JSON.stringify({ conversation_id: conversationId }),
      });
      if (!response.ok && response.status !== 409) throw await httpErrorFrom(response);
      if (response.status === 409) {
        const error = await httpErrorFrom(response);
        if (error.code !== "NOT_RUNNING") throw error;
      }
    } catch (error) {
      if (error instanceof ChatHttpError) throw error;
      // The stream is aborted anyway; a cancel that cannot be delivered is not fatal.
    }
  }
}

/** A chat client for `origin` ("" = this page's origin). */
export function connect(origin: string, options: ConnectOptions): ChatClient {
  return new Client(origin, options);
}
