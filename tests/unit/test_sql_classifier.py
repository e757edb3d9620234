"""SQL read/write classification by parsing (sqlglot), conservative by default."""

from __future__ import annotations

import inspect
import sys

import pytest

from sstools_agent.domain.catalog_types import Operation
from sstools_agent.domain.sql_classifier import (
    MAX_SQL_BRACKET_NESTING,
    MAX_SQL_NESTING,
    MAX_SQL_SUBSCRIPT_CHAIN,
    SqlClassification,
    classify_sql,
)
from sstools_agent.domain.sql_functions import SAFE_FUNCTIONS, STANDARD_FUNCTIONS

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


# A SELECT is a read only when every function it calls is on the dialect's allow-list: each of
# these calls something with a side effect (or something the list does not know) and is a write.
DANGEROUS_CALLS = [
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'bob'",
    "SELECT pg_cancel_backend(4242)",
    "SELECT dblink_exec('host=db dbname=prod', 'DELETE FROM energy_readings')",
    "SELECT * FROM dblink('host=db', 'DELETE FROM t RETURNING 1') AS r(x int)",
    "SELECT dblink_connect('host=db')",
    "SELECT set_config('search_path', 'evil', false)",
    "SELECT nextval('orders_id_seq')",
    "SELECT setval('orders_id_seq', 1)",
    "SELECT lo_unlink(16400)",
    "SELECT lo_import('/etc/passwd')",
    "SELECT lo_export(16400, '/tmp/x')",
    "SELECT lo_from_bytea(0, 'x')",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT pg_read_binary_file('global/pg_control')",
    "SELECT * FROM pg_ls_dir('.')",
    "SELECT pg_file_write('x', 'y', false)",
    "SELECT query_to_xml('DELETE FROM t RETURNING 1', true, false, '')",
    "SELECT pg_reload_conf()",
    "SELECT pg_rotate_logfile()",
    "SELECT pg_stat_reset()",
    "SELECT pg_advisory_lock(42)",
    "SELECT pg_sleep(600)",  # holds a connection for ten minutes
    "SELECT pg_create_restore_point('x')",
    "SELECT pg_switch_wal()",
    "SELECT pg_drop_replication_slot('slot')",
    "SELECT pg_logical_emit_message(true, 'x', 'y')",
    "SELECT txid_current()",  # assigns a transaction id
    "SELECT refresh_everything()",  # a user-defined function: unknown, so a write
    "SELECT my_schema.my_func(a) FROM t",
    "SELECT public.refresh_all()",
    # schema-qualified, quoted or upper-cased spellings of the same calls
    "SELECT pg_catalog.pg_terminate_backend(pid) FROM pg_stat_activity",
    "SELECT pg_catalog.set_config('x', 'y', false)",
    "SELECT * FROM pg_catalog.pg_ls_dir('.')",
    'SELECT "pg_terminate_backend"(1)',
    'SELECT "public"."evil"()',
    "SELECT PG_TERMINATE_BACKEND(1)",
    "SELECT pg_catalog.lower(a) FROM t",  # qualified calls are never on the list
    # wherever the call sits in the query
    "SELECT a FROM t WHERE set_config('x', 'y', false) IS NOT NULL",
    "SELECT a FROM t ORDER BY pg_advisory_xact_lock(1)",
    "SELECT count(*) FILTER (WHERE pg_cancel_backend(1)) FROM t",
    "SELECT (SELECT nextval('s'))",
    "WITH x AS (SELECT pg_terminate_backend(1)) SELECT * FROM x",
    "SELECT lower(a) FROM t UNION SELECT lo_unlink(1)::text",
    "SELECT * FROM ROWS FROM (generate_series(1, 2), pg_ls_dir('.'))",
    "SELECT 1 OPERATOR(public.###) 2",  # a user-defined operator runs its function
    "SELECT 1; SELECT pg_terminate_backend(1)",
    "EXPLAIN ANALYZE SELECT pg_terminate_backend(1)",  # runs the query
    "EXPLAIN SELECT evil_immutable(1)",  # the planner may evaluate an immutable function
]

