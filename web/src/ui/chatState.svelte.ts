/** The conversation as the page shows it: user messages, assistant text and the cards. */
import type { ConfirmationResult, ConfirmRequiredMetadata } from "../lib/generated/chat-events";
import {
  isConfirmRequired,
  isConfirmResolved,
  isErrorEvent,
  isPermissionDenied,
  isStreamToken,
  isText,
  isToolEnd,
  isToolError,
  isToolStart,
  type ChangePlanPayload,
  type ChatMessage,
  type GuardrailDecision,
} from "../lib/events";
import type { AttachmentInfo, HistoryConfirmation, HistoryMessage } from "../lib/rest";
import { serverNow } from "./clock";

/** `waiting`: its card waits for the user; `not_run`: the card was not confirmed, so the call
 * never ran and changed nothing (`expired`: because its card's time ran out); `unknown`: it was sent and no answer came (it may have changed
 * something: never shown as a failure). */
export type ToolState =
  "running" | "done" | "error" | "waiting" | "not_run" | "expired" | "unknown";
export type ConfirmState = "pending" | ConfirmationResult;

export interface UserItem {
  kind: "user";
  key: string;
  text: string;
  /** The files the message carries. */
  attachments: AttachmentInfo[];
}
export interface AssistantItem {
  kind: "assistant";
  key: string;
  text: string;
  interrupted?: boolean;
}
export interface ToolItem {
  kind: "tool";
  key: string;
  toolCallId: string | null;
  tool: string;
  input: unknown;
  state: ToolState;
  output?: unknown;
  hasOutput: boolean;
  error?: string;
  code?: string;
  outputRef?: string | null;
  outputBytes?: number;
  truncated?: boolean;
  /** «Повторить» was clicked: the repeat is its own call, further down the conversation. */
  retried?: boolean;
}
export interface ConfirmItem {
  kind: "confirm";
  key: string;
  confirmationId: string | null;
  toolCallId: string | null;
  prompt: string;
  decision: GuardrailDecision | null;
  /** The plan of the change, read before the card (null: the tool declares none). */
  plan: ChangePlanPayload | null;
  input: unknown;
  expiresAt: string | null;
  state: ConfirmState;
  /** A decision was sent (buttons disabled until the answer). */
  sending: boolean;
  /** Confirmed with the user's edits: what ran is not the call (nor the plan) the card showed. */
  ranEdited?: boolean;
}
export interface PermissionItem {
  kind: "permission";
  key: string;
  tool: string;
  requiredRole: string | null;
  text: string;
  dismissed: boolean;
}
export interface ErrorItem {
  kind: "error";
  key: string;
  code: string;
  detail: string;
  status?: number;
  retry: boolean;
}

export type Item = UserItem | AssistantItem | ToolItem | ConfirmItem | PermissionItem | ErrorItem;

export const RETRYABLE_CODES = new Set(["LLM_UNAVAILABLE", "TOOL_FAILURE", "SERVER_UNREACHABLE"]);

let counter = 0;
const nextKey = (prefix: string) => `${prefix}-${++counter}`;

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {};
}

export class ChatState {
  items = $state<Item[]>([]);
  /** The last assistant message that finished streaming: the page announces it, whole, once
   * (never token by token; never a message read from the history). */
  finished = $state.raw<AssistantItem | null>(null);
  /** A turn's text continues the last assistant item; a card or a new turn starts another. */
  private openText: AssistantItem | null = null;
  /** The last event was a whole text message (not a token). */
  private afterWholeText = false;

  clear(): void {
    this.items = [];
    this.openText = null;
    this.finished = null;
  }

  /** The streamed message is finished: what comes next (a card, a tool, the turn's end) starts
   * another. */
  private closeText(): void {
    if (this.openText && this.openText.text.trim() !== "") this.finished = this.openText;
    this.openText = null;
  }

  /** The proxied item just pushed (mutations through it are reactive). */
  private push<T extends Item>(item: T): T {
    this.items.push(item);
    return this.items[this.items.length - 1] as T;
  }

  addUser(text: string, attachments: AttachmentInfo[] = []): UserItem {
    this.closeText();
    return this.push({ kind: "user", key: nextKey("u"), text, attachments });
  }

