"""The agent's tools, declared by area; `sstools_agent.domain.tool_catalog` assembles them.

Each module holds its area's argument models and `TOOLS`, the declarations (`ToolSpec`) with every
fact about a tool: schema, upstream call, roles, affinity, routing keywords and examples, the page
object it describes and its intent tags. Adding a tool means a
declaration here, its endpoint in the sample upstream, its queries in the labelled routing set and
its rows in the docs' tables; tests/integration/test_tool_catalog_reach.py names what is missing.
"""
