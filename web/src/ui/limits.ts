/** The chat's own limits, as the page tells the person before sending. */

/** A message's length limit: the chat refuses a longer one (`MAX_MESSAGE_CHARS` in
 * `layers/common/sstools_agent/chat/request.py`; a Python test holds the two equal). */
export const MAX_MESSAGE_CHARS = 8000;
