"""The shared layer of the ss-tools agent chat: the policy domain and the adapters around it.

`sstools_agent.domain` is pure (no AWS, no HTTP, no environment reads); `sstools_agent.adapters`
holds the code that talks to the outside world; `sstools_agent.settings` reads configuration once.
"""
