/** Per-tab memory: the conversation in the URL hash, the last event id per conversation. */

const LAST_EVENT_PREFIX = "ss-tools.agent.lastEventId:";
const CONVERSATION_ID = /^[A-Za-z0-9-]{1,64}$/;

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

function session(): Storage | null {
  try {
    return typeof sessionStorage === "undefined" ? null : sessionStorage;
  } catch {
    return null;
  }
}

export function rememberLastEventId(conversationId: string, eventId: string): void {
  try {
    session()?.setItem(LAST_EVENT_PREFIX + conversationId, eventId);
  } catch {
    // storage full or refused: the history's last seq is the fallback
  }
}

export function recallLastEventId(conversationId: string): string | null {
  return session()?.getItem(LAST_EVENT_PREFIX + conversationId) ?? null;
}
