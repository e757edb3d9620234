import { fireEvent, render, screen, waitFor } from "@testing-library/svelte";
import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../lib/events";
import { DEFAULT_CONFIG } from "../lib/config";
import { ConversationSession } from "../ui/conversationSession.svelte";
import { Backend, ScriptedChat } from "../ui/fakeBackend";
import Composer from "./Composer.svelte";

const token = (text: string) =>
  ({
    role: "assistant",
    content: "",
    metadata: { type: "stream_token", token: text },
  }) as unknown as ChatMessage;

async function composerWith(chat: ScriptedChat) {
  const session = new ConversationSession();
  await session.begin(DEFAULT_CONFIG, { chat, rest: new Backend().rest });
  render(Composer, { session });
  return session;
}

describe("Composer", () => {
  it("sends on Enter; Shift+Enter is a new line", async () => {
    const chat = new ScriptedChat([{ conversationId: "c1", events: [token("да")] }]);
    const session = await composerWith(chat);
    const composer = screen.getByTestId("composer") as HTMLTextAreaElement;

    await fireEvent.input(composer, { target: { value: "первая строка" } });
    await fireEvent.keyDown(composer, { key: "Enter", shiftKey: true });
    expect(chat.requests).toHaveLength(0);

    await fireEvent.keyDown(composer, { key: "Enter" });
    await waitFor(() => expect(chat.requests).toHaveLength(1));
    expect(chat.requests[0].input.text).toBe("первая строка");
    await waitFor(() => expect(session.streaming).toBe(false));
    expect(composer.value).toBe("");
  });

  it("says a message is over the limit, tied to the field, and keeps sending disabled", async () => {
    await composerWith(new ScriptedChat());
    const composer = screen.getByTestId("composer");
    await fireEvent.input(composer, { target: { value: "я".repeat(8001) } });
    const notice = screen.getByTestId("composer-limit");
    expect(notice.textContent).toContain("Сообщение длиннее 8000 символов (8001)");
    expect(composer.getAttribute("aria-describedby")).toBe(notice.id);
    expect((screen.getByTestId("send") as HTMLButtonElement).disabled).toBe(true);
  });

  it("shows «Остановить» only while the agent answers", async () => {
    let finish = () => {};
    const hold = new Promise<void>((resolve) => (finish = resolve));
    const chat = new ScriptedChat([
      { conversationId: "c2", events: [token("д"), token("а")], hold },
    ]);
    await composerWith(chat);
    expect(screen.queryByTestId("stop")).toBeNull();
    await fireEvent.input(screen.getByTestId("composer"), { target: { value: "долго" } });
    await fireEvent.click(screen.getByTestId("send"));
    await waitFor(() => expect(screen.getByTestId("stop")).toBeTruthy());
    await fireEvent.click(screen.getByTestId("stop"));
    await waitFor(() => expect(screen.queryByTestId("stop")).toBeNull());
    expect(chat.requests[0].submission.cancelled).toBe(true);
    finish();
  });
});
