"""The REST API's use cases (conversations, history, the multi-tab gate, service tokens) and the
shapes it speaks; `functions/api` only routes HTTP to them."""
