"""The local stack's demo users and their tokens (HS256 with the local-only secret)."""

from __future__ import annotations

import sys
from typing import Final

from sstools_agent.settings import Settings
from sstools_agent.tokens import user_token_issuer_from

DEMO_USERS: Final = {
    "analyst": "anna.analyst",
    "engineer": "egor.engineer",
    "admin": "alla.admin",
    "second_admin": "boris.admin",
}
"""Demo users by the name a script or the page signs in with; `second_admin` is a second
person with the admin role, who approves what `admin` asked for (PROD_APPROVERS=2)."""
DEMO_ROLES: Final = {"second_admin": "admin"}
"""A demo user's role where it is not the user's name."""
TOKEN_TTL_S: Final = 12 * 3600


def demo_role(user: str) -> str:
    """The ss-tools role of the demo user `user`."""
    return DEMO_ROLES.get(user, user)


def demo_token(user: str, settings: Settings | None = None) -> str:
    """A user JWT for the demo user `user` (a role's name, or `second_admin`), valid 12 hours."""
    issuer = user_token_issuer_from(settings or Settings())
    return issuer.issue(DEMO_USERS[user], TOKEN_TTL_S, {"roles": [demo_role(user)]}).token


def main(argv: list[str]) -> int:
    role = argv[1] if len(argv) > 1 else "engineer"
    if role not in DEMO_USERS:
        print(f"unknown role {role!r}; choose one of: {', '.join(DEMO_USERS)}", file=sys.stderr)  # noqa: T201
        return 2
    print(demo_token(role))  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
