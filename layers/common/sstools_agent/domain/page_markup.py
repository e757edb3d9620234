"""Page markup in a text file: what a browser would run or render as a page (docs/attachments.md).

A text file is refused when a browser sniffing it would take it for a page (the WHATWG MIME
sniffing HTML patterns at its start, after whitespace, and SVG), or when it carries active markup
anywhere: a document start, `script`, `iframe`/`frame`, `object`/`embed`/`applet`, `form`, `svg`,
`<?xml`, an `on…=` event-handler attribute in any tag, `http-equiv=refresh`, or an attribute value
that is a `javascript:`, `vbscript:` or `data:text/html` URL (tabs and newlines inside the scheme,
as browsers read it, or a character reference before its colon). Inline markup stays: `<br>`,
`<details>`, `<b>`, HTML in a CSV cell.

The whole file is scanned, in C (regexes with possessive quantifiers, no backtracking): a walk
over the text that consumes plain text and harmless tags, read as the browser's tokenizer reads
them (quoted attribute values may hold `>`), and stops at the first tag it cannot consume; then
the same walk with the quotes ignored, as a browser reads the tags after a comment or a raw-text
element (`<style>`, `<textarea>`, `<title>`) ends where the first walk saw a quoted value.
`html.parser` reads tags the same way but took 6-16 s over 10 MB of tags.
"""

from __future__ import annotations

import re
from typing import Final

from sstools_agent.domain.attachments import SCAN_WINDOW_BYTES

_WS: Final = rb"[\t\n\x0c\r ]"
_SNIFFED: Final = re.compile(
    rb"(?:\xef\xbb\xbf)?" + _WS + rb"*+(?:<!doctype" + _WS + rb"++html[ >]"
    rb"|<(?:html|head|script|iframe|h1|div|font|table|a|style|title|b|body|br|p)[ >]"
    rb"|<!--|<\?xml|<svg[\t\n\x0c\r />])",
    re.IGNORECASE,
)
"""The start of a file a browser would render as HTML (WHATWG MIME sniffing), or SVG."""
_ACTIVE_TAG: Final = re.compile(
    rb"<(?:!doctype" + _WS + rb"++html|\?xml|(?:html|head|body|script|iframe|frame|frameset"
    rb"|object|embed|applet|form|svg)(?![^\t\n\x0c\r />]))",
    re.IGNORECASE,
)


def _spaced(word: bytes) -> bytes:
    """`word` as a browser's URL parser reads it: tabs and newlines anywhere inside are dropped."""
    return b"[\t\n\r]*+".join(re.escape(bytes([c])) for c in word)


_HOSTILE_VALUE: Final = (
    rb"[\x00-\x20]*+(?:"
    + _spaced(b"javascript:")
    + b"|"
    + _spaced(b"vbscript:")
    + b"|"
    + _spaced(b"data:")
    + rb"[\x00-\x20]*+(?:text/html|image/svg)"
    + rb"|[^:\"'>]*?&(?:#|colon;|tab;|newline;))"
)
_ATTRIBUTE: Final = (
    rb"(?!on[a-z]|http-equiv" + _WS + rb"*+=" + _WS + rb"*+[\"']?" + _WS + rb"*+refresh)"
    rb"[^\t\n\x0c\r />=][^\t\n\x0c\r />=]*+"
    # a value that is there must be harmless: a hostile one fails the tag, never a new name
    rb"(?:" + _WS + rb"*+=" + _WS + rb"*+(?:\"(?!" + _HOSTILE_VALUE + rb")[^\"]*+\""
    rb"|'(?!" + _HOSTILE_VALUE + rb")[^']*+'"
    rb"|(?![\"'])(?!" + _HOSTILE_VALUE + rb")[^\t\n\x0c\r >]++)"
    rb"|(?!" + _WS + rb"*+=))"
)
_HARMLESS: Final = re.compile(
    rb"(?:[^<]++|<(?![a-z])|<[a-z][^\t\n\x0c\r />]*+(?:[\t\n\x0c\r /]++|"
    + _ATTRIBUTE
    + rb")*+>)*+",
    re.IGNORECASE,
)
"""Plain text and harmless tags; the walk stops before a tag it cannot consume."""


def _walk(data: bytes, start: int, end: int) -> int:
    """Where the walk from `start` stops (it matches the empty string, so always matches)."""
    walked = _HARMLESS.match(data, start, end)
    return walked.end() if walked else start


_QUOTES_AS_SPACES: Final = bytes.maketrans(b"\"'", b"  ")


def page_markup(data: bytes) -> str | None:
    """Why `data` (a text file's bytes) is a page or carries active markup, in the user's words;
    None when it does not."""
    if _SNIFFED.match(data):
        return "это HTML или SVG, и браузер откроет его как страницу"
    if _ACTIVE_TAG.search(data):
        return "в нём HTML страницы (документ, скрипт, фрейм, встроенный объект, форма или SVG)"
    # Read twice: as the tokenizer reads a tag in text (a quoted value may hold `>`), and with
    # no quotes at all, as a tag reads after a comment, `<style>` or `<textarea>` ends inside
    # what the first reading took for a quoted value (`<!-- <a title=" --><img onerror=…>`).
    for reading in (data, data.translate(_QUOTES_AS_SPACES)):
        if _stops_at_active_tag(reading):
            return (
                "в нём HTML, который браузер выполнит (обработчик событий, автоматический "
                "переход на другую страницу или ссылка javascript)"
            )
    return None


def _stops_at_active_tag(data: bytes) -> bool:
    """Whether the walk over `data` stops at a tag it cannot consume (one the file ends in
    does not count: a browser drops it)."""
    at, size = 0, len(data)
    while at < size:
        end = min(at + SCAN_WINDOW_BYTES, size)
        stop = _walk(data, at, end)
        if stop == end:
            at = end
            continue
        # The tag at `stop` may go on past this window: reach further until it ends or the file
        reach, whole = end, stop
        while whole == stop and reach < size:
            reach = min(size, reach + (reach - at))
            whole = _walk(data, stop, reach)
        if whole > stop:
            at = whole
            continue
        return data.find(b">", stop) != -1
    return False
