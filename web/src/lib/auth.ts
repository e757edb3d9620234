/** The sign-in hook: where the page gets the user's JWT. */

export const TOKEN_STORAGE_KEY = "ss-tools.auth.token";

export type TokenSource = () => string | null | undefined | Promise<string | null | undefined>;

interface SsToolsHost {
  getToken?: TokenSource;
}

declare global {
  interface Window {
    ssTools?: SsToolsHost;
    __agentPage?: { ready: boolean; streamsEnded: number };
  }
}

function storage(): Storage | null {
  try {
    return typeof localStorage === "undefined" ? null : localStorage;
  } catch {
    return null;
  }
}

/**
 * The host application's `window.ssTools.getToken()` when it provides one, else the token
 * stored under `localStorage["ss-tools.auth.token"]`.
 */
export async function getToken(): Promise<string | null> {
  const host = typeof window === "undefined" ? undefined : window.ssTools;
  if (host && typeof host.getToken === "function") {
    const token = await host.getToken();
    return token || null;
  }
  return storage()?.getItem(TOKEN_STORAGE_KEY) || null;
}

export function storeToken(token: string): void {
  storage()?.setItem(TOKEN_STORAGE_KEY, token);
}

export function clearToken(): void {
  storage()?.removeItem(TOKEN_STORAGE_KEY);
}

export function hasStoredToken(): boolean {
  return Boolean(storage()?.getItem(TOKEN_STORAGE_KEY));
}
