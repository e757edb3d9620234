import { fireEvent, render, screen, waitFor } from "@testing-library/svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import App from "./App.svelte";

const enc = new TextEncoder();
const sse = (id: string, metadata: Record<string, unknown>, content = "") =>
  `id: ${id}\ndata: ${JSON.stringify({ role: "assistant", content, metadata })}\n\n`;

function stream(chunks: string[]): Response {
  const queue = [...chunks];
  return new Response(
    new ReadableStream<Uint8Array>({
      pull(controller) {
        const chunk = queue.shift();
        if (chunk === undefined) controller.close();
        else controller.enqueue(enc.encode(chunk));
      },
    }),
    { status: 200, headers: { "Content-Type": "text/event-stream" } },
  );
}
const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });

const chatBodies: Record<string, unknown>[] = [];
const uploadBodies: Record<string, unknown>[] = [];
const bucketForms: FormData[] = [];

/** The bucket: takes every presigned POST with S3's 204, a moment later. */
class BucketXhr {
  status = 0;
  responseText = "";
  withCredentials = false;
  upload: { onprogress: ((event: ProgressEvent) => void) | null } = { onprogress: null };
  onload: (() => void) | null = null;
  onerror: (() => void) | null = null;
  onabort: (() => void) | null = null;
  open() {}
  abort() {
    this.onabort?.();
  }
  send(form: FormData) {
    bucketForms.push(form);
    setTimeout(() => {
      this.status = 204;
      this.onload?.();
    }, 0);
  }
}
let chatResponses: Array<() => Response> = [];

beforeEach(() => {
  chatBodies.length = 0;
  uploadBodies.length = 0;
  bucketForms.length = 0;
  vi.stubGlobal("XMLHttpRequest", BucketXhr);
  localStorage.setItem("ss-tools.auth.token", "jwt");
  window.history.replaceState(
    null,
    "",
    "/agent/?objectType=dashboard&objectId=10&objectName=Sales&envId=ss-dev",
  );
  vi.stubGlobal(
    "fetch",
    vi.fn(async (input: string, init: RequestInit = {}) => {
      const url = String(input);
      if (url.includes("config.json")) return new Response("", { status: 404 });
      if (url.startsWith("/api/assistant/environments"))
        return json(200, {
          items: [
            { id: "ss-dev", tier: "dev" },
            { id: "prod", tier: "prod" },
          ],
        });
      if (url.startsWith("/api/assistant/conversations"))
        return json(200, { items: [], next_cursor: null });
      if (url === "/api/assistant/files") {
        uploadBodies.push(JSON.parse(String(init.body)));
        return json(201, {
          file_id: `f${uploadBodies.length}`,
          upload: { url: "https://bucket.example/", fields: { key: "k", policy: "p" } },
          expires_at: "2026-12-02T14:05:00.000Z",
          max_bytes: 10485760,
        });
      }
      if (url.startsWith("/api/agent/conversations/"))
        return json(200, { active: false, pending_confirmation_id: null });
      if (url === "/api/agent/chat") {
        chatBodies.push(JSON.parse(String(init.body)));
        const next = chatResponses.shift();
        if (!next) throw new Error("unexpected chat call");
        return next();
      }
      throw new Error(`unexpected ${url}`);
    }),
  );
});

afterEach(() => {
  vi.unstubAllGlobals();
  localStorage.clear();
});

