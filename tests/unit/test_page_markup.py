"""The markup rule reads a tag both ways a browser may: where a comment or a raw-text element
ends inside what looks like a quoted value, the tags after it are still judged."""

from __future__ import annotations

import pytest

from sstools_agent.domain.page_markup import page_markup


@pytest.mark.parametrize(
    "text",
    [
        'Заметка\n<!-- <a title=" --><img src=x onerror=alert(1)>"> -->',
        "a,b\n1,\"<style><a title='</style><img src=x onerror=alert(1)>'></style>\"",
        'x <textarea><a title="</textarea><img src=x onerror=alert(1)>"></textarea>',
        'x <title><a title="</title><svg/onload=alert(1)>"></title>',
        'x <? <a title="> <img src=x onerror=alert(1)> ">',
        'x <!x <a title="> <img src=x onerror=alert(1)> ">',
        'x <![CDATA[ <a title="]]><img src=x onerror=alert(1)>">',
    ],
)
def test_active_markup_after_a_comment_or_raw_text_is_refused(text: str):
    assert page_markup(text.encode()) is not None


@pytest.mark.parametrize(
    "text",
    [
        "Заметка <!-- TODO: проверить --> с 'кавычками' и \"ещё\": a < b, x <> 1",
        "a,b\n1,\"<b>жирный</b>\"\n2,'в кавычках'",
        'См. <a href="https://example.com/?q=1&x=2">ссылку</a>, it\'s fine',
        "<details><summary>итог</summary>строки: 5</details><br>",
    ],
)
def test_harmless_markup_with_quotes_and_comments_stays(text: str):
    assert page_markup(text.encode()) is None
