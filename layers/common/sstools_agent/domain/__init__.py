"""Pure policy domain: UI context, tool catalog, role policy, affinity, guardrails, summaries."""
