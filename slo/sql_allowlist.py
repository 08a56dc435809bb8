"""What an SLO's Spark SQL expression (`good`, `total`, `source.filter`) may contain, checked on sqlglot's parse tree
before Spark sees the text: an allow-list, because Spark SQL can call into the JVM (`reflect`, `java_method`) and
any registered UDF, and a deny-list would miss the next such function. Pure: no Spark, no I/O.
"""

from __future__ import annotations

from sqlglot import exp

_OPERATORS: tuple[type[exp.Expression], ...] = (
    # values and names
    exp.Column,
    exp.Identifier,
    exp.Literal,
    exp.Boolean,
    exp.Null,
    exp.Paren,
    exp.DataType,
    exp.Interval,
    exp.Var,
    exp.Tuple,
    exp.Bracket,
    exp.Dot,
    # comparisons and boolean logic
    exp.EQ,
    exp.NEQ,
    exp.NullSafeEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.And,
    exp.Or,
    exp.Not,
    exp.Is,
    exp.In,
    exp.Between,
    exp.Like,
    exp.ILike,
    exp.RegexpLike,
    # arithmetic and string concatenation
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.Mod,
    exp.IntDiv,
    exp.Neg,
    exp.DPipe,
    # conditionals and null handling
    exp.Case,
    exp.If,
    exp.Coalesce,
    exp.Nullif,
    exp.Nvl2,
    exp.Nanvl,
    # casts
    exp.Cast,
    exp.TryCast,
)
"""Node kinds an SLI needs besides named functions."""

_FUNCTIONS: tuple[type[exp.Expression], ...] = (
    # numbers
    exp.Abs,
    exp.Round,
    exp.Floor,
    exp.Ceil,
    exp.Greatest,
    exp.Least,
    exp.Sqrt,
    exp.Ln,
    exp.Log,
    exp.Pow,
    exp.Exp,
    exp.Sign,
    exp.IsNan,
    # strings
    exp.Lower,
    exp.Upper,
    exp.Length,
    exp.Substring,
    exp.Concat,
    exp.ConcatWs,
    exp.Trim,
    exp.StrPosition,
    exp.RegexpExtract,
    exp.StartsWith,
    exp.EndsWith,
    exp.Contains,
    exp.Replace,
    exp.Left,
    exp.Right,
    exp.Pad,
    exp.RegexpSplit,
    exp.Ascii,
    # dates and times
    exp.Hour,
    exp.Minute,
    exp.Second,
    exp.Day,
    exp.DayOfWeek,
    exp.Month,
    exp.Year,
    exp.Extract,
    exp.TimestampTrunc,
    exp.DateTrunc,
    exp.TsOrDsToDate,
    exp.TsOrDsAdd,
    exp.DateDiff,
    exp.DateAdd,
    exp.DateSub,
    exp.StrToUnix,
    exp.UnixToStr,
    exp.UnixToTime,
    exp.TimeToStr,
    exp.TimeStrToTime,
    exp.CurrentDate,
    exp.CurrentTimestamp,
    exp.TimestampAdd,
    # collections in event columns
    exp.ArraySize,
    exp.ArrayContains,
)
"""Spark built-ins sqlglot knows by name, by the family an SLI uses them for."""

_PLAIN_NAMES = frozenset({"isnull", "isnotnull", "timestamp_seconds", "timestamp_millis", "bigint"})
"""Spark built-ins sqlglot parses as an unknown (`Anonymous`) call; any other unknown call is refused."""


def _name(node: exp.Expr) -> str:
    """The function's name as the user wrote it where sqlglot keeps it, else sqlglot's own SQL name."""
    if isinstance(node, exp.Anonymous):
        return str(node.name)
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return node.key


SUBSTITUTION_REFUSAL = (
    "'${' is not allowed in an SLO expression: Spark would replace ${env:VAR}, ${system:prop}, ${spark:key} and "
    "${hiveconf:key} in its text before parsing it"
)
"""Checked on the text, before sqlglot, which reads `'${env:X}'` as a plain string literal; the session also
turns Spark's substitution off (slo/session.py), so this is the first of two locks."""


def substitution_refusal(text: str) -> str | None:
    """Why `text` may not reach Spark's parser as it is, or None."""
    return SUBSTITUTION_REFUSAL if "${" in text else None


def expression_refusals(tree: exp.Expr) -> list[str]:
    """One reason per disallowed part of an SLO expression's parse tree (each named once), in reading order."""
    reasons: list[str] = []
    for node in tree.walk():
        reason = _refusal(node)
        if reason is not None and reason not in reasons:
            reasons.append(reason)
    return reasons


def _refusal(node: exp.Expr) -> str | None:
    if isinstance(node, exp.Subquery | exp.Select | exp.Exists | exp.Query):
        return "subqueries are not allowed in an SLO expression; give an expression over one row"
    if isinstance(node, exp.Lambda):
        return "lambda functions are not allowed in an SLO expression"
    if isinstance(node, exp.Anonymous):
        if node.name.lower() in _PLAIN_NAMES:
            return None
        return f"function {_name(node)!r} is not allowed in an SLO expression"
    if isinstance(node, _OPERATORS + _FUNCTIONS):
        return None
    if isinstance(node, exp.Func):
        return f"function {_name(node)!r} is not allowed in an SLO expression"
    return f"{node.key!r} ({node.sql(dialect='spark')[:40]!r}) is not allowed in an SLO expression"
