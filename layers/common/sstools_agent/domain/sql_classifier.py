"""Read or write? SQL is classified by parsing it (sqlglot), never by keywords.

The rule: SELECT, WITH ... SELECT and EXPLAIN are reads; anything else, a
batch containing any write, or text that does not parse, is a write. Inside a read, the tree is
searched for anything that changes state: a data-modifying CTE, SELECT ... INTO, row locks, and
any call of a function that is not on the dialect's allow-list (`sql_functions.py`): a SELECT
can end sessions, run SQL given as text or read server files through what it calls.

Text nested deeper than the parser can take, and comments a server would run, do not parse:
they are writes like any other text that does not parse, never an error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from sqlglot import Token, TokenType, exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import ParseError, SqlglotError

from sstools_agent.domain.catalog_types import DEFAULT_SQL_DIALECT, Operation
from sstools_agent.domain.sql_functions import SafeFunctions, safe_functions

DEFAULT_DIALECT: Final = DEFAULT_SQL_DIALECT
MAX_SQL_NESTING: Final = 24
"""Brackets and CASEs open at once. sqlglot's parser recurses 20-32 Python frames a level, so a
statement within it parses in at most some 800 frames, under Python's 1000 with the chat turn's
own 40 or so; deeper text does not parse (a write), and is refused before the parser runs."""
MAX_SQL_BRACKET_NESTING: Final = 8
"""`[` open at once: sqlglot tries `ARRAY[…]` and `int[…]` both ways, doubling its work a level."""
MAX_SQL_SUBSCRIPT_CHAIN: Final = 16
"""Subscripts in a row (`x[1][2]…`): sqlglot's work grows with the square of the chain (3 KB of
`[1]` took 5 s), and no query chains more than a few."""

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
    # statements sqlglot parses into their own nodes: writes, but understood (not "unparsed")
    exp.Analyze,
    exp.Comment,
    exp.Commit,
    exp.Rollback,
    exp.Declare,
    exp.Execute,
    exp.Kill,
    exp.Pragma,
    exp.Refresh,
    exp.Cache,
    exp.Uncache,
    exp.Export,
)
# What a statement's root may be; anything else (a bare expression) is not SQL we understand.
_STATEMENT_ROOTS: Final = (exp.Query, exp.Describe, exp.Use, exp.Transaction, *_WRITE_NODES)
# Statements that destroy data outright: a write of this kind earns a louder card outside prod.
_DESTRUCTIVE_NODES: Final = (exp.Drop, exp.TruncateTable)

# What opens a level of nesting, and what closes it.
_CLOSING: Final = {
    TokenType.L_PAREN: TokenType.R_PAREN,
    TokenType.L_BRACKET: TokenType.R_BRACKET,
    TokenType.L_BRACE: TokenType.R_BRACE,
    TokenType.CASE: TokenType.END,
}
_OPENING: Final = {closing: opening for opening, closing in _CLOSING.items()}
# MySQL and MariaDB run the text of `/*! … */` and `/*M! … */` as SQL.
_EXECUTABLE_COMMENT: Final = ("!", "M!")

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
    statement_writes: tuple[str, ...] = ()
    """Kinds of the statements that write by what they are (UPDATE, DROP, SELECT ... INTO)."""
    unsafe_functions: tuple[str, ...] = ()
    """Calls off the dialect's allow-list, as written (qualified ones with their schema)."""

    @property
    def statement_count(self) -> int:
        """How many statements the text holds."""
        return len(self.statement_kinds)


def _unparsable(detail: str) -> SqlClassification:
    return SqlClassification(Operation.WRITE, (), destructive=True, parsed=False, detail=detail)


