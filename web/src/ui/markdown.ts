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

export function renderMarkdown(text: string): string {
  return md.render(text);
}
