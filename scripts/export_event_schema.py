"""Writes the stream events' JSON Schema and the catalog's glossary for the /agent page
(`make schema`).

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
from sstools_agent.domain.glossary import glossary_json

GENERATED: Final = Path(__file__).resolve().parents[1] / "web/src/lib/generated"
SCHEMA_FILE: Final = GENERATED / "chat-events.schema.json"
GLOSSARY_FILE: Final = GENERATED / "glossary.json"
"""The words the page shows for tool and argument names (`domain/glossary.py`)."""


def main(argv: list[str]) -> int:
    """Writes the files; with `--check`, only says whether the committed ones are current."""
    files = {SCHEMA_FILE: chat_event_schema_json(), GLOSSARY_FILE: glossary_json()}
    if "--check" in argv:
        stale = [
            path
            for path, current in files.items()
            if not path.exists() or path.read_text(encoding="utf-8") != current
        ]
        for path in stale:
            print(f"{path} is stale: run `make schema`", file=sys.stderr)
        return 1 if stale else 0
    GENERATED.mkdir(parents=True, exist_ok=True)
    for path, current in files.items():
        path.write_text(current, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
