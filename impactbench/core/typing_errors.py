"""numba's typing errors of the common mistakes in a scheme's functions, explained in one
paragraph that names the offending name and the fix.

A scheme's functions run compiled (:mod:`impactbench.core.scheme`); from them, numba can call
only compiled functions. Calling a plain Python function (an undecorated helper), or a class's
function through the class (another scheme's step, ``MoreauJean.step(...)``, or a static method
of one's own class, ``MyScheme.helper(...)``), fails while numba types the time loop, with a
message of tens of lines ending on the class's metaclass (``Untyped global name 'MoreauJean':
Cannot determine Numba type of <class 'abc.ABCMeta'>``). :func:`explain_typing_error` recognises
these cases and writes what to do instead: make the function a scheme function
(:func:`impactbench.core.scheme.scheme_function`, at module level) and call that.
"""

from __future__ import annotations

import re

from ._jit import TypingError

#: numba's message for a global name it cannot type: the name and the Python type of its value.
_UNTYPED_GLOBAL = re.compile(
    r"Untyped global name '(?P<name>\w+)':\s*Cannot determine Numba type of "
    r"<class '(?P<kind>[\w.]+)'>"
)
#: The location numba prints after it: the file and line of the call.
_LOCATION = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+):\n(?P<source>(?:.*\n){1,3})')
#: numba highlights its messages with ANSI escape sequences (depending on its configuration).
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: Python types of the values numba reports for a class (its metaclass).
_CLASS_KINDS = ("type", "abc.ABCMeta")
#: Where the documentation shows the fix.
_DOCS = "docs/adding-a-scheme.md, 'Reusing a scheme's step'"


class SchemeFunctionError(TypeError):
    """Compiled code calls a function numba cannot compile; the message names it and the fix.

    numba's own message is kept as the exception's ``__context__``."""


def explain_typing_error(error: TypingError) -> SchemeFunctionError | None:
    """The explanation of numba's ``error`` when compiled code calls a plain Python function or
    a function through its class (module docstring); None for any other typing error.

    Parameters
    ----------
    error : numba.core.errors.TypingError
        The error numba raised while compiling a loop.

    Returns
    -------
    SchemeFunctionError or None
        Its message names the function, the file and line of the call, and the fix
        (``@scheme_function``).
    """
    text = _ANSI.sub("", str(error))
    found = _UNTYPED_GLOBAL.search(text)
    if found is None:
        return None
    name, kind = found.group("name"), found.group("kind")
    location = _LOCATION.search(text, found.end())
    where, source = "", ""
    if location is not None:
        where = f"{location.group('file')}, line {location.group('line')}: "
        source = location.group("source")
    if kind == "function":
        message = (
            f"{where}compiled code calls {name}, a plain Python function: decorate it with "
            f"@scheme_function (from impactbench.core.scheme import scheme_function), which "
            f"compiles it into the loop ({_DOCS})."
        )
    elif kind in _CLASS_KINDS:
        attribute = re.search(rf"\b{name}\.(\w+)", source)
        function = attribute.group(1) if attribute else "<function>"
        alias = f"{_snake(name)}_{function.strip('<>')}"
        message = (
            f"{where}compiled code calls {name}.{function} through the class {name}, which "
            f"numba cannot type. Make it a scheme function at module level, "
            f"{alias} = scheme_function({name}.{function}) (from impactbench.core.scheme "
            f"import scheme_function), and call {alias}(...) in its place ({_DOCS})."
        )
    else:
        return None
    return SchemeFunctionError(message)


def _snake(name: str) -> str:
    """``MoreauJean`` -> ``moreau_jean``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