  addError(code: string, detail: string, status?: number): ErrorItem {
    this.closeText();
    const last = this.items[this.items.length - 1];
    // One outage is one card: a second failure of the same kind in a row (the sidebar's list and
    // the message, say) updates the card rather than stacking another; what it may retry stays.
    if (last?.kind === "error" && last.code === code) {
      last.detail = detail;
      last.status = status;
      return last;
    }
    return this.push({
      kind: "error",
      key: nextKey("e"),
      code,
      detail,
      status,
      retry: RETRYABLE_CODES.has(code),
    });
  }

  /** Takes an item out of the chat (an error card its retry replaces). */
  remove(key: string): void {
    const index = this.items.findIndex((item) => item.key === key);
    if (index >= 0) this.items.splice(index, 1);
  }

  /** Starts a new turn: the next text is a new assistant message. */
  endTurn(): void {
    this.closeText();
  }

  private appendText(text: string, separate: boolean): AssistantItem {
    if (this.openText === null) {
      this.openText = this.push({ kind: "assistant", key: nextKey("a"), text: "" });
    }
    const item = this.openText;
    if (separate && item.text !== "") {
      item.text += /\s$/.test(item.text) ? "\n" : "\n\n";
    }
    item.text += text;
    return item;
  }

  private tool(toolCallId: string | null, tool: string): ToolItem | undefined {
    for (let i = this.items.length - 1; i >= 0; i -= 1) {
      const item = this.items[i];
      if (item.kind !== "tool") continue;
      if (toolCallId !== null && item.toolCallId === toolCallId) return item;
      if (toolCallId === null && item.tool === tool && item.state === "running") return item;
    }
    return undefined;
  }

  confirmById(confirmationId: string | null): ConfirmItem | undefined {
    return this.items.find(
      (item): item is ConfirmItem =>
        item.kind === "confirm" &&
        confirmationId !== null &&
        item.confirmationId === confirmationId,
    );
  }

  /** The card a `confirm_resolved` answers: the last one still pending. */
  lastPendingConfirm(): ConfirmItem | undefined {
    for (let i = this.items.length - 1; i >= 0; i -= 1) {
      const item = this.items[i];
      if (item.kind === "confirm" && item.state === "pending") return item;
    }
    return undefined;
  }

  /** The card a `confirm_resolved` answers: the last one not decided yet (pending, or
   * confirmed once and waiting for a second person, whose decision resolves it later). */
  lastOpenConfirm(): ConfirmItem | undefined {
    for (let i = this.items.length - 1; i >= 0; i -= 1) {
      const item = this.items[i];
      if (
        item.kind === "confirm" &&
        (item.state === "pending" || item.state === "awaiting_approval")
      )
        return item;
    }
    return undefined;
  }

