"""The agent's tools, declared by area; `sstools_agent.domain.tool_catalog` assembles them.

Each module holds its area's argument models and `TOOLS`, the declarations (`ToolSpec`) with every
fact about a tool: schema, upstream call, roles, affinity, routing keywords and examples, the page
object it describes, its intent tags and the offline model's choice. Adding a tool means adding a
declaration here (and its endpoint to the sample upstream, its queries to the labelled routing set).
"""
