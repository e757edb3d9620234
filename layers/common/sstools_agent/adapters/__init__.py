"""Adapters: HTTP and AWS access behind small interfaces, so tests can swap them."""
