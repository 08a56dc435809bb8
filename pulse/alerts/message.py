"""The alert message: `Alert` as Alertmanager's `postableAlert`, its identity (the sorted labels Alertmanager
deduplicates on) and `supersede`, which keeps only the last state of each incident.

Labels are identity only (alertname, severity, slo, cluster, group...): Alertmanager deduplicates on them, so a
number in a label would open a new alert at every change. Numbers, summary and runbook go in annotations.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Self
from urllib.parse import quote

from pydantic import AliasChoices, AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator

from pulse.names import LABEL_NAME

Identity = tuple[tuple[str, str], ...]
"""An alert's sorted label pairs: what Alertmanager deduplicates on."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def identity(labels: Mapping[str, str]) -> Identity:
    return tuple(sorted(labels.items()))


_PLACEHOLDER = re.compile(r"\{(" + LABEL_NAME.pattern + r")\}")


def render_link(template: str, labels: Mapping[str, str]) -> str:
    """`alerting.runbook_url` with each `{label}` replaced by that label's value (URL-quoted; empty if absent)."""
    return _PLACEHOLDER.sub(lambda m: quote(labels.get(m.group(1), ""), safe=""), template)


def _check_names(names: Iterable[str], what: str) -> None:
    for name in names:
        if not LABEL_NAME.fullmatch(name):
            raise ValueError(f"{what} name {name!r} is invalid: use letters, digits and '_', not starting with a digit")


class Alert(BaseModel):
    """One alert as Alertmanager's `postableAlert`; Python names here, the API's camelCase on the wire."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    labels: dict[str, str]
    """Identity only; `alertname` is required. Empty values are dropped, as Alertmanager drops them."""
    annotations: dict[str, str] = {}
    """Information: summary, description, runbook_url and every number (burn rates, budget, lag)."""
    starts_at: AwareDatetime | None = Field(
        default=None, validation_alias=AliasChoices("starts_at", "startsAt"), serialization_alias="startsAt"
    )
    """When the incident began; Alertmanager uses the receipt time when absent."""
    ends_at: AwareDatetime | None = Field(
        default=None, validation_alias=AliasChoices("ends_at", "endsAt"), serialization_alias="endsAt"
    )
    """Firing: a time a few cycles ahead (the alert resolves by itself if we stop resending). Resolved: now/past."""
    generator_url: str | None = Field(
        default=None, validation_alias=AliasChoices("generator_url", "generatorURL"), serialization_alias="generatorURL"
    )
    """A link back to what produced the alert (a dashboard panel); shown as "Source" by Alertmanager."""

    @field_validator("labels")
    @classmethod
    def _identity_labels(cls, labels: dict[str, str]) -> dict[str, str]:
        kept = {name: value for name, value in labels.items() if value != ""}
        _check_names(kept, "label")
        if "alertname" not in kept:
            raise ValueError("an alert needs a non-empty 'alertname' label")
        return kept

    @field_validator("annotations")
    @classmethod
    def _annotation_names(cls, annotations: dict[str, str]) -> dict[str, str]:
        _check_names(annotations, "annotation")
        return annotations

    @model_validator(mode="after")
    def _ends_after_start(self) -> Self:
        if self.starts_at is not None and self.ends_at is not None and self.ends_at < self.starts_at:
            raise ValueError(f"endsAt {self.ends_at.isoformat()} is before startsAt {self.starts_at.isoformat()}")
        return self

    @property
    def identity(self) -> Identity:
        return identity(self.labels)

    @property
    def name(self) -> str:
        return self.labels["alertname"]

    def is_resolved(self, now: datetime) -> bool:
        """Alertmanager's rule: resolved once `endsAt` is set and not after `now`."""
        return self.ends_at is not None and self.ends_at <= now

    def to_api(self) -> dict[str, Any]:
        """The JSON object for `POST /api/v2/alerts` (RFC 3339 times, unset fields omitted)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def supersede(alerts: Sequence[Alert]) -> tuple[list[Alert], int]:
    """Keep only the last alert per incident (same labels and startsAt), where it stood; return (kept, removed).

    Alertmanager keeps the last state posted for a label set, so posting the last state of an incident alone ends
    in the same place as posting every keep-alive before it. A new incident of the same labels (a later startsAt)
    is another key: its resolve-then-refire stays visible.
    """
    kept = [alerts[index] for index in _latest(alerts)]
    return kept, len(alerts) - len(kept)


def _latest(alerts: Sequence[Alert]) -> list[int]:
    """Indexes of the last alert per incident, ascending."""
    last = {(a.identity, a.starts_at): index for index, a in enumerate(alerts)}
    return sorted(last.values())