  /** Applies one stream event; returns the item it created or changed. */
  apply(event: ChatMessage): Item | null {
    if (isStreamToken(event)) {
      // Tokens after a whole message are a new paragraph, never glued to its last sentence.
      const separate = this.afterWholeText;
      const token = separate ? event.metadata.token.trimStart() : event.metadata.token;
      this.afterWholeText = separate && token === "";
      return this.appendText(token, separate && token !== "");
    }
    this.afterWholeText = false;
    if (isText(event)) {
      if (!event.content) return null;
      const item = this.appendText(event.content, true);
      this.afterWholeText = true;
      return item;
    }
    if (isToolStart(event)) {
      this.closeText();
      const m = event.metadata;
      const known = m.tool_call_id ? this.tool(m.tool_call_id, m.tool) : undefined;
      if (known) {
        // A call confirmed with edits starts again with the edited input: the same call, so the
        // same card, which shows what runs.
        known.input = m.input;
        this.markEdited(known);
        if (known.state === "waiting" || known.state === "not_run" || known.state === "expired")
          known.state = "running";
        return known;
      }
      return this.push({
        kind: "tool",
        key: nextKey("t"),
        toolCallId: m.tool_call_id,
        tool: m.tool,
        input: m.input,
        state: "running",
        hasOutput: false,
      });
    }
    if (isToolEnd(event)) {
      const m = event.metadata;
      let item = this.tool(m.tool_call_id, m.tool);
      if (!item) {
        this.closeText();
        item = this.push({
          kind: "tool",
          key: nextKey("t"),
          toolCallId: m.tool_call_id,
          tool: m.tool,
          input: undefined,
          state: "running",
          hasOutput: false,
        });
      }
      item.state = "done";
      item.output = m.output;
      item.hasOutput = true;
      item.outputRef = m.output_ref ?? null;
      item.outputBytes = m.output_bytes;
      item.truncated = m.truncated ?? false;
      return item;
    }
    if (isToolError(event)) {
      const m = event.metadata;
      let item = this.tool(m.tool_call_id, m.tool);
      if (!item) {
        this.closeText();
        item = this.push({
          kind: "tool",
          key: nextKey("t"),
          toolCallId: m.tool_call_id,
          tool: m.tool,
          input: undefined,
          state: "running",
          hasOutput: false,
        });
      }
      item.state = m.code === "TOOL_OUTCOME_UNKNOWN" ? "unknown" : "error";
      item.error = m.error;
      item.code = m.code;
      return item;
    }
    if (isConfirmRequired(event)) {
      const m = event.metadata;
      const existing = this.confirmById(m.confirmation_id);
      if (existing) {
        // A resume re-emits the card the history already showed: one card, pending again.
        existing.state = "pending";
        existing.sending = false;
        existing.expiresAt = m.expires_at;
        return existing;
      }
      this.closeText();
      const card = this.push(confirmFrom(m));
      this.showInputOf(card);
      this.settleCallOf(card);
      return card;
    }
    if (isConfirmResolved(event)) {
      const item = this.lastOpenConfirm();
      if (item) {
        item.state = event.metadata.result;
        item.sending = false;
        this.settleCallOf(item);
      }
      this.closeText();
      return item ?? null;
    }
    if (isPermissionDenied(event)) {
      const m = event.metadata;
      // The permission card stands for the call (as the history shows it): no tool card beside
      const tool = this.tool(m.tool_call_id, m.tool);
      if (tool && tool.state === "running") this.items.splice(this.items.indexOf(tool), 1);
      this.closeText();
      return this.push({
        kind: "permission",
        key: nextKey("p"),
        tool: m.tool,
        requiredRole: m.required_role,
        text: event.content,
        dismissed: false,
      });
    }
    if (isErrorEvent(event)) {
      return this.addError(event.metadata.code, event.metadata.detail);
    }
    return null; // stream_end and anything unknown
  }

  /** The call's card shows the input its latest card asks about (an edit that needed a card of
   * its own asks about the edited call). */
  private showInputOf(card: ConfirmItem): void {
    const call = card.toolCallId !== null ? this.tool(card.toolCallId, "") : undefined;
    if (call && card.input !== undefined && call.state !== "done") call.input = card.input;
  }

  /** What the card's decision means for its call's card: waiting while the card waits, running
   * once confirmed (until its result arrives), never run when it was not confirmed. */
  private settleCallOf(card: ConfirmItem): void {
    const call = this.items.find(
      (item): item is ToolItem => item.kind === "tool" && item.toolCallId === card.toolCallId,
    );
    // A verdict from the server (a code) stands; a call the history left started does not
    const answered = (call?.state === "error" || call?.state === "unknown") && call.code;
    if (!call || call.state === "done" || answered) return;
    // Superseded or stale: the call waits on the new card that follows (nothing ran).
    if (card.state === "superseded" || card.state === "stale") return;
    if (card.state === "pending") call.state = "waiting";
    else if (card.state === "confirmed")
      call.state = call.state === "waiting" ? "running" : call.state;
    else {
      call.state = card.state === "expired" ? "expired" : "not_run";
      call.error = undefined;
    }
  }

  /** The card's timer reached zero on the page: the card and its call say so at once. */
  expire(card: ConfirmItem): void {
    // a decision on its way may still have made it: its answer says how the card ended
    if (card.state !== "pending" || card.sending) return;
    card.state = "expired";
    this.settleCallOf(card);
  }

