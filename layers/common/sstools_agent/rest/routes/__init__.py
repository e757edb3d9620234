"""The REST API routes, one router per resource."""
