"""Facts the /agent page repeats from the backend (it is TypeScript and cannot import them):
each is checked here against its one home, so a change on either side fails until both agree."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from local.browser import TOKEN_KEY
from local.page import LOCAL_BUILD
from sstools_agent.chat.request import MAX_MESSAGE_CHARS
from sstools_agent.domain.attachments import (
    ALLOWED_TYPES,
    ATTACHMENTS_OFF,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_FILES,
    MAX_NAME_CHARS,
    AttachmentRejected,
    checked_name,
)
from sstools_agent.domain.conversations import CONVERSATION_ID_PATTERN

WEB: Path = LOCAL_BUILD.parent / "src"


def _constant(path: str, name: str) -> str:
    match = re.search(rf"export const {name} = (.+);", (WEB / path).read_text(encoding="utf-8"))
    assert match, f"{name} is not declared in web/src/{path}"
    return match.group(1)


def test_the_page_knows_the_chats_message_limit():
    assert int(_constant("ui/limits.ts", "MAX_MESSAGE_CHARS").replace("_", "")) == MAX_MESSAGE_CHARS


def test_the_page_reads_conversation_ids_as_the_backend_writes_them():
    pattern = _constant("ui/session.ts", "CONVERSATION_ID").strip("/")
    assert pattern == CONVERSATION_ID_PATTERN


def test_the_browser_tests_sign_in_where_the_page_looks_for_the_token():
    assert _constant("lib/auth.ts", "TOKEN_STORAGE_KEY") == json.dumps(TOKEN_KEY)


def test_the_page_knows_the_default_attachment_limits_and_types():
    def number(name: str) -> int:
        return int(_constant("ui/limits.ts", name).replace("_", ""))

    assert number("MAX_ATTACHMENT_BYTES") == DEFAULT_MAX_BYTES
    assert number("MAX_ATTACHMENT_FILES") == DEFAULT_MAX_FILES
    assert number("MAX_ATTACHMENT_NAME_CHARS") == MAX_NAME_CHARS
    declared = (WEB / "ui/limits.ts").read_text(encoding="utf-8")
    listed = re.search(r"ATTACHMENT_TYPES: readonly string\[\] = \[(.*?)\];", declared, re.DOTALL)
    assert listed, "ATTACHMENT_TYPES is not declared in web/src/ui/limits.ts"
    assert set(json.loads(f"[{listed.group(1).rstrip().rstrip(',')}]")) == ALLOWED_TYPES


def test_the_page_says_attachments_are_off_as_the_server_does():
    assert json.loads(_constant("ui/attachments.ts", "ATTACHMENTS_OFF")) == ATTACHMENTS_OFF


NAME_CASES: list[dict[str, Any]] = json.loads(
    (WEB / "ui/attachment-names.cases.json").read_text(encoding="utf-8")
)
"""Names the page's own test (`ui/attachments.test.ts`) refuses or counts by the same table."""


@pytest.mark.parametrize("case", NAME_CASES, ids=[case["says"] for case in NAME_CASES])
def test_the_page_counts_and_refuses_a_name_as_the_server_does(case: dict[str, Any]):
    name = "".join(text * times for text, times in case["parts"])
    if case["refusal"] is not None:
        with pytest.raises(AttachmentRejected) as refused:
            checked_name(name)
        assert str(refused.value) == case["refusal"]
        return
    shown = checked_name(name)
    assert len(shown) == case["chars"]
    assert shown == case.get("shown", shown)
