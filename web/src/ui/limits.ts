import { nonNegativeInt } from "../lib/config";

/** The chat's own limits, as the page tells the person before sending. */

/** A message's length limit: the chat refuses a longer one (`MAX_MESSAGE_CHARS` in
 * `layers/common/sstools_agent/chat/request.py`; a Python test holds the two equal). */
export const MAX_MESSAGE_CHARS = 8000;

/** One attached file at most, in bytes (`ATTACHMENT_MAX_BYTES`, docs/attachments.md): the page
 * refuses a larger file before asking for an upload; the REST API and the chat check again. */
export const MAX_ATTACHMENT_BYTES = 10_485_760;

/** Files in one message at most (`ATTACHMENT_MAX_FILES`). */
export const MAX_ATTACHMENT_FILES = 5;

/** A file name's length limit in characters, counted as the server counts them (`shownName`;
 * `MAX_NAME_CHARS` in `sstools_agent/domain/attachments.py`). */
export const MAX_ATTACHMENT_NAME_CHARS = 200;

/** The types a file may be declared as (`ALLOWED_TYPES`). */
export const ATTACHMENT_TYPES: readonly string[] = [
  "text/plain",
  "text/csv",
  "application/json",
  "application/sql",
  "text/markdown",
  "image/png",
  "image/jpeg",
  "application/pdf",
];

/** What the deployment lets a person attach (`GET /api/assistant/files/limits`); until the page
 * has read it, or when it cannot, the defaults above (the backend's own defaults). */
export interface FileLimits {
  maxBytes: number;
  /** 0: attachments are off in this deployment. */
  maxFiles: number;
  maxNameChars: number;
  contentTypes: readonly string[];
}

export const DEFAULT_FILE_LIMITS: FileLimits = {
  maxBytes: MAX_ATTACHMENT_BYTES,
  maxFiles: MAX_ATTACHMENT_FILES,
  maxNameChars: MAX_ATTACHMENT_NAME_CHARS,
  contentTypes: ATTACHMENT_TYPES,
};

/** The server's answer as limits; a field missing or of the wrong type keeps its default. */
export function fileLimitsFrom(raw: unknown): FileLimits {
  if (typeof raw !== "object" || raw === null) return DEFAULT_FILE_LIMITS;
  const answer = raw as Record<string, unknown>;
  const types = answer.content_types;
  return {
    maxBytes: nonNegativeInt(answer.max_bytes) ? answer.max_bytes : DEFAULT_FILE_LIMITS.maxBytes,
    maxFiles: nonNegativeInt(answer.max_files) ? answer.max_files : DEFAULT_FILE_LIMITS.maxFiles,
    maxNameChars: nonNegativeInt(answer.max_name_chars)
      ? answer.max_name_chars
      : DEFAULT_FILE_LIMITS.maxNameChars,
    contentTypes:
      Array.isArray(types) && types.every((type) => typeof type === "string")
        ? types
        : DEFAULT_FILE_LIMITS.contentTypes,
  };
}
