// The official Gradio JS client (@gradio/client 2.x, and 1.x for its old iterator) driven through
// a scenario read as JSON on stdin; the report (what each step saw) is JSON on stdout.
//
// Every request the client makes goes through `fetch`; it is wrapped here so that the stream
// (GET …/gradio_api/queue/data) goes to one server process and everything else (config, info,
// join, cancel, reset) to another: the two share nothing but their DynamoDB, as two Lambda
// execution environments would. Each request is logged with the process it went to.
//
// Scenario: {joinUrl, streamUrl, path, timeoutS, steps: [...]}, a step one of
//   {op: "connect", client, token, version: 2|1, sessionHash?}
//   {op: "submit", client, data, eventData?, events?, cancelAfter?: {type, count}}
// `submit` reads the submission until its stream_end (plus what follows it at once), a failure
// status, the iterator's end, or the timeout; `cancelAfter` calls submission.cancel() when that
// many events of that metadata.type arrived.
import { Client as Client2 } from "@gradio/client";
import { Client as Client1 } from "gradio-client-1";

const scenario = JSON.parse(await new Promise((resolve) => {
  let text = "";
  process.stdin.on("data", (chunk) => (text += chunk));
  process.stdin.on("end", () => resolve(text));
}));

const requests = [];
const realFetch = globalThis.fetch;
const joinOrigin = new URL(scenario.joinUrl).origin;
const streamOrigin = new URL(scenario.streamUrl).origin;

globalThis.fetch = (input, init) => {
  const request = input instanceof Request ? input : new Request(input, init);
  const url = new URL(request.url);
  const streaming = url.pathname.endsWith("/gradio_api/queue/data");
  const origin = streaming ? streamOrigin : joinOrigin;
  const routed = new URL(url.pathname + url.search, origin);
  requests.push({ method: request.method, path: url.pathname, to: streaming ? "stream" : "join" });
  return realFetch(new Request(routed, request));
};

const clients = {};
const report = { steps: [], requests };
const timeoutMs = (scenario.timeoutS ?? 30) * 1000;

function summary(event) {
  if (event.type === "data") return { type: "data", data: event.data };
  if (event.type === "status") {
    return {
      type: "status",
      stage: event.stage,
      message: event.message ?? null,
      code: event.code ?? null,
      session_not_found: event.session_not_found ?? null,
    };
  }
  return { type: event.type };
}

async function connect(step) {
  const Client = step.version === 1 ? Client1 : Client2;
  const options = { headers: { Authorization: `Bearer ${step.token}` }, events: ["data", "status"] };
  if (step.sessionHash) options.session_hash = step.sessionHash;
  const client = await Client.connect(scenario.joinUrl + scenario.path, options);
  clients[step.client] = { client, version: step.version ?? 2 };
  return {
    session_hash: client.session_hash,
    protocol: client.config.protocol,
    connect_heartbeat: client.config.connect_heartbeat,
    run_history: client.config.run_history,
    api_prefix: client.config.api_prefix,
  };
}

function ended(events) {
  const last = events[events.length - 1];
  if (!last) return false;
  if (last.type === "status" && (last.stage === "error" || last.stage === "complete")) return true;
  return false;
}

async function submit(step) {
  const { client, version } = clients[step.client];
  const submission = client.submit("/chat", step.data, step.eventData);
  const events = [];
  let cancelled = false;
  const deadline = Date.now() + timeoutMs;
  // 1.x's iterator never settles a next() asked after it closed (and for await's break asks
  // one through return()): it is read with next() alone, and left once the run ended.
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) return { events, timedOut: true, cancelled };
    const next = await Promise.race([
      submission.next(),
      new Promise((resolve) => setTimeout(() => resolve({ timeout: true }), left)),
    ]);
    if (next.timeout) return { events, timedOut: true, cancelled };
    if (next.done) break;
    const event = summary(next.value);
    events.push(event);
    const kind = event.type === "data" ? event.data?.[0]?.metadata?.type : null;
    if (step.cancelAfter && !cancelled && kind === step.cancelAfter.type) {
      const seen = events.filter((e) => e.type === "data" && e.data?.[0]?.metadata?.type === kind);
      if (seen.length >= step.cancelAfter.count) {
        cancelled = true;
        await submission.cancel();
      }
    }
    if (ended(events)) break;
  }
  if (version === 2) await submission.return();
  return { events, timedOut: false, cancelled };
}

for (const step of scenario.steps) {
  try {
    if (step.op === "connect") report.steps.push({ op: step.op, ...(await connect(step)) });
    else if (step.op === "submit") report.steps.push({ op: step.op, ...(await submit(step)) });
    else if (step.op === "close") {
      clients[step.client].client.close();
      report.steps.push({ op: step.op });
    }
  } catch (error) {
    report.steps.push({ op: step.op, error: String(error?.message ?? error) });
  }
}
process.stdout.write(JSON.stringify(report));
process.exit(0);
