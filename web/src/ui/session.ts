/** Per-tab memory: the conversation in the URL hash; where a re-attached stream picks up. */
import type { HistoryMessage } from "../lib/rest";

/** As the backend writes them (`CONVERSATION_ID_PATTERN`; a Python test holds them equal). */
export const CONVERSATION_ID = /^[A-Za-z0-9-]{1,64}$/;

/** `#c=<conversation id>` → the id (null for anything else). */
export function conversationFromHash(hash: string): string | null {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  const id = params.get("c");
  return id && CONVERSATION_ID.test(id) ? id : null;
}

export function writeHash(conversationId: string | null): void {
  const url = new URL(window.location.href);
  url.hash = conversationId ? `c=${conversationId}` : "";
  const text = conversationId ? url.toString() : url.toString().replace(/#$/, "");
  window.history.replaceState(window.history.state, "", text);
}

/**
 * The `Last-Event-ID` that resumes a conversation whose history this is. A user message has the
 * seq of its turn's first event, an assistant message the seq of its turn's last: after a user
 * message (a turn still running, or cut off before its answer was stored) the replay starts at
 * that turn's first event; after an assistant message, after everything the history shows.
 */
export function resumePointAfter(conversationId: string, history: HistoryMessage[]): string | null {
  const last = history[history.length - 1];
  if (last === undefined) return null;
  const seq = last.role === "user" ? last.seq - 1 : last.seq;
  return `${conversationId}:${seq}`;
}
