"""Which functions a read may call: the per-dialect allow-list of side-effect-free functions.

A SELECT can change the world through what it calls (`pg_terminate_backend`, `dblink_exec`,
`nextval`, `lo_unlink`, `set_config`, `query_to_xml('DELETE …')`), so the classifier counts a query
as a read only when every function it calls is listed here. Anything not listed — an unknown name,
a user-defined function, any schema-qualified call — makes it a write, which needs a card. Adding a
function is a deliberate act: it must neither change data, state, the session nor the server, nor
read files, nor reach other servers, nor run SQL given as text.

Two kinds of entry, because sqlglot gives two kinds of node:
- `names`: functions called by name, as written (lower case, unqualified). The classifier reads the
  name from the SQL text itself, so an entry means exactly what an analyst types in that dialect.
- `syntax`: nodes sqlglot builds from syntax rather than a name call — `CAST`, `CASE`, `EXTRACT`,
  `ARRAY[…]`, `CURRENT_DATE`, and the special forms its parser reads itself (`SUBSTRING(… FROM …)`,
  `TRIM(BOTH …)`, `string_agg`, `json_agg`, …). Operators (`->>`, `@>`, `~`, `^`, `AND`) are binary
  nodes and never call a function by name, so they are side-effect free in every dialect.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from sqlglot import exp


@dataclass(frozen=True, slots=True)
class SafeFunctions:
    """The side-effect-free functions of one dialect."""

    names: frozenset[str]
    syntax: frozenset[type[exp.Func]]

    def allows_name(self, written: str) -> bool:
        """Whether a call written as `written` (unqualified, as in the SQL text) is harmless."""
        return written.lower() in self.names

    def allows_syntax(self, node: exp.Func) -> bool:
        """Whether a node built from syntax (no name was written) is harmless."""
        return isinstance(node, exp.Binary) or type(node) in self.syntax

    def extended(
        self, names: Iterable[str], syntax: Iterable[type[exp.Func]] = ()
    ) -> SafeFunctions:
        """This list plus a dialect's own functions."""
        return SafeFunctions(self.names | frozenset(names), self.syntax | frozenset(syntax))


def _names(*groups: str) -> frozenset[str]:
    """Whitespace-separated names, grouped by kind so a reviewer sees what each line adds."""
    return frozenset(name for group in groups for name in group.split())


# Functions with the same side-effect-free meaning in every SQL dialect sqlglot reads.
STANDARD_FUNCTIONS: Final = SafeFunctions(
    names=_names(
        """
        count sum avg min max stddev stddev_pop stddev_samp variance var_pop var_samp
        corr covar_pop covar_samp regr_slope regr_intercept regr_count regr_r2 regr_avgx regr_avgy
        regr_sxx regr_syy regr_sxy percentile_cont percentile_disc array_agg
        row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value
        nth_value
        coalesce nullif greatest least
        lower upper trim ltrim rtrim substring substr char_length character_length octet_length
        length position replace concat
        abs ceil ceiling floor round mod power sqrt exp ln log log10 sign
        now current_date current_time current_timestamp localtime localtimestamp
        """
    ),
    syntax=frozenset(
        {
            exp.Cast,
            exp.Case,
            exp.If,  # the WHEN branches of a CASE
            exp.Extract,
            exp.Exists,
            exp.Array,
            exp.CurrentDate,
            exp.CurrentTime,
            exp.CurrentTimestamp,
            exp.Localtime,
            exp.Localtimestamp,
            exp.CurrentUser,
            exp.CurrentRole,
            exp.SessionUser,
            exp.CurrentSchema,
            exp.CurrentCatalog,
            exp.Substring,
            exp.Trim,
            exp.StrPosition,
            exp.Overlay,
            exp.Normalize,
            exp.Ceil,
            exp.Floor,
        }
    ),
)

_POSTGRES: Final = STANDARD_FUNCTIONS.extended(
    names=_names(
        """
    bool_and bool_or every bit_and bit_or bit_xor string_agg mode grouping
    json_agg jsonb_agg json_object_agg jsonb_object_agg
    num_nulls num_nonnulls
    date_trunc date_part date_bin age to_char to_date to_timestamp to_number
    make_date make_time make_timestamp make_timestamptz make_interval
    justify_days justify_hours justify_interval isfinite timezone
    clock_timestamp statement_timestamp transaction_timestamp timeofday
    initcap btrim lpad rpad left right strpos translate concat_ws repeat reverse split_part
    starts_with ascii chr to_hex encode decode format quote_ident quote_literal quote_nullable
    md5 sha224 sha256 sha384 sha512 bit_length unistr
    regexp_replace regexp_match regexp_matches regexp_split_to_array regexp_split_to_table
    regexp_count regexp_instr regexp_like regexp_substr string_to_array array_to_string
    trunc cbrt pi degrees radians sin cos tan asin acos atan atan2 cot sinh cosh tanh
    width_bucket div gcd lcm factorial scale random
    to_json to_jsonb row_to_json array_to_json json_build_object jsonb_build_object
    json_build_array jsonb_build_array json_object jsonb_object
    json_array_length jsonb_array_length json_typeof jsonb_typeof
    json_each json_each_text jsonb_each jsonb_each_text
    json_array_elements json_array_elements_text jsonb_array_elements jsonb_array_elements_text
    json_object_keys jsonb_object_keys
    json_extract_path json_extract_path_text jsonb_extract_path jsonb_extract_path_text
    json_strip_nulls jsonb_strip_nulls jsonb_set jsonb_insert jsonb_pretty
    jsonb_path_query jsonb_path_query_array jsonb_path_query_first jsonb_path_exists
    jsonb_path_match
    array_length cardinality array_position array_positions array_remove array_replace
    array_append array_prepend array_cat array_dims array_lower array_upper array_fill
    unnest generate_series generate_subscripts
    current_database version pg_typeof pg_size_pretty gen_random_uuid
    """
    ),
    syntax={
        exp.Chr,
        exp.Decode,
        exp.Initcap,
        exp.GroupConcat,  # string_agg(… ORDER BY …)
        exp.JSONArrayAgg,  # json_agg(…)
        exp.JSONObject,
        exp.JSONObjectAgg,
        exp.JSONBExists,
        exp.Unnest,
    },
)

SAFE_FUNCTIONS: Final[Mapping[str, SafeFunctions]] = MappingProxyType({"postgres": _POSTGRES})
"""The allow-list, one row per sqlglot dialect name; a dialect without a row gets the standard."""


def safe_functions(dialect: str) -> SafeFunctions:
    """The allow-list for `dialect` (the standard functions when it has no row of its own)."""
    return SAFE_FUNCTIONS.get(dialect.lower(), STANDARD_FUNCTIONS)
