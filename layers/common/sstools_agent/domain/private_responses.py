"""What an answer that carries one user's data tells caches and browsers (docs/rest-api.md).

The history, a kept tool output and a download link (a bearer URL for its 5 minutes) are one
user's: no shared cache or browser disk may keep them (`no-store`), and the API's own answers are
never read as another type than they declare (`nosniff`). The presigned download S3 serves says
`no-store` too; S3's response overrides have no `nosniff` (docs/attachments.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

NO_STORE: Final = "no-store"
"""The `Cache-Control` of a private answer, the API's and the presigned download's."""
PRIVATE_RESPONSE_HEADERS: Final[Mapping[str, str]] = MappingProxyType(
    {"Cache-Control": NO_STORE, "X-Content-Type-Options": "nosniff"}
)
"""The headers of the REST API's private answers."""
