import { describe, expect, it } from "vitest";
import type { HistoryMessage } from "../lib/rest";
import { resumePointAfter } from "./session";

const message = (role: "user" | "assistant", seq: number) =>
  ({ id: `${role}-${seq}`, role, content: "", created_at: "", seq }) as HistoryMessage;

describe("resumePointAfter", () => {
  it("replays a running turn from its first event: the user message shares its seq", () => {
    // history [user:1, assistant:13, user:14]; the running turn's events are 14, 15, ...
    const history = [message("user", 1), message("assistant", 13), message("user", 14)];
    expect(resumePointAfter("c1", history)).toBe("c1:13");
  });

  it("after a finished turn replays nothing the history already shows", () => {
    expect(resumePointAfter("c1", [message("user", 1), message("assistant", 13)])).toBe("c1:13");
  });

  it("an empty history replays from the start", () => {
    expect(resumePointAfter("c1", [])).toBeNull();
  });
});
