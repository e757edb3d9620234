"""Read or write? SQL is classified by parsing it (sqlglot), never by keywords.

The rule (design.md, issue 2): SELECT, WITH ... SELECT and EXPLAIN are reads; anything else, a
batch containing any write, or text that does not parse, is a write. Inside a read, the tree is
searched for anything that changes state: a data-modifying CTE, SELECT ... INTO, row locks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from sstools_agent.domain.catalog_types import Operation

DEFAULT_DIALECT: Final = "postgres"

# Nodes that change data, schema, privileges or session state wherever they appear in a tree.
_WRITE_NODES: Final = (
    exp.Insert,
    exp.Update,
    exp.Delete,
    exp.Merge,
    exp.Create,
    exp.Drop,
    exp.Alter,
    exp.TruncateTable,
    exp.Copy,
    exp.Set,
    exp.Grant,
    exp.Command,
    exp.Into,
    exp.Lock,
)
# What a statement's root may be; anything else (a bare expression) is not SQL we understand.
_STATEMENT_ROOTS: Final = (exp.Query, exp.Describe, exp.Use, exp.Transaction, *_WRITE_NODES)
# Statements that destroy data outright: a write of this kind earns a louder card outside prod.
_DESTRUCTIVE_NODES: Final = (exp.Drop, exp.TruncateTable)

_EXPLAIN_OPTIONS: Final = re.compile(
    r"^\s*(?:\((?P<parenthesised>[^)]*)\)|(?P<bare>(?:(?:ANALYZE|ANALYSE|VERBOSE)\s+)*))",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class SqlClassification:
    """What a SQL text would do."""

    operation: Operation
    statement_kinds: tuple[str, ...]
    destructive: bool
    parsed: bool
    detail: str

    @property
    def statement_count(self) -> int:
        """How many statements the text holds."""
        return len(self.statement_kinds)


def _unparsable(detail: str) -> SqlClassification:
    return SqlClassification(Operation.WRITE, (), destructive=True, parsed=False, detail=detail)


def _is_read_statement(statement: exp.Expr, dialect: str) -> bool:
    if isinstance(statement, exp.Command):
        return _is_read_explain(statement, dialect)
    if not isinstance(statement, exp.Query):
        return False
    for node in statement.walk():
        if isinstance(node, _WRITE_NODES):
            return False
        if isinstance(node, exp.Select) and (node.args.get("into") or node.args.get("locks")):
            return False
    return True


def _is_read_explain(command: exp.Command, dialect: str) -> bool:
    """EXPLAIN reads; EXPLAIN ANALYZE runs its statement, so it reads only when that does."""
    if str(command.this).upper() != "EXPLAIN":
        return False
    rest = command.expression.name if isinstance(command.expression, exp.Literal) else ""
    options = _EXPLAIN_OPTIONS.match(rest)
    option_text = (options.group("parenthesised") or options.group("bare") or "") if options else ""
    inner_sql = rest[options.end() :] if options else rest
    try:
        inner = [s for s in sqlglot.parse(inner_sql, read=dialect) if s is not None]
    except SqlglotError:
        return False
    if len(inner) != 1:
        return False
    analyses = "ANALY" in option_text.upper()
    return _is_read_statement(inner[0], dialect) or (
        not analyses and not isinstance(inner[0], exp.Command)
    )


def classify_sql(sql: str, dialect: str = DEFAULT_DIALECT) -> SqlClassification:
    """Classifies a SQL text (one statement or a batch) as a read or a write."""
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except SqlglotError as error:
        return _unparsable(f"SQL does not parse: {str(error).splitlines()[0]}")
    if not statements:
        return _unparsable("SQL holds no statement")
    if not all(isinstance(s, _STATEMENT_ROOTS) for s in statements):
        # e.g. "SELEC x" parses as the bare expression `SELEC AS x`: not a statement at all.
        return _unparsable("SQL is not a statement")
    kinds = tuple(
        str(s.this).upper() if isinstance(s, exp.Command) else type(s).__name__.upper()
        for s in statements
    )
    writes = [s for s in statements if not _is_read_statement(s, dialect)]
    destructive = any(
        isinstance(node, _DESTRUCTIVE_NODES)
        or (isinstance(node, (exp.Delete, exp.Update)) and not node.args.get("where"))
        for statement in writes
        for node in statement.walk()
    )
    if writes:
        return SqlClassification(
            Operation.WRITE,
            kinds,
            destructive,
            parsed=True,
            detail=f"writes: {', '.join(kinds)}",
        )
    return SqlClassification(Operation.READ, kinds, False, parsed=True, detail="read only")
