"""The in-process bounds on anonymous callers: sampled auth-failure records, the failure limiter."""

from __future__ import annotations

from sstools_agent.domain.attempt_limits import AuthFailureSampler, FailureLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_the_sampler_admits_per_source_and_per_window_then_reports_the_rest():
    clock = Clock()
    sampler = AuthFailureSampler(per_source=2, per_window=3, window_s=60, clock=clock)
    admitted = [sampler.admit(source)[0] for source in ("a", "a", "a", "b", "c", "c")]
    assert admitted == [True, True, False, True, False, False]
    clock.now += 60
    fresh, closed = sampler.admit("a")
    assert fresh is True
    assert closed is not None
    assert (closed.suppressed, closed.sources, closed.window_s) == (3, 3, 60)
    assert sampler.admit("a") == (True, None)  # the summary is given once


def test_the_sampler_keeps_a_bounded_number_of_sources():
    sampler = AuthFailureSampler(per_source=1, per_window=10**6, clock=Clock(), max_sources=10)
    admitted = sum(sampler.admit(f"10.0.{n // 256}.{n % 256}")[0] for n in range(1000))
    assert admitted == 11  # ten sources, then one shared counter for the 990 others


def test_the_limiter_blocks_a_source_until_its_window_ends():
    clock = Clock()
    limiter = FailureLimiter(max_failures=2, window_s=300, clock=clock)
    limiter.failed("a")
    assert limiter.retry_after("a") is None
    limiter.failed("a")
    assert limiter.retry_after("a") == 300 - (clock.now % 300)
    assert limiter.retry_after("b") is None
    clock.now += 300
    assert limiter.retry_after("a") is None


def test_a_flood_of_sources_never_locks_out_a_source_that_did_not_fail():
    # Given a window whose every tracked place holds a refused source (one attacker's many)
    limiter = FailureLimiter(max_failures=2, clock=Clock(), max_sources=10)
    for n in range(25):
        for _ in range(2):
            limiter.failed(f"192.0.2.{n}")
    # Then a source that never failed may try (it once shared the flood's count and was refused)
    assert limiter.retry_after("198.51.100.7") is None
    # And so may one that fails once more than the window can track
    limiter.failed("198.51.100.8")
    assert limiter.retry_after("198.51.100.8") is None
    # While the refused ones it still tracks stay refused
    assert limiter.retry_after("192.0.2.0") is not None


def test_a_new_source_takes_the_place_of_one_not_refused():
    # Given a full window: one refused source and others that failed once
    limiter = FailureLimiter(max_failures=2, clock=Clock(), max_sources=3)
    limiter.failed("192.0.2.1")
    limiter.failed("192.0.2.1")
    limiter.failed("192.0.2.2")
    limiter.failed("192.0.2.3")
    # When new sources fail until they are refused
    for _ in range(2):
        limiter.failed("192.0.2.4")
        limiter.failed("192.0.2.5")
    # Then they are refused, and so is the first: the places of the unrefused ones were taken
    assert all(limiter.retry_after(f"192.0.2.{n}") for n in (1, 4, 5))


def test_an_ipv6_caller_is_one_source_across_its_prefix_and_a_mapped_ipv4_is_its_ipv4():
    limiter = FailureLimiter(max_failures=3, clock=Clock())
    for n in range(1, 4):
        limiter.failed(f"2001:db8:1:2::{n:x}")  # one /64, three addresses
    assert limiter.retry_after("2001:db8:1:2:ffff::1") is not None
    assert limiter.retry_after("2001:db8:1:3::1") is None  # another /64
    limiter.failed("::ffff:203.0.113.9")
    limiter.failed("203.0.113.9")
    limiter.failed("::FFFF:203.0.113.9")
    assert limiter.retry_after("203.0.113.9") is not None
