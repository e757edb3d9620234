"""The plan of a SQL write: the statement, formatted; what it touches; the rows it would affect.

The rows are counted by a read derived from the statement itself: an UPDATE or a DELETE of one
table with its own WHERE becomes `SELECT count(*) FROM <table> WHERE <the same condition>`, run
through the read path only if it classifies as a read. Where the statement's shape gives no such
count (`UPDATE … FROM`, `DELETE … USING`, a CTE, several statements, an INSERT), the count is
unknown and the card says so. The approval is bound to the statement and to the count in the
band the card shows («около 1 200 строк»), so a busy table does not make every card stale.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from sqlglot import exp

from sstools_agent.domain.catalog_types import DEFAULT_SQL_DIALECT, Operation
from sstools_agent.domain.plan_types import ChangePlan, PlanRead, unread_line
from sstools_agent.domain.sql_classifier import classify_sql, parsed_statements

_VERBS: Final = {"DELETE": "удалит", "UPDATE": "изменит"}
_UNKNOWN_ROWS: Final = "сколько строк затронет — неизвестно"


@dataclass(frozen=True, slots=True)
class SqlShape:
    """What a plan says of a SQL text, read from one parse."""

    kind: str
    """The statements' kind(s): «DELETE», «UPDATE, DELETE»; «SQL» when it does not parse."""
    statement: str
    """Formatted, one clause a line (as written when it does not parse)."""
    tables: tuple[str, ...]
    """The tables it names, as written (schema-qualified where they are)."""
    count_query: str | None
    """`SELECT count(*)` of the rows one UPDATE or DELETE would touch; None where its shape
    gives none (or the derived query would not be a read)."""


@functools.lru_cache(maxsize=64)
def sql_shape(sql: str, dialect: str = DEFAULT_SQL_DIALECT) -> SqlShape:
    """The shape of `sql` (cached: the card's plan and its reads ask of the same text)."""
    kinds = classify_sql(sql, dialect).statement_kinds or ("SQL",)
    kind = ", ".join(dict.fromkeys(kinds))
    statements = parsed_statements(sql, dialect)
    if statements is None:
        return SqlShape(kind, sql.strip(), (), None)
    names = (
        ".".join(part for part in (table.db, table.name) if part)
        for statement in statements
        for table in statement.find_all(exp.Table)
    )
    return SqlShape(
        kind,
        ";\n".join(s.sql(dialect=dialect, pretty=True) for s in statements),
        tuple(dict.fromkeys(name for name in names if name)),
        _count_query(statements, dialect),
    )


def _count_query(statements: list[exp.Expr], dialect: str) -> str | None:
    if len(statements) != 1:
        return None
    statement = statements[0]
    if not isinstance(statement, exp.Update | exp.Delete):
        return None
    if any(
        statement.args.get(part) for part in ("from", "from_", "using", "with", "with_", "joins")
    ):
        return None
    table = statement.this
    if not isinstance(table, exp.Table):
        return None
    where = statement.args.get("where")
    query = exp.select(exp.Count(this=exp.Star())).from_(table.copy())
    if where is not None:
        query = query.where(where.this.copy())
    derived = query.sql(dialect=dialect)
    return derived if classify_sql(derived, dialect).operation is Operation.READ else None


def counted_rows(output: Any) -> int | None:
    """The count a `count(*)` read answered (the one cell of its one `count` column), or
    None when the answer is not one."""
    columns = output.get("columns") if isinstance(output, Mapping) else None
    if not isinstance(columns, list) or len(columns) != 1:
        return None
    if str(columns[0]).lower() not in ("count", "count(*)"):
        return None
    rows = output.get("rows")
    first = rows[0] if isinstance(rows, list) and rows and isinstance(rows[0], list) else None
    value = first[0] if first else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def rows_band(count: int) -> str:
    """The count as the card says it and the approval binds it: exact below 100, else «около»
    and two significant digits («около 1 200 строк»)."""
    if count < 100:
        return f"{count} {_rows_word(count)}"
    digits = len(str(count)) - 2
    rounded = round(count, -digits)
    return f"около {rounded:,}".replace(",", " ") + f" {_rows_word(rounded)}"


def _rows_word(count: int) -> str:
    last_two, last = count % 100, count % 10
    if last == 1 and last_two != 11:
        return "строку"
    if 2 <= last <= 4 and not 12 <= last_two <= 14:
        return "строки"
    return "строк"


def rows_line(kind: str, tables: tuple[str, ...], count: int | None, counted: bool) -> str:
    """«DELETE в mart.employees: удалит 9 строк»; «…: сколько строк затронет — неизвестно»."""
    where = f" в {', '.join(tables)}" if tables else ""
    if count is None:
        why = "" if counted else " (запрос не сводится к подсчёту)"
        return f"{kind}{where}: {_UNKNOWN_ROWS}{why}"
    return f"{kind}{where}: {_VERBS.get(kind, 'затронет')} {rows_band(count)}"


class SqlWritePlan:
    """`superset_execute_sql` as a write: «SQL в staging: DELETE», the statement shown as code,
    and the rows it would touch, counted by a read where the statement's shape gives one."""

    objects = ("database_id", "sql")

    def reads(self, args: Mapping[str, Any], env_id: str | None) -> list[PlanRead]:
        query = sql_shape(str(args["sql"])).count_query
        if query is None or env_id is None:
            return []
        count = {"database_id": args["database_id"], "sql": query, "limit": 1}
        return [PlanRead("count", "superset_execute_sql", env_id, count)]

    def written(
        self, args: Mapping[str, Any], env_id: str | None, outputs: Mapping[str, Any]
    ) -> ChangePlan:
        shape = sql_shape(str(args["sql"]))
        count = counted_rows(outputs.get("count")) if "count" in outputs else None
        where = f" в {env_id}" if env_id else ""
        lines = (rows_line(shape.kind, shape.tables, count, shape.count_query is not None),)
        state = {
            "statement": shape.statement,
            "rows": rows_band(count) if count is not None else None,
        }
        return ChangePlan(f"SQL{where}: {shape.kind}", lines, state, statement=shape.statement)

    def unread(self, args: Mapping[str, Any], env_id: str | None, why: str) -> ChangePlan:
        """The statement is known without a read; its count is then unknown."""
        known = self.written(args, env_id, {})
        return ChangePlan(known.title, known.lines, None, unread_line(why), known.statement)
