"""The one HTTP stack of kafka-pulse's listeners: server, router, basic auth, TLS and the /metrics exposition."""

from pulse.http.auth import BasicAuth, is_authorized, parse_basic_auth
from pulse.http.exposition import metrics_response, metrics_routes
from pulse.http.health import health_routes
from pulse.http.router import TEXT, Handler, Request, Response, Route, Router
from pulse.http.server import MAX_CONNECTIONS, REQUEST_TIMEOUT_S, HttpApp, HttpServer
from pulse.http.tls import ServerTls

__all__ = [
    "MAX_CONNECTIONS",
    "REQUEST_TIMEOUT_S",
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
    "health_routes",
    "is_authorized",
    "metrics_response",
    "metrics_routes",
    "parse_basic_auth",
]
