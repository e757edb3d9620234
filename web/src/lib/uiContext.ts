/** The page context the agent is told (policy.md, "UI context"), read from the page's URL. */

export const OBJECT_TYPES = ["dashboard", "dataset", "migration"] as const;
export type ObjectType = (typeof OBJECT_TYPES)[number];

export interface UIContext {
  contextVersion: 1;
  objectType: ObjectType | null;
  objectId: string | null;
  objectName: string | null;
  envId: string | null;
  route: string | null;
}

export const OBJECT_NAME_MAX = 256;
const OBJECT_ID = /^[0-9]{1,18}$/;
const ROUTE_MAX = 512;

function clean(value: string | null): string | null {
  if (value === null) return null;
  const trimmed = value.trim();
  return trimmed === "" ? null : trimmed;
}

/**
 * `?objectType=dashboard&objectId=10&objectName=…&envId=ss-dev&route=/dashboards/10` as a
 * UIContext: an unknown objectType becomes null (and its objectId with it), a non-numeric
 * objectId null, objectName is cut to 256 characters, anything missing is null.
 */
export function uiContextFromUrl(search: string): UIContext {
  const params = new URLSearchParams(search.startsWith("?") ? search.slice(1) : search);
  const rawType = clean(params.get("objectType"));
  const objectType = OBJECT_TYPES.includes(rawType as ObjectType) ? (rawType as ObjectType) : null;
  const rawId = clean(params.get("objectId"));
  const objectId = objectType !== null && rawId !== null && OBJECT_ID.test(rawId) ? rawId : null;
  const rawName = clean(params.get("objectName"));
  const objectName =
    rawName === null ? null : Array.from(rawName).slice(0, OBJECT_NAME_MAX).join("");
  const envId = clean(params.get("envId"));
  const rawRoute = clean(params.get("route"));
  const route =
    rawRoute !== null && rawRoute.startsWith("/") && rawRoute.length <= ROUTE_MAX ? rawRoute : null;
  return { contextVersion: 1, objectType, objectId, objectName, envId, route };
}

/** What a link named that the page could not pass on: an object type it does not know (the
 * object is dropped, its id with it), or an id that is not a number. */
export interface DroppedObject {
  objectType: string;
  objectId: string | null;
  /** `type`: no such kind of object; `id`: the kind is known, its id is not a number. */
  reason: "type" | "id";
}

/** What `uiContextFromUrl` dropped of the link's object, or null when it dropped nothing. */
export function droppedFromUrl(search: string): DroppedObject | null {
  const params = new URLSearchParams(search.startsWith("?") ? search.slice(1) : search);
  const rawType = clean(params.get("objectType"));
  const rawId = clean(params.get("objectId"));
  const cut = (value: string | null) =>
    value === null ? null : Array.from(value).slice(0, 40).join("");
  if (rawType === null) {
    return rawId === null ? null : { objectType: "", objectId: cut(rawId), reason: "type" };
  }
  if (!OBJECT_TYPES.includes(rawType as ObjectType)) {
    return { objectType: cut(rawType) ?? "", objectId: cut(rawId), reason: "type" };
  }
  if (rawId !== null && !OBJECT_ID.test(rawId)) {
    return { objectType: rawType, objectId: cut(rawId), reason: "id" };
  }
  return null;
}

/** The context with another environment (the page's selector). */
export function withEnvironment(context: UIContext, envId: string | null): UIContext {
  return { ...context, envId: envId || null };
}

/** True when the context names nothing at all (the banner's «общий режим»). */
export function isEmptyContext(context: UIContext | null): boolean {
  return (
    context === null ||
    (context.objectType === null && context.envId === null && context.route === null)
  );
}
