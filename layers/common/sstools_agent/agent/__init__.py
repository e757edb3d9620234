"""The agent runtime: LangChain v1 agent, policy middleware, models, event mapping."""