def _check_tokens(tokens: list[Token], runs_comments: bool) -> None:
    """ParseError for text the parser must not see: nested past the bounds (it would exhaust
    the stack, or with brackets the CPU), or carrying a comment the server would run."""
    open_now = dict.fromkeys(_CLOSING, 0)
    chain, previous = 0, None
    for token in tokens:
        kind = token.token_type
        if kind is TokenType.L_BRACKET:
            chain = chain + 1 if previous is TokenType.R_BRACKET else 1
            if chain > MAX_SQL_SUBSCRIPT_CHAIN:
                raise ParseError(f"more than {MAX_SQL_SUBSCRIPT_CHAIN} subscripts in a row")
        previous = kind
        if kind in _CLOSING:
            open_now[kind] += 1
            if sum(open_now.values()) > MAX_SQL_NESTING:
                raise ParseError(f"nested deeper than {MAX_SQL_NESTING} levels")
            if open_now[TokenType.L_BRACKET] > MAX_SQL_BRACKET_NESTING:
                raise ParseError(f"brackets nested deeper than {MAX_SQL_BRACKET_NESTING} levels")
        elif (opening := _OPENING.get(kind)) is not None:
            # Counted apart, so a stray END or ) cannot hide the levels of another kind.
            open_now[opening] = max(open_now[opening] - 1, 0)
        if runs_comments and any(c.startswith(_EXECUTABLE_COMMENT) for c in token.comments):
            raise ParseError("a /*! */ comment, which the server runs as SQL")


def _parse(sql: str, dialect: str) -> list[exp.Expr]:
    """The statements of `sql`; SqlglotError when it does not parse.

    A comment after a semicolon comes back as a statement of its own (sqlglot keeps it to write
    it back); it runs nothing, so it is no statement here.
    """
    reader = Dialect.get_or_raise(dialect)
    tokens = reader.tokenize(sql)
    _check_tokens(tokens, runs_comments=isinstance(reader, MySQL))
    parsed = reader.parser().parse(tokens, sql)
    return [s for s in parsed if s is not None and not isinstance(s, exp.Semicolon)]


def parsed_statements(sql: str, dialect: str = DEFAULT_DIALECT) -> list[exp.Expr] | None:
    """The statements of `sql` under the same bounds as the classifier's; None when it does not
    parse (or holds something that is not a statement)."""
    try:
        statements = _parse(sql, dialect)
    except (SqlglotError, RecursionError):
        return None
    if not statements or not all(isinstance(s, _STATEMENT_ROOTS) for s in statements):
        return None
    return statements


@dataclass(frozen=True, slots=True)
class _Verdict:
    """What one statement does: writes by its kind, and/or calls functions off the list."""

    writes: bool
    calls: tuple[str, ...] = ()

    @property
    def reads(self) -> bool:
        return not self.writes and not self.calls


def _written_name(node: exp.Func, text: str) -> str | None:
    """The function name exactly as the SQL text spells it, or None for a node built from syntax.

    sqlglot records the name token's position on every call it parsed by name (typed or
    anonymous); `now()` becomes CurrentTimestamp, but the text still says `now`.
    """
    start, end = node.meta.get("start"), node.meta.get("end")
    if not isinstance(start, int) or not isinstance(end, int):
        return None
    return text[start : end + 1]


def _qualifier(node: exp.Func) -> str | None:
    """The schema (or catalog.schema) a call is qualified with: `pg_catalog.f()`, `FROM s.f()`."""
    parent = node.parent
    if isinstance(parent, exp.Dot) and parent.expression is node:
        qualifier: exp.Expr = parent.this
        return qualifier.sql()
    if isinstance(parent, exp.Table) and parent.this is node:
        parts = [parent.args.get("catalog"), parent.args.get("db")]
        named = [part.sql() for part in parts if isinstance(part, exp.Expr)]
        return ".".join(named) or None
    return None


def _unsafe_calls(statement: exp.Expr, text: str, allowed: SafeFunctions) -> Iterator[str]:
    for node in statement.walk():
        if isinstance(node, exp.Operator):  # OPERATOR(schema.op) runs the operator's function
            yield f"OPERATOR({node.args.get('operator')})"
            continue
        if not isinstance(node, exp.Func):
            continue
        written = _written_name(node, text)
        if written is None:
            if not allowed.allows_syntax(node):
                yield node.name if isinstance(node, exp.Anonymous) else node.sql_name().lower()
        elif (qualifier := _qualifier(node)) is not None:
            yield f"{qualifier}.{written}"  # the list names unqualified built-ins only
        elif not allowed.allows_name(written):
            yield written


