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
