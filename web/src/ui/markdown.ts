/** Model text as safe HTML: markdown-it with raw HTML off and links limited to safe schemes. */
import MarkdownIt from "markdown-it";

const md = new MarkdownIt({ html: false, linkify: false, typographer: false, breaks: true });

md.validateLink = (url: string): boolean => {
  const trimmed = url.trim();
  // A link with a scheme must be http(s) or mailto; a relative one must stay on this origin.
  if (/^[a-z][a-z0-9+.-]*:/i.test(trimmed)) return /^(https?|mailto):/i.test(trimmed);
  return !trimmed.startsWith("//");
};

const defaultLinkOpen =
  md.renderer.rules.link_open ??
  ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  tokens[idx].attrSet("target", "_blank");
  tokens[idx].attrSet("rel", "noopener noreferrer nofollow");
  return defaultLinkOpen(tokens, idx, options, env, self);
};
// Images from model text could be used to call out (tracking pixels): shown as their alt text.
md.renderer.rules.image = (tokens, idx) => {
  const token = tokens[idx];
  const alt = token.content || token.attrGet("alt") || "";
  return md.utils.escapeHtml(alt ? `[${alt}]` : "");
};

// A heading in model text sits inside a message, under the page's own h1–h3: it starts at h4.
md.renderer.rules.heading_open = (tokens, idx, options, _env, self) => {
  const level = Math.min(6, Number(tokens[idx].tag.slice(1)) + 3);
  tokens[idx].tag = `h${level}`;
  return self.renderToken(tokens, idx, options);
};
md.renderer.rules.heading_close = (tokens, idx, options, _env, self) => {
  tokens[idx].tag = tokens[idx - 2].tag; // heading_open, inline, heading_close
  return self.renderToken(tokens, idx, options);
};

export function renderMarkdown(text: string): string {
  return md.render(text);
}

/** What a screen reader should say of model text: the words, without the markdown's marks. */
export function plainText(text: string): string {
  const parts: string[] = [];
  for (const token of md.parse(text, {})) {
    if (token.type === "fence" || token.type === "code_block") parts.push(token.content.trim());
    if (token.type !== "inline") continue;
    let line = "";
    for (const child of token.children ?? []) {
      if (child.type === "text" || child.type === "code_inline") line += child.content;
      else if (child.type === "softbreak" || child.type === "hardbreak") line += " ";
      else if (child.type === "image") line += child.content ? `[${child.content}]` : "";
    }
    parts.push(line);
  }
  return parts.filter((part) => part !== "").join("\n");
}
