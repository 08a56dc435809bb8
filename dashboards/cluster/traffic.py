"""The cluster dashboard's traffic rows: bytes and messages per broker, requests (latency percentiles and their
breakdown, errors, queues, idle threads) and message conversions."""

from __future__ import annotations

from dashboards.cluster.queries import ALL_TOPICS, CB, C, per_broker, rate_per_broker
from dashboards.grafana import RATE, Query, Row, timeseries


def throughput() -> Row:
    return Row(
        "Throughput",
        [
            timeseries(
                "Bytes in",
                [Query(rate_per_broker("kafka_server_brokertopicmetrics_bytesin_total", ALL_TOPICS), "{{broker}}")],
                unit="Bps",
                width=8,
            ),
            timeseries(
                "Bytes out",
                [Query(rate_per_broker("kafka_server_brokertopicmetrics_bytesout_total", ALL_TOPICS), "{{broker}}")],
                unit="Bps",
                width=8,
            ),
            timeseries(
                "Messages in",
                [Query(rate_per_broker("kafka_server_brokertopicmetrics_messagesin_total", ALL_TOPICS), "{{broker}}")],
                unit="short",
                width=8,
            ),
            timeseries(
                "Replication bytes",
                [
                    Query(
                        rate_per_broker("kafka_server_brokertopicmetrics_replicationbytesin_total", ALL_TOPICS),
                        "in {{broker}}",
                    ),
                    Query(
                        rate_per_broker("kafka_server_brokertopicmetrics_replicationbytesout_total", ALL_TOPICS),
                        "out {{broker}}",
                    ),
                ],
                unit="Bps",
                width=8,
            ),
            timeseries(
                "Produce and fetch requests",
                [
                    Query(
                        rate_per_broker("kafka_server_brokertopicmetrics_totalproducerequests_total", ALL_TOPICS),
                        "produce {{broker}}",
                    ),
                    Query(
                        rate_per_broker("kafka_server_brokertopicmetrics_totalfetchrequests_total", ALL_TOPICS),
                        "fetch {{broker}}",
                    ),
                ],
                unit="reqps",
                width=8,
            ),
            timeseries(
                "Busiest topics (bytes in)",
                [
                    Query(
                        f'topk(10, sum by (topic) (rate(kafka_server_brokertopicmetrics_bytesin_total{{{C}, topic!=""}}'
                        f"{RATE})))",
                        "{{topic}}",
                    )
                ],
                description="Per-topic meters exist with collectors.topic_metrics: topic (or partition), for the "
                "topics topic_allow/topic_deny let through.",
                unit="Bps",
                width=8,
            ),
            timeseries(
                "Failed and rejected",
                [
                    Query(
                        rate_per_broker("kafka_server_brokertopicmetrics_failedproducerequests_total", ALL_TOPICS),
                        "failed produce {{broker}}",
                    ),
                    Query(
                        rate_per_broker("kafka_server_brokertopicmetrics_failedfetchrequests_total", ALL_TOPICS),
                        "failed fetch {{broker}}",
                    ),
                    Query(
                        rate_per_broker("kafka_server_brokertopicmetrics_bytesrejected_total", ALL_TOPICS),
                        "bytes rejected {{broker}}",
                    ),
                ],
                description="Failed produce/fetch requests per second and bytes rejected (record too large).",
                width=8,
            ),
        ],
    )


