// Generates src/lib/generated/chat-events.ts from chat-events.schema.json (written by the
// Python exporter). `--check` regenerates into a temporary file and fails when it differs from
// the committed one (the drift test; src/lib/generated/drift.test.ts runs the same comparison).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateChatEventTypes } from "./chat-event-types.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const generated = join(here, "..", "src", "lib", "generated");
const schemaPath = join(generated, "chat-events.schema.json");
const targetPath = join(generated, "chat-events.ts");

const source = await generateChatEventTypes(schemaPath);
if (process.argv.includes("--check")) {
  const dir = mkdtempSync(join(tmpdir(), "chat-events-"));
  const fresh = join(dir, "chat-events.ts");
  try {
    writeFileSync(fresh, source);
    let committed = "";
    try {
      committed = readFileSync(targetPath, "utf8");
    } catch {
      committed = "";
    }
    if (committed !== readFileSync(fresh, "utf8")) {
      console.error(
        "src/lib/generated/chat-events.ts is stale: it differs from what chat-events.schema.json generates.\n" +
          "Run `npm run gen:types` and commit the result.",
      );
      process.exit(1);
    }
    console.log("chat-events.ts matches chat-events.schema.json");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
} else {
  writeFileSync(targetPath, source);
  console.log(`wrote ${targetPath}`);
}