describe("App", () => {
  it("shows the context, streams an answer and a confirmation card, and confirms it", async () => {
    chatResponses = [
      () =>
        stream([
          sse("c1:2", { type: "stream_token", token: "Готовлю " }),
          sse("c1:3", { type: "stream_token", token: "<script>x</script>" }),
          sse("c1:4", {
            type: "confirm_required",
            prompt: "Изменения в dev-окружении ss-dev",
            thread_id: "t",
            tool_call_id: "call-1",
            interrupt_id: "i",
            confirmation_id: "conf-1",
            expires_at: new Date(Date.now() + 60_000).toISOString(),
            input: { id: 10 },
            decision: {
              tool: "update_dashboard",
              operation: "write",
              risk: "guarded",
              tone: "info",
              label: "изменение",
              environment: "ss-dev",
              environment_tier: "dev",
              badge: "DEV",
              impact: "1 дашборд будет изменён",
              permission: {
                allowed: true,
                user_role: "admin",
                required_role: "engineer",
                reason: "",
              },
              requires_confirmation: true,
              prompt: "Изменения в dev-окружении ss-dev",
            },
          }),
          sse("c1:5", {
            type: "stream_end",
            conversation_id: "c1",
            user_message_id: "u",
            assistant_message_id: "a",
          }),
        ]),
      () =>
        stream([
          sse("c1:7", { type: "confirm_resolved", result: "confirmed" }),
          sse("c1:8", {}, "Готово."),
          sse("c1:9", {
            type: "stream_end",
            conversation_id: "c1",
            user_message_id: null,
            assistant_message_id: "b",
          }),
        ]),
    ];
    render(App);
    await waitFor(() => expect(window.__agentPage?.ready).toBe(true));
    const banner = screen.getByTestId("context-banner");
    expect(banner.textContent).toContain("Дашборд");
    expect(banner.textContent).toContain("Sales");
    await waitFor(() =>
      expect((screen.getByTestId("env-select") as HTMLSelectElement).value).toBe("ss-dev"),
    );

    const composer = screen.getByTestId("composer");
    await fireEvent.input(composer, { target: { value: "обнови дашборд" } });
    await fireEvent.keyDown(composer, { key: "Enter" });

    await waitFor(() => expect(screen.getByTestId("confirm-card")).toBeTruthy());
    expect(screen.getByTestId("message-user").textContent?.trim()).toBe("обнови дашборд");
    const assistant = screen.getByTestId("message-assistant");
    expect(assistant.textContent).toContain("Готовлю <script>x</script>");
    expect(assistant.querySelector("script")).toBeNull();
    expect(chatBodies[0]).toMatchObject({
      message: "обнови дашборд",
      ui_context: { objectId: "10", envId: "ss-dev" },
    });
    expect(window.location.hash).toBe("#c=c1");

    await fireEvent.click(screen.getByTestId("confirm-accept"));
    await waitFor(() => expect(screen.getByTestId("confirm-card").dataset.state).toBe("confirmed"));
    expect(chatBodies[1]).toEqual({
      conversation_id: "c1",
      action: "confirm",
      confirmation_id: "conf-1",
      ui_context: expect.objectContaining({ envId: "ss-dev" }),
    });
    await waitFor(() =>
      expect(screen.getAllByTestId("message-assistant").at(-1)?.textContent).toContain("Готово."),
    );
    expect(performance.getEntriesByName("confirm-received:conf-1")).toHaveLength(1);
  });

  it("shows a 409 from the chat as an error card", async () => {
    chatResponses = [() => json(409, { code: "CONVERSATION_BUSY", detail: "другая вкладка" })];
    render(App);
    await waitFor(() => expect(window.__agentPage?.ready).toBe(true));
    const composer = screen.getByTestId("composer");
    await fireEvent.input(composer, { target: { value: "привет" } });
    await fireEvent.click(screen.getByTestId("send"));
    await waitFor(() =>
      expect(screen.getByTestId("error-card").dataset.code).toBe("CONVERSATION_BUSY"),
    );
    expect(screen.getByTestId("error-card").textContent).toContain(
      "Разговор отвечает в другой вкладке",
    );
    expect(screen.queryByTestId("error-retry")).toBeNull();
  });

  it("uploads an attached file, keeps it through a refused send, and sends it by id", async () => {
    chatResponses = [
      () => json(422, { code: "INVALID_ATTACHMENT", detail: "Файл «orders.csv» не найден." }),
      () =>
        stream([
          sse("c1:2", { type: "stream_token", token: "3 строки." }),
          sse("c1:3", { type: "stream_end", conversation_id: "c1" }),
        ]),
    ];
    render(App);
    await waitFor(() => expect(window.__agentPage?.ready).toBe(true));
    const input = screen.getByTestId("attach-input") as HTMLInputElement;
    const file = new File(["a,b\n1,2\n"], "orders.csv", { type: "" });
    Object.defineProperty(input, "files", { value: [file], configurable: true });
    await fireEvent.change(input);
    await waitFor(() => expect(screen.getByTestId("attachment-chip").dataset.state).toBe("done"));
    expect(uploadBodies).toEqual([
      { name: "orders.csv", content_type: "text/csv", size: 8, conversation_id: null },
    ]);
    expect([...bucketForms[0].keys()]).toEqual(["key", "policy", "file"]);

    // A refusal before the stream: its detail shows, the text and the file stay in the composer
    const composer = screen.getByTestId("composer") as HTMLTextAreaElement;
    await fireEvent.input(composer, { target: { value: "сколько строк?" } });
    await fireEvent.click(screen.getByTestId("send"));
    await waitFor(() =>
      expect(screen.getByTestId("error-card").dataset.code).toBe("INVALID_ATTACHMENT"),
    );
    expect(screen.getByTestId("error-card").textContent).toContain("Файл «orders.csv» не найден.");
    expect(chatBodies[0].files).toEqual([{ file_id: "f1" }]);
    expect(composer.value).toBe("сколько строк?");
    expect(screen.getAllByTestId("attachment-chip")).toHaveLength(1);
    expect(screen.queryByTestId("message-user")).toBeNull();

    // Sent again and accepted: the message shows its file, the composer is empty
    await fireEvent.click(screen.getByTestId("send"));
    await waitFor(() =>
      expect(screen.getByTestId("message-assistant").textContent).toContain("3 строки."),
    );
    expect(chatBodies[1].files).toEqual([{ file_id: "f1" }]);
    expect(screen.getByTestId("message-attachment").textContent).toContain("orders.csv");
    expect(screen.queryByTestId("attachment-chip")).toBeNull();
  });

  it("offers «Повторить» for LLM_UNAVAILABLE", async () => {
    chatResponses = [
      () =>
        stream([
          sse("c2:2", { type: "error", code: "LLM_UNAVAILABLE", detail: "модель не ответила" }),
          sse("c2:3", {
            type: "stream_end",
            conversation_id: "c2",
            user_message_id: "u",
            assistant_message_id: "a",
          }),
        ]),
      () =>
        stream([
          sse("c2:5", {}, "Теперь ответ."),
          sse("c2:6", {
            type: "stream_end",
            conversation_id: "c2",
            user_message_id: "u",
            assistant_message_id: "a",
          }),
        ]),
    ];
    render(App);
    await waitFor(() => expect(window.__agentPage?.ready).toBe(true));
    await fireEvent.input(screen.getByTestId("composer"), { target: { value: "вопрос" } });
    await fireEvent.click(screen.getByTestId("send"));
    await waitFor(() =>
      expect(screen.getByTestId("error-card").textContent).toContain("Модель недоступна"),
    );
    await fireEvent.click(screen.getByTestId("error-retry"));
    await waitFor(() => expect(screen.getByText("Теперь ответ.")).toBeTruthy());
    expect(chatBodies[1]).toMatchObject({ message: "вопрос", conversation_id: "c2" });
  });

  it("edits a card: a refusal stays on the pending card, a superseding edit brings a new card", async () => {
    const input = { dashboard_ids: [10], source_env_id: "ss-dev", target_env_id: "staging" };
    const card = (seq: number, id: string, extra: Record<string, unknown>) =>
      sse(`c3:${seq}`, {
        type: "confirm_required",
        prompt: "Изменения",
        thread_id: "t",
        tool_call_id: "call-1",
        interrupt_id: "i",
        confirmation_id: id,
        expires_at: new Date(Date.now() + 60_000).toISOString(),
        input,
        decision: { tool: "deploy_dashboard", operation: "write", tone: "info", badge: "STAGING" },
        ...extra,
      });
    const end = (seq: number) =>
      sse(`c3:${seq}`, {
        type: "stream_end",
        conversation_id: "c3",
        user_message_id: null,
        assistant_message_id: "a",
      });
    const prod = { ...input, target_env_id: "prod" };
    chatResponses = [
      () => stream([card(2, "conf-1", {}), end(3)]),
      () =>
        json(422, {
          code: "VALIDATION_ERROR",
          detail: "deploy_dashboard: invalid arguments: dashboard_ids: bad",
        }),
      () =>
        stream([
          sse("c3:5", { type: "confirm_resolved", result: "superseded" }),
          card(6, "conf-2", {
            input: prod,
            decision: {
              tool: "deploy_dashboard",
              operation: "write",
              tone: "destructive",
              badge: "⚠️ PRODUCTION",
            },
          }),
          end(7),
        ]),
    ];
    render(App);
    await waitFor(() => expect(window.__agentPage?.ready).toBe(true));
    await fireEvent.input(screen.getByTestId("composer"), { target: { value: "задеплой" } });
    await fireEvent.click(screen.getByTestId("send"));
    await waitFor(() => expect(screen.getByTestId("confirm-edit")).toBeTruthy());
    await waitFor(() => expect(window.__agentPage?.streamsEnded).toBe(1));

    await fireEvent.click(screen.getByTestId("confirm-edit"));
    const ids = screen.getByTestId("confirm-edit-field-dashboard_ids");
    await fireEvent.input(ids, { target: { value: "0" } });
    await fireEvent.click(screen.getByTestId("confirm-edit-submit"));
    await waitFor(() =>
      expect(screen.getByTestId("confirm-edit-error").textContent).toContain("dashboard_ids: bad"),
    );
    expect(chatBodies[1]).toEqual({
      conversation_id: "c3",
      action: "edit",
      confirmation_id: "conf-1",
      edited_args: { ...input, dashboard_ids: [0] },
      ui_context: expect.objectContaining({ envId: "ss-dev" }),
    });
    // the refusal is the card's: no error card, the card still waits, the typed value is kept
    expect(screen.queryByTestId("error-card")).toBeNull();
    expect(screen.getByTestId("confirm-card").dataset.state).toBe("pending");
    expect((ids as HTMLInputElement).value).toBe("0");

    // the target is chosen among the environments the page knows (and the card's own)
    const target = screen.getByTestId("confirm-edit-field-target_env_id") as HTMLSelectElement;
    expect([...target.options].map((o) => o.value)).toEqual(["staging", "ss-dev", "prod"]);
    await fireEvent.input(ids, { target: { value: "10" } });
    await fireEvent.change(target, { target: { value: "prod" } });
    await fireEvent.click(screen.getByTestId("confirm-edit-submit"));
    await waitFor(() => expect(screen.getAllByTestId("confirm-card")).toHaveLength(2));
    const [old, fresh] = screen.getAllByTestId("confirm-card");
    expect(chatBodies[2]).toMatchObject({ action: "edit", edited_args: prod });
    expect(old.dataset.state).toBe("superseded");
    expect(old.textContent).toMatch(/заменено изменённым вызовом — ничего не изменено/i);
    expect(fresh.dataset.state).toBe("pending");
    expect(fresh.dataset.tone).toBe("destructive");
    expect(fresh.querySelector("[data-testid=confirm-accept]")).not.toBeNull();
  });
});
