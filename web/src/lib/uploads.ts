/**
 * A file's bytes go straight to the attachment bucket with the presigned POST the REST API grants
 * (`RestClient.requestUpload`, docs/attachments.md): never through the API itself. The POST is
 * sent with XMLHttpRequest, whose `upload.onprogress` reports the bytes sent (fetch does not).
 */
import type { PresignedPost } from "./rest";

/** The type a browser reports when it does not know (or names an allowed type otherwise). */
const GENERIC_TYPES = new Set(["", "application/octet-stream"]);

/** What a file's extension says it is, and other names browsers give that type. */
const BY_EXTENSION: Record<string, { type: string; aliases: string[] }> = {
  sql: { type: "application/sql", aliases: ["text/x-sql", "application/x-sql", "text/plain"] },
  csv: {
    type: "text/csv",
    aliases: ["application/vnd.ms-excel", "text/x-csv", "application/csv", "text/plain"],
  },
  md: { type: "text/markdown", aliases: ["text/x-markdown", "text/plain"] },
  markdown: { type: "text/markdown", aliases: ["text/x-markdown", "text/plain"] },
  json: { type: "application/json", aliases: ["text/json", "text/plain"] },
  txt: { type: "text/plain", aliases: [] },
  log: { type: "text/plain", aliases: [] },
  png: { type: "image/png", aliases: [] },
  jpg: { type: "image/jpeg", aliases: ["image/pjpeg"] },
  jpeg: { type: "image/jpeg", aliases: ["image/pjpeg"] },
  pdf: { type: "application/pdf", aliases: [] },
};

function extensionOf(name: string): string {
  const dot = name.lastIndexOf(".");
  return dot > 0 ? name.slice(dot + 1).toLowerCase() : "";
}

/**
 * The content type the page declares for a file: the browser's (`File.type`), except that a
 * known extension decides when the browser's is empty, generic or another name of the same kind
 * (`.sql` comes as `text/x-sql` or nothing, `.csv` as `application/vnd.ms-excel` on Windows).
 */
export function declaredType(name: string, browserType: string): string {
  const reported = browserType.split(";", 1)[0].trim().toLowerCase();
  const known = BY_EXTENSION[extensionOf(name)];
  if (known && (GENERIC_TYPES.has(reported) || known.aliases.includes(reported))) {
    return known.type;
  }
  return reported;
}

/** The bucket's form: every field of the grant, in its order, then the file, last (S3 ignores
 * fields after the file, so a policy field placed after it would be missing). */
export function uploadForm(upload: PresignedPost, file: Blob, name: string): FormData {
  const form = new FormData();
  for (const [field, value] of Object.entries(upload.fields)) form.append(field, value);
  form.append("file", file, name);
  return form;
}

/** The share of the bytes sent, 0..1 (0 while the total is unknown). */
export function progressFraction(loaded: number, total: number): number {
  if (!(total > 0)) return 0;
  return Math.min(1, Math.max(0, loaded / total));
}

/** The bucket refused the upload (or could not be reached): `message` is in the user's words. */
export class UploadError extends Error {
  constructor(
    message: string,
    /** The bucket's HTTP status; 0 when it was not reached. */
    readonly status: number,
    /** S3's error code (`AccessDenied`, `EntityTooLarge`), when its answer named one. */
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = "UploadError";
  }
}

/** S3's error codes that a person can act on, in their words. */
const S3_REFUSALS: Record<string, string> = {
  EntityTooLarge: "Файл больше, чем было заявлено: приложите его снова.",
  EntityTooSmall: "Файл меньше, чем было заявлено (или пуст): приложите его снова.",
  ExpiredToken: "Разрешение на загрузку истекло: приложите файл снова.",
  RequestTimeTooSkewed: "Часы устройства сильно расходятся с сервером: загрузка отклонена.",
};

/** S3's `<Code>` of an XML error body, if any. */
export function s3ErrorCode(body: string): string | null {
  const match = /<Code>([A-Za-z]+)<\/Code>/.exec(body);
  return match ? match[1] : null;
}

/** What the bucket's refusal means for the person who attached the file. */
export function uploadRefusal(status: number, body: string): UploadError {
  const code = s3ErrorCode(body);
  if (code && S3_REFUSALS[code]) return new UploadError(S3_REFUSALS[code], status, code);
  if (/policy expired/i.test(body)) {
    return new UploadError("Разрешение на загрузку истекло: приложите файл снова.", status, code);
  }
  if (status === 403 || status === 400) {
    return new UploadError(
      "Хранилище не приняло файл: он не совпадает с тем, что было заявлено (размер или тип), " +
        "или разрешение на загрузку истекло. Приложите файл снова.",
      status,
      code,
    );
  }
  return new UploadError(
    `Хранилище не приняло файл (HTTP ${status}). Попробуйте ещё раз.`,
    status,
    code,
  );
}

export interface UploadOptions {
  /** Aborts the upload in flight (the promise rejects with an `AbortError`). */
  signal?: AbortSignal;
  /** A request object (tests pass a fake). */
  xhr?: () => XMLHttpRequest;
}

function abortError(): DOMException {
  return new DOMException("the upload was aborted", "AbortError");
}

/**
 * POSTs `file` to the grant's bucket URL as `multipart/form-data`; `onProgress` is told the share
 * sent (0..1) as it goes. Resolves on S3's 204 (or 200/201); rejects with an `UploadError` in the
 * user's words for a refusal or no connection, or an `AbortError` when `signal` aborts it.
 */
export function uploadFile(
  upload: PresignedPost,
  file: File | Blob,
  onProgress: (fraction: number) => void,
  options: UploadOptions = {},
): Promise<void> {
  const { signal } = options;
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(abortError());
    const request = options.xhr ? options.xhr() : new XMLHttpRequest();
    const onAbort = () => request.abort();
    const settle = (outcome: () => void) => {
      signal?.removeEventListener("abort", onAbort);
      outcome();
    };
    request.open("POST", upload.url);
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(progressFraction(event.loaded, event.total));
    };
    request.onload = () => {
      const status = request.status;
      if (status === 200 || status === 201 || status === 204) {
        onProgress(1);
        settle(resolve);
      } else {
        settle(() => reject(uploadRefusal(status, String(request.responseText ?? ""))));
      }
    };
    request.onerror = () =>
      settle(() =>
        reject(
          new UploadError(
            "Не удалось связаться с хранилищем файлов. Проверьте сеть и приложите файл снова.",
            0,
          ),
        ),
      );
    request.onabort = () => settle(() => reject(abortError()));
    signal?.addEventListener("abort", onAbort, { once: true });
    const name = file instanceof File ? file.name : "file";
    // No credentials and no token: the presigned policy is the whole authorisation.
    request.withCredentials = false;
    request.send(uploadForm(upload, file, name));
  });
}
