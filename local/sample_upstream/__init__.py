"""A sample ss-tools upstream: realistic seeded data, real JWT checks, state that writes change.

Used by the local stack and the tests in place of the real ss-tools API (docs/upstream-api.md).
"""
