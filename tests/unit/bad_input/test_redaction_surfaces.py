"""Secrets and hostile text on every surface that shows them: a Grafana URL with a login is refused at load, error
texts (`slo_schedule.last_error`, check summaries and reasons, `off` reasons) are redacted on `/api/status` and in
`check`'s two renderings, and the Markdown SLO report shows labels and descriptions as inert text."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from kafka_pulse.check.judge.verdict import Report, Section, Status
from kafka_pulse.check.render import print_report, report_json
from kafka_pulse.runner.slo_schedule import SloSchedule
from kafka_pulse.status.document import SloView, StatusInputs, status_document
from pulse.config import SloConfig
from pulse.config.load import parse_config
from pulse.errors import ConfigError
from slo.report import InstanceMinutes, slo_report
from slo.report_render import markdown_text, to_markdown
from slo.spec import parse_slos

SECRET = "hunter2-" + "not-for-eyes"
AT = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEAKS = [
    pytest.param(f"Prometheus at http://ops:{SECRET}@prom:9090 unreachable", id="url-userinfo"),
    pytest.param(f"HTTP 401 for Authorization: Basic {SECRET}", id="authorization-header"),
    pytest.param(f"broker 1 (b1:9092) refused: sasl password={SECRET}", id="password-pair"),
    pytest.param(f"push failed: https://gw/?token={SECRET}&x=1", id="token-query"),
]


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        pytest.param(f"http://admin:{SECRET}@127.0.0.1:3000", True, id="user-and-password"),
        pytest.param(f"https://{SECRET}@grafana.example", True, id="user-only"),
        pytest.param("http://127.0.0.1:3000", False, id="plain"),
        pytest.param("https://grafana.example/sub/path@x", False, id="at-in-path"),
    ],
)
def test_a_grafana_url_with_a_login_is_refused_at_load_naming_the_key(url: str, refused: bool) -> None:
    text = f"dashboards:\n  grafana_url: '{url}'\n"
    if not refused:
        assert parse_config(text, "pulse.yaml", {}).dashboards.grafana_url == url
        return
    with pytest.raises(ConfigError) as excinfo:
        parse_config(text, "pulse.yaml", {})
    message = str(excinfo.value)
    assert "dashboards.grafana_url" in message and "holds a login" in message
    assert SECRET not in message


def leaky_report(text: str) -> Report:
    brokers = Section(
        "brokers", Status.CRIT, f"1 of 1 down: {text}", (f"broker 1 {text}",), details={"brokers": [{"id": 1}]}
    )
    check = Section("check", Status.UNKNOWN, "check failed", (f"RuntimeError: {text}",))
    return Report("dev", ("127.0.0.1:9092",), (brokers, check), AT, 1.0, 4.0)


@pytest.mark.parametrize("text", LEAKS)
def test_error_texts_are_redacted_on_the_status_document(text: str) -> None:
    inputs = StatusInputs(
        generated_at=AT,
        refresh_s=5.0,
        reports=[leaky_report(text)],
        slo=SloView(results=[], history={}, runs_ok=0, runs_failed=1, last_error=f"SourceUnreadable: {text}"),
        off={"canary": f"disabled: {text}"},
    )
    document = json.dumps(status_document(inputs))
    assert SECRET not in document
    assert document.count("***") >= 5  # summary, two reasons, the broker row, last_error, off


@pytest.mark.parametrize("text", LEAKS)
def test_check_reasons_and_summaries_are_redacted_in_json_and_text(text: str) -> None:
    report = leaky_report(text)
    assert SECRET not in json.dumps(report_json(report))
    out = io.StringIO()
    print_report(report, Console(file=out, width=400, color_system=None))
    assert SECRET not in out.getvalue() and "***" in out.getvalue()


@pytest.mark.parametrize("text", LEAKS)
def test_the_slo_schedule_keeps_its_last_error_redacted(text: str) -> None:
    def failing_spark() -> Any:
        raise RuntimeError(text)

    schedule = SloSchedule([], SloConfig(), failing_spark, owns_session=False, delivery=None)
    assert schedule.run_once(AT) is False
    assert schedule.last_error is not None and SECRET not in schedule.last_error and "***" in schedule.last_error


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        pytest.param("a|b", "a\\|b", id="pipe"),
        pytest.param("line\n## Fake heading", "line \\#\\# Fake heading", id="newline-heading"),
        pytest.param("x\r\n| forged | row |", "x \\| forged \\| row \\|", id="crlf-table-row"),
        pytest.param("u\u2028v\x85w\x00z", "u v w z", id="unicode-line-breaks-and-nul"),
        pytest.param("<script>alert(1)</script>", "&lt;script&gt;alert\\(1\\)&lt;/script&gt;", id="html-tag"),
        pytest.param("[click](https://evil.example)", "\\[click\\]\\(https://evil.example\\)", id="link"),
        pytest.param("![x](https://evil.example/p.png)", "\\!\\[x\\]\\(https://evil.example/p.png\\)", id="image"),
        pytest.param("*b* _i_ `c` ~s~", "\\*b\\* \\_i\\_ \\`c\\` \\~s\\~", id="emphasis-code-strike"),
        pytest.param("a\\b & \"q\" 'r'", "a\\\\b &amp; &quot;q&quot; &#x27;r&#x27;", id="backslash-amp-quotes"),
        pytest.param("payments-eu.1", "payments-eu.1", id="plain-unchanged"),
    ],
)
def test_markdown_text_is_inert(raw: str, shown: str) -> None:
    assert markdown_text(raw) == shown


def test_the_markdown_report_escapes_labels_and_descriptions() -> None:
    hostile = "x\n## injected | <img src=x onerror=alert(1)> [l](https://evil.example)"
    entry = {"name": "produce", "description": hostile, "source": {"type": "events", "path": "/x"}, "good": "ok",
             "total": "n", "objective": 99.9}  # fmt: skip
    (slo,) = parse_slos([("test.yaml", [entry])], Path("/"), check_sources=False)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    end = start + timedelta(days=1)
    good = np.full(1440, 10.0)
    series = InstanceMinutes("produce", {"group": hostile}, int(start.timestamp()), good, good.copy())
    md = to_markdown([slo_report(slo, series, (), "1M", start, end)], start, end)
    assert not re.search(r"<img|\]\(https|^## injected", md, re.MULTILINE)
    headings = [line for line in md.splitlines() if line.startswith("#")]
    assert len(headings) == 3  # the report's, the instance's and the period's: none injected
    assert headings[1].startswith("## produce \\(group=x \\#\\# injected \\| &lt;img")
