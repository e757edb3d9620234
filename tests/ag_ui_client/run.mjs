// Runs the official AG-UI client (@ag-ui/client's HttpAgent) through a scenario against a live
// endpoint and prints ONE JSON document on stdout describing what the client saw.
//
// Usage: node run.mjs '<scenario json>'   or   node run.mjs < scenario.json
//
// Scenario: {url, token, threadId?, forwardedProps?, timeoutS?, steps: [step, ...]}
//   {"message": "text", "forwardedProps"?: {...}}   adds a user message, runs the agent
//   {"resume": "approve" | "deny" | "cancel", "editedArgs"?: {...}, "forwardedProps"?: {...}}
//       answers every pending interrupt and runs the agent with `resume`
//
// Nothing the client rejects is swallowed: a verification or schema error rejects runAgent()
// and is recorded as the step's `error` (with the raw frames the server sent, so the offending
// event can be read), the client's own warnings (stripped fields, dropped events) as `warnings`.
import { HttpAgent, buildResumeArray } from "@ag-ui/client";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";

const scenario = JSON.parse(
  process.argv[2] && process.argv[2] !== "-" ? process.argv[2] : readFileSync(0, "utf8"),
);

// The client reports deviations through console.warn / console.error: keep them per step, and
// still show them on stderr for a human reading the test's output.
let warnings = [];
for (const level of ["warn", "error"]) {
  const original = console[level].bind(console);
  console[level] = (...args) => {
    warnings.push(
      `${level}: ${args.map((a) => (a instanceof Error ? a.message : typeof a === "string" ? a : JSON.stringify(a))).join(" ")}`,
    );
    original(...args);
  };
}

// The bytes as they arrived, before the client parses, strips or verifies anything.
let rawText = "";
let lastRequest;
const recordingFetch = async (url, init) => {
  lastRequest = JSON.parse(init.body);
  const response = await fetch(url, init);
  if (!response.body) return response;
  const decoder = new TextDecoder();
  const tee = new TransformStream({
    transform(chunk, controller) {
      rawText += decoder.decode(chunk, { stream: true });
      controller.enqueue(chunk);
    },
  });
  return new Response(response.body.pipeThrough(tee), {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
};

function rawFrames(text) {
  return text
    .split(/\r?\n\r?\n/)
    .map((frame) =>
      frame
        .split(/\r?\n/)
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n"),
    )
    .filter((data) => data.length > 0)
    .map((data) => {
      try {
        return JSON.parse(data);
      } catch {
        return data;
      }
    });
}

const describe = (error) => ({
  name: error?.name ?? typeof error,
  message: error instanceof Error ? error.message : String(error),
  ...(error?.status !== undefined && { status: error.status }),
  ...(error?.payload !== undefined && { payload: error.payload }),
});

const agent = new HttpAgent({
  url: scenario.url,
  headers: { Authorization: `Bearer ${scenario.token}` },
  ...(scenario.threadId !== undefined && { threadId: scenario.threadId }),
  fetch: recordingFetch,
});

let events = [];
let outcome = null;
agent.subscribe({
  onEvent: ({ event }) => {
    events.push(structuredClone(event));
  },
  onRunFinishedEvent: (params) => {
    outcome =
      params.outcome === "interrupt"
        ? { type: "interrupt", interrupts: structuredClone(params.interrupts) }
        : params.outcome === "cancelled"
          ? { type: "cancelled" }
          : {
              type: "success",
              ...(params.result !== undefined && { result: params.result }),
              pendingToolCallIds: params.pendingToolCallIds,
            };
  },
  onRunErrorEvent: ({ event }) => {
    outcome = { type: "error", message: event.message, ...(event.code && { code: event.code }) };
  },
});

const RESPONSES = {
  approve: (step) => ({
    status: "resolved",
    payload: { approved: true, ...(step.editedArgs !== undefined && { editedArgs: step.editedArgs }) },
  }),
  deny: () => ({ status: "resolved", payload: { approved: false } }),
  cancel: () => ({ status: "cancelled" }),
};

const timeoutMs = (scenario.timeoutS ?? 60) * 1000;
const results = [];
for (const step of scenario.steps) {
  events = [];
  outcome = null;
  warnings = [];
  rawText = "";
  lastRequest = undefined;
  const result = { step };
  const parameters = { forwardedProps: step.forwardedProps ?? scenario.forwardedProps ?? {} };
  try {
    if ("message" in step) {
      agent.addMessage({ id: randomUUID(), role: "user", content: step.message });
    } else if ("resume" in step) {
      const respond = RESPONSES[step.resume];
      if (!respond) throw new Error(`unknown resume answer ${JSON.stringify(step.resume)}`);
      if (agent.pendingInterrupts.length === 0) {
        throw new Error("a resume step, but the agent has no pending interrupts to answer");
      }
      parameters.resume = buildResumeArray(
        agent.pendingInterrupts,
        Object.fromEntries(agent.pendingInterrupts.map((i) => [i.id, respond(step)])),
      );
    } else {
      throw new Error(`a step is {message} or {resume}: ${JSON.stringify(step)}`);
    }
    const timer = setTimeout(() => agent.abortRun(), timeoutMs);
    try {
      await agent.runAgent(parameters);
    } finally {
      clearTimeout(timer);
    }
    result.error = null;
  } catch (error) {
    result.error = describe(error);
  }
  Object.assign(result, {
    request: lastRequest && {
      threadId: lastRequest.threadId,
      runId: lastRequest.runId,
      protocolVersion: lastRequest.protocolVersion,
      ...(lastRequest.resume !== undefined && { resume: lastRequest.resume }),
      messageCount: lastRequest.messages.length,
    },
    events,
    outcome,
    pendingInterrupts: structuredClone(agent.pendingInterrupts),
    messages: structuredClone(agent.messages),
    warnings,
    raw: rawFrames(rawText),
  });
  results.push(result);
}

const report = {
  threadId: agent.threadId,
  steps: results,
  pendingInterrupts: agent.pendingInterrupts,
  messages: agent.messages,
};
process.stdout.write(`${JSON.stringify(report)}\n`, () => process.exit(0));
