"""A tool's output in words: what an answer says of a result, by the result's shape.

No tool has an answer of its own here: a field is named by the glossary (`FIELD_LABELS`, an
argument's by `ARGUMENT_LABELS`), an enum value in words by its field and its parent
(`wording.field_kind`: `git.status` `behind` is «отстаёт от удалённой ветки»), an ISO time in
words with its zone, a tool's id by its label, a role by its name. A list is said item by item,
what matters first (`item_importance`), counted; a list the summariser cut
(`tool_output_summary`: `items`, `total_count`, `omitted`) is said with the whole list's count
and what was left out, and an answer over its budget is cut at a whole line with the count of
what it did not say. The English answer names the fields by their own words.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from sstools_agent.domain.catalog_types import Operation
from sstools_agent.domain.glossary import ARGUMENT_LABELS, FIELD_LABELS, tool_label
from sstools_agent.domain.item_importance import ImportanceOrder
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.wording import (
    ISO_TIMESTAMP,
    NOUNS,
    counted,
    field_kind,
    role_words,
    status_words,
    times_in_words,
)

MAX_ANSWER_CHARS: Final = 3000
"""How long an answer from one result may be: past it, whole lines are left out and counted."""
_ISO_TIME_CHARS: Final = len("2026-11-11T06:00:00.000000+00:00")
_NAME_FIELDS: Final = ("title", "name", "table_name")
"""An item's own name: said first, unlabelled."""
_HEADLINE_FIELDS: Final = ("status", "at")
"""What a nested object is about (a git state's status, a change's time): said unlabelled."""
_CUT_LIST_META: Final = frozenset(
    {"items", "total_count", "shown", "truncated", "omitted", "ranked_by", "status_counts"}
)
"""The keys of a list the summariser cut (`_ListPlan.cut`): its items and its counts."""
_KEPT_OUT_WHERE: Final = {
    "no_environment": ("после выбора окружения", "once an environment is chosen"),
    "affinity": (
        "на странице другого объекта или без объекта",
        "on another object's page, or one without an object",
    ),
    "role": ("с другой ролью", "with another role"),
}
"""Where a tool kept from this user is available, by the policy's rule (`RemovalRule`)."""


def say(russian: bool, ru: str, en: str) -> str:
    """The Russian or the English of one phrase."""
    return ru if russian else en


def field_words(field: str, russian: bool) -> str:
    """A field as a person calls it: «git-статус» for `git`, «дашборды» for `dashboard_ids`."""
    if not russian:
        return field.replace("_", " ")
    label = FIELD_LABELS.get(field) or ARGUMENT_LABELS.get(field)
    if label is None:
        return field.replace("_", " ")
    return label[:1].lower() + label[1:] if label[1:2].islower() else label


def tool_words(tool: str, russian: bool) -> str:
    """A tool as the catalog names it: «Поиск дашбордов»; its description in English."""
    spec = CATALOG.get(tool)
    if spec is None:
        return tool
    return tool_label(tool) if russian else spec.description.rstrip(".")


def _is_tool_record(value: Any) -> bool:
    return isinstance(value, Mapping) and CATALOG.get(str(value.get("name"))) is not None


def _is_cut_list(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("items"), list)
        and isinstance(value.get("total_count"), int)
    )


def scalar_words(value: Any, russian: bool, field: str = "", parent: str = "") -> str:
    """One value: an enum in words, a time in words, a tool by its label, a role by its name,
    yes / no; a name quoted, so the answer's own words stay in the user's language."""
    if isinstance(value, bool):
        return say(russian, "да", "yes") if value else say(russian, "нет", "no")
    if not isinstance(value, str):
        return str(value)
    kind = field_kind(field, parent)
    if kind is not None:
        return status_words(kind, value, russian)
    if field == "role" or CATALOG.get(value) is not None:
        return role_words(value, russian) if field == "role" else tool_words(value, russian)
    said = times_in_words(value, russian)
    if ISO_TIMESTAMP.match(value) and len(value) <= _ISO_TIME_CHARS:
        return said  # a time, said in words: no quotes
    return f"«{said}»" if russian else f"“{said}”"


def _present(value: Any) -> bool:
    return value not in (None, "", [], {})


def item_words(value: Any, russian: bool, parent: str = "") -> str:
    """An item on one line: its name and number first, then each field «label: value»."""
    if _is_tool_record(value):
        return tool_words(str(value["name"]), russian)
    if not isinstance(value, Mapping):
        return value_words(value, russian, parent=parent)
    # A string id (an environment's) is the item's name; a number is its number
    name = next((k for k in (*_NAME_FIELDS, "id") if isinstance(value.get(k), str)), "")
    number = f"№{value['id']}" if isinstance(value.get("id"), int) else ""
    head = " ".join(filter(None, [scalar_words(value[name], russian) if name else "", number]))
    shown = {name, "id"}
    facts = [fact_words(str(k), v, russian, parent) for k, v in value.items() if k not in shown]
    return " — ".join(filter(None, [head, "; ".join(filter(None, facts))]))


