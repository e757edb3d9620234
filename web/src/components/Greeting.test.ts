import { fireEvent, render, screen, waitFor } from "@testing-library/svelte";
import { describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../lib/config";
import { ConversationSession } from "../ui/conversationSession.svelte";
import { Backend, ScriptedChat } from "../ui/fakeBackend";
import MessageList from "./MessageList.svelte";

describe("Greeting", () => {
  it("a new conversation greets with the server's questions for this page and sends one on a click", async () => {
    const backend = new Backend();
    backend.starters = [
      { text: "Какое здоровье у этого дашборда?", tool: "get_health_summary" },
      { text: "Проверь этот дашборд LLM-валидацией", tool: "run_llm_validation" },
      { text: "Найди другие дашборды в этом окружении", tool: "search_dashboards" },
    ];
    const chat = new ScriptedChat([{ conversationId: "c1", events: [] }]);
    const session = new ConversationSession();
    session.visit("?objectType=dashboard&objectId=10&envId=ss-dev");
    await session.begin(DEFAULT_CONFIG, { chat, rest: backend.rest });
    render(MessageList, { session });

    const questions = await screen.findAllByTestId("starter-question");
    expect(questions.map((q) => q.textContent)).toEqual(backend.starters.map((q) => q.text));
    const asked = backend.queries.find(([path]) => path === "/api/assistant/starters")?.[1];
    expect([asked?.get("object_type"), asked?.get("env_id")]).toEqual(["dashboard", "ss-dev"]);
    expect(screen.getByRole("heading", { name: "Чем помочь?" })).toBeTruthy();

    await fireEvent.click(questions[0]);
    await waitFor(() => expect(chat.requests).toHaveLength(1));
    expect(chat.requests[0].input.text).toBe("Какое здоровье у этого дашборда?");
    await waitFor(() => expect(screen.queryByTestId("greeting")).toBeNull());
  });
});
