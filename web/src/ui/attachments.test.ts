import { describe, expect, it } from "vitest";
import {
  admit,
  ATTACHMENTS_OFF,
  fileRefusal,
  formatSize,
  openDownload,
  pastedName,
  shownName,
} from "./attachments";
import nameCases from "./attachment-names.cases.json";
import {
  DEFAULT_FILE_LIMITS,
  fileLimitsFrom,
  MAX_ATTACHMENT_BYTES,
  MAX_ATTACHMENT_FILES,
} from "./limits";

const csv = (name: string, size = 10) => new File(["x".repeat(size)], name, { type: "text/csv" });

describe("formatSize", () => {
  it("reads as the backend says sizes", () => {
    expect(formatSize(512)).toBe("512 Б");
    expect(formatSize(12 * 1024)).toBe("12 КБ");
    expect(formatSize(1.5 * 1024 * 1024)).toBe("1.5 МБ");
    expect(formatSize(MAX_ATTACHMENT_BYTES)).toBe("10 МБ");
  });
});

describe("fileRefusal", () => {
  it("lets an allowed file within the limit through", () => {
    expect(fileRefusal("orders.csv", 1834, "text/csv")).toBeNull();
    expect(fileRefusal("big.csv", MAX_ATTACHMENT_BYTES, "text/csv")).toBeNull();
    expect(fileRefusal("big.csv", MAX_ATTACHMENT_BYTES + 1, "text/csv")).toContain("больше 10 МБ");
  });

  it("refuses a file over 10 MB, an empty one, a type not allowed and a long name", () => {
    expect(fileRefusal("orders.csv", MAX_ATTACHMENT_BYTES * 1.25, "text/csv")).toBe(
      "Файл «orders.csv» больше 10 МБ: его размер 12.5 МБ.",
    );
    expect(fileRefusal("empty.csv", 0, "text/csv")).toBe("Файл «empty.csv» пуст.");
    expect(fileRefusal("page.html", 10, "text/html")).toMatch(
      /^Файлы этого типа нельзя приложить: «page\.html» \(text\/html\)\. Можно: текст, CSV/,
    );
    expect(fileRefusal(`${"a".repeat(201)}.csv`, 10, "text/csv")).toMatch(
      /^Имя файла «a{24}…a{12}\.csv» длиннее 200 символов \(в нём 205\): сократите его\.$/,
    );
  });
});

/** A name the server refuses or counts the same way (`tests/unit/test_page_contract.py` reads
 * the same table against `checked_name`). */
interface NameCase {
  says: string;
  parts: [string, number][];
  shown?: string;
  chars: number;
  refusal: string | null;
}

describe("a file's name", () => {
  it.each(nameCases as NameCase[])("is refused and counted as the server does: $says", (c) => {
    const name = c.parts.map(([text, times]) => text.repeat(times)).join("");
    expect(fileRefusal(name, 10, "text/csv")).toBe(c.refusal);
    const shown = shownName(name);
    expect([...shown].length).toBe(c.chars);
    if (c.shown !== undefined) expect(shown).toBe(c.shown);
  });
});

describe("admit", () => {
  it("admits at most five files a message and names the rest", () => {
    const files = [1, 2, 3, 4, 5, 6].map((n) => csv(`part-${n}.csv`));
    const { admitted, refusals } = admit(files, 0);
    expect(admitted.map((c) => c.name)).toEqual([
      "part-1.csv",
      "part-2.csv",
      "part-3.csv",
      "part-4.csv",
      "part-5.csv",
    ]);
    expect(refusals).toEqual([
      `Можно приложить не больше ${MAX_ATTACHMENT_FILES} файлов к сообщению: «part-6.csv» не приложен.`,
    ]);
  });

  it("counts the files already attached and declares each file's type", () => {
    const sql = new File(["select 1"], "q.sql", { type: "" });
    const { admitted, refusals } = admit([sql, csv("a.csv"), csv("b.csv")], 3);
    expect(admitted).toEqual([
      { file: sql, name: "q.sql", contentType: "application/sql" },
      expect.objectContaining({ name: "a.csv" }),
    ]);
    expect(refusals[0]).toContain("«b.csv» не приложен");
  });

  it("refuses a file by its own fault before counting it", () => {
    const exe = new File(["MZ"], "tool.exe", { type: "application/x-msdownload" });
    const { admitted, refusals } = admit([exe, csv("a.csv")], 0);
    expect(admitted.map((c) => c.name)).toEqual(["a.csv"]);
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toContain("Файлы этого типа нельзя приложить: «tool.exe»");
  });
});

