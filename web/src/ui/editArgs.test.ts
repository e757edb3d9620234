import { describe, expect, it } from "vitest";
import { argumentNamed, editableArgs, editedArgs, fieldError, fieldsFor } from "./editArgs";

const args = {
  target_env_id: "staging",
  limit: 20,
  ratio: 0.5,
  dry_run: false,
  dashboard_ids: [10, 11],
  options: { keep: true },
  note: null,
};

describe("the edit form's fields", () => {
  it("offers a field per key with the input its JSON type needs", () => {
    const fields = fieldsFor(args);
    expect(fields.map((f) => [f.key, f.kind])).toEqual([
      ["target_env_id", "string"],
      ["limit", "number"],
      ["ratio", "number"],
      ["dry_run", "boolean"],
      ["dashboard_ids", "ids"],
      ["options", "json"],
      ["note", "json"],
    ]);
    expect(fields[4].text).toBe("10, 11");
    expect(fields[6].text).toBe("null");
  });

  it("offers an environment argument as a choice, read back as its text", () => {
    const fields = fieldsFor(args, new Set(["target_env_id"]));
    expect([fields[0].kind, fields[0].text]).toEqual(["environment", "staging"]);
    fields[0].text = "prod";
    expect(editedArgs(fields)!.target_env_id).toBe("prod");
  });

  it("reads ids typed as a list of numbers, and names the problem otherwise", () => {
    const fields = fieldsFor({ dashboard_ids: [10] });
    fields[0].text = " 11,12; 13 ";
    expect(editedArgs(fields)).toEqual({ dashboard_ids: [11, 12, 13] });
    fields[0].text = "11, 11, 12";
    expect(editedArgs(fields)).toEqual({ dashboard_ids: [11, 12] });
    for (const text of ["", "11, x", "1.5", "-2"]) {
      fields[0].text = text;
      expect(fieldError(fields[0])).toBe("Введите номера через запятую, например 10, 11");
      expect(editedArgs(fields)).toBeNull();
    }
  });

  it("reads unchanged fields back as the same arguments, types and key order kept", () => {
    const edited = editedArgs(fieldsFor(args));
    expect(edited).toEqual(args);
    expect(Object.keys(edited!)).toEqual(Object.keys(args));
  });

  it("keeps a number a number and a boolean a boolean after editing", () => {
    const fields = fieldsFor(args);
    fields[1].text = "35";
    fields[2].text = "1e-3";
    fields[3].checked = true;
    fields[0].text = "42"; // a string field stays a string, whatever it looks like
    const edited = editedArgs(fields)!;
    expect(edited.limit).toBe(35);
    expect(edited.ratio).toBe(0.001);
    expect(edited.dry_run).toBe(true);
    expect(edited.target_env_id).toBe("42");
  });

  it("refuses a number field that holds no number", () => {
    for (const text of ["", "  ", "abc", "Infinity"]) {
      const fields = fieldsFor({ limit: 1 });
      fields[0].text = text;
      expect(fieldError(fields[0])).toBe("Введите число");
      expect(editedArgs(fields)).toBeNull();
    }
  });

  it("parses a JSON field, and names the problem while it is not JSON", () => {
    const fields = fieldsFor({ options: { keep: true } });
    fields[0].text = "[10, 12";
    expect(fieldError(fields[0])).toMatch(/^Некорректный JSON: /);
    expect(editedArgs(fields)).toBeNull();
    fields[0].text = '[10, 12, {"a": null}]';
    expect(fieldError(fields[0])).toBeNull();
    expect(editedArgs(fields)).toEqual({ options: [10, 12, { a: null }] });
  });

  it("offers editing only for an object with arguments", () => {
    expect(editableArgs({ a: 1 })).toEqual({ a: 1 });
    for (const input of [undefined, null, {}, [1], "x", 3]) expect(editableArgs(input)).toBeNull();
  });

  it("finds the argument a refusal names, not one whose name ends another's", () => {
    const keys = ["id", "dashboard_id", "env_id"];
    expect(argumentNamed("deploy: invalid arguments: dashboard_id: too small", keys)).toBe(
      "dashboard_id",
    );
    expect(argumentNamed("id: missing", keys)).toBe("id");
    expect(argumentNamed("Недостаточно прав: deploy_dashboard", keys)).toBeUndefined();
  });
});
