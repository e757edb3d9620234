"""Each function's composition: its settings in, its collaborators out, built once.

`build_chat`, `build_api` and `build_audit` are plain constructors over the `*_from(settings)`
constructors of `wiring.adapters`; a function's module-level app (its import) is the one instance
per container. Tests build the same deps and swap single collaborators with `dataclasses.replace`.
"""
