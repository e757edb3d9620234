// @vitest-environment node
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { generateChatEventTypes } from "../../../scripts/chat-event-types.mjs";

describe("generated chat event types", () => {
  it("chat-events.ts is what chat-events.schema.json generates (run `npm run gen:types`)", async () => {
    const schema = fileURLToPath(new URL("./chat-events.schema.json", import.meta.url));
    const committed = readFileSync(new URL("./chat-events.ts", import.meta.url), "utf8");
    const fresh: string = await generateChatEventTypes(schema);
    expect(committed).toBe(fresh);
  });
});
