"""docs/config.md is what the generator writes from the config models (so the reference cannot drift from the
code, as gunicorn's settings doc), and every config key has a docstring to show there."""

from __future__ import annotations

from pathlib import Path

from pulse.config.reference import COMMAND, DOC_PATH, reference, undocumented_fields

REPO = Path(__file__).resolve().parents[3]


def test_the_committed_config_reference_is_what_the_generator_writes() -> None:
    committed = (REPO / DOC_PATH).read_text(encoding="utf-8")
    assert committed == reference(), f"{DOC_PATH} is stale: run `{COMMAND}` in the repository root and commit it"


def test_the_generator_is_deterministic() -> None:
    assert reference() == reference()


def test_every_config_key_has_a_docstring() -> None:
    assert undocumented_fields() == [], "add a docstring (what, why, units) under each of these fields in pulse/config/"


def test_the_reference_names_every_key_with_its_dotted_path_and_marks_secrets() -> None:
    text = reference()
    for row in (
        "| `clusters[].bootstrap_servers` | list of host:port | required |",
        "| `lag.exact_time_lag.interval_s` | seconds (> 0) | `10.0` |",
        "| `lag.ingestion_by_cluster` | map of string to `consumer_offsets` \\| `admin` | `{}` |",
        "| `slos[].alerting.page.windows[].long` |",
        "| `http.listen` | host:port | `127.0.0.1:9308` |",
    ):
        assert row in text
    secret_rows = [line for line in text.splitlines() if line.startswith("| `") and "**secret**" in line]
    assert "`clusters[].security.sasl.password`" in secret_rows[0]
    assert all("password" in row or "token" in row for row in secret_rows)
    assert "Generated file: edit pulse/config/ and run `python3 scripts/build_config_doc.py`" in text


def test_field_docs_reads_each_attribute_docstring_and_a_subclass_overrides_its_base() -> None:
    from pulse.config import LagConfig, field_docs
    from pulse.config.types import Section

    class Base(Section):
        kept: int = 1
        """From the base.

        Second paragraph."""
        replaced: int = 2
        """The base's words."""
        bare: int = 3

    class Child(Base):
        replaced: int = 2
        """The child's words."""

    assert field_docs(Child) == {
        "kept": "From the base.\n\nSecond paragraph.",
        "replaced": "The child's words.",
    }
    assert field_docs(LagConfig)["intervals"].startswith("Offsets kept per partition window")


def test_starting_does_not_parse_the_models_source() -> None:
    """The docstrings are read only for the reference and --help: pydantic's own reading parsed every model's source
    at import, about a quarter of `check`'s config import."""
    from pulse.config import PulseConfig

    assert not PulseConfig.model_config.get("use_attribute_docstrings")
    assert all(not info.description for info in PulseConfig.model_fields.values())
