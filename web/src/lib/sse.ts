/**
 * An incremental parser of `text/event-stream` (the WHATWG rules): feed it decoded text in
 * chunks split anywhere (inside a line, between `\r` and `\n`), get whole events back.
 * One deliberate difference: an event's `id` is its own `id:` line or null, not the last id seen,
 * because the chat says things anew on a reconnect without an id (they are no stored events) and
 * the client must not take them for events it already has.
 */

export interface SseEvent {
  /** The `id:` of this event, or null when it had none. */
  id: string | null;
  event: string;
  /** The `data:` lines joined with "\n". */
  data: string;
}

export interface SseParserCallbacks {
  /** A comment line (`: ...`), a heartbeat. */
  onComment?: (text: string) => void;
  /** A `retry:` field with a number of milliseconds. */
  onRetry?: (ms: number) => void;
}

export class SseParser {
  private buffer = "";
  /** The previous chunk ended with "\r": a "\n" starting the next one belongs to it. */
  private pendingCr = false;
  private data: string[] = [];
  private hasData = false;
  private eventType = "";
  private eventId: string | null = null;
  private firstLine = true;

  constructor(private readonly callbacks: SseParserCallbacks = {}) {}

  /** Parses a chunk of text; returns the events it completed. */
  push(chunk: string): SseEvent[] {
    const events: SseEvent[] = [];
    let text = chunk;
    if (this.pendingCr) {
      this.pendingCr = false;
      if (text.startsWith("\n")) text = text.slice(1);
    }
    this.buffer += text;
    let start = 0;
    for (;;) {
      const cr = this.buffer.indexOf("\r", start);
      const lf = this.buffer.indexOf("\n", start);
      let end: number;
      let next: number;
      if (cr === -1 && lf === -1) break;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        end = cr;
        if (cr + 1 === this.buffer.length) {
          // "\r" at the end of the chunk: the line ends here; a following "\n" is part of it.
          this.pendingCr = true;
          next = cr + 1;
        } else {
          next = this.buffer[cr + 1] === "\n" ? cr + 2 : cr + 1;
        }
      } else {
        end = lf;
        next = lf + 1;
      }
      const line = this.buffer.slice(start, end);
      start = next;
      const event = this.line(line);
      if (event) events.push(event);
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  /** The end of the stream: an unterminated event is discarded, as the spec says. */
  end(): void {
    this.buffer = "";
    this.reset();
  }

  private line(raw: string): SseEvent | null {
    let line = raw;
    if (this.firstLine) {
      this.firstLine = false;
      if (line.startsWith("\uFEFF")) line = line.slice(1);
    }
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) {
      this.callbacks.onComment?.(line.slice(1).trimStart());
      return null;
    }
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        this.data.push(value);
        this.hasData = true;
        break;
      case "event":
        this.eventType = value;
        break;
      case "id":
        if (!value.includes("\0")) this.eventId = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.callbacks.onRetry?.(Number(value));
        break;
      default:
        break; // unknown fields are ignored
    }
    return null;
  }

  private dispatch(): SseEvent | null {
    if (!this.hasData) {
      this.reset();
      return null;
    }
    const event: SseEvent = {
      id: this.eventId,
      event: this.eventType || "message",
      data: this.data.join("\n"),
    };
    this.reset();
    return event;
  }

  private reset(): void {
    this.data = [];
    this.hasData = false;
    this.eventType = "";
    this.eventId = null;
  }
}
