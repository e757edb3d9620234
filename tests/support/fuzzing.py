"""How hard the property tests try: thoroughly in CI, quickly on a developer's machine.

`.ci/run` sets `CI` (as most CI services do); there a fuzzing test draws its full number of
examples (SC-006's fuzzing test: 10,000 malformed contexts, 78 s). Elsewhere (`make test` on a
laptop) it draws a tenth, so the local suite stays quick; the examples it draws are the same kind.
"""

from __future__ import annotations

import os
from typing import Final

THOROUGH: Final = bool(os.environ.get("CI"))
"""Whether this run is CI's (the `CI` environment variable is set and not empty)."""


def examples(thorough: int) -> int:
    """The examples a property test draws: `thorough` in CI, a tenth of it (at least 100)
    elsewhere."""
    return thorough if THOROUGH else max(100, thorough // 10)