def _judge(statement: exp.Expr, text: str, allowed: SafeFunctions, dialect: str) -> _Verdict:
    if isinstance(statement, exp.Command):
        return _judge_explain(statement, allowed, dialect)
    calls = tuple(dict.fromkeys(_unsafe_calls(statement, text, allowed)))
    if not isinstance(statement, exp.Query):
        return _Verdict(writes=True, calls=calls)
    for node in statement.walk():
        if isinstance(node, _WRITE_NODES):
            return _Verdict(writes=True, calls=calls)
        if isinstance(node, exp.Select) and (node.args.get("into") or node.args.get("locks")):
            return _Verdict(writes=True, calls=calls)
    return _Verdict(writes=False, calls=calls)


def _judge_explain(command: exp.Command, allowed: SafeFunctions, dialect: str) -> _Verdict:
    """EXPLAIN reads; EXPLAIN ANALYZE runs its statement, so it reads only when that does.

    Without ANALYZE nothing runs, but the planner may evaluate immutable functions while
    folding constants, so the calls of the planned statement must be harmless too.
    """
    if str(command.this).upper() != "EXPLAIN":
        return _Verdict(writes=True)
    rest = command.expression.name if isinstance(command.expression, exp.Literal) else ""
    options = _EXPLAIN_OPTIONS.match(rest)
    option_text = (options.group("parenthesised") or options.group("bare") or "") if options else ""
    inner_sql = rest[options.end() :] if options else rest
    try:
        inner = _parse(inner_sql, dialect)
    except SqlglotError:
        return _Verdict(writes=True)
    if len(inner) != 1:
        return _Verdict(writes=True)
    verdict = _judge(inner[0], inner_sql, allowed, dialect)
    if "ANALY" in option_text.upper():
        return verdict
    return _Verdict(
        writes=isinstance(inner[0], exp.Command) and verdict.writes, calls=verdict.calls
    )


def _describe(statement_writes: tuple[str, ...], calls: tuple[str, ...]) -> str:
    parts = [f"writes: {', '.join(statement_writes)}"] if statement_writes else []
    if calls:
        parts.append(f"calls functions off the allow-list: {', '.join(calls)}")
    return "; ".join(parts)


def classify_sql(sql: str, dialect: str = DEFAULT_DIALECT) -> SqlClassification:
    """Classifies a SQL text (one statement or a batch) as a read or a write."""
    try:
        return _classify(sql, dialect)
    except RecursionError:
        # The nesting bound keeps the parser within the stack callers leave; one that leaves
        # less, or recursion the bound does not count (NOT a = NOT b = …), still gets a verdict.
        return _unparsable("SQL does not parse: nested too deeply")


def _classify(sql: str, dialect: str) -> SqlClassification:
    try:
        statements = _parse(sql, dialect)
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
    allowed = safe_functions(dialect)
    verdicts = [_judge(s, sql, allowed, dialect) for s in statements]
    if all(verdict.reads for verdict in verdicts):
        return SqlClassification(Operation.READ, kinds, False, parsed=True, detail="read only")
    writes = [s for s, verdict in zip(statements, verdicts, strict=True) if not verdict.reads]
    destructive = any(
        isinstance(node, _DESTRUCTIVE_NODES)
        or (isinstance(node, (exp.Delete, exp.Update)) and not node.args.get("where"))
        for statement in writes
        for node in statement.walk()
    )
    calls = tuple(dict.fromkeys(call for verdict in verdicts for call in verdict.calls))
    statement_writes = tuple(
        kind for kind, verdict in zip(kinds, verdicts, strict=True) if verdict.writes
    )
    return SqlClassification(
        Operation.WRITE,
        kinds,
        destructive,
        parsed=True,
        detail=_describe(statement_writes, calls),
        statement_writes=statement_writes,
        unsafe_functions=calls,
    )
