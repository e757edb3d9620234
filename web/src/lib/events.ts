/**
 * The stream's event types come only from the generated file (chat-events.ts, from the
 * exporter's JSON Schema); these guards key on `metadata.type` (plain text has none).
 */
import type {
  ChangePlanPayload,
  ChatMessage,
  ConfirmRequired,
  ConfirmResolved,
  ErrorEvent,
  GuardrailDecision,
  PermissionDenied,
  StreamEnd,
  StreamToken,
  Text,
  ToolEnd,
  ToolError,
  ToolStart,
} from "./generated/chat-events";

export type {
  ChangePlanPayload,
  ChatMessage,
  ConfirmRequired,
  ConfirmResolved,
  ErrorEvent,
  GuardrailDecision,
  PermissionDenied,
  StreamEnd,
  StreamToken,
  Text,
  ToolEnd,
  ToolError,
  ToolStart,
};

export type EventType = Exclude<ChatMessage, Text>["metadata"]["type"];

/** `metadata.type` of an event, or null for plain text. */
export function eventType(event: unknown): string | null {
  if (typeof event !== "object" || event === null) return null;
  const metadata = (event as { metadata?: unknown }).metadata;
  if (typeof metadata !== "object" || metadata === null) return null;
  const type = (metadata as { type?: unknown }).type;
  return typeof type === "string" && type !== "" ? type : null;
}

/** A guard for the event type whose `metadata.type` is `type` (a misspelt type fails to compile). */
function is<T extends ChatMessage & { metadata: { type: string } }>(type: T["metadata"]["type"]) {
  return (event: ChatMessage): event is T => eventType(event) === type;
}

export const isStreamToken = is<StreamToken>("stream_token");
export const isToolStart = is<ToolStart>("tool_start");
export const isToolEnd = is<ToolEnd>("tool_end");
export const isToolError = is<ToolError>("tool_error");
export const isConfirmRequired = is<ConfirmRequired>("confirm_required");
export const isConfirmResolved = is<ConfirmResolved>("confirm_resolved");
export const isPermissionDenied = is<PermissionDenied>("permission_denied");
export const isErrorEvent = is<ErrorEvent>("error");
export const isStreamEnd = is<StreamEnd>("stream_end");
/**
 * Plain text (no `metadata.type`). Not a type guard: every event is structurally a Text (its
 * metadata is an open object), so narrowing on it would erase the other types.
 */
export function isText(event: ChatMessage): boolean {
  return eventType(event) === null;
}

/** Reads one SSE `data` payload as a ChatMessage; null for anything that is not one. */
export function parseChatMessage(data: string): ChatMessage | null {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const record = value as Record<string, unknown>;
  if (record.metadata === undefined || record.metadata === null) record.metadata = {};
  if (typeof record.content !== "string") record.content = "";
  return record as unknown as ChatMessage;
}

/** `<conversation_id>:<seq>` split; null when the id is not of that shape. */
export function parseEventId(
  id: string | null | undefined,
): { conversationId: string; seq: number } | null {
  if (!id) return null;
  const colon = id.lastIndexOf(":");
  if (colon <= 0) return null;
  const seqText = id.slice(colon + 1);
  if (!/^\d+$/.test(seqText)) return null;
  return { conversationId: id.slice(0, colon), seq: Number(seqText) };
}
