"""`make screenshots`: the pictures in docs/page.md, taken by the browser tests themselves.

Runs the browser tests that reach each state (the real local stack, Debian's Chromium) and copies
the screenshot each takes of that state to docs/screenshots/, so the docs show what the tests saw
and asserted, never a picture made by hand."""

from __future__ import annotations

import shutil
import subprocess
import sys
from typing import Final, NamedTuple

from local.browser import ARTIFACTS, ROOT

BROWSER_TESTS: Final = "tests/integration/browser"
DOCS: Final = ROOT / "docs" / "screenshots"


class Shot(NamedTuple):
    module: str
    test: str
    state: str
    """The state's name in that test's `screenshot(...)` call."""
    name: str
    """The picture's name under docs/screenshots/."""


SHOTS: Final = (
    Shot(
        "test_page_conversations.py",
        "test_a_new_conversation_greets_with_questions_for_the_page_and_the_role",
        "greeting-desktop",
        "greeting-desktop",
    ),
    Shot(
        "test_page_context.py",
        "test_a_dashboard_page_answers_about_that_dashboard_with_dashboard_tools",
        "dashboard-answer",
        "answer-desktop",
    ),
    Shot(
        "test_page_words.py",
        "test_what_can_you_do_lists_the_tools_in_words",
        "capabilities-in-words",
        "capabilities-desktop",
    ),
    Shot(
        "test_page_cards.py",
        "test_an_admins_prod_deploy_shows_the_destructive_production_card",
        "card-destructive",
        "card-destructive-desktop",
    ),
    Shot(
        "test_page_cards.py",
        "test_an_edit_the_card_covers_runs_once_with_the_edited_input",
        "edit-form",
        "card-edit-desktop",
    ),
    Shot(
        "test_page_resilience.py",
        "test_a_failed_read_offers_retry_which_runs_that_read_again",
        "read-retry-offered",
        "read-failed-desktop",
    ),
    Shot(
        "test_page_context.py",
        "test_a_link_whose_object_was_dropped_says_so_and_what_the_agent_sees",
        "link-object-dropped",
        "link-dropped-desktop",
    ),
    Shot(
        "test_page_layout.py",
        "test_on_a_phone_the_header_is_short_and_the_history_is_a_drawer",
        "phone-card",
        "card-phone",
    ),
    Shot(
        "test_page_layout.py",
        "test_on_a_phone_the_header_is_short_and_the_history_is_a_drawer",
        "phone-drawer",
        "drawer-phone",
    ),
    Shot(
        "test_page_conversations.py",
        "test_on_a_phone_the_greeting_and_the_rows_fit",
        "list-phone",
        "conversations-phone",
    ),
)


def main() -> int:
    tests = sorted({f"{BROWSER_TESTS}/{shot.module}::{shot.test}" for shot in SHOTS})
    pytest = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", *tests]
    if subprocess.run(pytest, check=False).returncode != 0:  # noqa: S603 (our own interpreter)
        return 1
    DOCS.mkdir(parents=True, exist_ok=True)
    for shot in SHOTS:
        taken = sorted(ARTIFACTS.glob(f"{shot.test}-*-{shot.state}.png"))
        if not taken:
            print(f"{shot.test} took no screenshot named {shot.state}", file=sys.stderr)
            return 1
        shutil.copyfile(taken[-1], DOCS / f"{shot.name}.png")
        print(f"docs/screenshots/{shot.name}.png  <- {taken[-1].name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
