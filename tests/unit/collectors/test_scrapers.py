"""The scrape schedule's bookkeeping: a failure withholds values but keeps the last success time and counts."""

from __future__ import annotations

from collectors.scrapers import PeriodicScraper
from collectors.transport import JmxTimeout


def test_failure_withholds_values_and_keeps_last_success() -> None:
    outcomes: list[object] = [{"a": 1}, JmxTimeout("broker 2: no answer in 1 s"), {"a": 2}]
    clock = iter([100.0, 200.0, 300.0])

    def scrape() -> object:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    scraper = PeriodicScraper("test", scrape, interval_s=60, clock=lambda: next(clock))
    first = scraper.scrape_once()
    assert (first.ok, first.value, first.last_success_s) == (True, {"a": 1}, 100.0)
    second = scraper.scrape_once()
    assert (second.ok, second.value, second.last_success_s, second.reason) == (False, None, 100.0, "timeout")
    assert scraper.failures.by_reason == {"timeout": 1}
    third = scraper.scrape_once()
    assert (third.ok, third.value, third.last_success_s) == (True, {"a": 2}, 300.0)
    assert scraper.wait_for(lambda r: r.ok, timeout_s=0.1) is third
