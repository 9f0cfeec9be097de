"""Names with parameters: ``"Name"`` or ``"Name[param=value,...]"`` (as in ``Method.name``)."""

from __future__ import annotations

import ast
import difflib
import inspect
import re
from collections.abc import Iterable, Mapping
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
        message names ``kind``, the closest known name and lists the known names), a repeated
        parameter or one the entry does not take (naming it, the closest valid parameter and
        the valid ones, :func:`parameters`).
    """
    match = _SPEC.match(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{kind} must look like 'Name' or 'Name[param=value,...]', got {text!r}")
    name, params = match.groups()
    if name not in table:
        raise ValueError(
            f"unknown {kind} {name!r}{did_you_mean(name, table)}; known: {', '.join(table)}"
        )
    kwargs = {}
    for item in filter(None, (part.strip() for part in _split(params or "", text, kind))):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise ValueError(f"{kind} parameter must look like name=value, got {item!r}")
        if key in kwargs:
            raise ValueError(f"{kind} parameter {key!r} is given more than once in {text!r}")
        kwargs[key] = _value(value.strip())
    check_parameters(table[name], kwargs, f"{kind} {name}")
    return table[name], kwargs


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'X'?)`` for the closest of ``choices`` (:func:`difflib.get_close_matches`),
    or "" when none is close."""
    close = difflib.get_close_matches(name, [str(choice) for choice in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def parameters(factory: Any) -> list[inspect.Parameter] | None:
    """The keyword parameters ``factory`` takes, or None when it takes any.

    For a class: the named parameters of its ``__init__`` and, while an ``__init__`` passes
    ``**options`` on, of the next ``__init__`` along the method resolution order (as
    ``super().__init__(**options)`` does): ``MoreauJean`` takes ``theta`` and ``activation``,
    and the ``compiled`` and ``log_capacity`` of :class:`impactbench.TimeStepping`. None when
    the last one reached still takes ``**kwargs``, or a signature cannot be read -- unless the
    class declares the keywords its ``**kwargs`` take, ``keyword_parameters`` (a mapping of
    name to default, e.g. the Woodpecker's geometry): then those, keyword-only, follow.
    """
    if isinstance(factory, type):
        functions = [
            klass.__dict__["__init__"]
            for klass in factory.__mro__
            if klass is not object and "__init__" in klass.__dict__
        ]
    else:
        functions = [factory]
    found: dict[str, inspect.Parameter] = {}
    for function in functions:
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):
            return None
        for parameter in signature.parameters.values():
            if parameter.kind in _NAMED and parameter.name != "self":
                found.setdefault(parameter.name, parameter)
        if all(p.kind != inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()):
            return list(found.values())
    declared = getattr(factory, "keyword_parameters", None) if functions else None
    if declared is not None:
        keyword = inspect.Parameter.KEYWORD_ONLY
        for name, default in declared.items():
            found.setdefault(name, inspect.Parameter(name, keyword, default=default))
        return list(found.values())
    return None if functions else []


def check_parameters(factory: Any, kwargs: Mapping[str, Any], what: str) -> None:
    """ValueError naming the first of ``kwargs`` that ``factory`` does not take (with the
    closest valid name and the valid ones); nothing when it takes them all or takes any."""
    accepted = parameters(factory)
    if accepted is None:
        return
    valid = [parameter.name for parameter in accepted]
    for key in kwargs:
        if key not in valid:
            raise ValueError(
                f"{what} has no parameter {key!r}{did_you_mean(key, valid)}; its parameters: "
                f"{', '.join(valid) or 'none'}"
            )


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
