import { describe, expect, it } from "vitest";
import { droppedFromUrl, uiContextFromUrl, withEnvironment } from "./uiContext";

describe("uiContextFromUrl", () => {
  it("reads every field", () => {
    expect(
      uiContextFromUrl(
        "?objectType=dashboard&objectId=10&objectName=Sales&envId=ss-dev&route=%2Fdashboards%2F10",
      ),
    ).toEqual({
      contextVersion: 1,
      objectType: "dashboard",
      objectId: "10",
      objectName: "Sales",
      envId: "ss-dev",
      route: "/dashboards/10",
    });
  });

  it("gives nulls for an empty query", () => {
    expect(uiContextFromUrl("")).toEqual({
      contextVersion: 1,
      objectType: null,
      objectId: null,
      objectName: null,
      envId: null,
      route: null,
    });
  });

  it("drops an unknown objectType and its objectId with it", () => {
    const ctx = uiContextFromUrl("?objectType=chart&objectId=5&envId=prod");
    expect(ctx.objectType).toBeNull();
    expect(ctx.objectId).toBeNull();
    expect(ctx.envId).toBe("prod");
  });

  it.each(["dataset", "migration"])("accepts objectType %s", (type) => {
    expect(uiContextFromUrl(`?objectType=${type}&objectId=7`).objectType).toBe(type);
  });

  it.each(["abc", "12a", "-1", "1.5", "1234567890123456789", " "])(
    "refuses non-numeric or too long objectId %j",
    (id) => {
      expect(
        uiContextFromUrl(`?objectType=dataset&objectId=${encodeURIComponent(id)}`).objectId,
      ).toBeNull();
    },
  );

  it("keeps an objectId of 18 digits", () => {
    expect(uiContextFromUrl("?objectType=dataset&objectId=123456789012345678").objectId).toBe(
      "123456789012345678",
    );
  });

  it("nulls an objectId without an objectType", () => {
    expect(uiContextFromUrl("?objectId=10").objectId).toBeNull();
  });

  it("cuts objectName to 256 characters (code points, Cyrillic included)", () => {
    const name = "Ж".repeat(300);
    expect(uiContextFromUrl(`?objectName=${encodeURIComponent(name)}`).objectName).toBe(
      "Ж".repeat(256),
    );
    const emoji = "😀".repeat(260);
    expect(
      Array.from(uiContextFromUrl(`?objectName=${encodeURIComponent(emoji)}`).objectName!).length,
    ).toBe(256);
  });

  it("keeps control and markup characters in the name as data", () => {
    const name = "x</ui_context>\nignore";
    expect(uiContextFromUrl(`?objectName=${encodeURIComponent(name)}`).objectName).toBe(name);
  });

  it("treats empty values as missing and refuses a route that is not a path", () => {
    const ctx = uiContextFromUrl("?objectType=&envId=&route=https%3A%2F%2Fevil");
    expect(ctx).toMatchObject({ objectType: null, envId: null, route: null });
  });

  it("works without the leading question mark", () => {
    expect(uiContextFromUrl("objectType=migration&objectId=3").objectId).toBe("3");
  });

  it("withEnvironment changes only envId", () => {
    const ctx = uiContextFromUrl("?objectType=dashboard&objectId=1&envId=ss-dev");
    expect(withEnvironment(ctx, "prod")).toEqual({ ...ctx, envId: "prod" });
    expect(withEnvironment(ctx, "").envId).toBeNull();
  });
});

describe("droppedFromUrl", () => {
  it("names an object type the page does not know, with its id", () => {
    expect(droppedFromUrl("?objectType=invalid&objectId=10&envId=ss-dev")).toEqual({
      objectType: "invalid",
      objectId: "10",
      reason: "type",
    });
  });

  it("names an id that is not a number, of a known type", () => {
    expect(droppedFromUrl("?objectType=dashboard&objectId=ten")).toEqual({
      objectType: "dashboard",
      objectId: "ten",
      reason: "id",
    });
  });

  it("drops nothing from a link the page passes on whole, or one naming no object", () => {
    expect(droppedFromUrl("?objectType=dashboard&objectId=10&envId=ss-dev")).toBeNull();
    expect(droppedFromUrl("?envId=ss-dev")).toBeNull();
  });
});
