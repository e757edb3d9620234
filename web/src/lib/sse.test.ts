// @vitest-environment node
import { describe, expect, it } from "vitest";
import { SseParser, type SseEvent } from "./sse";

function feed(chunks: string[], onComment?: (text: string) => void): SseEvent[] {
  const parser = new SseParser({ onComment });
  return chunks.flatMap((chunk) => parser.push(chunk));
}

const STREAM =
  'id: c1:1\ndata: {"role":"assistant","content":"","metadata":{"type":"stream_token","token":"При"}}\n\n' +
  'id: c1:2\ndata: {"role":"assistant","content":"","metadata":{"type":"stream_token","token":"вет"}}\n\n';

describe("SseParser", () => {
  it("parses whole events with their ids", () => {
    const events = feed([STREAM]);
    expect(events.map((e) => e.id)).toEqual(["c1:1", "c1:2"]);
    expect(JSON.parse(events[1].data).metadata.token).toBe("вет");
  });

  it("gives the same events whatever the chunking (every split point)", () => {
    const whole = feed([STREAM]);
    for (let i = 1; i < STREAM.length; i += 1) {
      expect(feed([STREAM.slice(0, i), STREAM.slice(i)])).toEqual(whole);
    }
    expect(feed(STREAM.split(""))).toEqual(whole);
  });

  it("handles CRLF and lone CR line ends, also split between \\r and \\n", () => {
    const crlf = STREAM.replace(/\n/g, "\r\n");
    expect(feed([crlf])).toEqual(feed([STREAM]));
    for (let i = 1; i < crlf.length; i += 1) {
      expect(feed([crlf.slice(0, i), crlf.slice(i)])).toEqual(feed([STREAM]));
    }
    expect(feed([STREAM.replace(/\n/g, "\r")])).toEqual(feed([STREAM]));
  });

  it("joins multi-line data with newlines", () => {
    const events = feed(["id: c:3\ndata: first\ndata: second\ndata:third\n\n"]);
    expect(events).toEqual([{ id: "c:3", event: "message", data: "first\nsecond\nthird" }]);
  });

  it("tolerates comment lines (heartbeats) and reports them", () => {
    const comments: string[] = [];
    const events = feed([": ping\n\n", ":\n", "data: x\n", ": hb\n", "\n"], (t) =>
      comments.push(t),
    );
    expect(events).toEqual([{ id: null, event: "message", data: "x" }]);
    expect(comments).toEqual(["ping", "", "hb"]);
  });

  it("ignores events without data, unknown fields, and an unterminated tail", () => {
    const parser = new SseParser();
    expect(parser.push("id: c:1\n\nfoo: bar\nevent: custom\ndata: y\n\ndata: tail")).toEqual([
      { id: null, event: "custom", data: "y" },
    ]);
    parser.end();
    expect(parser.push("\n\n")).toEqual([]);
  });

  it("strips a leading BOM and one space after the colon only", () => {
    expect(feed(["\uFEFFdata:  two spaces\n\n"])).toEqual([
      { id: null, event: "message", data: " two spaces" },
    ]);
  });
});