# Statements with side effects that are not SELECTs; each is a write (most already were).
STATEMENT_WRITES = [
    "CALL refresh()",
    "DO $$ BEGIN DELETE FROM t; END $$",
    "LOCK TABLE t IN ACCESS EXCLUSIVE MODE",
    "SET ROLE admin",
    "SET LOCAL statement_timeout = 0",
    "RESET ALL",
    "VACUUM FULL t",
    "ANALYZE t",
    "LISTEN chan",
    "NOTIFY chan, 'x'",
    "UNLISTEN *",
    "PREPARE q AS DELETE FROM t",
    "EXECUTE q",
    "DEALLOCATE q",
    "DISCARD ALL",
    "CHECKPOINT",
    "CLUSTER t",
    "REINDEX TABLE t",
    "REFRESH MATERIALIZED VIEW mv",
    "COMMENT ON TABLE t IS 'x'",
    "DECLARE c CURSOR FOR SELECT 1",
    "BEGIN",
    "COMMIT",
    "ALTER SYSTEM SET work_mem = '1GB'",
    "COPY (SELECT 1) TO STDOUT",
    "COPY t TO '/tmp/t.csv'",
    "SELECT * FROM t FOR SHARE",
    "SELECT * FROM t FOR NO KEY UPDATE SKIP LOCKED",
    "SELECT * FROM t FOR KEY SHARE",
    "WITH u AS (UPDATE t SET a = 1 RETURNING *) SELECT * FROM u",
    "WITH i AS (INSERT INTO t VALUES (1) RETURNING *) SELECT * FROM i",
    "SELECT 1 INTO TEMP x",
    "CREATE TABLE x AS SELECT 1",
    "EXPLAIN (ANALYZE, BUFFERS) UPDATE t SET a = 1",
    "EXPLAIN EXECUTE q",
]