describe("a deployment's own limits", () => {
  const theirs = fileLimitsFrom({
    max_bytes: 2 * 1024 * 1024,
    max_files: 2,
    max_name_chars: 200,
    content_types: ["text/csv"],
  });

  it("are what the page refuses by, in the server's words", () => {
    expect(fileRefusal("big.csv", 3 * 1024 * 1024, "text/csv", theirs)).toBe(
      "Файл «big.csv» больше 2 МБ: его размер 3 МБ.",
    );
    expect(fileRefusal("big.csv", 3 * 1024 * 1024, "text/csv")).toBeNull(); // the defaults'
    expect(fileRefusal("q.json", 10, "application/json", theirs)).toContain("нельзя приложить");
    const { admitted, refusals } = admit([csv("a.csv"), csv("b.csv"), csv("c.csv")], 0, theirs);
    expect(admitted.map((c) => c.name)).toEqual(["a.csv", "b.csv"]);
    expect(refusals).toEqual([
      "Можно приложить не больше 2 файлов к сообщению: «c.csv» не приложен.",
    ]);
  });

  it("may take no files at all", () => {
    const off = { ...DEFAULT_FILE_LIMITS, maxFiles: 0 };
    expect(admit([csv("a.csv")], 0, off)).toEqual({ admitted: [], refusals: [ATTACHMENTS_OFF] });
    expect(admit([], 0, off)).toEqual({ admitted: [], refusals: [] });
  });

  it("keep a default for what the answer lacks or gets wrong", () => {
    expect(fileLimitsFrom(null)).toEqual(DEFAULT_FILE_LIMITS);
    expect(fileLimitsFrom({ max_bytes: "big", max_files: -1, content_types: [1] })).toEqual(
      DEFAULT_FILE_LIMITS,
    );
    expect(fileLimitsFrom({ max_files: 0 }).maxFiles).toBe(0);
  });
});

describe("pastedName", () => {
  const now = new Date(2026, 11, 2, 14, 5, 9);

  it("names a clipboard image by the time it was pasted", () => {
    expect(pastedName({ name: "image.png", type: "image/png" }, now)).toBe(
      "screenshot-20261202-140509.png",
    );
    expect(pastedName({ name: "", type: "image/jpeg" }, now)).toBe(
      "screenshot-20261202-140509.jpg",
    );
  });

  it("keeps the name of a pasted file that has one", () => {
    expect(pastedName({ name: "chart.png", type: "image/png" }, now)).toBe("chart.png");
    expect(pastedName({ name: "orders.csv", type: "text/csv" }, now)).toBe("orders.csv");
  });
});

describe("openDownload", () => {
  it("follows an https link with an anchor that downloads, and nothing else", () => {
    const clicked: string[] = [];
    const click = HTMLAnchorElement.prototype.click;
    HTMLAnchorElement.prototype.click = function (this: HTMLAnchorElement) {
      clicked.push(`${this.href} ${this.download}`);
    };
    try {
      openDownload("https://bucket.example/a?X-Amz-Signature=s", "orders.csv");
      expect(clicked).toEqual(["https://bucket.example/a?X-Amz-Signature=s orders.csv"]);
      expect(() => openDownload("javascript:alert(1)", "x")).toThrow();
      expect(clicked).toHaveLength(1);
      expect(document.querySelectorAll("a")).toHaveLength(0);
    } finally {
      HTMLAnchorElement.prototype.click = click;
    }
  });
});
