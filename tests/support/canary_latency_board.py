"""Test-only stand-in for the slow-broker detector's publishing side: per-broker produce latency as a real canary
measured it (its probe results), published to a `BrokerHealthBoard`. Elevation is one stated rule on those
measurements (a broker's p90 over the last window above `factor` x the median of its peers' and above a floor), not
the detector's scoring; the noisy-neighbour test uses it so the latency it joins is measured, never invented."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from canary.events import MemorySink
from pulse.broker_health import BrokerHealthBoard, BrokerSlowness


class CanaryLatencyBoard:
    """Reads `sink`'s probe results of the last `window_s` and publishes a verdict per broker on `board`."""

    def __init__(
        self,
        sink: MemorySink,
        board: BrokerHealthBoard,
        cluster: str,
        window_s: float = 10.0,
        factor: float = 2.0,
        floor_ms: float = 50.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.sink, self.board, self.cluster = sink, board, cluster
        self.window_s, self.factor, self.floor_ms = window_s, factor, floor_ms
        self.clock = clock

    def p90_ms(self) -> dict[int, float]:
        """The 90th percentile of acknowledged produce latency per broker over the window (a stutter stops a broker
        part of the time, so a median can miss it); brokers with under two results are absent."""
        since = self.clock() - self.window_s
        seen: dict[int, list[float]] = {}
        for event in list(self.sink.events):
            if event.broker is None or event.produce_latency_s is None or event.time.timestamp() < since:
                continue
            seen.setdefault(event.broker, []).append(event.produce_latency_s * 1000.0)
        return {b: statistics.quantiles(v, n=10)[-1] for b, v in seen.items() if len(v) >= 2}

    def publish(self) -> dict[int, BrokerSlowness]:
        """One verdict per measured broker, published and returned."""
        medians = self.p90_ms()
        out: dict[int, BrokerSlowness] = {}
        for broker, ms in medians.items():
            peers = [v for b, v in medians.items() if b != broker]
            peer_ms = statistics.median(peers) if peers else None
            elevated = peer_ms is not None and ms > self.floor_ms and ms > self.factor * peer_ms
            reason = f"canary produce p90 {ms:.0f} ms vs peers {peer_ms:.0f} ms" if peer_ms is not None else ""
            out[broker] = BrokerSlowness(broker, False, 0.0, reason, ms, elevated)
        self.board.publish(self.cluster, out)
        return out
