"""Health endpoints every listener serves: `/-/healthy` (the process answers) and `/-/ready` (its components are
started), as Prometheus and Alertmanager name them, so one probe configuration fits every kafka-pulse command."""

from __future__ import annotations

from collections.abc import Callable

from pulse.http.router import Response, Route


def health_routes(ready: Callable[[], bool]) -> list[Route]:
    def healthy(_: object) -> Response:
        return Response(200, b"OK\n")

    def readiness(_: object) -> Response:
        return Response(200, b"READY\n") if ready() else Response(503, b"STARTING\n")

    return [Route("GET", "/-/healthy", healthy), Route("GET", "/-/ready", readiness)]
