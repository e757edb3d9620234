/** The confirmation card's «Изменить» form, without the DOM: one field per argument, each kept
 * as the user typed it, read back into arguments of the same JSON types. */

/** The server refused an edit before anything was decided (422, 403): the card stays pending
 * and says why. */
export interface EditRefusal {
  refused: string;
}

/** string → text input (an environment argument → a select of the environments), number →
 * number input, boolean → checkbox, a list of whole numbers (ids) → «10, 11», anything else →
 * JSON. */
export type FieldKind = "string" | "environment" | "number" | "boolean" | "ids" | "json";

export interface EditField {
  key: string;
  kind: FieldKind;
  /** What the input holds (the text of a string, a number or a JSON value). */
  text: string;
  /** A checkbox's state. */
  checked: boolean;
}

/** The arguments the form edits: a JSON object with at least one key (else nothing to edit). */
export function editableArgs(input: unknown): Record<string, unknown> | null {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return null;
  return Object.keys(input).length > 0 ? (input as Record<string, unknown>) : null;
}

function kindOf(key: string, value: unknown, environments: ReadonlySet<string>): FieldKind {
  if (typeof value === "string") return environments.has(key) ? "environment" : "string";
  if (typeof value === "number") return "number";
  if (typeof value === "boolean") return "boolean";
  if (Array.isArray(value) && value.every((each) => Number.isInteger(each))) return "ids";
  return "json";
}

/** The form's fields for the card's arguments, in their order, holding their values
 * (`environments`: the arguments that name an environment). */
export function fieldsFor(
  args: Record<string, unknown>,
  environments: ReadonlySet<string> = new Set(),
): EditField[] {
  return Object.entries(args).map(([key, value]) => {
    const kind = kindOf(key, value, environments);
    let text = "";
    if (kind === "string" || kind === "environment") text = value as string;
    else if (kind === "number") text = String(value);
    else if (kind === "ids") text = (value as number[]).join(", ");
    else if (kind === "json") text = JSON.stringify(value ?? null, null, 2);
    return { key, kind, text, checked: value === true };
  });
}

type Read = { ok: true; value: unknown } | { ok: false; error: string };

function read(field: EditField): Read {
  switch (field.kind) {
    case "string":
    case "environment":
      return { ok: true, value: field.text };
    case "ids": {
      const parts = field.text.split(/[\s,;]+/).filter((part) => part !== "");
      if (parts.length === 0 || !parts.every((part) => /^\d+$/.test(part)))
        return { ok: false, error: "Введите номера через запятую, например 10, 11" };
      return { ok: true, value: distinct(parts.map(Number)) };
    }
    case "boolean":
      return { ok: true, value: field.checked };
    case "number": {
      const value = field.text.trim() === "" ? NaN : Number(field.text);
      return Number.isFinite(value) ? { ok: true, value } : { ok: false, error: "Введите число" };
    }
    case "json":
      try {
        return { ok: true, value: JSON.parse(field.text) as unknown };
      } catch (error) {
        const why = error instanceof Error ? error.message : String(error);
        return { ok: false, error: `Некорректный JSON: ${why}` };
      }
  }
}

/** The ids an `ids` field holds now, as chips show them (none while it does not read). */
export function idsOf(field: EditField): number[] {
  const result = read(field);
  return field.kind === "ids" && result.ok ? (result.value as number[]) : [];
}

/** «10, 10, 11» read once each, in the order typed. */
function distinct(ids: number[]): number[] {
  return [...new Set(ids)];
}

/** The field without one of its ids (a chip's «×»). */
export function withoutId(field: EditField, id: number): string {
  return idsOf(field)
    .filter((each) => each !== id)
    .join(", ");
}

/** Why the field's value cannot be sent, or null when it can. */
export function fieldError(field: EditField): string | null {
  const result = read(field);
  return result.ok ? null : result.error;
}

/** The edited arguments (every key, in order), or null while a field is invalid. */
export function editedArgs(fields: EditField[]): Record<string, unknown> | null {
  const args: Record<string, unknown> = {};
  for (const field of fields) {
    const result = read(field);
    if (!result.ok) return null;
    args[field.key] = result.value;
  }
  return args;
}

/** The argument a refusal names («deploy_dashboard: invalid arguments: env_id: …»), if any. */
export function argumentNamed(detail: string, keys: string[]): string | undefined {
  return keys.find((key) => {
    const at = detail.indexOf(`${key}:`);
    return at >= 0 && (at === 0 || !/\w/.test(detail[at - 1]));
  });
}