def requests() -> Row:
    def breakdown(request: str) -> list[Query]:
        parts = (
            "requestqueuetimems",
            "localtimems",
            "remotetimems",
            "throttletimems",
            "responsequeuetimems",
            "responsesendtimems",
        )
        return [
            Query(
                f'max(kafka_network_requestmetrics_{part}{{{CB}, request="{request}", quantile="$quantile"}})',
                part.removesuffix("ms").removesuffix("time"),
            )
            for part in parts
        ]

    errors = "kafka_network_requestmetrics_errors_total"
    return Row(
        "Requests",
        [
            timeseries(
                "Request latency p$quantile",
                [
                    Query(
                        f'max by (request) (kafka_network_requestmetrics_totaltimems{{{CB}, quantile="$quantile", '
                        'request=~"Produce|FetchConsumer|FetchFollower|Metadata|OffsetCommit|JoinGroup"})',
                        "{{request}}",
                    )
                ],
                description="Total time per request type, worst broker: Yammer percentiles of different brokers "
                "must not be averaged.",
                unit="ms",
            ),
            timeseries(
                "Requests per second",
                [
                    Query(
                        f"sum by (request) (rate(kafka_network_requestmetrics_requests_total{{{CB}}}{RATE}))",
                        "{{request}}",
                    )
                ],
                unit="reqps",
            ),
            timeseries(
                "Produce time breakdown p$quantile",
                breakdown("Produce"),
                description="Where a produce request's time goes: queue, local (write), remote (waiting for the "
                "followers with acks=all), throttle, response queue and send. Worst broker.",
                unit="ms",
                stack=True,
                width=8,
            ),
            timeseries(
                "Fetch (consumer) time breakdown p$quantile",
                breakdown("FetchConsumer"),
                description="Remote time here is the fetch's long-poll wait (fetch.max.wait.ms), not a problem.",
                unit="ms",
                stack=True,
                width=8,
            ),
            timeseries(
                "Error ratio per request type",
                [
                    Query(
                        f'(sum by (request) (rate({errors}{{{CB}, error!="NONE"}}{RATE})) or sum by (request) '
                        f'(rate({errors}{{{CB}, error="NONE"}}{RATE})) * 0) / sum by (request) '
                        f"(rate({errors}{{{CB}}}{RATE}))",
                        "{{request}}",
                    )
                ],
                description="Responses with an error code over all responses (ErrorsPerSec; error=NONE counts the "
                "successes). The best broker-side availability SLI.",
                unit="percentunit",
                width=8,
            ),
            timeseries(
                "Request queue",
                [Query(per_broker("kafka_network_requestchannel_requestqueuesize"), "{{broker}}")],
                description="Requests waiting for a handler thread: grows when handlers are saturated.",
                width=8,
            ),
            timeseries(
                "Purgatory",
                [
                    Query(
                        f"sum by (broker, delayedOperation) (kafka_server_delayedoperationpurgatory_purgatorysize"
                        f'{{{CB}, delayedOperation=~"Produce|Fetch"}})',
                        "{{delayedOperation}} {{broker}}",
                    )
                ],
                description="Produce requests waiting for acks=all replication; fetches long-polling for data.",
                width=8,
            ),
            timeseries(
                "Handler and network idle",
                [
                    Query(
                        per_broker(
                            "kafka_server_kafkarequesthandlerpool_brokerrequesthandleravgidle_percent", how="max"
                        ),
                        "handlers {{broker}}",
                    ),
                    Query(
                        per_broker("kafka_network_socketserver_networkprocessoravgidle_percent", how="max"),
                        "network {{broker}}",
                    ),
                ],
                description="Share of time the request handler and network threads are idle: below 0.3 the broker "
                "is saturated (chapter 13).",
                unit="percentunit",
                minimum=0,
                width=8,
            ),
        ],
    )


def conversions() -> Row:
    return Row(
        "Message conversions",
        [
            timeseries(
                "Conversions per second",
                [
                    Query(
                        rate_per_broker("kafka_server_brokertopicmetrics_producemessageconversions_total", ALL_TOPICS),
                        "produce {{broker}}",
                    ),
                    Query(
                        rate_per_broker("kafka_server_brokertopicmetrics_fetchmessageconversions_total", ALL_TOPICS),
                        "fetch {{broker}}",
                    ),
                ],
                description="Records converted between message formats for old clients: they cost broker CPU and "
                "memory and defeat zero-copy fetches.",
            ),
            timeseries(
                "Conversion time p$quantile",
                [
                    Query(
                        f"max by (request) (kafka_network_requestmetrics_messageconversionstimems{{{CB}, "
                        f'quantile="$quantile"}})',
                        "{{request}}",
                    )
                ],
                unit="ms",
            ),
        ],
    )
