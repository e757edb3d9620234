"""The HTTP edge both functions share: error bodies and the refusal table, authentication,
observability. Handlers are routes plus encoding; what a request does lives in chat/ and rest/."""
