"""SQL read/write classification by parsing (sqlglot), conservative by default."""

from __future__ import annotations

import pytest

from sstools_agent.domain.catalog_types import Operation
from sstools_agent.domain.sql_classifier import classify_sql

READS = [
    "SELECT 1",
    "select id, title from dashboards where env = 'prod' order by id limit 10",
    "WITH recent AS (SELECT * FROM events WHERE ts > now() - interval '1 day') SELECT * FROM t",
    "SELECT a FROM t UNION ALL SELECT b FROM u",
    "EXPLAIN SELECT * FROM t",
    "EXPLAIN ANALYZE SELECT * FROM t",
    "EXPLAIN (FORMAT JSON) SELECT * FROM t",
    "EXPLAIN DELETE FROM t",  # plans only: nothing runs
    "SELECT 1; SELECT 2",
    "  select 1 ;  ",
]
WRITES = [
    "INSERT INTO t VALUES (1)",
    "UPDATE t SET a = 1 WHERE id = 2",
    "DELETE FROM t WHERE id = 1",
    "DROP TABLE t",
    "TRUNCATE t",
    "CREATE TABLE t (a int)",
    "ALTER TABLE t ADD COLUMN b int",
    "GRANT SELECT ON t TO analyst",
    "MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN DELETE",
    "COPY t FROM '/tmp/x.csv'",
    "SET search_path = evil",
    "SELECT 1; DROP TABLE t",  # a batch with any write is a write
    "WITH gone AS (DELETE FROM t RETURNING *) SELECT * FROM gone",  # data-modifying CTE
    "SELECT * INTO backup_t FROM t",  # creates a table
    "SELECT * FROM t FOR UPDATE",  # takes row locks
    "EXPLAIN ANALYZE DELETE FROM t",  # runs the delete
    "VACUUM",
    "CALL refresh_everything()",
    "SHOW search_path",  # not on the read list: conservative
]
UNPARSABLE = ["SELEC 1 FROM", "", "   ;  ", "DROP TABLE (", "SELECT * FROM t WHERE (a = 1"]


@pytest.mark.parametrize("sql", READS)
def test_reads(sql):
    result = classify_sql(sql)
    assert result.operation is Operation.READ, result
    assert result.destructive is False


@pytest.mark.parametrize("sql", WRITES)
def test_writes(sql):
    assert classify_sql(sql).operation is Operation.WRITE


@pytest.mark.parametrize("sql", UNPARSABLE)
def test_what_does_not_parse_is_a_write(sql):
    result = classify_sql(sql)
    assert result.operation is Operation.WRITE
    assert result.parsed is False
    assert result.destructive is True


@pytest.mark.parametrize(
    ("sql", "destructive"),
    [
        ("DROP TABLE t", True),
        ("TRUNCATE t", True),
        ("DELETE FROM t", True),
        ("UPDATE t SET a = 1", True),
        ("DELETE FROM t WHERE id = 1", False),
        ("INSERT INTO t VALUES (1)", False),
    ],
)
def test_destructive_statements_are_flagged(sql, destructive):
    assert classify_sql(sql).destructive is destructive


def test_statement_kinds_are_reported():
    result = classify_sql("SELECT 1; UPDATE t SET a = 1 WHERE b = 2")
    assert result.statement_kinds == ("SELECT", "UPDATE")
    assert result.statement_count == 2
