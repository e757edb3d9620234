import { fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { describe, expect, it } from "vitest";
import type { ConversationSummary } from "../lib/rest";
import { Backend } from "../ui/fakeBackend";
import Sidebar from "./Sidebar.svelte";

const ISO = /\d{4}-\d{2}-\d{2}T/;

function conversation(id: string, title: string, subject: ConversationSummary["subject"]) {
  const at = new Date().toISOString();
  return { id, title, created_at: at, updated_at: at, subject };
}

const sales = conversation("c1", "какой статус у этого дашборда?", {
  object_type: "dashboard",
  object_id: "10",
  object_name: "Продажи",
  env_id: "ss-dev",
});
const orders = conversation("c2", "где используется?", {
  object_type: "dataset",
  object_id: "15",
  object_name: null,
  env_id: "staging",
});

function sidebarOver(backend: Backend) {
  render(Sidebar, { rest: backend.rest, currentId: null, onOpen: () => {}, onNew: () => {} });
}

describe("Sidebar", () => {
  it("reads each row as its request, its object, its environment and when, with no ISO time", async () => {
    const backend = new Backend();
    backend.conversations = [sales, orders];
    sidebarOver(backend);

    const rows = await screen.findAllByTestId("conversation-item");
    expect(rows.map((row) => row.textContent?.replace(/\s+/g, " ").trim())).toEqual([
      expect.stringMatching(
        /^какой статус у этого дашборда\? Дашборд «Продажи» \(#10\) ss-dev · сегодня, \d\d:\d\d$/,
      ),
      expect.stringMatching(/^где используется\? Датасет #15 staging · сегодня, \d\d:\d\d$/),
    ]);
    expect(screen.getByTestId("sidebar").textContent).not.toMatch(ISO);
  });

  it("searches the whole history on the server and says so in Russian when nothing matches", async () => {
    const backend = new Backend();
    backend.conversations = [sales, orders];
    backend.found = (item, q) => (q === "датасет" ? item.id === "c2" : false);
    sidebarOver(backend);
    await screen.findAllByTestId("conversation-item");
    const search = screen.getByTestId("conversation-search");
    expect(search.getAttribute("placeholder")).toBe("Слова, объект, окружение");

    await fireEvent.input(search, { target: { value: "датасет" } });
    await waitFor(() => expect(screen.getAllByTestId("conversation-item")).toHaveLength(1));
    const [row] = screen.getAllByTestId("conversation-item");
    expect(within(row).getByTestId("conversation-request").textContent).toBe("где используется?");
    const asked = backend.queries.filter(([path]) => path === "/api/assistant/conversations");
    expect(asked.at(-1)?.[1].get("q")).toBe("датасет");

    await fireEvent.input(search, { target: { value: "отчёт" } });
    const empty = await screen.findByTestId("conversations-empty");
    expect(empty.textContent?.trim()).toBe("Ничего не найдено по запросу «отчёт»");
  });
});
