import { describe, expect, it } from "vitest";
import { plainText, renderMarkdown } from "./markdown";

describe("renderMarkdown", () => {
  it("renders markdown", () => {
    expect(renderMarkdown("**жирный** и `код`")).toContain("<strong>жирный</strong>");
  });

  it("shows raw HTML from the model as text", () => {
    const html = renderMarkdown('<img src=x onerror=alert(1)> и <script>alert("x")</script>');
    expect(html).not.toMatch(/<img|<script/i);
    expect(html).toContain("&lt;img src=x onerror=alert(1)&gt;");
    expect(html).toContain("&lt;script&gt;");
    const div = document.createElement("div");
    div.innerHTML = html;
    expect(div.querySelector("img, script")).toBeNull();
    expect(div.textContent).toContain("<img src=x onerror=alert(1)>");
  });

  it("refuses javascript:, data: and vbscript: links", () => {
    for (const url of [
      "javascript:alert(1)",
      "JaVaScRiPt:alert(1)",
      "data:text/html,x",
      "vbscript:x",
    ]) {
      const div = document.createElement("div");
      div.innerHTML = renderMarkdown(`[клик](${url})`);
      expect(div.querySelector("a")).toBeNull();
    }
    const entity = document.createElement("div");
    entity.innerHTML = renderMarkdown("[x](javascript&#58;alert(1))");
    expect(entity.querySelector("a")).toBeNull();
  });

  it("keeps http(s) and relative links, opened safely", () => {
    const div = document.createElement("div");
    div.innerHTML = renderMarkdown("[a](https://example.org) [b](/dashboards/10)");
    const links = div.querySelectorAll("a");
    expect(links).toHaveLength(2);
    expect(links[0].getAttribute("rel")).toContain("noopener");
  });

  it("does not load images from model text", () => {
    const div = document.createElement("div");
    div.innerHTML = renderMarkdown("![пиксель](https://tracker.example/p.gif)");
    expect(div.querySelector("img")).toBeNull();
    expect(div.textContent).toContain("[пиксель]");
  });
});

describe("plainText", () => {
  it("keeps the words and drops the marks, one line a block", () => {
    expect(plainText("**Статус**: `ok`\n\n- первый\n- второй\n\n[ссылка](https://x.ru)")).toBe(
      "Статус: ok\nпервый\nвторой\nссылка",
    );
  });
});

describe("renderMarkdown: headings", () => {
  it("starts a heading in model text at h4, under the page's own", () => {
    expect(renderMarkdown("# Итог\n\n## Детали")).toBe("<h4>Итог</h4>\n<h5>Детали</h5>\n");
  });
});
