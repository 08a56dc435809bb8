"""The one HTTP stack of kafka-pulse's listeners: server, request limits, router, basic auth, TLS and the /metrics
exposition."""

from pulse.http.auth import BasicAuth, is_authorized, parse_basic_auth
from pulse.http.exposition import metrics_response, metrics_routes
from pulse.http.health import health_routes
from pulse.http.limits import MAX_BODY_BYTES, MAX_CONNECTIONS, MAX_HEADER_BYTES, REQUEST_TIMEOUT_S, head_problem
from pulse.http.router import TEXT, Handler, Request, Response, Route, Router
from pulse.http.server import SAFE_METHODS, HttpApp, HttpServer
from pulse.http.tls import ServerTls

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_CONNECTIONS",
    "MAX_HEADER_BYTES",
    "REQUEST_TIMEOUT_S",
    "SAFE_METHODS",
    "TEXT",
    "BasicAuth",
    "Handler",
    "HttpApp",
    "HttpServer",
    "Request",
    "Response",
    "Route",
    "Router",
    "ServerTls",
    "head_problem",
    "health_routes",
    "is_authorized",
    "metrics_response",
    "metrics_routes",
    "parse_basic_auth",
]
