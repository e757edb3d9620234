/** The chat's own limits, as the page tells the person before sending. */

/** A message's length limit: the chat refuses a longer one (`MAX_MESSAGE_CHARS` in
 * `layers/common/sstools_agent/chat/request.py`; a Python test holds the two equal). */
export const MAX_MESSAGE_CHARS = 8000;

/** One attached file at most, in bytes (`ATTACHMENT_MAX_BYTES`, docs/attachments.md): the page
 * refuses a larger file before asking for an upload; the REST API and the chat check again. */
export const MAX_ATTACHMENT_BYTES = 10_485_760;

/** Files in one message at most (`ATTACHMENT_MAX_FILES`). */
export const MAX_ATTACHMENT_FILES = 5;

/** A file name's length limit (`MAX_NAME_CHARS` in `sstools_agent/domain/attachments.py`). */
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
