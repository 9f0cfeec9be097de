"""Names with parameters: ``"Name"`` or ``"Name[param=value,...]"`` (as in ``Method.name``)."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

_SPEC = re.compile(r"^\s*(\w+)\s*(?:\[(.*)\])?\s*$")


def parse_spec(text: Any, table: Mapping[str, Any], kind: str) -> tuple[Any, dict[str, Any]]:
    """Split ``"Name[param=value,...]"`` and look the name up in ``table``.

    Values are Python literals where they parse as such, else strings; a tuple or list value
    keeps its commas (``"DoublePendulum[q0=(1.0472,0.6283)]"``): parameters are split only at
    commas outside brackets, parentheses, braces and quotes. A parameter may appear once:
    ``"MoreauJean[theta=0.5,theta=1]"`` is refused, not read as theta = 1.

    Returns
    -------
    entry, kwargs
        ``table[Name]`` and the parameters as a dict.

    Raises
    ------
    ValueError
        For a malformed spec (unbalanced brackets or quotes included), an unknown name (the
        message names ``kind`` and lists the known names) or a repeated parameter.
    """
    match = _SPEC.match(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{kind} must look like 'Name' or 'Name[param=value,...]', got {text!r}")
    name, params = match.groups()
    if name not in table:
        raise ValueError(f"unknown {kind} {name!r}; known: {', '.join(table)}")
    kwargs = {}
    for item in filter(None, (part.strip() for part in _split(params or "", text, kind))):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise ValueError(f"{kind} parameter must look like name=value, got {item!r}")
        if key in kwargs:
            raise ValueError(f"{kind} parameter {key!r} is given more than once in {text!r}")
        kwargs[key] = _value(value.strip())
    return table[name], kwargs


_OPENING = {"(": ")", "[": "]", "{": "}"}


def _split(params: str, text: str, kind: str) -> list[str]:
    """``params`` split at the commas outside brackets and quotes."""
    parts, start, closing, quote = [], 0, [], ""
    for index, char in enumerate(params):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in _OPENING:
            closing.append(_OPENING[char])
        elif char in ")]}":
            if not closing or closing.pop() != char:
                raise ValueError(f"{kind} parameters have an unbalanced {char!r} in {text!r}")
        elif char == "," and not closing:
            parts.append(params[start:index])
            start = index + 1
    if closing or quote:
        raise ValueError(f"{kind} parameters have an unclosed bracket or quote in {text!r}")
    parts.append(params[start:])
    return parts


def _value(text: str) -> Any:
    """``text`` as a Python literal, else the text itself.

    Texts the parser cannot take (too deeply nested, too long an integer) are texts too; the
    constructor they are passed to then refuses them by name.
    """
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text
