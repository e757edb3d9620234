/** Where the page lays out for a phone: the conversations become a drawer, the header one row.
 * The same width as the `@media` rule of `app.css`. */
import { MediaQuery } from "svelte/reactivity";

export const NARROW_LAYOUT = "(max-width: 720px)";

/** Whether the window is that narrow now (reactive: it follows a rotation or a resize). */
export function narrowLayout(): MediaQuery {
  return new MediaQuery(NARROW_LAYOUT);
}
