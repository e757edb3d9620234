import { afterEach, describe, expect, it } from "vitest";
import { noteServerDate, serverNow } from "./clock";

describe("the server's clock", () => {
  afterEach(() => noteServerDate(new Date().toUTCString()));

  it("follows the Date header, so a device clock six minutes fast does not expire cards", () => {
    const deviceNow = Date.now();
    const serverTime = deviceNow - 6 * 60_000; // the device is 6 minutes ahead
    noteServerDate(new Date(serverTime).toUTCString(), deviceNow);
    expect(Math.abs(serverNow() - serverTime)).toBeLessThan(1_500);
  });

  it("ignores a missing or broken header", () => {
    noteServerDate(new Date().toUTCString());
    const before = serverNow() - Date.now();
    noteServerDate(null);
    noteServerDate("not a date");
    expect(Math.abs(serverNow() - Date.now() - before)).toBeLessThan(50);
  });
});
