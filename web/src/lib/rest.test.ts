// @vitest-environment node
import { describe, expect, it, vi } from "vitest";
import { restClient } from "./rest";

describe("RestClient.request", () => {
  const fetchImpl = vi.fn(async () => new Response("{}", { status: 200 }));
  const rest = restClient("", {
    getToken: () => "jwt",
    fetch: fetchImpl as unknown as typeof fetch,
  });

  it.each([
    "/api/assistant/conversations/c1/tool-outputs/call_1",
    "/api/assistant/history?conversation_id=c1&limit=100",
  ])("sends the token to this API's own path %s", async (path) => {
    await rest.request("GET", path);
    expect(fetchImpl).toHaveBeenLastCalledWith(path, expect.objectContaining({ method: "GET" }));
  });

  it.each([
    "//evil.example/api/x",
    "/\\evil.example/api/x",
    "/api/\\evil.example",
    "https://evil.example/api/x",
    "javascript:alert(1)",
    "/agent/config.json",
    "/api//evil.example",
  ])("never sends the token anywhere else: %s", async (path) => {
    fetchImpl.mockClear();
    await expect(rest.request("GET", path)).rejects.toMatchObject({ code: "VALIDATION_ERROR" });
    expect(fetchImpl).not.toHaveBeenCalled();
  });
});

describe("RestClient files", () => {
  it("asks for an upload and a download link on the files routes", async () => {
    const fetchImpl = vi.fn(async () => new Response("{}", { status: 200 }));
    const rest = restClient("", {
      getToken: () => "jwt",
      fetch: fetchImpl as unknown as typeof fetch,
    });
    await rest.requestUpload("orders.csv", "text/csv", 1834, "c1");
    expect(fetchImpl).toHaveBeenLastCalledWith(
      "/api/assistant/files",
      expect.objectContaining({
        method: "POST",
        body: JSON.stringify({
          name: "orders.csv",
          content_type: "text/csv",
          size: 1834,
          conversation_id: "c1",
        }),
      }),
    );
    await rest.downloadLink("9f0c");
    expect(fetchImpl).toHaveBeenLastCalledWith(
      "/api/assistant/files/9f0c/download",
      expect.objectContaining({ method: "GET" }),
    );
  });

  it("hands a refusal's {code, detail} on", async () => {
    const body = { code: "INVALID_ATTACHMENT", detail: "Файл «a.exe» нельзя приложить." };
    const rest = restClient("", {
      getToken: () => "jwt",
      fetch: (async () => new Response(JSON.stringify(body), { status: 422 })) as typeof fetch,
    });
    await expect(rest.requestUpload("a.exe", "", 10)).rejects.toMatchObject(body);
  });
});
