"""The JSON check agrees with the json module on what it reads, and counts what it keeps."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sstools_agent.domain.json_scan import (
    MAX_DEPTH,
    MAX_DIGITS,
    JsonInvalid,
    prefix_value,
    scalar_value,
    scan_json,
)

_NUMBERS = st.integers() | st.floats(allow_nan=False, allow_infinity=False)
_SCALARS = st.none() | st.booleans() | _NUMBERS | st.text()
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


@given(_VALUES, st.sampled_from([None, 2]))
def test_what_the_json_module_writes_is_read_whole_with_its_count(value: Any, indent: int | None):
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    shape = scan_json(text.encode())
    assert shape.item_count == (len(value) if isinstance(value, list | dict) else None)
    if isinstance(value, list | dict):
        assert prefix_value(text) == (json.loads(text), True)


@given(_VALUES, st.data())
def test_a_cut_document_is_refused_and_its_prefix_holds_only_whole_tokens(value: Any, data: Any):
    text = json.dumps(value, ensure_ascii=False)
    cut = data.draw(st.integers(min_value=0, max_value=max(len(text) - 1, 0)))
    if cut == 0 or not isinstance(value, list | dict):
        return
    with pytest.raises(JsonInvalid):
        scan_json(text[:cut].encode())
    built, whole = prefix_value(text[:cut])
    assert not whole
    # What the prefix holds is the start of the value, never a shortened number or string
    assert _starts(built, value)


def _starts(prefix: Any, value: Any) -> bool:
    """Whether `prefix` is `value` with its last items (at any depth) left out or cut."""
    if isinstance(prefix, list) and isinstance(value, list):
        if not prefix:
            return True
        last = len(prefix) - 1
        return prefix[:last] == value[:last] and _starts(prefix[last], value[last])
    if isinstance(prefix, dict) and isinstance(value, dict):
        return all(key in value and _starts(item, value[key]) for key, item in prefix.items())
    return bool(prefix == value)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[NaN]", "в нём NaN или Infinity, а это не числа JSON"),
        ("[-Infinity]", "в нём NaN или Infinity, а это не числа JSON"),
        ('["NaN", 1 2]', "он не разбирается как JSON (проверьте кавычки, запятые и скобки)"),
        ("[1,]", "он не разбирается как JSON (проверьте кавычки, запятые и скобки)"),
        ("{'a': 1}", "он не разбирается как JSON (проверьте кавычки, запятые и скобки)"),
        ("[] []", "он не разбирается как JSON (проверьте кавычки, запятые и скобки)"),
    ],
)
def test_what_is_no_json_is_refused_saying_why_in_the_users_words(text: str, why: str):
    with pytest.raises(JsonInvalid) as refused:
        scan_json(text.encode())
    assert str(refused.value) == why


def test_nesting_is_read_to_its_limit_and_refused_past_it():
    assert scan_json(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH).item_count == 1
    with pytest.raises(JsonInvalid, match=f"глубже {MAX_DEPTH} уровней"):
        scan_json(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))


def test_an_integer_too_long_for_python_is_refused_and_the_parser_stays_usable():
    # Given integers longer than Python converts (they failed inside the C parser, and the next
    # parse in the process crashed it)
    too_long = b"1" * (MAX_DIGITS + 1)
    for data in (b"[" + too_long + b"]", too_long, b'{"a": -' + too_long + b"}"):
        # When each is checked, twice
        for _ in range(2):
            # Then it is refused, and the process goes on checking
            with pytest.raises(JsonInvalid, match=f"больше {MAX_DIGITS} цифр подряд"):
                scan_json(data)
    assert scan_json(b"[" + b"1" * MAX_DIGITS + b"]").item_count == 1


@pytest.mark.parametrize("space", [b"\x0b", b"\x0c"])
def test_a_vertical_tab_or_form_feed_is_no_json_whitespace(space: bytes):
    with pytest.raises(JsonInvalid):
        scan_json(b"[1," + space + b"2]")


def test_a_number_no_float_holds_is_kept_as_its_text_for_the_summary():
    value, whole = prefix_value("[1e400, 2.5]")
    assert (value, whole) == (["1E+400", 2.5], True)
    json.dumps(value, allow_nan=False)  # what the model's block holds is JSON


def test_a_scalar_document_no_float_holds_is_kept_as_its_text():
    assert [scalar_value(each) for each in (b"1e400", b"12", b"1.5")] == ["1E+400", 12, 1.5]
