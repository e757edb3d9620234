/** The REST API the page reads (docs/rest-api.md); every call carries the bearer token. */
import type { TokenSource } from "./auth";
import { ChatHttpError, httpErrorFrom } from "./errors";
import type { ChangePlanPayload, ChatMessage, GuardrailDecision } from "./events";
import type { UIContext } from "./uiContext";

/** What a conversation is about: the page it started on (null fields when the page named none). */
export interface ConversationSubject {
  object_type: string | null;
  object_id: string | null;
  object_name: string | null;
  env_id: string | null;
}

export interface ConversationSummary {
  id: string;
  /** The first request, on one line. */
  title: string;
  created_at: string;
  /** The last activity (ISO 8601, UTC): the list's order, shown in the reader's time zone. */
  updated_at?: string;
  is_archived?: boolean;
  /** Absent or null: the conversation started on no page (or before subjects were kept). */
  subject?: ConversationSubject | null;
}

/** An example question a new conversation offers, and the tool it leads to. */
export interface StarterQuestion {
  text: string;
  tool: string;
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

export interface HistoryToolCall {
  tool: string;
  input?: Record<string, unknown>;
  status: "tool_end" | "tool_error" | "permission_denied" | string;
  output?: unknown;
  error?: string;
  code?: string;
  required_role?: string | null;
  tool_call_id?: string;
  output_ref?: string | null;
  output_bytes?: number;
  truncated?: boolean;
}

/** A stored card (`confirm_required`) or its outcome (`confirm_resolved`). */
export interface HistoryConfirmation {
  type?: string;
  confirmation_id?: string | null;
  tool_call_id?: string;
  prompt?: string;
  decision?: GuardrailDecision;
  input?: Record<string, unknown>;
  expires_at?: string | null;
  plan?: ChangePlanPayload | null;
  result?: string;
  metadata?: ChatMessage["metadata"];
  [key: string]: unknown;
}

export interface HistoryMessage {
  id: string;
  role: "user" | "assistant" | string;
  content: string;
  created_at: string;
  seq: number;
  tool_calls?: HistoryToolCall[] | null;
  confirmations?: HistoryConfirmation[] | null;
  ui_context?: UIContext | null;
  status?: string | null;
  /** A user message's files (download: `downloadLink`). */
  attachments?: AttachmentInfo[] | null;
}

export interface HistoryPage extends Page<HistoryMessage> {
  conversation_id: string;
  is_archived: boolean;
}

export interface ActiveState {
  conversation_id: string;
  active: boolean;
  since: string | null;
  lease_until: string | null;
  pending_confirmation_id: string | null;
}

/** A file a message carries, as the history records it. */
export interface AttachmentInfo {
  file_id: string;
  name: string;
  content_type: string;
  size: number;
}

/** A presigned S3 POST: every field, in this order, then the file as the last field. */
export interface PresignedPost {
  url: string;
  fields: Record<string, string>;
}

/** `POST /api/assistant/files`: the file's id and where its bytes go. */
export interface UploadGrant {
  file_id: string;
  upload: PresignedPost;
  /** The upload must start before this. */
  expires_at: string;
  max_bytes: number;
}

/** `GET /api/assistant/files/{file_id}/download`: a short-lived link that serves the file. */
export interface DownloadLink {
  url: string;
  expires_at: string;
}

export interface EnvironmentItem {
  id: string;
  tier: "dev" | "staging" | "prod" | string;
}

/** A card its requester confirmed, waiting for a second person (`GET /api/assistant/approvals`):
 * what the requester's card showed, who asked and approved, and the second approval's deadline. */
export interface ApprovalItem {
  confirmation_id: string;
  /** The call in the card's words. */
  call: string;
  prompt: string | null;
  label: string | null;
  badge: string | null;
  impact: string | null;
  tone: string | null;
  environment: string | null;
  risk: string;
  plan: ChangePlanPayload | null;
  requested_by: string;
  approved_by: string | null;
  /** «подтверждено (1 из 2)». */
  approvals: string;
  expires_at: string | null;
}

/** What the second approver is told of their decision. */
export interface ApprovalOutcome {
  confirmation_id: string;
  outcome: "approved" | "denied" | "stale";
  detail: string;
}

export interface RestOptions {
  getToken: TokenSource;
  fetch?: typeof fetch;
  /** Told each response's `Date` header (the server's clock). */
  onServerDate?: (date: string | null) => void;
}

type Query = Record<string, string | number | null | undefined>;

function queryString(query: Query): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== null && value !== undefined && value !== "") params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

/** A path of this API: `/api/...` with URL-safe characters only (no backslash, no `//`). */
const API_PATH =
  /^\/api\/(?!\/)[A-Za-z0-9\-._~%!$&'()*+,;=:@/]*(\?[A-Za-z0-9\-._~%!$&'()*+,;=:@/?]*)?$/;

