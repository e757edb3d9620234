/** A non-2xx answer from the chat or the REST API: its `{code, detail}` body, typed. */
export class ChatHttpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly detail: string;
  /** The whole JSON body (e.g. `problems` of INVALID_CONTEXT). */
  readonly body: unknown;

  constructor(status: number, code: string, detail: string, body: unknown = null) {
    super(`${status} ${code}: ${detail}`);
    this.name = "ChatHttpError";
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.body = body;
  }
}

/** The backend could not be reached (fetch threw), after the configured retries. */
export class ChatNetworkError extends Error {
  readonly cause: unknown;
  constructor(message: string, cause: unknown) {
    super(message);
    this.name = "ChatNetworkError";
    this.cause = cause;
  }
}

/** A response's `{code, detail}` as a ChatHttpError (whatever the body turned out to be). */
export async function httpErrorFrom(response: Response): Promise<ChatHttpError> {
  let body: unknown = null;
  let text = "";
  try {
    text = await response.text();
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  const record = typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {};
  const code = typeof record.code === "string" ? record.code : fallbackCode(response.status);
  let detail: string;
  if (typeof record.detail === "string") detail = record.detail;
  else if (record.detail !== undefined) detail = JSON.stringify(record.detail);
  else detail = text.slice(0, 500) || response.statusText || `HTTP ${response.status}`;
  return new ChatHttpError(response.status, code, detail, body);
}

function fallbackCode(status: number): string {
  if (status === 401) return "UNAUTHORIZED";
  if (status === 403) return "FORBIDDEN";
  if (status === 404) return "NOT_FOUND";
  if (status === 413) return "PAYLOAD_TOO_LARGE";
  if (status === 422) return "VALIDATION_ERROR";
  if (status === 429) return "RATE_LIMITED";
  // A refusal without the API's {code, detail} body (a proxy's page, say): no code to invent.
  return status >= 500 ? "INTERNAL_ERROR" : `HTTP_${status}`;
}

/** fetch's own failure (no response: refused, DNS, offline), as opposed to an abort. */
export function isNetworkFailure(error: unknown): boolean {
  return error instanceof TypeError;
}

export function isAbort(error: unknown): boolean {
  return (
    typeof error === "object" &&
    error !== null &&
    (error as { name?: unknown }).name === "AbortError"
  );
}