def fact_words(field: str, value: Any, russian: bool, parent: str = "") -> str:
    """«label: value»; in English a count named after its noun reads as one ("3 rows affected"
    for `rows_affected`: 3, "2 failing charts" for `failing_charts`: 2). An empty value is no
    fact."""
    if not _present(value):
        return ""
    if not russian and type(value) is int and (counted_words := _count_words(field, value)):
        return counted_words
    return f"{field_words(field, russian)}: {value_words(value, russian, field, parent)}"


def _count_words(field: str, count: int) -> str | None:
    """A count field in English word order, when its name starts or ends with a noun's plural."""
    words = field.split("_")
    for _, (singular, plural) in NOUNS.values():
        noun = plural.split()
        form = singular if count == 1 else plural
        if words[: len(noun)] == noun and len(words) > len(noun):
            return f"{count} {form} {' '.join(words[len(noun) :])}"
        if words[-len(noun) :] == noun:
            return " ".join([str(count), *words[: -len(noun)], form])
    return None


def value_words(value: Any, russian: bool, field: str = "", parent: str = "") -> str:
    """A value inside a line: a nested object's headline then its fields, a list's items."""
    if _is_cut_list(value):
        return _cut_list_inline(value, russian, field)
    named = isinstance(value, Mapping) and any(isinstance(value.get(k), str) for k in _NAME_FIELDS)
    if named or (isinstance(value, Mapping) and isinstance(value.get("id"), int)):
        return item_words(value, russian, field)
    if isinstance(value, Mapping):
        first = [k for k in _HEADLINE_FIELDS if _present(value.get(k))]
        parts = [scalar_words(value[k], russian, str(k), field) for k in first]
        parts += [fact_words(str(k), v, russian, field) for k, v in value.items() if k not in first]
        return ", ".join(filter(None, parts))
    if isinstance(value, list):
        if any(isinstance(v, Mapping | list) for v in value):
            return "; ".join(f"({item_words(v, russian, field)})" for v in value)
        return ", ".join(scalar_words(v, russian, field, parent) for v in value)
    return scalar_words(value, russian, field, parent)


def arguments_words(args: Mapping[str, Any], russian: bool) -> str:
    """A call's arguments in words: «дашборды: 10, 11; куда (окружение): «staging»»."""
    return "; ".join(filter(None, (fact_words(str(k), v, russian) for k, v in args.items())))


def _cut_list_inline(value: Mapping[str, Any], russian: bool, field: str) -> str:
    shown = value_words(value["items"], russian, field)
    rest = int(value["total_count"]) - len(value["items"])
    return shown + (say(russian, f" и ещё {rest}", f" and {rest} more") if rest > 0 else "")


def _noun(field: str) -> str | None:
    singular = field.removesuffix("s")
    return singular if singular in NOUNS else None


def _more(count: int, field: str, russian: bool) -> str:
    noun = _noun(field)
    said = counted(count, noun, russian) if noun else str(count)
    return say(russian, f"и ещё {said}", f"and {said} more")


def _status_counts(counts: Any, kind_of: Any, field: str, russian: bool) -> str:
    """«есть ошибки — 2, в порядке — 5»: a cut list's statuses in words (the field that ranked
    it says whose statuses they are: `validation.status`)."""
    if not isinstance(counts, Mapping) or not counts:
        return ""
    path = str(kind_of.get("status", "")).split(".") if isinstance(kind_of, Mapping) else []
    parent = path[-2] if len(path) > 1 else field
    kind = field_kind("status", parent) or ""
    return ", ".join(
        f"{status_words(kind, status, russian)} — {count}" for status, count in counts.items()
    )


@dataclass
class _Listing:
    """One list of a result: its label, its items what matters first, its whole count."""

    field: str
    items: list[Any]
    total: int
    left_out_statuses: str = ""

    @classmethod
    def of(cls, field: str, value: Any, russian: bool) -> _Listing:
        if _is_cut_list(value):
            omitted = value.get("omitted") or {}
            by_status = omitted.get("by_status") if isinstance(omitted, Mapping) else None
            statuses = _status_counts(by_status, value.get("ranked_by"), field, russian)
            return cls(field, list(value["items"]), int(value["total_count"]), statuses)
        items = list(value)
        order = ImportanceOrder.of(items)
        if order is not None:
            items = [items[i] for i in order.ranked(items).indices]
        return cls(field, items, len(items))

    def heading(self, russian: bool) -> str:
        label = field_words(self.field, russian) if self.field else ""
        label = label[:1].upper() + label[1:]
        count = (
            say(russian, f"{len(self.items)} из {self.total}", f"{len(self.items)} of {self.total}")
            if self.total > len(self.items)
            else str(self.total)
        )
        return f"{label} ({count}):" if label else ""

    def tail(self, said: int, russian: bool) -> str:
        rest = self.total - said
        if rest <= 0:
            return ""
        statuses = (
            f" ({self.left_out_statuses})"
            if self.left_out_statuses and said == len(self.items)
            else ""
        )
        return f"{_more(rest, self.field, russian)}{statuses}."


