"""Loading the config file: read it, parse strict YAML, substitute `${VAR}`, validate; every problem in one pass."""

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from pulse.config.root import PulseConfig
from pulse.config.types import Section
from pulse.envsubst import Loc, describe_error, format_key_path, read_tree, substitute
from pulse.errors import ConfigError

SectionT = TypeVar("SectionT", bound=Section)


def load_config(path: Path, environ: Mapping[str, str]) -> PulseConfig:
    """Read, substitute and validate the config file at `path`; ConfigError lists every problem, one a line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from None
    except MemoryError:
        raise ConfigError(f"{path}: config file too large to read") from None
    try:
        return parse_config(text, str(path), environ, base_dir=path.parent)
    except (RecursionError, MemoryError) as exc:  # read_tree bounds the tree; this is the net under those bounds
        raise ConfigError(f"{path}: config too large or too deeply nested to validate ({type(exc).__name__})") from None


def parse_config(text: str, source: str, environ: Mapping[str, str], base_dir: Path | None = None) -> PulseConfig:
    """Validate config `text`; `source` names it in messages, `base_dir` anchors relative file paths."""
    tree, env_problems = substitute(read_tree(text, source), environ)
    try:
        config = PulseConfig.model_validate(tree, context={"base_dir": base_dir})
    except ValidationError as exc:
        found = [describe_error(error, PulseConfig) for error in exc.errors(include_url=False)]
    else:
        if not env_problems:
            return config
        found = []
    problems = [(p.loc, p.reason) for p in env_problems]
    # An unresolved ${VAR} is already reported; a type error on its literal text below it would be noise.
    problems += [(loc, why) for loc, why in found if not any(loc[: len(p.loc)] == p.loc for p in env_problems)]
    raise ConfigError("\n".join(f"{source}: {format_key_path(loc)}: {reason}" for loc, reason in problems))


def check_section(model: type[SectionT], tree: Mapping[str, Any], at: Loc, source_of: Callable[[Loc], str]) -> SectionT:
    """Validate settings given elsewhere than the file (command-line options) through the section's own model, so
    they are refused with the file's words: `<source_of(key)>: <at.key>: <reason>`, every problem in one pass."""
    try:
        return model.model_validate(tree)
    except ValidationError as exc:
        problems = [describe_error(error, model) for error in exc.errors(include_url=False)]
    raise ConfigError("\n".join(f"{source_of(loc)}: {format_key_path((*at, *loc))}: {why}" for loc, why in problems))
