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
