"""Names with parameters: ``"Name"`` or ``"Name[param=value,...]"`` (as in ``Method.name``)."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

_SPEC = re.compile(r"^\s*(\w+)\s*(?:\[(.*)\])?\s*$")


def parse_spec(text: Any, table: Mapping[str, Any], kind: str) -> tuple[Any, dict[str, Any]]:
    """Split ``"Name[param=value,...]"`` and look the name up in ``table``.

    Values are Python literals where they parse as such, else strings. A parameter may appear
    once: ``"MoreauJean[theta=0.5,theta=1]"`` is refused, not read as theta = 1.

    Returns
    -------
    entry, kwargs
        ``table[Name]`` and the parameters as a dict.

    Raises
    ------
    ValueError
        For a malformed spec, an unknown name (the message names ``kind`` and lists the known
        names) or a repeated parameter.
    """
    match = _SPEC.match(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{kind} must look like 'Name' or 'Name[param=value,...]', got {text!r}")
    name, params = match.groups()
    if name not in table:
        raise ValueError(f"unknown {kind} {name!r}; known: {', '.join(table)}")
    kwargs = {}
    for item in filter(None, (part.strip() for part in (params or "").split(","))):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise ValueError(f"{kind} parameter must look like name=value, got {item!r}")
        if key in kwargs:
            raise ValueError(f"{kind} parameter {key!r} is given more than once in {text!r}")
        kwargs[key] = _value(value.strip())
    return table[name], kwargs


def _value(text: str) -> Any:
    """``text`` as a Python literal, else the text itself.

    Texts the parser cannot take (too deeply nested, too long an integer) are texts too; the
    constructor they are passed to then refuses them by name.
    """
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text
