"""Bounds on what anonymous callers can make the service do: audit records of failed
authentication, and attempts at the service-token endpoint.

Both count per source (the caller's address) in fixed windows, in this process: on Lambda that
is per container, so a fleet of N containers allows N times the figures (documented in
docs/configuration.md). The state is small and bounded (at most `max_sources` sources a window);
nothing here needs storage, and a cold start forgets, which errs towards letting callers in.
"""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

MAX_SOURCES: Final = 10_000
OVERFLOW_SOURCE: Final = "(other sources)"
"""Where the audit sampler counts sources beyond `max_sources` in one window together."""
IPV6_PREFIX: Final = 64
"""An IPv6 caller holds at least a /64: its addresses count as one source."""


def counted_source(address: str) -> str:
    """The source an address counts as: an IPv4-mapped IPv6 address as its IPv4 one, any other
    IPv6 address as its /64 (a caller rotating addresses in its own prefix stays one source);
    what is no address ("unknown") as itself."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, IPV6_PREFIX), strict=False))
    return str(ip)


@dataclass(frozen=True, slots=True)
class ClosedWindow:
    """What a window that ended left unrecorded: the figure for the aggregate audit record."""

    started_at: float
    """Epoch seconds."""
    window_s: float
    suppressed: int
    sources: int


class _Windows:
    """Counts per source in the current fixed window (locked: sync endpoints run in threads)."""

    def __init__(self, window_s: float, clock: Callable[[], float], max_sources: int) -> None:
        self.window_s = window_s
        self._clock = clock
        self.max_sources = max_sources
        self.lock = threading.Lock()
        self._started = self._window_start(clock())
        self.counts: dict[str, int] = {}

    def _window_start(self, now: float) -> float:
        return math.floor(now / self.window_s) * self.window_s

    def key(self, source: str) -> str:
        """The counter `source` counts in (the shared overflow one when the window is full)."""
        if source in self.counts or len(self.counts) < self.max_sources:
            return source
        return OVERFLOW_SOURCE

    def roll(self, now: float) -> tuple[float, dict[str, int]] | None:
        """Starts a new window when the current one ended; the old one's start and counts."""
        start = self._window_start(now)
        if start == self._started:
            return None
        closed = (self._started, self.counts)
        self._started, self.counts = start, {}
        return closed

    def seconds_left(self, now: float) -> int:
        return max(1, math.ceil(self._started + self.window_s - now))


DEFAULT_AUDIT_PER_SOURCE: Final = 5
DEFAULT_AUDIT_PER_WINDOW: Final = 100
DEFAULT_AUDIT_WINDOW_S: Final = 60.0
DEFAULT_MAX_FAILURES: Final = 5
DEFAULT_FAILURE_WINDOW_S: Final = 300.0


class AuthFailureSampler:
    """Which failed authentications get their own audit record: at most `per_source` a source
    and `per_window` in all, each window; the rest are counted and reported once, as one
    aggregate record, when their window has ended (with the next failure)."""

    def __init__(
        self,
        *,
        per_source: int = DEFAULT_AUDIT_PER_SOURCE,
        per_window: int = DEFAULT_AUDIT_PER_WINDOW,
        window_s: float = DEFAULT_AUDIT_WINDOW_S,
        clock: Callable[[], float] = time.time,
        max_sources: int = MAX_SOURCES,
    ) -> None:
        self._windows = _Windows(window_s, clock, max_sources)
        self._clock = clock
        self._per_source = per_source
        self._per_window = per_window
        self._recorded = 0
        self._suppressed = 0

    def admit(self, source: str) -> tuple[bool, ClosedWindow | None]:
        """Whether this failure gets a record; and the window that just ended, if it left
        failures unrecorded."""
        windows = self._windows
        with windows.lock:
            now = self._clock()
            closed = windows.roll(now)
            summary = None
            if closed is not None:
                if self._suppressed:
                    summary = ClosedWindow(
                        closed[0], windows.window_s, self._suppressed, len(closed[1])
                    )
                self._recorded = self._suppressed = 0
            key = windows.key(counted_source(source))
            seen = windows.counts.get(key, 0) + 1
            windows.counts[key] = seen
            admitted = seen <= self._per_source and self._recorded < self._per_window
            if admitted:
                self._recorded += 1
            else:
                self._suppressed += 1
            return admitted, summary


class FailureLimiter:
    """Refuses a source that failed `max_failures` times in the current window until it ends.

    The window tracks at most `max_sources` sources. A new source in a full window takes the
    place of the oldest one not refused; when every one tracked is refused, a new source is not
    tracked (it may try): a flood of sources never makes others share its count, which would
    lock every caller out, the chat function's own token requests included."""

    def __init__(
        self,
        *,
        max_failures: int = DEFAULT_MAX_FAILURES,
        window_s: float = DEFAULT_FAILURE_WINDOW_S,
        clock: Callable[[], float] = time.time,
        max_sources: int = MAX_SOURCES,
    ) -> None:
        self._windows = _Windows(window_s, clock, max_sources)
        self._clock = clock
        self._max_failures = max_failures

    def retry_after(self, source: str) -> int | None:
        """Seconds until `source` may try again; None when it may try now."""
        windows = self._windows
        with windows.lock:
            now = self._clock()
            windows.roll(now)
            if windows.counts.get(counted_source(source), 0) < self._max_failures:
                return None
            return windows.seconds_left(now)

    def failed(self, source: str) -> None:
        """Counts one failed attempt of `source`."""
        windows = self._windows
        with windows.lock:
            windows.roll(self._clock())
            key = self._tracked(counted_source(source))
            if key is not None:
                windows.counts[key] = windows.counts.get(key, 0) + 1

    def _tracked(self, source: str) -> str | None:
        """`source`, given a place in the window; None when every place holds a refused one."""
        counts = self._windows.counts
        if source in counts or len(counts) < self._windows.max_sources:
            return source
        for tracked, failures in counts.items():
            if failures < self._max_failures:
                del counts[tracked]  # iteration ends here
                return source
        return None
