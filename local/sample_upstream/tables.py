"""The sample upstream's tables, as far as a plan needs them: each dataset's table holds the rows
`id` 1…`row_count`; a `SELECT count(*)` over one, and a DELETE of one, are evaluated on `id`
(comparisons with whole numbers, BETWEEN, IN, AND, OR, NOT), so a card's count is the rows the
DELETE then removes, and what the next count says. A count over another
table is answered as any read; a condition this sample cannot evaluate is refused (400).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

from sstools_agent.domain.sql_classifier import parsed_statements

Rows = set[int]
Predicate = Callable[[int], bool]


class NotEvaluated(Exception):
    """A statement or condition this sample does not evaluate."""


def table_rows(datasets: dict[int, dict[str, Any]]) -> dict[str, Rows]:
    """Each dataset's table (`schema.table`), with its rows' ids."""
    return {
        f"{d['schema']}.{d['table_name']}": set(range(1, int(d["row_count"]) + 1))
        for d in datasets.values()
    }


def _number(node: exp.Expr) -> int:
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
        return int(node.this)
    if isinstance(node, exp.Neg):
        return -_number(node.this)
    raise NotEvaluated(node.sql())


def _is_id(node: exp.Expr) -> bool:
    return isinstance(node, exp.Column) and node.name.lower() == "id"


_COMPARISONS: dict[type[exp.Expr], Callable[[int, int], bool]] = {
    exp.LT: lambda a, b: a < b,
    exp.LTE: lambda a, b: a <= b,
    exp.GT: lambda a, b: a > b,
    exp.GTE: lambda a, b: a >= b,
    exp.EQ: lambda a, b: a == b,
    exp.NEQ: lambda a, b: a != b,
}


def _predicate(node: exp.Expr) -> Predicate:
    if isinstance(node, exp.Paren):
        return _predicate(node.this)
    if isinstance(node, exp.And | exp.Or):
        left, right = _predicate(node.this), _predicate(node.expression)
        every = isinstance(node, exp.And)
        return lambda i: (left(i) and right(i)) if every else (left(i) or right(i))
    if isinstance(node, exp.Not):
        inner = _predicate(node.this)
        return lambda i: not inner(i)
    if isinstance(node, exp.Between) and _is_id(node.this):
        low, high = _number(node.args["low"]), _number(node.args["high"])
        return lambda i: low <= i <= high
    if isinstance(node, exp.In) and _is_id(node.this) and node.expressions:
        values = {_number(value) for value in node.expressions}
        return lambda i: i in values
    compare = _COMPARISONS.get(type(node))
    if compare is not None and _is_id(node.this):
        bound = _number(node.expression)
        return lambda i: compare(i, bound)
    raise NotEvaluated(node.sql())


def _table(statement: exp.Expr, tables: dict[str, Rows]) -> Rows | None:
    """The rows of the one table `statement` names (unqualified: the one of that name)."""
    table = statement.find(exp.Table)
    if table is None:
        return None
    if table.db:
        return tables.get(f"{table.db}.{table.name}")
    named = [rows for name, rows in tables.items() if name.split(".")[-1] == table.name]
    return named[0] if len(named) == 1 else None


def _kept(statement: exp.Expr) -> Predicate:
    where = statement.args.get("where")
    return _predicate(where.this) if where is not None else (lambda _: True)


def counted(sql: str, tables: dict[str, Rows]) -> int | None:
    """The rows a `SELECT count(*) FROM <table> [WHERE …]` counts; None for any other read."""
    statements = parsed_statements(sql)
    if statements is None or len(statements) != 1:
        return None
    select = statements[0]
    if not isinstance(select, exp.Select) or not isinstance(
        select.expressions[0] if select.expressions else None, exp.Count
    ):
        return None
    rows = _table(select, tables)
    if rows is None:
        return None  # not a dataset's table: answered as any other read
    keep = _kept(select)
    return sum(1 for i in rows if keep(i))


def deleted(sql: str, tables: dict[str, Rows]) -> int:
    """Runs one DELETE on its table; the rows it removed. (An UPDATE is not evaluated: the
    sample answers it with 3 rows, as the labelled evaluation set expects.)"""
    statements = parsed_statements(sql)
    if statements is None or len(statements) != 1:
        raise NotEvaluated("one statement")
    statement = statements[0]
    if not isinstance(statement, exp.Delete):
        raise NotEvaluated(type(statement).__name__)
    rows = _table(statement, tables)
    if rows is None:
        raise NotEvaluated("not a dataset's table")
    keep = _kept(statement)
    touched = {i for i in rows if keep(i)}
    rows -= touched
    return len(touched)