export class RestClient {
  private readonly fetchImpl: typeof fetch;

  constructor(
    readonly origin: string,
    private readonly options: RestOptions,
  ) {
    const impl = options.fetch;
    this.fetchImpl = impl ? (...args) => impl(...args) : (...args) => fetch(...args);
  }

  /** Any same-origin API path (e.g. a tool output's `output_ref`), as JSON. */
  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    if (!API_PATH.test(path)) {
      // The bearer token goes with the request: only this API's own paths, never a URL that a
      // browser would resolve elsewhere ("//host", "/\\host", a scheme).
      throw new ChatHttpError(0, "VALIDATION_ERROR", `not an API path: ${path}`);
    }
    const token = await this.options.getToken();
    if (!token) throw new ChatHttpError(401, "UNAUTHORIZED", "Нет токена входа");
    const headers: Record<string, string> = {
      Authorization: `Bearer ${token}`,
      Accept: "application/json",
    };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await this.fetchImpl(this.origin.replace(/\/+$/, "") + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
    this.options.onServerDate?.(response.headers.get("date"));
    if (!response.ok) throw await httpErrorFrom(response);
    const text = await response.text();
    return (text ? JSON.parse(text) : null) as T;
  }

  listConversations(
    params: { limit?: number; cursor?: string | null; q?: string | null } = {},
  ): Promise<Page<ConversationSummary>> {
    return this.request("GET", `/api/assistant/conversations${queryString(params)}`);
  }

  createConversation(
    body: { title?: string; ui_context?: UIContext | null } = {},
  ): Promise<{ id: string; title: string; created_at: string }> {
    const payload: Record<string, unknown> = {};
    if (body.title) payload.title = body.title;
    if (body.ui_context) payload.ui_context = body.ui_context;
    return this.request("POST", "/api/assistant/conversations", payload);
  }

  history(
    conversationId: string,
    params: { limit?: number; cursor?: string | null } = {},
  ): Promise<HistoryPage> {
    return this.request(
      "GET",
      `/api/assistant/history${queryString({ conversation_id: conversationId, ...params })}`,
    );
  }

  deleteConversation(conversationId: string): Promise<{ id: string; is_archived: boolean }> {
    return this.request(
      "DELETE",
      `/api/assistant/conversations/${encodeURIComponent(conversationId)}`,
    );
  }

  active(conversationId: string): Promise<ActiveState> {
    return this.request(
      "GET",
      `/api/agent/conversations/${encodeURIComponent(conversationId)}/active`,
    );
  }

  /** Up to three questions for a new conversation on this page, for the caller's role. */
  starters(page: {
    object_type?: string | null;
    env_id?: string | null;
  }): Promise<{ items: StarterQuestion[] }> {
    return this.request("GET", `/api/assistant/starters${queryString(page)}`);
  }

  environments(): Promise<{ items: EnvironmentItem[] }> {
    return this.request("GET", "/api/assistant/environments");
  }

  /** A file id and a presigned POST for a file's bytes (the browser uploads them itself:
   * `uploadFile` in `uploads.ts`); 422 INVALID_ATTACHMENT for a type, size or name refused. */
  requestUpload(
    name: string,
    contentType: string,
    size: number,
    conversationId: string | null = null,
  ): Promise<UploadGrant> {
    return this.request("POST", "/api/assistant/files", {
      name,
      content_type: contentType,
      size,
      conversation_id: conversationId,
    });
  }

  /** The deployment's limits on attachments (`fileLimitsFrom` in `ui/limits.ts` reads them). */
  fileLimits(): Promise<unknown> {
    return this.request("GET", "/api/assistant/files/limits");
  }

  /** A link (valid for minutes) that serves the caller's file as an attachment; 404 otherwise. */
  downloadLink(fileId: string): Promise<DownloadLink> {
    return this.request("GET", `/api/assistant/files/${encodeURIComponent(fileId)}/download`);
  }

  /** The cards waiting for the caller's second approval (answered by the chat function). */
  approvals(): Promise<{ approvals: ApprovalItem[] }> {
    return this.request("GET", "/api/assistant/approvals");
  }

  /** The caller's decision on a card waiting for a second person. */
  decideApproval(confirmationId: string, decision: "approve" | "deny"): Promise<ApprovalOutcome> {
    return this.request("POST", `/api/assistant/approvals/${encodeURIComponent(confirmationId)}`, {
      decision,
    });
  }

  toolOutput(conversationId: string, toolCallId: string): Promise<unknown> {
    return this.request(
      "GET",
      `/api/assistant/conversations/${encodeURIComponent(conversationId)}/tool-outputs/${encodeURIComponent(toolCallId)}`,
    );
  }
}

export function restClient(origin: string, options: RestOptions): RestClient {
  return new RestClient(origin, options);
}
