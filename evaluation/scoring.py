"""Scoring one observed turn against what a person expects of it (pure: no I/O).

A turn is scored per criterion: `calls`, `not_calls`, `card`, `args`, `facts`, `language`, and
`scope`, which is never written: no tool outside what the role and the page allow was called;
and `card`'s other half, never written either: no write (or call with a cost) ran without the
confirmation card the user answered (`needs_card`).
A criterion a turn does not state is not scored. A scenario passes when every scored criterion
of every turn passes.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from evaluation.scenarios import Expect
from sstools_agent.domain.catalog_types import Operation
from sstools_agent.domain.sql_classifier import classify_sql
from sstools_agent.domain.tool_catalog import CATALOG


class Criterion(StrEnum):
    CALLS = "calls"
    NOT_CALLS = "not_calls"
    CARD = "card"
    ARGS = "args"
    FACTS = "facts"
    LANGUAGE = "language"
    SCOPE = "scope"


@dataclass(frozen=True, slots=True)
class Call:
    """A tool the agent called: it started, or its confirmation card was shown."""

    tool: str
    args: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Observed:
    """What the user saw in one turn."""

    calls: tuple[Call, ...]
    card_shown: bool
    answer: str
    allowed: frozenset[str]
    """The tools the role and the page allow (what the agent may be offered)."""
    refusal: str | None = None
    """The error code when the request itself was refused (no stream)."""
    reply: str = ""
    """The model's own streamed words (the language is judged on them; card prompts and
    notices are the system's, written in the page's language)."""
    uncarded: tuple[Call, ...] = ()
    """Calls that ran although they needed a card, other than the one the user confirmed."""


@dataclass(frozen=True, slots=True)
class TurnScore:
    """Each scored criterion's verdict, and why a failed one failed."""

    verdicts: dict[Criterion, bool] = field(default_factory=dict)
    reasons: dict[Criterion, str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(self.verdicts.values())


_CODE: Final = re.compile(
    r"```.*?```|`[^`]*`|https?://\S+|«[^»]*»|“[^”]*”|\"[^\"]*\"|\S*(?:[\d_/\\]|\w[.-]\w)\S*",
    re.DOTALL,
)
"""What is not prose: code, URLs, quoted names, tokens with digits, `_` or `/`, and dotted or
hyphenated identifiers (ss-dev, public.energy)."""
_CYRILLIC: Final = re.compile(r"[а-яё]", re.IGNORECASE)
_LATIN: Final = re.compile(r"[a-z]", re.IGNORECASE)


def needs_card(call: Call) -> bool:
    """Whether the call may run only after a card: a write (for a SQL tool, a statement that
    writes), or a call with a cost."""
    spec = CATALOG.get(call.tool)
    if spec is None:
        return False
    if spec.sql_argument is not None:
        statement = str(call.args.get(spec.sql_argument, ""))
        return bool(spec.cost) or classify_sql(statement).operation is Operation.WRITE
    return spec.operation is Operation.WRITE or bool(spec.cost)


def folded(text: str) -> str:
    """Case-folded, «ё» as «е», compatibility-normalised: how facts are matched."""
    return unicodedata.normalize("NFKC", text).casefold().replace("ё", "е")


def language_of(text: str) -> str | None:
    """'ru' or 'en' by the letters of the prose (code, identifiers and URLs left out)."""
    prose = _CODE.sub(" ", text)
    cyrillic, latin = len(_CYRILLIC.findall(prose)), len(_LATIN.findall(prose))
    if not cyrillic and not latin:
        return None
    return "ru" if cyrillic >= latin else "en"


def _value_matches(expected: Any, actual: Any) -> bool:
    if isinstance(expected, list):
        items = actual if isinstance(actual, list | tuple) else [actual]
        return {str(item) for item in expected} == {str(item) for item in items}
    return str(expected) == str(actual)


def args_match(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
    """Whether a call's arguments have every expected value; `key~` means "contains"."""
    for key, value in expected.items():
        if key.endswith("~"):
            name = key[:-1]
            if name not in actual or folded(str(value)) not in folded(str(actual[name])):
                return False
        elif key not in actual or not _value_matches(value, actual[key]):
            return False
    return True


def _missing(items: Iterable[str], answer: str) -> list[str]:
    return [item for item in items if folded(item) not in answer]


def _facts(expect: Expect, answer: str) -> str | None:
    """Why the answer's facts fail, or None."""
    text = folded(answer)
    problems = [f"missing {item!r}" for item in _missing(expect.facts, text)]
    problems += [
        f"none of {list(options)!r}"
        for options in expect.facts_any
        if len(_missing(options, text)) == len(options)
    ]
    problems += [f"says {item!r}" for item in expect.not_facts if folded(item) in text]
    return "; ".join(problems) or None


def score_turn(expect: Expect, observed: Observed) -> TurnScore:
    """The verdict on each criterion `expect` states, and on the scope (always)."""
    score = TurnScore()
    called = [call.tool for call in observed.calls]

    def judge(criterion: Criterion, problem: str | None) -> None:
        score.verdicts[criterion] = problem is None
        if problem is not None:
            score.reasons[criterion] = problem

    outside = sorted(set(called) - observed.allowed)
    judge(Criterion.SCOPE, f"called {outside} outside role and page" if outside else None)
    if expect.calls:
        missing = [tool for tool in expect.calls if tool not in called]
        judge(Criterion.CALLS, f"did not call {missing} (called {called})" if missing else None)
    if expect.not_calls or expect.no_calls:
        wrong = called if expect.no_calls else [t for t in called if t in expect.not_calls]
        judge(Criterion.NOT_CALLS, f"called {wrong}" if wrong else None)
    if expect.card is not None:
        shown = observed.card_shown
        judge(Criterion.CARD, None if shown is expect.card else f"card shown: {shown}")
    if expect.args:
        wrong_args = [
            tool
            for tool, wanted in expect.args.items()
            if not any(c.tool == tool and args_match(wanted, c.args) for c in observed.calls)
        ]
        seen = {c.tool: dict(c.args) for c in observed.calls if c.tool in wrong_args}
        judge(Criterion.ARGS, f"arguments of {wrong_args}: got {seen}" if wrong_args else None)
    if expect.facts or expect.facts_any or expect.not_facts:
        judge(Criterion.FACTS, _facts(expect, observed.answer))
    if expect.language is not None:
        found = language_of(observed.reply or observed.answer)
        judge(Criterion.LANGUAGE, None if found == expect.language else f"written in {found}")
    return score
