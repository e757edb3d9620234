/** What the page says about files before asking for an upload: sizes, limits, refusals, names. */
import { ChatHttpError, isAbort, isNetworkFailure } from "../lib/errors";
import { declaredType, UploadError } from "../lib/uploads";
import { DEFAULT_FILE_LIMITS, type FileLimits } from "./limits";

/** A size as the user reads it: «512 Б», «12 КБ», «1.5 МБ» (the backend's own wording). */
export function formatSize(size: number): string {
  if (size >= 1024 * 1024) {
    const value = size / (1024 * 1024);
    return `${value.toFixed(1).replace(/\.0$/, "")} МБ`;
  }
  if (size >= 1024) return `${Math.round(size / 1024)} КБ`;
  return `${size} Б`;
}

/** The file types a person may attach, in their words. */
export const ALLOWED_KINDS = "текст, CSV, JSON, SQL, Markdown, PNG, JPEG, PDF";

/** What the page says when the deployment takes no files (`ATTACHMENT_MAX_FILES` 0). */
export const ATTACHMENTS_OFF = "Файлы к сообщениям здесь не прикладываются.";

/** Controls, format characters (a right-to-left override) and line breaks: spaces in a name. */
// Controls, format characters and line breaks, but the joiners (ZWNJ, ZWJ), which move no text
const INVISIBLE = /(?![\u200c\u200d])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;

/** A name as the server keeps it and counts its characters (`checked_name` in
 * `sstools_agent/domain/attachments.py`; `attachment-names.cases.json` holds the two equal):
 * composed (NFC), invisible characters as spaces, no path, runs of spaces as one. */
export function shownName(name: string): string {
  const visible = name.normalize("NFC").replace(INVISIBLE, " ").replace(/[/\\]/g, "_");
  return visible
    .split(/\p{Zs}+/u)
    .filter((word) => word !== "")
    .join(" ");
}

/** The one file's refusal in the user's words, or null when it may be uploaded. */
export function fileRefusal(
  name: string,
  size: number,
  contentType: string,
  limits: FileLimits = DEFAULT_FILE_LIMITS,
): string | null {
  // Characters as the server counts them: code points, so an emoji is one, not two
  const chars = [...shownName(name)];
  if (chars.length === 0) return "У файла нет имени.";
  if (chars.length > limits.maxNameChars) {
    // Its start and its end (the extension tells several long exports apart)
    const shown = `${chars.slice(0, 24).join("")}…${chars.slice(-16).join("")}`;
    return `Имя файла «${shown}» длиннее ${limits.maxNameChars} символов (в нём ${chars.length}): сократите его.`;
  }
  if (!limits.contentTypes.includes(contentType)) {
    return `Файлы этого типа нельзя приложить: «${name}»${contentType ? ` (${contentType})` : ""}. Можно: ${ALLOWED_KINDS}.`;
  }
  if (size <= 0) return `Файл «${name}» пуст.`;
  if (size > limits.maxBytes) {
    return `Файл «${name}» больше ${formatSize(limits.maxBytes)}: его размер ${formatSize(size)}.`;
  }
  return null;
}

export interface Candidate {
  file: File;
  name: string;
  contentType: string;
}

/** Which of `files` may join the `present` ones (at most `limits.maxFiles` a message), and why
 * the others may not. */
export function admit(
  files: readonly File[],
  present: number,
  limits: FileLimits = DEFAULT_FILE_LIMITS,
): { admitted: Candidate[]; refusals: string[] } {
  if (limits.maxFiles === 0)
    return { admitted: [], refusals: files.length ? [ATTACHMENTS_OFF] : [] };
  const admitted: Candidate[] = [];
  const refusals: string[] = [];
  const over: string[] = [];
  for (const file of files) {
    const contentType = declaredType(file.name, file.type);
    const refusal = fileRefusal(file.name, file.size, contentType, limits);
    if (refusal) refusals.push(refusal);
    else if (present + admitted.length >= limits.maxFiles) over.push(file.name);
    else admitted.push({ file, name: file.name, contentType });
  }
  if (over.length > 0) {
    const names = over.map((name) => `«${name}»`).join(", ");
    refusals.push(
      `Можно приложить не больше ${limits.maxFiles} файлов к сообщению: ${names} не ${over.length === 1 ? "приложен" : "приложены"}.`,
    );
  }
  return { admitted, refusals };
}

function pad(value: number): string {
  return String(value).padStart(2, "0");
}

/** A pasted file's name: a clipboard image (which browsers call `image.png`, or nothing) is
 * named by the time it was pasted, `screenshot-20261202-140500.png`; other files keep theirs. */
export function pastedName(file: { name: string; type: string }, now: Date): string {
  const generic = file.name === "" || /^image\.(png|jpe?g)$/i.test(file.name);
  if (!generic || !file.type.startsWith("image/")) return file.name;
  const extension = file.type === "image/jpeg" ? "jpg" : file.type.slice("image/".length);
  const stamp =
    `${now.getFullYear()}${pad(now.getMonth() + 1)}${pad(now.getDate())}-` +
    `${pad(now.getHours())}${pad(now.getMinutes())}${pad(now.getSeconds())}`;
  return `screenshot-${stamp}.${extension}`;
}

/** The file as it was pasted, under its name (`pastedName`). */
export function renamedPaste(file: File, now: Date): File {
  const name = pastedName(file, now);
  return name === file.name ? file : new File([file], name, { type: file.type });
}

/** Why an upload failed, in the user's words (a server refusal says its own detail). */
export function uploadErrorText(error: unknown): string {
  if (error instanceof ChatHttpError) return error.detail;
  if (error instanceof UploadError) return error.message;
  if (isNetworkFailure(error)) return "Не удалось связаться с сервером. Проверьте сеть.";
  if (isAbort(error)) return "Загрузка прервана.";
  return error instanceof Error ? error.message : String(error);
}

/** Opens a download link (the bucket serves it as an attachment, so the page stays); a link
 * that is not http(s) is never followed. */
export function openDownload(url: string, name: string, doc: Document = document): void {
  const protocol = new URL(url, doc.baseURI).protocol;
  if (protocol !== "https:" && protocol !== "http:") {
    throw new Error(`not a download link: ${protocol}`);
  }
  const anchor = doc.createElement("a");
  anchor.href = url;
  anchor.download = name;
  anchor.rel = "noopener";
  anchor.hidden = true;
  doc.body.appendChild(anchor);
  anchor.click();
  anchor.remove();
}
