"""How hard the property tests try: thoroughly in CI, quickly on a developer's machine.

`.ci/run` sets `CI` (as most CI services do); there the Hypothesis profile `ci` is loaded (300
examples a property) and SC-006's fuzzing test draws its full 10,000 malformed contexts (78 s).
Elsewhere (`make test` on a laptop) the profile `dev` draws 100 a property and SC-006 a tenth,
so the local suite stays quick; the examples drawn are the same kind. `tests/conftest.py` loads
the profile; a test that states its own `max_examples` keeps it in both.
"""

from __future__ import annotations

import os
from typing import Final

from hypothesis import settings

THOROUGH: Final = bool(os.environ.get("CI"))
"""Whether this run is CI's (the `CI` environment variable is set and not empty)."""

settings.register_profile("ci", max_examples=300, deadline=None)
settings.register_profile("dev", max_examples=100, deadline=None)
PROFILE: Final = "ci" if THOROUGH else "dev"


def examples(thorough: int) -> int:
    """The examples a test that states its own count draws: `thorough` in CI, a tenth of it (at
    least 100) elsewhere."""
    return thorough if THOROUGH else max(100, thorough // 10)
