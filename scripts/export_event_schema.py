"""Writes the stream events' JSON Schema for the /agent page (`make schema`).

The page's TypeScript types (`web/src/lib/generated/chat-events.ts`) are generated from this
file by `npm run gen:types`; `tests/unit/test_chat_event_schema.py` fails when the committed
schema is not what the backend's models export, and the page's own test fails when the types
are not what the schema generates. A protocol change therefore reaches the page, or CI says so.

Usage: `python scripts/export_event_schema.py [--check]` with `layers/common` on the path.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

from sstools_agent.domain.chat_event_schema import chat_event_schema_json

SCHEMA_FILE: Final = (
    Path(__file__).resolve().parents[1] / "web/src/lib/generated/chat-events.schema.json"
)


def main(argv: list[str]) -> int:
    """Writes the schema; with `--check`, only says whether the committed one is current."""
    current = chat_event_schema_json()
    if "--check" in argv:
        if not SCHEMA_FILE.exists() or SCHEMA_FILE.read_text(encoding="utf-8") != current:
            print(f"{SCHEMA_FILE} is stale: run `make schema`", file=sys.stderr)
            return 1
        return 0
    SCHEMA_FILE.parent.mkdir(parents=True, exist_ok=True)
    SCHEMA_FILE.write_text(current, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
