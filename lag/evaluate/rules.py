"""The partition rules, pure: Burrow v1.9.5's, Debian Burrow 1.2.1's, and ours (`enhanced`).

Each rule set takes one partition's window (oldest first) and the broker-offset history, and returns the `Rule`
that fired, which gives the status (`RULE_STATUS`) and the reason text (`explain`). These scalar functions are the
readable reference; `columnar/rules.py` applies the same rules to many partitions at once and is tested against them.
Source: Burrow's `core/internal/evaluator/caching.go` at both tags (docs/burrow-compat.md: the modes' differences and
the Burrow issues `enhanced` answers). Burrow's rule numbers are kept in the predicate docstrings. Clock note: Burrow
compares against `time.Now().Unix()` seconds times 1000, so the burrow modes floor `now_ms` to a whole second.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lag.evaluate.timelag import hwm_at, waiting_since_ms
from lag.protocol import Mode, Status
from lag.store.windows import NO_LAG


@dataclass(frozen=True, slots=True)
class RuleParams:
    """The rules' inputs from the `lag:` settings, in the rules' units (`lag.service.rule_params` derives them; no
    defaults here, so they cannot drift from the config's); the names follow Burrow's config keys."""

    mode: Mode
    intervals: int
    """Commits per window (Burrow storage `intervals`); also how many broker samples the burrow rules consult."""
    allowed_lag: int
    """Lag at or below this counts as zero (Burrow >= 1.3.7 `allowed-lag`; ignored by burrow-1.2)."""
    minimum_complete: float
    """Windows filled less than this are OK without checking rules (Burrow `minimum-complete`)."""
    offset_refresh_ms: int
    """HWM poll interval; enhanced STOP waits at least `intervals x offset_refresh` (the warm-up)."""
    marker_allowance: int = 1
    """Enhanced: a lag this small with no record produced since the last commit is a transaction marker."""


@dataclass(frozen=True, slots=True)
class Window:
    """One partition's inputs: its commit window and HWM history, oldest first."""

    offsets: Sequence[int]
    timestamps_ms: Sequence[int]
    lags: Sequence[int]
    """Lag at ingest per commit; `NO_LAG` (-1) when unknown."""
    hwm_offsets: Sequence[int]
    hwm_times_ms: Sequence[int]
    current_lag: int


# -- Burrow's predicates ---------------------------------------------------------------------------------------------


def is_lag_always_not_zero(lags: Sequence[int], allowed_lag: int) -> bool:
    """Rule 1: a stored lag at or below the allowance anywhere in the window makes the period OK."""
    return not any(lag != NO_LAG and lag <= allowed_lag for lag in lags)


def rewind_index(offsets: Sequence[int]) -> int:
    """Rule 2: index of the first commit lower than its predecessor, -1 if none."""
    for i in range(1, len(offsets)):
        if offsets[i] < offsets[i - 1]:
            return i
    return -1


def is_rewind_recovered(offsets: Sequence[int], index: int) -> bool:
    """Rule 2, part 2 (Burrow HEAD, Burrow PR #716): a later commit reached the offset from before the rewind."""
    return any(o >= offsets[index - 1] for o in offsets[index:])


def is_stopped(timestamps_ms: Sequence[int], now_ms: int) -> bool:
    """Rule 3: time since the last commit strictly exceeds the span of the window's commit timestamps."""
    return now_ms - timestamps_ms[-1] > timestamps_ms[-1] - timestamps_ms[0]


def is_stalled(offsets: Sequence[int]) -> bool:
    """Rule 4: every commit in the window has the same offset."""
    return all(o == offsets[0] for o in offsets)


def is_lag_not_decreasing(lags: Sequence[int]) -> bool:
    """Rule 5 (HEAD): the known lags never strictly decrease from one commit to the next."""
    previous = NO_LAG
    for lag in lags:
        if lag == NO_LAG:
            continue
        if previous != NO_LAG and lag < previous:
            return False
        previous = lag
    return True


def is_recent_lag_zero(last_offset: int, broker_offsets: Sequence[int]) -> bool:
    """The broker grace: some HWM sample in the ring is at or below the last commit (caught up recently)."""
    return any(b <= last_offset for b in broker_offsets)


# -- Rule sets -------------------------------------------------------------------------------------------------------


class Rule(enum.IntEnum):
    """Which branch decided a partition: what the scalar rule sets below return and what `columnar/rules.py` returns
    as a uint8 array. `RULE_STATUS` gives the status, `explain` the reason text; both are shared by the two paths."""

    NO_COMMIT = 0
    """A placeholder partition the group never committed (evaluator, all modes)."""
    MINIMUM_COMPLETE = 1
    """Window filled less than minimum-complete: OK without rules (evaluator, all modes)."""
    CAUGHT_UP = 2
    """burrow: current lag <= allowed-lag."""
    CAUGHT_UP_ZERO = 3
    """burrow-1.2: current lag 0."""
    STOP = 4
    """burrow, burrow-1.2: rule 3 and no broker grace."""
    REWIND_UNRECOVERED = 5
    """burrow: rule 2 with Burrow PR #716's recovery check."""
    REWIND_ANY = 6
    """burrow-1.2: any rewind, inside the lag-never-zero block."""
    STALL = 7
    WARN = 8
    LAG_DECREASED = 9
    LAG_ZERO = 10
    E1_CAUGHT_UP = 11
    E1_MARKER = 12
    E2_STOP = 13
    E3_REWIND = 14
    E4_WARM_UP = 15
    E5_STALL = 16
    E5_WARN = 17
    E5_DECREASED = 18
    E5_REACHED = 19


RULE_STATUS: dict[Rule, Status] = {
    **{rule: Status.OK for rule in Rule},
    Rule.STOP: Status.STOP,
    Rule.E2_STOP: Status.STOP,
    Rule.REWIND_UNRECOVERED: Status.REWIND,
    Rule.REWIND_ANY: Status.REWIND,
    Rule.E3_REWIND: Status.REWIND,
    Rule.STALL: Status.STALL,
    Rule.E5_STALL: Status.STALL,
    Rule.WARN: Status.WARN,
    Rule.E5_WARN: Status.WARN,
}
"""The status each rule gives."""


def burrow_rule(w: Window, now_ms: int, p: RuleParams) -> Rule:
    """Burrow v1.9.5 `calculatePartitionStatus`: lag allowance, STOP, unrecovered REWIND, then STALL/WARN."""
    now_ms -= now_ms % 1000
    if w.current_lag <= p.allowed_lag:
        return Rule.CAUGHT_UP
    broker = w.hwm_offsets[-p.intervals :]
    if is_stopped(w.timestamps_ms, now_ms) and not is_recent_lag_zero(w.offsets[-1], broker):
        return Rule.STOP
    index = rewind_index(w.offsets)
    if index > 0 and not is_rewind_recovered(w.offsets, index):
        return Rule.REWIND_UNRECOVERED
    if is_lag_always_not_zero(w.lags, p.allowed_lag):
        if is_stalled(w.offsets):
            return Rule.STALL
        if is_lag_not_decreasing(w.lags):
            return Rule.WARN
        return Rule.LAG_DECREASED
    return Rule.LAG_ZERO


def burrow12_rule(w: Window, now_ms: int, p: RuleParams) -> Rule:
    """Burrow 1.2.1: no allowance, and any rewind (recovered or not) counts, inside the lag-never-zero block."""
    now_ms -= now_ms % 1000
    if w.current_lag <= 0:
        return Rule.CAUGHT_UP_ZERO
    if is_stopped(w.timestamps_ms, now_ms) and not is_recent_lag_zero(w.offsets[-1], w.hwm_offsets[-p.intervals :]):
        return Rule.STOP
    if is_lag_always_not_zero(w.lags, 0):
        if rewind_index(w.offsets) > 0:
            return Rule.REWIND_ANY
        if is_stalled(w.offsets):
            return Rule.STALL
        if all(w.lags[i] >= w.lags[i - 1] for i in range(1, len(w.lags))):
            return Rule.WARN
        return Rule.LAG_DECREASED
    return Rule.LAG_ZERO


def enhanced_rule(w: Window, now_ms: int, p: RuleParams) -> Rule:
    """Ours: Burrow's order with lag against fresh HWMs, idle-aware STOP, a warm-up and marker awareness.

    - E1 caught up: current lag <= allowance; or <= allowance + marker_allowance with no record produced since
      the last commit (the gap is a transaction marker, which no consumer ever commits past);
    - E2 STOP only when records have waited longer than the window span (at least `intervals x offset_refresh`,
      the warm-up): a quiet topic is idle, not stopped, and a new group is not stopped after one commit;
    - E3 REWIND as Burrow HEAD (unrecovered only);
    - E4 fewer than two commits: too early to judge STALL or WARN (warm-up);
    - E5 STALL/WARN on lags recomputed against the HWM interpolated at each commit's time, so a stale HWM
      sample cannot hide lag (Burrow #101, #155).
    """
    if w.current_lag <= p.allowed_lag:
        return Rule.E1_CAUGHT_UP
    if w.current_lag <= p.allowed_lag + p.marker_allowance and _nothing_produced_since(w, w.timestamps_ms[-1]):
        return Rule.E1_MARKER
    waited, threshold, _, _ = _waiting(w, now_ms, p)
    if waited > threshold:
        return Rule.E2_STOP
    index = rewind_index(w.offsets)
    if index > 0 and not is_rewind_recovered(w.offsets, index):
        return Rule.E3_REWIND
    if len(w.offsets) < 2:
        return Rule.E4_WARM_UP
    lags = fresh_lags(w)
    if is_lag_always_not_zero(lags, p.allowed_lag):
        if is_stalled(w.offsets):
            return Rule.E5_STALL
        if is_lag_not_decreasing(lags):
            return Rule.E5_WARN
        return Rule.E5_DECREASED
    return Rule.E5_REACHED


def _waiting(w: Window, now_ms: int, p: RuleParams) -> tuple[int, int, int, int]:
    """E2's figures: (records waited ms, threshold ms, window span ms, warm-up ms)."""
    last_offset, last_ts = w.offsets[-1], w.timestamps_ms[-1]
    span = last_ts - w.timestamps_ms[0]
    warm_up = p.intervals * p.offset_refresh_ms
    waited = now_ms - max(last_ts, waiting_since_ms(last_offset, last_ts, w.hwm_offsets, w.hwm_times_ms))
    return waited, max(span, warm_up), span, warm_up


def explain(rule: Rule, w: Window, now_ms: int, p: RuleParams) -> str:
    """The reason text for a rule that fired on this window: which rule, on which values."""
    if rule is Rule.NO_COMMIT:
        return "no commit from this group on this partition"
    if rule is Rule.MINIMUM_COMPLETE:
        complete = 1.0 if len(w.offsets) >= p.intervals else len(w.offsets) / p.intervals
        return f"window {complete:.0%} filled < minimum-complete {p.minimum_complete:g}"
    n, last_offset = len(w.offsets), w.offsets[-1]
    if rule is Rule.CAUGHT_UP:
        return f"current lag {w.current_lag} <= allowed {p.allowed_lag}"
    if rule is Rule.CAUGHT_UP_ZERO:
        return "current lag 0"
    if rule is Rule.STOP:
        return _stop_reason(w, now_ms - now_ms % 1000)
    if rule is Rule.REWIND_UNRECOVERED or rule is Rule.REWIND_ANY:
        index = rewind_index(w.offsets)  # only a rewind's text reads it: a scan of the window
        recovered = " and never recovered" if rule is Rule.REWIND_UNRECOVERED else ""
        return f"offset went back {w.offsets[index - 1]} -> {w.offsets[index]}{recovered}"
    if rule is Rule.STALL:
        return f"offset stuck at {last_offset} for {n} commits with lag"
    if rule is Rule.WARN:
        return f"lag never decreased over {n} commits: {_lags(w.lags)}"
    if rule is Rule.LAG_DECREASED:
        return "lag decreased within the window"
    if rule is Rule.LAG_ZERO:
        return "lag was zero within the window"
    if rule is Rule.E1_CAUGHT_UP:
        return f"E1 caught up: lag {w.current_lag} <= allowed {p.allowed_lag}"
    if rule is Rule.E1_MARKER:
        return f"E1 caught up: lag {w.current_lag} is a transaction marker (no record since the commit)"
    waited, threshold, span, warm_up = _waiting(w, now_ms, p)
    if rule is Rule.E2_STOP:
        return (
            f"E2 STOP: no commit for {(now_ms - w.timestamps_ms[-1]) / 1000:g} s while records waited "
            f"{waited / 1000:g} s > {threshold / 1000:g} s (window span {span / 1000:g} s, "
            f"warm-up {warm_up / 1000:g} s)"
        )
    if rule is Rule.E3_REWIND:
        index = rewind_index(w.offsets)
        return f"E3 offset went back {w.offsets[index - 1]} -> {w.offsets[index]} and never recovered"
    if rule is Rule.E4_WARM_UP:
        return f"E4 warm-up: {n} commit, records waiting {waited / 1000:g} s"
    lags = _lags(fresh_lags(w))
    if rule is Rule.E5_STALL:
        return f"E5 offset stuck at {last_offset} for {n} commits, lags {lags}"
    if rule is Rule.E5_WARN:
        return f"E5 lag never decreased over {n} commits: {lags}"
    if rule is Rule.E5_DECREASED:
        return f"E5 lag decreased within the window: {lags}"
    return f"E5 lag reached {p.allowed_lag} within the window: {lags}"


def fresh_lags(w: Window) -> list[int]:
    """Lag at each commit against the HWM interpolated at the commit's time; the stored lag where history is short."""
    out: list[int] = []
    for offset, ts, stored in zip(w.offsets, w.timestamps_ms, w.lags, strict=True):
        hwm = hwm_at(ts, w.hwm_offsets, w.hwm_times_ms)
        out.append(stored if hwm is None else max(0, hwm - offset))
    return out


def _nothing_produced_since(w: Window, since_ms: int) -> bool:
    """No HWM change seen after `since_ms`: every sample taken after it (there must be one) equals the newest.

    When the history starts after the commit (kafka-pulse restarted), a flat history since then counts too: any
    record produced before it would have been visible to the consumer, which committed nothing newer.
    """
    if not w.hwm_times_ms or w.hwm_times_ms[-1] <= since_ms:
        return False
    newest = w.hwm_offsets[-1]
    for offset, ts in zip(reversed(w.hwm_offsets), reversed(w.hwm_times_ms), strict=True):
        if offset != newest:
            return False
        if ts <= since_ms:
            return True
    return True


def _stop_reason(w: Window, now_ms: int) -> str:
    span = w.timestamps_ms[-1] - w.timestamps_ms[0]
    silence = now_ms - w.timestamps_ms[-1]
    return f"STOP: no commit for {silence / 1000:g} s > window span {span / 1000:g} s, not caught up in the HWM history"


def _lags(lags: Sequence[int]) -> str:
    return ",".join("?" if lag == NO_LAG else str(lag) for lag in lags)


RULE_SETS: dict[Mode, Callable[[Window, int, RuleParams], Rule]] = {
    "burrow": burrow_rule,
    "burrow-1.2": burrow12_rule,
    "enhanced": enhanced_rule,
}
"""Mode name -> rule set (the scalar reference; `columnar/rules.py` is the same over many partitions at once)."""