  /** Renders stored history: messages, their tool calls, their cards (resolved or not).
   * `running`: a run holds the conversation now (another tab, or the run this tab re-attaches
   * to), so a card the history leaves open may be being decided: it is left to the replay. */
  loadHistory(
    messages: HistoryMessage[],
    pendingConfirmationId: string | null = null,
    running = false,
  ): void {
    this.clear();
    for (const message of messages) {
      if (message.role === "user") {
        this.addUser(message.content, message.attachments ?? []);
        continue;
      }
      for (const call of message.tool_calls ?? []) {
        const status = String(call.status);
        if (status === "permission_denied") {
          this.push({
            kind: "permission",
            key: nextKey("p"),
            tool: call.tool,
            requiredRole: call.required_role ?? null,
            text: "",
            dismissed: false,
          });
          continue;
        }
        // A call the history keeps as started was sent and never answered: its outcome is unknown
        const state: ToolState =
          status === "tool_end"
            ? "done"
            : status === "started" || call.code === "TOOL_OUTCOME_UNKNOWN"
              ? "unknown"
              : "error";
        const recorded = {
          state,
          output: call.output,
          hasOutput: call.output !== undefined,
          error: call.error ?? (status === "started" ? "Ответ на вызов не получен." : undefined),
          code: call.code,
          outputRef: call.output_ref ?? null,
          outputBytes: call.output_bytes,
          truncated: call.truncated ?? false,
        };
        // A call behind a card is recorded where it stopped for the card and again where it
        // ran after it (with the edited input, when it was edited): one call, one card.
        const known = call.tool_call_id ? this.tool(call.tool_call_id, call.tool) : undefined;
        if (known) {
          Object.assign(known, recorded);
          if (call.input !== undefined && call.input !== null) known.input = call.input;
          continue;
        }
        this.push({
          kind: "tool",
          key: nextKey("t"),
          toolCallId: call.tool_call_id ?? null,
          tool: call.tool,
          input: call.input,
          ...recorded,
        });
      }
      for (const raw of message.confirmations ?? []) {
        const card = asRecord(raw.metadata ?? raw) as HistoryConfirmation;
        if (card.type === "confirm_resolved" || (card.result && !card.decision)) {
          const item = this.lastOpenConfirm();
          if (item) item.state = String(card.result) as ConfirmState;
          continue;
        }
        if (this.confirmById(card.confirmation_id ?? null)) continue;
        this.showInputOf(this.push(confirmFrom(card)));
      }
      if (message.content) {
        this.openText = null;
        const item = this.appendText(message.content, false);
        if (message.status === "interrupted") item.interrupted = true;
      }
      this.openText = null;
    }
    // A card the history leaves open is pending only if the conversation still waits on it.
    for (const item of this.items) {
      if (item.kind !== "confirm" || item.state !== "pending") continue;
      if (item.confirmationId !== null && item.confirmationId === pendingConfirmationId) continue;
      if (running) {
        item.sending = true; // being decided: the replay says how it ended
        continue;
      }
      const expired = item.expiresAt !== null && Date.parse(item.expiresAt) <= serverNow();
      item.state = expired ? "expired" : "cancelled";
    }
    for (const item of this.items) if (item.kind === "confirm") this.settleCallOf(item);
    for (const item of this.items) if (item.kind === "tool") this.markEdited(item);
    this.openText = null;
  }

  /** The confirmed card of `call`, marked when the call ran with other input than it showed. */
  private markEdited(call: ToolItem): void {
    const card = this.items.find(
      (item): item is ConfirmItem =>
        item.kind === "confirm" &&
        item.state === "confirmed" &&
        item.toolCallId === call.toolCallId,
    );
    if (card && JSON.stringify(card.input) !== JSON.stringify(call.input)) card.ranEdited = true;
  }
}

function confirmFrom(m: ConfirmRequiredMetadata | HistoryConfirmation): ConfirmItem {
  const r = m as unknown as Record<string, unknown>;
  const decision = (r.decision ?? null) as GuardrailDecision | null;
  return {
    kind: "confirm",
    key: nextKey("c"),
    confirmationId: (r.confirmation_id as string | null | undefined) ?? null,
    toolCallId: (r.tool_call_id as string | undefined) ?? null,
    prompt: String(r.prompt ?? decision?.prompt ?? ""),
    decision,
    plan: (r.plan ?? null) as ChangePlanPayload | null,
    input: r.input,
    expiresAt: (r.expires_at as string | null | undefined) ?? null,
    state: "pending",
    sending: false,
  };
}
