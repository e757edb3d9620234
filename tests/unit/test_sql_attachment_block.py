"""What the model reads of a `.sql` file whose text the parser cannot take or ends in a comment.

The block describes the file with the SQL classifier's verdict (docs/attachments.md): a statement
nested too deep is described as SQL that does not parse, and a comment after the last semicolon
is no statement.
"""

from __future__ import annotations

from sstools_agent.domain.attachment_content import read_attachment_blocks, text_block
from sstools_agent.domain.attachments import AttachmentInfo


def sql_block(sql: str) -> dict[str, object]:
    info = AttachmentInfo("0" * 32, "report.sql", "application/sql", len(sql.encode()))
    (read,) = read_attachment_blocks(text_block(info, sql))
    classification: dict[str, object] = read["classification"]
    return classification


def test_a_file_nested_too_deep_is_described_as_sql_that_does_not_parse():
    nested = "SELECT " + "(" * 50 + "1" + ")" * 50 + ";\n"
    classification = sql_block(nested * 3)
    assert classification["operation"] == "write"
    assert (classification["statement_count"], classification["statements"]) == (0, [])
    assert classification["destructive"] is True
    assert "does not parse: nested deeper than" in str(classification["detail"])


def test_a_file_ending_in_a_comment_is_its_statements_only():
    sql = "SELECT day, sum(kwh) FROM energy_readings GROUP BY day;\n-- посчитано за неделю\n"
    classification = sql_block(sql)
    assert classification["operation"] == "read"
    assert (classification["statement_count"], classification["statements"]) == (1, ["SELECT"])
    classification = sql_block("SELECT 1; /* черновик */")
    assert (classification["operation"], classification["statement_count"]) == ("read", 1)