# What analysts and Superset charts really run: every function here is side-effect free.
HARMLESS_QUERIES = [
    "SELECT DATE_TRUNC('day', ts) AS __timestamp, SUM(kwh) AS \"SUM(kwh)\" FROM energy_readings"
    " WHERE ts >= '2026-11-01' AND ts < '2026-12-01' GROUP BY DATE_TRUNC('day', ts)"
    ' ORDER BY "SUM(kwh)" DESC LIMIT 10000',
    "SELECT COUNT(*) AS count FROM (SELECT * FROM energy_readings WHERE kwh > 100)"
    " AS virtual_table LIMIT 1000 OFFSET 0",
    "SELECT count(DISTINCT object_id), avg(kwh), min(kwh), max(kwh), sum(kwh) FROM energy_readings",
    "SELECT stddev(kwh), stddev_samp(kwh), variance(kwh), var_pop(kwh),"
    " percentile_cont(0.5) WITHIN GROUP (ORDER BY kwh),"
    " percentile_disc(0.9) WITHIN GROUP (ORDER BY kwh), mode() WITHIN GROUP (ORDER BY kwh)"
    " FROM energy_readings",
    "SELECT to_char(ts, 'YYYY-MM'), to_date('2026-01-01', 'YYYY-MM-DD'),"
    " to_timestamp('2026', 'YYYY'), to_timestamp(1700000000), to_number('12', '99') FROM t",
    "SELECT extract(epoch FROM ts), date_part('dow', ts), age(ts), age(ts, ts2) FROM t",
    "SELECT now(), current_date, current_timestamp, localtimestamp, clock_timestamp(),"
    " statement_timestamp(), transaction_timestamp()",
    "SELECT date_trunc('week', now() - interval '7 days')::date, now()::date",
    "SELECT (now() AT TIME ZONE 'Europe/Moscow')::time, timezone('UTC', ts) FROM t",
    "SELECT make_date(2026, 1, 1), make_interval(days => 1), justify_days(interval '35 days'),"
    " date_bin('15 minutes', ts, timestamp '2026-01-01'), isfinite(ts) FROM t",
    "SELECT lower(name), upper(name), initcap(name), length(name), char_length(name),"
    " octet_length(name) FROM t",
    "SELECT trim(name), trim(BOTH 'x' FROM name), ltrim(name), rtrim(name), btrim(name),"
    " substring(name FROM 1 FOR 3), substr(name, 1, 3), left(name, 2), right(name, 2) FROM t",
    "SELECT position('a' IN name), strpos(name, 'a'), replace(name, 'a', 'b'),"
    " translate(name, 'ab', 'cd'), overlay(name PLACING 'x' FROM 1 FOR 1) FROM t",
    "SELECT concat(a, b), concat_ws(',', a, b), a || b, lpad(name, 5, '0'), rpad(name, 5),"
    " repeat('x', 3), reverse(name) FROM t",
    "SELECT split_part(name, '-', 1), regexp_replace(name, 'a', 'b'), regexp_matches(name, 'a'),"
    " regexp_split_to_array(name, ','), string_to_array(name, ',') FROM t",
    "SELECT md5(name), format('%s', name), quote_ident(name), starts_with(name, 'a'), to_hex(255),"
    " chr(65), ascii(name) FROM t",
    "SELECT abs(v), round(v, 2), ceil(v), ceiling(v), floor(v), trunc(v), sqrt(v), power(v, 2),"
    " exp(v), ln(v), log(v), log10(v), mod(v, 2), sign(v), pi(), width_bucket(v, 0, 100, 10),"
    " div(9, 2), random() FROM t",
    "SELECT greatest(a, b), least(a, b), nullif(a, 0), coalesce(a, 0), num_nulls(a, b) FROM t",
    "SELECT CASE WHEN a > 0 THEN 'pos' WHEN a < 0 THEN 'neg' ELSE 'zero' END,"
    " CAST(a AS numeric(10, 2)), a::text, a::varchar(10) FROM t",
    "SELECT row_number() OVER (PARTITION BY a ORDER BY b), rank() OVER w, dense_rank() OVER w,"
    " percent_rank() OVER w, cume_dist() OVER w, ntile(4) OVER w FROM t WINDOW w AS (ORDER BY b)",
    "SELECT lag(b) OVER w, lead(b, 1, 0) OVER w, first_value(b) OVER w, last_value(b) OVER w,"
    " nth_value(b, 2) OVER w,"
    " sum(b) OVER (ORDER BY c ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    " FROM t WINDOW w AS (ORDER BY b)",
    "SELECT json_build_object('a', a), jsonb_build_object('a', a), json_build_array(1, 2),"
    " to_json(a), to_jsonb(a), row_to_json(t) FROM t",
    "SELECT j -> 'a', j ->> 'a', j #> '{a}', j #>> '{a,b}', j @> '{\"a\": 1}', j ? 'a' FROM t",
    "SELECT json_agg(a), jsonb_agg(a), json_object_agg(k, v), jsonb_object_agg(k, v) FROM t",
    "SELECT e.value, kv.key FROM t, jsonb_array_elements(t.j) AS e, jsonb_each(t.j) AS kv,"
    " json_each_text(t.j) AS jt",
    "SELECT jsonb_extract_path_text(j, 'a'), json_extract_path_text(j, 'a'),"
    " json_array_length(j), jsonb_typeof(j), jsonb_path_query_first(j, '$.a') FROM t",
    "SELECT array_agg(a ORDER BY a), string_agg(a, ',' ORDER BY a), bool_and(f), bool_or(f),"
    " count(*) FILTER (WHERE f) FROM t",
    "SELECT u.x, g.n FROM t, unnest(t.arr) AS u(x), generate_series(1, 3) AS g(n)"
    " WHERE array_length(t.arr, 1) > 0 AND cardinality(t.arr) < 9"
    " AND array_to_string(t.arr, ',') <> ''",
    "SELECT generate_series(date '2026-01-01', date '2026-02-01', interval '1 day')::date AS day",
    "SELECT a, b, grouping(a, b), sum(v) FROM t GROUP BY ROLLUP (a), CUBE (b)",
    "SELECT a FROM t GROUP BY GROUPING SETS ((a), ())",
    "SELECT DISTINCT ON (a) a, b FROM t ORDER BY a, b DESC NULLS LAST",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r",
    "SELECT a FROM t LEFT JOIN LATERAL (SELECT max(b) AS m FROM u WHERE u.a = t.a) AS l ON true",
    "SELECT a FROM t INTERSECT SELECT a FROM u EXCEPT SELECT a FROM v",
    "SELECT EXISTS (SELECT 1), a = ANY(ARRAY[1, 2]), a IN (SELECT b FROM u), a BETWEEN 1 AND 2,"
    " a ILIKE 'x%', a ~ 'x', a !~* 'y', a SIMILAR TO 'z', a IS DISTINCT FROM b FROM t",
    "SELECT current_user, session_user, current_schema, current_database(), version()",
    "SELECT a COLLATE \"C\", date '2026-01-01', timestamp '2026-01-01 00:00', interval '1 day',"
    " x IS TRUE, E'\\n' FROM t",
    "SELECT corr(a, b), covar_pop(a, b), regr_slope(a, b), 2 ^ 3, a % 2 FROM t",
    "EXPLAIN SELECT date_trunc('day', ts), count(*) FROM energy_readings GROUP BY 1",
    "EXPLAIN ANALYZE SELECT lower(name), coalesce(a, 0) FROM t",
    "SELECT * FROM t TABLESAMPLE SYSTEM (10)",
    "TABLE energy_readings",
]


