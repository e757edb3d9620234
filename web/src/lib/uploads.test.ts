import { describe, expect, it } from "vitest";
import { declaredType, progressFraction, uploadFile, uploadForm, UploadError } from "./uploads";

const GRANT = {
  url: "https://bucket.example/",
  fields: {
    key: "uploads/abc/f1",
    "Content-Type": "text/csv",
    policy: "p",
    "x-amz-signature": "s",
  },
};

/** The parts of XMLHttpRequest `uploadFile` uses; the test plays the bucket. */
class FakeXhr {
  method = "";
  url = "";
  sent: FormData | null = null;
  status = 0;
  responseText = "";
  withCredentials = true;
  aborted = false;
  upload: { onprogress: ((event: ProgressEvent) => void) | null } = { onprogress: null };
  onload: (() => void) | null = null;
  onerror: (() => void) | null = null;
  onabort: (() => void) | null = null;
  open(method: string, url: string) {
    this.method = method;
    this.url = url;
  }
  send(body: FormData) {
    this.sent = body;
  }
  abort() {
    this.aborted = true;
    this.onabort?.();
  }
  progress(loaded: number, total: number) {
    this.upload.onprogress?.({ lengthComputable: true, loaded, total } as ProgressEvent);
  }
  answer(status: number, body = "") {
    this.status = status;
    this.responseText = body;
    this.onload?.();
  }
}

function fake(): { xhr: FakeXhr; factory: () => XMLHttpRequest } {
  const xhr = new FakeXhr();
  return { xhr, factory: () => xhr as unknown as XMLHttpRequest };
}

describe("declaredType", () => {
  it.each([
    ["orders.sql", "", "application/sql"],
    ["orders.sql", "text/x-sql", "application/sql"],
    ["orders.sql", "application/octet-stream", "application/sql"],
    ["orders.csv", "", "text/csv"],
    ["orders.csv", "application/vnd.ms-excel", "text/csv"],
    ["notes.md", "", "text/markdown"],
    ["NOTES.MD", "text/x-markdown", "text/markdown"],
    ["config.json", "", "application/json"],
    ["readme.txt", "", "text/plain"],
    ["chart.png", "image/png", "image/png"],
    ["report.pdf", "application/pdf", "application/pdf"],
    ["data.csv", "text/csv; charset=utf-8", "text/csv"],
  ])("%s reported as %j is declared %s", (name, reported, expected) => {
    expect(declaredType(name, reported)).toBe(expected);
  });

  it("keeps what the browser says when the extension does not know better", () => {
    // a PNG named .csv is the browser's word against the name: the server checks the bytes
    expect(declaredType("orders.csv", "image/png")).toBe("image/png");
    expect(declaredType("page.html", "text/html")).toBe("text/html");
    expect(declaredType("tool.exe", "")).toBe("");
  });
});

describe("uploadForm", () => {
  it("sends every field of the grant in its order, then the file last", () => {
    const form = uploadForm(GRANT, new Blob(["a,b\n"]), "orders.csv");
    expect([...form.keys()]).toEqual(["key", "Content-Type", "policy", "x-amz-signature", "file"]);
    expect(form.get("key")).toBe("uploads/abc/f1");
    expect((form.get("file") as File).name).toBe("orders.csv");
  });
});

describe("progressFraction", () => {
  it("is the share sent, within 0..1, and 0 while the total is unknown", () => {
    expect(progressFraction(50, 200)).toBe(0.25);
    expect(progressFraction(300, 200)).toBe(1);
    expect(progressFraction(10, 0)).toBe(0);
  });
});

describe("uploadFile", () => {
  const file = new File(["a,b\n1,2\n"], "orders.csv", { type: "text/csv" });

  it("posts the form to the grant's URL, reports progress and resolves on S3's 204", async () => {
    const { xhr, factory } = fake();
    const seen: number[] = [];
    const done = uploadFile(GRANT, file, (fraction) => seen.push(fraction), { xhr: factory });
    expect(xhr.method).toBe("POST");
    expect(xhr.url).toBe(GRANT.url);
    expect(xhr.withCredentials).toBe(false);
    expect([...(xhr.sent as FormData).keys()].at(-1)).toBe("file");
    xhr.progress(4, 8);
    xhr.answer(204);
    await expect(done).resolves.toBeUndefined();
    expect(seen).toEqual([0.5, 1]);
  });

  it.each([200, 201])("takes %i as success too", async (status) => {
    const { xhr, factory } = fake();
    const done = uploadFile(GRANT, file, () => undefined, { xhr: factory });
    xhr.answer(status);
    await expect(done).resolves.toBeUndefined();
  });

  it("turns S3's 403 into the user's words", async () => {
    const { xhr, factory } = fake();
    const done = uploadFile(GRANT, file, () => undefined, { xhr: factory });
    xhr.answer(
      403,
      "<Error><Code>AccessDenied</Code><Message>Invalid according to Policy</Message></Error>",
    );
    const error = (await done.catch((e: unknown) => e)) as UploadError;
    expect(error).toBeInstanceOf(UploadError);
    expect(error.status).toBe(403);
    expect(error.code).toBe("AccessDenied");
    expect(error.message).toContain("Хранилище не приняло файл");
  });

  it("names a file larger than declared", async () => {
    const { xhr, factory } = fake();
    const done = uploadFile(GRANT, file, () => undefined, { xhr: factory });
    xhr.answer(400, "<Error><Code>EntityTooLarge</Code></Error>");
    await expect(done).rejects.toThrow("Файл больше, чем было заявлено");
  });

  it("says when the bucket cannot be reached", async () => {
    const { xhr, factory } = fake();
    const done = uploadFile(GRANT, file, () => undefined, { xhr: factory });
    xhr.onerror?.();
    await expect(done).rejects.toMatchObject({ name: "UploadError", status: 0 });
  });

  it("aborts the request when the signal aborts", async () => {
    const { xhr, factory } = fake();
    const controller = new AbortController();
    const done = uploadFile(GRANT, file, () => undefined, {
      xhr: factory,
      signal: controller.signal,
    });
    controller.abort();
    await expect(done).rejects.toMatchObject({ name: "AbortError" });
    expect(xhr.aborted).toBe(true);
  });
});
