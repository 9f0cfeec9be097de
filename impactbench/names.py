"""Names with parameters: ``"Name"`` or ``"Name[param=value,...]"`` (as in ``Method.name``)."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

_SPEC = re.compile(r"^\s*(\w+)\s*(?:\[(.*)\])?\s*$")


def parse_spec(text: Any, table: Mapping[str, Any], kind: str) -> tuple[Any, dict[str, Any]]:
    """Split ``"Name[param=value,...]"`` and look the name up in ``table``.

    Values are Python literals where they parse as such, else strings.

    Returns
    -------
    entry, kwargs
        ``table[Name]`` and the parameters as a dict.

    Raises
    ------
    ValueError
        For a malformed spec or an unknown name (the message names ``kind`` and lists the
        known names).
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
        if not sep or not key.strip().isidentifier():
            raise ValueError(f"{kind} parameter must look like name=value, got {item!r}")
        try:
            kwargs[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            kwargs[key.strip()] = value.strip()
    return table[name], kwargs