@pytest.mark.parametrize("sql", DANGEROUS_CALLS)
def test_a_select_calling_a_function_off_the_allow_list_is_a_write(sql):
    result = classify_sql(sql)
    assert result.operation is Operation.WRITE, result
    assert result.parsed is True, result  # it is understood, and refused for what it calls


@pytest.mark.parametrize("sql", STATEMENT_WRITES)
def test_statements_with_side_effects_are_writes(sql):
    assert classify_sql(sql).operation is Operation.WRITE


@pytest.mark.parametrize("sql", HARMLESS_QUERIES)
def test_analyst_queries_calling_only_harmless_functions_stay_reads(sql):
    result = classify_sql(sql)
    assert result.operation is Operation.READ, result
    assert result.unsafe_functions == ()


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ("SELECT pg_terminate_backend(pid) FROM pg_stat_activity", ("pg_terminate_backend",)),
        ("SELECT pg_catalog.pg_terminate_backend(1)", ("pg_catalog.pg_terminate_backend",)),
        ("SELECT * FROM public.f(1) AS x", ("public.f",)),
        ("SELECT lower(a), nextval('s'), setval('s', 1) FROM t", ("nextval", "setval")),
        ("SELECT nextval('a'), nextval('b')", ("nextval",)),
    ],
)
def test_the_classification_names_the_calls_that_made_it_a_write(sql, named):
    result = classify_sql(sql)
    assert result.unsafe_functions == named
    assert all(name in result.detail for name in named)


def test_a_dialect_without_its_own_row_gets_only_the_standard_functions():
    # date_trunc is Postgres's; count and lower mean the same everywhere
    assert classify_sql("SELECT count(*), lower(a) FROM t", "mysql").operation is Operation.READ
    assert classify_sql("SELECT sleep(10)", "mysql").operation is Operation.WRITE
    assert classify_sql("SELECT load_file('/etc/passwd')", "mysql").operation is Operation.WRITE


def test_every_dialect_row_holds_the_standard_functions():
    for dialect, allowed in SAFE_FUNCTIONS.items():
        assert STANDARD_FUNCTIONS.names <= allowed.names, dialect


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


