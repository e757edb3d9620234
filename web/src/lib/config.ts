/** The page's configuration: `config.json` under the page's base path (`/agent/config.json`), optional. */

export interface PageConfig {
  /** Where a 401 sends the person (default "/login"). */
  loginUrl: string;
  /** How many times a lost connection is retried (default 5). */
  reconnectAttempts: number;
  /** The pause between those attempts (default 5000 ms). */
  reconnectDelayMs: number;
  /** A stream silent this long (no event, no heartbeat) is treated as broken (default 90 s). */
  stallTimeoutMs: number;
  /** The API's origin; "" is the page's own (the deployed layout). */
  apiOrigin: string;
}

export const DEFAULT_CONFIG: PageConfig = {
  loginUrl: "/login",
  reconnectAttempts: 5,
  reconnectDelayMs: 5000,
  stallTimeoutMs: 90_000,
  apiOrigin: "",
};

function pick<K extends keyof PageConfig>(
  raw: Record<string, unknown>,
  key: K,
  valid: (value: unknown) => boolean,
): PageConfig[K] {
  const value = raw[key];
  return (valid(value) ? value : DEFAULT_CONFIG[key]) as PageConfig[K];
}

/** Whether a parsed JSON value is a whole number ≥ 0 (a count, a size, milliseconds). */
export const nonNegativeInt = (value: unknown): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= 0;

/** Merges a parsed config.json over the defaults, ignoring fields of the wrong type. */
export function normaliseConfig(raw: unknown): PageConfig {
  if (typeof raw !== "object" || raw === null) return { ...DEFAULT_CONFIG };
  const record = raw as Record<string, unknown>;
  return {
    loginUrl: pick(record, "loginUrl", (v) => typeof v === "string" && v !== ""),
    reconnectAttempts: pick(record, "reconnectAttempts", nonNegativeInt),
    reconnectDelayMs: pick(record, "reconnectDelayMs", nonNegativeInt),
    stallTimeoutMs: pick(record, "stallTimeoutMs", (v) => nonNegativeInt(v) && (v as number) > 0),
    apiOrigin: pick(record, "apiOrigin", (v) => typeof v === "string"),
  };
}

/** Fetches `config.json` (the page passes `/agent/config.json`, its base path's, so `/agent` and
 * `/agent/` read the same file); a missing or broken one gives the defaults. */
export async function loadConfig(
  url: string,
  fetchImpl: typeof fetch = (...args) => fetch(...args),
): Promise<PageConfig> {
  try {
    const response = await fetchImpl(url, { cache: "no-cache", credentials: "same-origin" });
    if (!response.ok) return { ...DEFAULT_CONFIG };
    return normaliseConfig(await response.json());
  } catch {
    return { ...DEFAULT_CONFIG };
  }
}

/** Where a 401 sends the person: the login page, told to come back to this page (`next`) with its
 * context and conversation, unless the configured URL already says where to go. */
export function loginUrlFor(loginUrl: string, here: string): string {
  const url = new URL(loginUrl, here);
  if (!url.searchParams.has("next")) url.searchParams.set("next", here);
  return url.origin === new URL(here).origin
    ? url.pathname + url.search + url.hash
    : url.toString();
}
