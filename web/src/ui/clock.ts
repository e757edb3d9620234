/**
 * The server's clock, as the page estimates it: a card's `expires_at` is the server's time, and a
 * device clock minutes off would show a waiting card as expired (or an expired one as waiting).
 * Each chat response's `Date` header moves the estimate (to within its one-second resolution).
 */
let offsetMs = 0;

/** Takes note of the server's time as a response's `Date` header gives it. */
export function noteServerDate(date: string | null, receivedAt = Date.now()): void {
  const server = date ? Date.parse(date) : NaN;
  if (!Number.isNaN(server)) offsetMs = server - receivedAt;
}

/** Now, on the server's clock. */
export function serverNow(): number {
  return Date.now() + offsetMs;
}