# --- Nesting: a statement too deep to parse is unparsable SQL, never an error ------------------


def nested(depth: int, opening: str, inner: str, closing: str) -> str:
    return "SELECT " + opening * depth + inner + closing * depth


NESTINGS = {
    "parentheses": ("(", "1", ")"),
    "case": ("CASE WHEN a = 1 THEN ", "1", " END"),
    "subqueries": ("(SELECT * FROM ", "t", ") AS x"),
    "function calls": ("abs(", "1", ")"),
    "arrays": ("ARRAY[", "1", "]"),
    "window calls": ("sum(", "1", ") OVER ()"),
}


@pytest.mark.parametrize("depth", [50, 121, 10_000])
@pytest.mark.parametrize("shape", NESTINGS.values(), ids=list(NESTINGS))
def test_sql_nested_too_deep_to_parse_is_an_unparsable_write(shape, depth):
    result = classify_sql(nested(depth, *shape))
    assert result.operation is Operation.WRITE
    assert (result.parsed, result.destructive, result.statement_kinds) == (False, True, ())
    assert "nested" in result.detail


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT " + "(" * 60 + "1" + ")" * 60 + "; DELETE FROM t",
        "SELECT 1; SELECT " + "(" * 60 + "1" + ")" * 60,
        "SELECT * FROM t WHERE a IN " + "(SELECT a FROM t WHERE a IN " * 130 + "(1)" + ")" * 130,
    ],
)
def test_deep_nesting_anywhere_in_the_text_is_unparsable(sql):
    result = classify_sql(sql)
    assert (result.operation, result.parsed) == (Operation.WRITE, False)


@pytest.mark.parametrize(
    "sql",
    [
        "EXPLAIN SELECT " + "(" * 60 + "1" + ")" * 60,
        "EXPLAIN ANALYZE SELECT " + "CASE WHEN a = 1 THEN " * 60 + "1" + " END" * 60,
    ],
)
def test_explain_of_a_statement_too_deep_to_parse_is_a_write(sql):
    # as EXPLAIN of any statement that does not parse: the EXPLAIN parses, what it plans not
    assert classify_sql(sql).operation is Operation.WRITE


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT " + "NOT a = " * 300 + "true",  # no brackets: the parser still recurses
        "SELECT " + "- " * 2000 + "1",
    ],
)
def test_recursion_the_nesting_bound_does_not_count_is_still_unparsable(sql):
    result = classify_sql(sql)
    assert (result.operation, result.parsed) == (Operation.WRITE, False)


def test_a_statement_that_exhausts_the_callers_stack_is_unparsable_not_an_error():
    # The bound keeps the parser within the stack that callers leave; if a caller leaves less,
    # the verdict is still a verdict.
    def at_depth(frames: int) -> SqlClassification:
        return at_depth(frames - 1) if frames else classify_sql(nested(10, "(", "1", ")"))

    here = len(inspect.stack(0))
    result = at_depth(sys.getrecursionlimit() - here - 40)
    assert (result.operation, result.parsed) == (Operation.WRITE, False)


@pytest.mark.parametrize("shape", NESTINGS.values(), ids=list(NESTINGS))
def test_nesting_within_the_bound_keeps_its_classification(shape):
    depth = MAX_SQL_BRACKET_NESTING if shape[0].endswith("[") else MAX_SQL_NESTING
    assert classify_sql(nested(depth, *shape)).operation is Operation.READ
    assert classify_sql(nested(depth + 1, *shape)).parsed is False


@pytest.mark.parametrize("subscript", ["[1]", "[1:2]", "[i]"])
def test_a_chain_of_subscripts_past_the_bound_is_unparsable_before_the_parser_runs(
    subscript: str,
):
    # sqlglot's work grows with the square of the chain: 3 KB of `[1]` took seconds
    def chained(count: int) -> str:
        return " ".join(["SELECT", "x" + subscript * count, "FROM t"])

    assert classify_sql(chained(MAX_SQL_SUBSCRIPT_CHAIN)).operation is Operation.READ
    past = classify_sql(chained(5000))
    assert (past.operation, past.parsed) == (Operation.WRITE, False)
    assert "subscripts in a row" in past.detail


