/** The files attached to the message being written: one chip each, uploading, done or failed. */
import { isAbort } from "../lib/errors";
import type { AttachmentInfo } from "../lib/rest";
import { admit, uploadErrorText, type Candidate } from "./attachments";
import { DEFAULT_FILE_LIMITS, type FileLimits } from "./limits";

export type ChipState = "uploading" | "done" | "error";

export interface Chip {
  key: string;
  name: string;
  size: number;
  contentType: string;
  state: ChipState;
  /** The share uploaded, 0..1. */
  progress: number;
  /** The server's id, once the bytes are in the bucket. */
  fileId: string | null;
  error: string | null;
}

/** Uploads one file (asks for the grant, then posts the bytes); resolves with its file id. */
export type Uploader = (
  file: Candidate,
  onProgress: (fraction: number) => void,
  signal: AbortSignal,
) => Promise<string>;

let counter = 0;

export class AttachmentTray {
  chips = $state<Chip[]>([]);
  /** Files refused before any upload (too many, too large, a type not allowed). */
  refusals = $state<string[]>([]);
  /** The deployment's limits, once the page has read them (until then, the defaults). */
  limits = $state<FileLimits>(DEFAULT_FILE_LIMITS);
  private readonly uploads = new Map<string, AbortController>();

  constructor(private readonly uploader: Uploader) {}

  /** Whether this deployment takes files at all. */
  get enabled(): boolean {
    return this.limits.maxFiles > 0;
  }

  /** A file is on its way: the message waits for it. */
  get uploading(): boolean {
    return this.chips.some((chip) => chip.state === "uploading");
  }

  /** A file failed: the message is not sent without it until the person removes it. */
  get failed(): boolean {
    return this.chips.some((chip) => chip.state === "error");
  }

  /** The uploaded files, as the message records them. */
  get attached(): AttachmentInfo[] {
    return this.chips
      .filter((chip) => chip.state === "done" && chip.fileId !== null)
      .map((chip) => ({
        file_id: chip.fileId as string,
        name: chip.name,
        content_type: chip.contentType,
        size: chip.size,
      }));
  }

  /** Takes the files the person chose (the limits first), and starts their uploads. */
  add(files: readonly File[]): void {
    const present = this.chips.filter((chip) => chip.state !== "error").length;
    const { admitted, refusals } = admit(files, present, this.limits);
    this.refusals = refusals;
    for (const candidate of admitted) void this.upload(candidate);
  }

  private async upload(candidate: Candidate): Promise<void> {
    const key = `f-${++counter}`;
    this.chips.push({
      key,
      name: candidate.name,
      size: candidate.file.size,
      contentType: candidate.contentType,
      state: "uploading",
      progress: 0,
      fileId: null,
      error: null,
    });
    const controller = new AbortController();
    this.uploads.set(key, controller);
    const chip = () => this.chips.find((item) => item.key === key);
    try {
      const fileId = await this.uploader(
        candidate,
        (fraction) => {
          const item = chip();
          if (item && item.state === "uploading") item.progress = fraction;
        },
        controller.signal,
      );
      const item = chip();
      if (!item || controller.signal.aborted) return;
      item.state = "done";
      item.progress = 1;
      item.fileId = fileId;
    } catch (error) {
      const item = chip();
      if (!item || controller.signal.aborted || isAbort(error)) return;
      item.state = "error";
      item.error = uploadErrorText(error);
    } finally {
      this.uploads.delete(key);
    }
  }

  /** Takes a chip away, aborting its upload if it is still in flight. */
  remove(key: string): void {
    this.uploads.get(key)?.abort();
    this.uploads.delete(key);
    this.chips = this.chips.filter((chip) => chip.key !== key);
    this.refusals = [];
  }

  /** The message carrying these files was accepted: their chips go. */
  release(fileIds: readonly string[]): void {
    this.chips = this.chips.filter(
      (chip) => chip.fileId === null || !fileIds.includes(chip.fileId),
    );
    this.refusals = [];
  }

  /** Everything goes (another conversation), uploads in flight aborted. */
  clear(): void {
    for (const controller of this.uploads.values()) controller.abort();
    this.uploads.clear();
    this.chips = [];
    this.refusals = [];
  }
}
