import { describe, expect, it } from "vitest";
import { ChatHttpError } from "../lib/errors";
import { UploadError } from "../lib/uploads";
import { AttachmentTray, type Uploader } from "./attachmentTray.svelte";

interface Pending {
  name: string;
  progress: (fraction: number) => void;
  signal: AbortSignal;
  resolve: (fileId: string) => void;
  reject: (error: unknown) => void;
}

/** An uploader the test drives: each upload waits until the test settles it. */
function drivenTray(): { tray: AttachmentTray; pending: Pending[] } {
  const pending: Pending[] = [];
  const uploader: Uploader = (file, progress, signal) =>
    new Promise<string>((resolve, reject) =>
      pending.push({ name: file.name, progress, signal, resolve, reject }),
    );
  return { tray: new AttachmentTray(uploader), pending };
}

const csv = (name: string) => new File(["a,b\n1,2\n"], name, { type: "text/csv" });
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("AttachmentTray", () => {
  it("shows a chip's progress while it uploads, then done with its file id", async () => {
    const { tray, pending } = drivenTray();
    tray.add([csv("orders.csv")]);
    const [chip] = tray.chips;
    expect(chip).toMatchObject({ name: "orders.csv", state: "uploading", progress: 0 });
    expect(tray.uploading).toBe(true);
    pending[0].progress(0.4);
    expect(tray.chips[0].progress).toBe(0.4);
    pending[0].resolve("f1");
    await settle();
    expect(tray.chips[0]).toMatchObject({ state: "done", progress: 1, fileId: "f1" });
    expect(tray.uploading).toBe(false);
    expect(tray.attached).toEqual([
      { file_id: "f1", name: "orders.csv", content_type: "text/csv", size: 8 },
    ]);
  });

  it("says why an upload failed, in the server's or the bucket's words", async () => {
    const { tray, pending } = drivenTray();
    tray.add([csv("a.csv"), csv("b.csv")]);
    pending[0].reject(new ChatHttpError(422, "INVALID_ATTACHMENT", "Файл «a.csv» пуст."));
    pending[1].reject(new UploadError("Хранилище не приняло файл.", 403));
    await settle();
    expect(tray.chips.map((chip) => [chip.state, chip.error])).toEqual([
      ["error", "Файл «a.csv» пуст."],
      ["error", "Хранилище не приняло файл."],
    ]);
    expect(tray.failed).toBe(true);
    expect(tray.attached).toEqual([]);
  });

  it("aborts an upload in flight when its chip is removed", async () => {
    const { tray, pending } = drivenTray();
    tray.add([csv("a.csv")]);
    tray.remove(tray.chips[0].key);
    expect(pending[0].signal.aborted).toBe(true);
    pending[0].reject(new DOMException("aborted", "AbortError"));
    await settle();
    expect(tray.chips).toEqual([]);
  });

  it("refuses the sixth file and lets a failed chip's place be taken", async () => {
    const { tray, pending } = drivenTray();
    tray.add(["1", "2", "3", "4", "5", "6"].map((n) => csv(`${n}.csv`)));
    expect(tray.chips).toHaveLength(5);
    expect(tray.refusals).toHaveLength(1);
    pending[0].reject(new UploadError("нет", 403));
    await settle();
    tray.add([csv("7.csv")]);
    expect(tray.refusals).toEqual([]);
    expect(tray.chips.map((chip) => chip.name)).toContain("7.csv");
  });

  it("lets the chips of an accepted message go, and keeps the others", async () => {
    const { tray, pending } = drivenTray();
    tray.add([csv("a.csv"), csv("b.csv")]);
    pending[0].resolve("f1");
    await settle();
    tray.release(["f1"]);
    expect(tray.chips.map((chip) => chip.name)).toEqual(["b.csv"]);
  });
});