def test_everyday_nesting_reads():
    sql = (
        "SELECT day, CASE WHEN kwh > (SELECT avg(kwh) FROM (SELECT kwh FROM energy_readings "
        "WHERE day > now() - interval '7 days') AS w) THEN 'high' ELSE 'low' END AS level, "
        "ARRAY[ARRAY[1, 2], ARRAY[3, 4]] AS m, coalesce(round((kwh * (1 + (0.2))), 2), 0) "
        "FROM energy_readings WHERE id IN (SELECT id FROM energy_readings WHERE kwh > 0)"
    )
    assert classify_sql(sql).operation is Operation.READ


# --- Comments: a comment after the last statement is no statement ------------------------------


@pytest.mark.parametrize(
    ("sql", "kinds"),
    [
        ("SELECT 1; /* note */", ("SELECT",)),
        ("SELECT 1;\n-- note", ("SELECT",)),
        ("SELECT 1; -- note\n", ("SELECT",)),
        ("SELECT 1 /* a */; -- b\n/* c */", ("SELECT",)),
        ("SELECT 1; /* x */ ; SELECT 2", ("SELECT", "SELECT")),
        ("SELECT 1; /* /* nested */ still one comment in postgres */", ("SELECT",)),
        ("SELECT 1; /* /* */ DELETE FROM t; */", ("SELECT",)),  # postgres: all of it a comment
        ("SELECT 1; /*! a note, not code, in postgres */", ("SELECT",)),
        ("SELECT E'\\'; DELETE FROM t; --'", ("SELECT",)),  # one string: \' escapes the quote
    ],
)
def test_a_comment_after_the_last_statement_is_no_statement(sql, kinds):
    result = classify_sql(sql)
    assert result.operation is Operation.READ, result
    assert result.statement_kinds == kinds


@pytest.mark.parametrize("sql", ["/* x */", "-- x", "; /* x */", "/* x */ ; /* y */", ";\n-- x"])
def test_a_text_of_comments_holds_no_statement(sql):
    result = classify_sql(sql)
    assert (result.operation, result.parsed) == (Operation.WRITE, False)
    assert result.detail == "SQL holds no statement"


@pytest.mark.parametrize(
    ("sql", "dialect"),
    [
        ("SELECT 1; /* x */ DELETE FROM t", "postgres"),
        ("SELECT 1; -- x\nDELETE FROM t", "postgres"),
        ("SELECT 1; /* /* */ */ DELETE FROM t", "postgres"),  # the nested comment is closed
        ("SELECT '/*'; DELETE FROM t; SELECT '*/'", "postgres"),
        ("SELECT '--'; DELETE FROM t", "postgres"),
        ('SELECT 1 AS "x;/*"; DELETE FROM t; /* */', "postgres"),
        ("SELECT $$ ; /* $$; DELETE FROM t; -- ", "postgres"),
        ("SELECT '\\'; DELETE FROM t; --'", "postgres"),  # standard strings: '\' is a string
        ("SELECT 1; /* /* */ DELETE FROM t; */", "mysql"),  # MySQL does not nest comments
    ],
)
def test_comments_cannot_hide_a_write(sql, dialect):
    result = classify_sql(sql, dialect)
    assert result.operation is Operation.WRITE, result
    assert "DELETE" in result.statement_kinds or not result.parsed


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1; /*! DELETE FROM t */",
        "SELECT 1 /*!50000 INTO OUTFILE '/tmp/x' */",
        "SELECT 1 /*M! , sleep(10) */",
    ],
)
def test_a_comment_mysql_runs_is_unparsable_there(sql):
    result = classify_sql(sql, "mysql")
    assert (result.operation, result.parsed) == (Operation.WRITE, False)
