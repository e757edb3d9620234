/** The backend in memory for the page's tests: a scripted chat and the REST API's answers. */
import type { ChatAction, ChatClient, SubmitExtra, SubmitInput, Submission } from "../lib/client";
import type { ChatMessage } from "../lib/events";
import { restClient, type ActiveState, type HistoryMessage } from "../lib/rest";

/** What the chat answers one request with: a stream (which may wait for the test before it goes
 * on), or a refusal before the stream. */
export type Script =
  { conversationId: string; events: ChatMessage[]; hold?: Promise<void> } | { refusal: Error };

export class ScriptedSubmission implements Submission {
  conversationId: string | null = null;
  lastEventId: string | null = null;
  cancelled = false;
  private release: () => void = () => {};
  private readonly cancelledSignal = new Promise<void>((resolve) => (this.release = resolve));

  constructor(private readonly script: Script) {}

  async *[Symbol.asyncIterator](): AsyncIterator<ChatMessage> {
    if ("refusal" in this.script) throw this.script.refusal;
    const { conversationId, events, hold } = this.script;
    this.conversationId = conversationId;
    const [first, ...rest] = events;
    if (first) yield first;
    if (hold) await Promise.race([hold, this.cancelledSignal]);
    for (const event of rest) yield event;
  }

  async cancel(): Promise<void> {
    this.cancelled = true;
    this.release();
  }
}

/** The chat, scripted: each request takes the next script, and is recorded. */
export class ScriptedChat implements ChatClient {
  readonly origin = "";
  readonly requests: Array<{
    input: SubmitInput;
    target: [string | null, ChatAction];
    extra: SubmitExtra;
    submission: ScriptedSubmission;
  }> = [];

  constructor(readonly scripts: Script[] = []) {}

  submit(
    input: SubmitInput,
    target: [string | null, ChatAction] = [null, null],
    extra: SubmitExtra = {},
  ): Submission {
    const script = this.scripts.shift();
    if (!script) throw new Error("unexpected chat request");
    const submission = new ScriptedSubmission(script);
    this.requests.push({ input, target, extra, submission });
    return submission;
  }

  cancel(): Promise<void> {
    return Promise.resolve();
  }
}

export const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });

/** The REST API in memory: environments, each conversation's state and history; every path asked
 * is recorded, in order. */
export class Backend {
  readonly asked: string[] = [];
  /** The environments' answer; "offline": no server answers. */
  environments: unknown = { items: [{ id: "ss-dev", tier: "dev" }] };
  /** Each conversation's answers to `…/active`, in turn (the last one stays). */
  active: Record<string, Partial<ActiveState>[]> = {};
  histories: Record<string, HistoryMessage[]> = {};
  /** A history read that waits for the test before it answers. */
  holdHistory: Record<string, Promise<void>> = {};

  readonly rest = restClient("", {
    getToken: () => "jwt",
    fetch: async (input) => {
      const url = new URL(String(input), "http://page.test");
      this.asked.push(url.pathname);
      if (url.pathname === "/api/assistant/environments") {
        if (this.environments === "offline") throw new TypeError("Failed to fetch");
        if (this.environments instanceof Response) return this.environments;
        return json(200, this.environments);
      }
      if (url.pathname === "/api/assistant/files/limits") return json(404, {});
      const active = /^\/api\/agent\/conversations\/([^/]+)\/active$/.exec(url.pathname);
      if (active) {
        const answers = this.active[active[1]] ?? [];
        const state = (answers.length > 1 ? answers.shift() : answers[0]) ?? {};
        return json(200, { active: false, pending_confirmation_id: null, ...state });
      }
      if (url.pathname === "/api/assistant/history") {
        const id = url.searchParams.get("conversation_id") ?? "";
        await this.holdHistory[id];
        if (!(id in this.histories)) return json(404, { code: "NOT_FOUND", detail: "нет" });
        return json(200, { items: this.histories[id], next_cursor: null });
      }
      throw new Error(`unexpected ${url.pathname}`);
    },
  });
}

/** A stored message as the history returns it. */
export const message = (
  role: string,
  seq: number,
  content: string,
  extra: Partial<HistoryMessage> = {},
): HistoryMessage => ({ id: `m${seq}`, role, content, created_at: "", seq, ...extra });
