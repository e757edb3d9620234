import { describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, loginUrlFor, normaliseConfig } from "./config";

describe("the page's configuration", () => {
  it("keeps the defaults for what config.json leaves out or gets wrong", () => {
    expect(normaliseConfig({ loginUrl: "/sso", reconnectAttempts: "5" })).toEqual({
      ...DEFAULT_CONFIG,
      loginUrl: "/sso",
    });
    expect(normaliseConfig(null)).toEqual(DEFAULT_CONFIG);
  });

  it("sends a signed-out user to the login page, told to come back here", () => {
    const here = "https://agent.example/agent?objectType=dashboard&objectId=10#c=c1";
    const target = new URL(loginUrlFor("/login", here), here);
    expect(target.pathname).toBe("/login");
    expect(target.searchParams.get("next")).toBe(here);
    expect(loginUrlFor("https://sso.example/in?next=/x", here)).toBe(
      "https://sso.example/in?next=/x",
    );
  });
});