def _is_listing(value: Any) -> bool:
    """A list of objects or of rows: said an item a line."""
    items = value["items"] if _is_cut_list(value) else value
    return isinstance(items, list) and any(isinstance(i, Mapping | list) for i in items)


def _blocks(value: Any, russian: bool) -> Iterator[tuple[str, _Listing | None]]:
    """A result as lines, each list as a listing of its own."""
    if _is_listing(value) or isinstance(value, list):
        yield "", _Listing.of("", value if _is_listing(value) else list(value), russian)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if _is_listing(item):
                yield "", _Listing.of(str(key), item, russian)
            elif key == "status_counts":
                yield f"{field_words(key, russian)}: {_status_counts(item, {}, '', russian)}", None
            elif _present(item):
                line = fact_words(str(key), item, russian)
                yield line[:1].upper() + line[1:], None
    elif _present(value):
        yield scalar_words(value, russian), None


def output_words(heading: str, value: Any, russian: bool, budget: int = MAX_ANSWER_CHARS) -> str:
    """A heading and the result in words, cut at a whole line within `budget`; a list cut
    short says how many of its items it left out."""
    out = [heading] if heading else []
    used = len(heading)
    if found_nothing(value):  # «Всего: 0» under empty lists is data, not an answer
        value = {k: v for k, v in value.items() if not isinstance(v, list) and k != "total"}
        value_lines = [line for line, _ in _blocks(value, russian)]
        return "\n".join([*out, *value_lines, say(russian, "Ничего не найдено.", "Nothing found.")])
    for line, listing in _blocks(value, russian):
        if listing is None:
            if used + len(line) > budget:
                return "\n".join([*out, "…"])
            out.append(line)
            used += len(line) + 1
            continue
        if title := listing.heading(russian):
            out.append(title)
            used += len(title) + 1
        indent = "  " if title else ""
        said = 0
        for item in listing.items:
            entry = f"{indent}- {item_words(item, russian, listing.field)}"
            if used + len(entry) > budget:
                break
            out.append(entry)
            used += len(entry) + 1
            said += 1
        if tail := listing.tail(said, russian):
            out.append(f"{indent}{tail[:1].upper()}{tail[1:]}")
            used += len(tail) + 1
        if said < len(listing.items):
            return "\n".join(out)
    return "\n".join(out)


def found_nothing(value: Any) -> bool:
    """Whether a result's lists are all empty (a search that found nothing)."""
    if not isinstance(value, Mapping):
        return False
    lists = [v for v in value.values() if isinstance(v, list)]
    return bool(lists) and not any(lists)


def lists_tools(value: Any) -> bool:
    """Whether a result lists the catalog's tools (what the assistant can do)."""
    tools = value.get("tools") if isinstance(value, Mapping) else value
    return isinstance(tools, list) and bool(tools) and all(map(_is_tool_record, tools))


def tools_by_operation(value: Mapping[str, Any], russian: bool) -> str:
    """A list of tools in words, what reads apart from what changes (each change is confirmed)."""
    reads = [t for t in value["tools"] if _operation(t) is not Operation.WRITE]
    writes = [t for t in value["tools"] if _operation(t) is Operation.WRITE]
    role = value.get("role")
    parts = [
        say(russian, "Вот что я могу здесь", "Here is what I can do here")
        + (say(russian, f" (ваша роль — {role_words(role, True)})", f" (your role: {role})"))
        * bool(role)
        + "."
    ]
    if reads:
        parts.append(say(russian, "Смотреть:\n", "Look up:\n") + _bullets(reads, russian))
    if writes:
        parts.append(
            say(
                russian,
                "Изменять (каждое изменение — после вашего подтверждения):\n",
                "Change (each change after your confirmation):\n",
            )
            + _bullets(writes, russian)
        )
    return "\n\n".join(parts)


def _operation(record: Mapping[str, Any]) -> Operation:
    spec = CATALOG.get(str(record.get("name")))
    return spec.operation if spec is not None else Operation.READ


def _bullets(records: Sequence[Mapping[str, Any]], russian: bool) -> str:
    return "\n".join(f"- {tool_words(str(r['name']), russian)}" for r in records)


def also_available(kept_out: Mapping[str, str], russian: bool) -> str:
    """«Ещё доступно:» as a paragraph of its own: the tools kept from this user here
    (`{tool: rule}`), grouped by where they are available."""
    by_rule: dict[str, list[str]] = {}
    for tool, rule in kept_out.items():
        title = tool_words(tool, russian)
        title = title[:1].lower() + title[1:] if title[1:2].islower() else title
        by_rule.setdefault(rule, []).append(title)
    lines = [
        f"- {say(russian, *_KEPT_OUT_WHERE.get(rule, (rule, rule)))}: {', '.join(tools)}"
        for rule, tools in by_rule.items()
    ]
    return say(russian, "Ещё доступно:\n", "Also available:\n") + "\n".join(lines) if lines else ""
