"""The one poller (pulse/polling.py): it returns the first accepted value, and a timeout names what was awaited and
shows the last value seen."""

from __future__ import annotations

import itertools

import pytest

from pulse.errors import PulseError
from pulse.polling import PollTimeout, poll
from pulse.ports import wait_until


def test_poll_returns_the_first_value_accepted() -> None:
    counter = itertools.count()
    assert poll(lambda: next(counter), lambda n: n >= 3, 5, "three", interval_s=0) == 3


def test_a_timeout_names_what_and_shows_the_last_value_seen() -> None:
    counter = itertools.count()
    with pytest.raises(PollTimeout) as caught:
        poll(lambda: {"seen": next(counter)}, lambda _: False, 0.05, "the impossible", interval_s=0.01)
    assert isinstance(caught.value, PulseError)
    assert str(caught.value).startswith("the impossible not reached after 0.05 s; last seen: {'seen': ")
    assert isinstance(caught.value.last, dict) and caught.value.last["seen"] >= 1  # fetched again at the deadline


def test_a_long_last_value_is_cut_in_the_message_but_kept_whole() -> None:
    with pytest.raises(PollTimeout) as caught:
        poll(lambda: "x" * 10_000, lambda _: False, 0, "short", interval_s=0)
    assert len(str(caught.value)) == 2000 and caught.value.last == "x" * 10_000


def test_wait_until_is_the_same_poll_answering_true_or_false() -> None:
    assert wait_until(lambda: True, 0)
    assert not wait_until(lambda: False, 0.02, interval_s=0.01)
