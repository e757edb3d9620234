import { describe, expect, it } from "vitest";
import type { ConversationSummary } from "../lib/rest";
import { conversationRow, subjectLabel, whenLabel } from "./conversationRows";

const ISO = /\d{4}-\d{2}-\d{2}T/;
const NOW = new Date("2026-12-03T11:05:00Z");

function summary(fields: Partial<ConversationSummary>): ConversationSummary {
  return {
    id: "c1",
    title: "какой статус у этого дашборда?",
    created_at: "2026-12-03T10:00:00.000Z",
    updated_at: "2026-12-03T11:00:00.000Z",
    ...fields,
  };
}

describe("subjectLabel", () => {
  it("names the object by its type in words, its name and its number", () => {
    const subject = {
      object_type: "dashboard",
      object_id: "10",
      object_name: "Продажи",
      env_id: "ss-dev",
    };
    expect(subjectLabel(subject)).toBe("Дашборд «Продажи» (#10)");
  });

  it("without a name, the type and the number", () => {
    const subject = { object_type: "dataset", object_id: "15", object_name: null, env_id: null };
    expect(subjectLabel(subject)).toBe("Датасет #15");
  });

  it("says nothing for no object, or for a type the page has no words for", () => {
    expect(
      subjectLabel({ object_type: null, object_id: null, object_name: null, env_id: "x" }),
    ).toBeNull();
    expect(
      subjectLabel({ object_type: "report", object_id: "1", object_name: null, env_id: null }),
    ).toBeNull();
    expect(subjectLabel(null)).toBeNull();
  });
});

describe("whenLabel", () => {
  it("today and yesterday in words, in the reader's time zone", () => {
    expect(whenLabel("2026-12-03T11:00:00.000Z", NOW, "Europe/Moscow")).toBe("сегодня, 14:00");
    expect(whenLabel("2026-12-02T20:30:00.000Z", NOW, "Europe/Moscow")).toBe("вчера, 23:30");
    // the same moment is already today in Vladivostok
    expect(whenLabel("2026-12-02T20:30:00.000Z", NOW, "Asia/Vladivostok")).toBe("сегодня, 06:30");
  });

  it("an older day of this year by its date, another year with the year", () => {
    expect(whenLabel("2026-11-04T08:15:00.000Z", NOW, "Europe/Moscow")).toBe("4 ноября, 11:15");
    expect(whenLabel("2025-12-31T09:00:00.000Z", NOW, "UTC")).toBe("31 декабря 2025, 09:00");
  });

  it("shows nothing for a time it cannot read", () => {
    expect(whenLabel("", NOW)).toBe("");
    expect(whenLabel("вчера", NOW)).toBe("");
  });
});

describe("conversationRow", () => {
  it("reads as the request, then the object, the environment and when", () => {
    const row = conversationRow(
      summary({
        subject: {
          object_type: "dashboard",
          object_id: "10",
          object_name: "Продажи",
          env_id: "ss-dev",
        },
      }),
      NOW,
      "Europe/Moscow",
    );
    expect(row).toEqual({
      request: "какой статус у этого дашборда?",
      object: "Дашборд «Продажи» (#10)",
      where: "ss-dev · сегодня, 14:00",
      label: "какой статус у этого дашборда? — Дашборд «Продажи» (#10), ss-dev · сегодня, 14:00",
    });
  });

  it("a conversation from no page reads as its request and when, with no ISO time anywhere", () => {
    const row = conversationRow(summary({ subject: null, updated_at: undefined }), NOW, "UTC");
    expect([row.object, row.where]).toEqual([null, "сегодня, 10:00"]);
    expect(JSON.stringify(row)).not.toMatch(ISO);
  });

  it("an empty title reads «Без названия»", () => {
    expect(conversationRow(summary({ title: " " }), NOW, "UTC").request).toBe("Без названия");
  });
});
