"""The numba internals the compile boundary relies on, each exercised on a small function.

:mod:`impactbench.core._jit` subclasses numba's CPU dispatcher (its ``get_call_template``),
defines two intrinsics with numba's array constructors (``constant_shape_view``,
``stack_array``), compiles loop helpers with private target options (no reference counting, no
Python wrapper, forced inlining), names each compiled loop after a digest because numba's
disk cache keys a function on its name, finds a dispatcher's compiled entry point (for
:class:`impactbench.core.entry.DirectCall`), and calls the problem's kernels through C entry
points of numba's cfuncs, as values of numba types of its own (``KernelType``,
``BoundKernelType``: a typed call, a data model, an unboxing and a lowering each). None of
this is numba's public API: pyproject.toml pins the numba release these tests pass with, and a
numba upgrade that breaks one of them fails here, naming what broke, instead of deep in a
study.
"""

from __future__ import annotations

import gc
import inspect
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import numba
import numpy as np
import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

from impactbench.core import _jit
from impactbench.core.entry import DirectCall

ROOT = Path(__file__).resolve().parent.parent


def _pinned(name: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The (lowest, first excluded) versions of ``name`` in pyproject.toml's dependencies."""
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (spec,) = [d for d in dependencies if re.match(rf"{name}\b", d)]
    low = re.search(r">=\s*([\d.]+)", spec)
    high = re.search(r"<\s*([\d.]+)", spec)
    assert low and high, f"{name} must be pinned to a tested range (>=x,<y), got {spec!r}"
    return _numbers(low.group(1)), _numbers(high.group(1))


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


@pytest.mark.parametrize("name", ["numba", "llvmlite"])
def test_the_installed_release_is_the_pinned_one(name):
    low, high = _pinned(name)
    installed = _numbers(version(name))
    assert low <= installed < high, (
        f"{name} {version(name)} is installed, pyproject.toml pins {low}..{high} (excluded): "
        "run this file against it, then move the pin"
    )


def test_the_internal_names_exist_with_the_signatures_used():
    from numba.core import cgutils
    from numba.core import types as numba_types
    from numba.core.registry import CPUDispatcher
    from numba.np.arrayobj import make_array, populate_array

    assert list(inspect.signature(CPUDispatcher.get_call_template).parameters) == [
        "self",
        "args",
        "kws",
    ], "CPUDispatcher.get_call_template(args, kws), overridden by _jit's dispatchers, changed"
    assert {"data", "shape", "strides", "itemsize", "meminfo", "parent"} <= set(
        inspect.signature(populate_array).parameters
    ), "numba.np.arrayobj.populate_array, used by constant_shape_view and stack_array, changed"
    assert "size" in inspect.signature(cgutils.alloca_once).parameters
    assert callable(make_array) and numba_types.unliteral(numba_types.literal(0)) == numba.int64


# ------------------------------------------------------------------------------------------
# The dispatchers: how a call from compiled code is typed (get_call_template)


def _add(value, k, out):
    out[0] += k
    return value + k


def test_a_counting_dispatcher_types_a_literal_zero_count_as_int64():
    added = _jit._compiler(nogil=True)(_jit.count_arguments("k")(_add))
    assert isinstance(added, _jit._CountingDispatcher)

    @numba.njit
    def caller(out):
        k = 0
        total = added(1.0, 0, out)  # a literal 0 for the count: typed int64
        for _ in range(3):
            k += 1
        return total + added(total, k, out) + added(total, 2, out)  # a literal 2 stays literal

    out = np.zeros(1)
    assert caller(out) == 1.0 + 4.0 + 3.0 and out[0] == 5.0
    counts = sorted(str(signature[1]) for signature in added.signatures)
    assert counts == ["Literal[int](2)", "int64"], (
        f"_CountingDispatcher.get_call_template no longer retypes a literal 0: {counts}"
    )


def test_a_helper_is_typed_with_non_literal_arguments():
    helper = _jit._helper(_add, inline=False, cache=False)
    assert isinstance(helper, _jit._NonLiteralDispatcher)

    @numba.njit(_nrt=False)
    def caller(out):
        return helper(1.0, 0, out) + helper(1.0, 2, out)

    out = np.zeros(1)
    assert caller(out) == 4.0 and out[0] == 2.0
    assert [str(signature[1]) for signature in helper.signatures] == ["int64"], (
        "_NonLiteralDispatcher.get_call_template no longer unliterals the arguments: "
        f"{helper.signatures}"
    )


# ------------------------------------------------------------------------------------------
# The NRT-free copies of the functions bound into a loop


def _llvm(dispatcher) -> str:
    return dispatcher.overloads[dispatcher.signatures[0]].library.get_llvm_str()


def _counts_references(dispatcher) -> bool:
    """Whether the LLVM IR of ``dispatcher``'s first overload calls numba's reference counting."""
    text = _llvm(dispatcher)
    return "NRT_incref" in text or "NRT_decref" in text


def test_the_nrt_free_copy_is_compiled_without_reference_counting_and_inlined():
    plain = numba.njit(_add)
    copy = _jit._nrt_free(plain)
    assert _jit._nrt_free(plain) is copy  # one copy per process
    assert copy.py_func.__qualname__ == "_add_nrt_free"  # its own name in numba's disk cache
    assert {"_nrt": False, "no_cpython_wrapper": True, "forceinline": True}.items() <= (
        copy.targetoptions.items()
    )

    @numba.njit(_nrt=False)
    def caller(out):
        return copy(1.0, 2, out)

    out = np.zeros(1)
    plain(1.0, 2, out)
    assert caller(out) == 3.0 and out[0] == 4.0
    assert _counts_references(plain)  # the plain function reference-counts its array
    assert not _counts_references(copy), (
        "the _nrt=False target option no longer removes reference counting"
    )
    assert copy.overloads[copy.signatures[0]].fndesc.inline, "forceinline no longer honoured"
    # a function compiled without reference counting already, or inlined by numba, is kept
    assert _jit._nrt_free(copy) is copy
    ir_inlined = numba.njit(inline="always")(_add)
    assert _jit._nrt_free(ir_inlined) is ir_inlined


# ------------------------------------------------------------------------------------------
# The intrinsics


def test_constant_shape_view_is_a_view_of_constant_shape():
    view = _jit.constant_shape_view

    @numba.njit(_nrt=False)  # as the loops are compiled
    def fill(buffer):
        rows = view(buffer, 2, 3)
        rows[1, 2] = 7.0
        return rows.shape[0], rows.shape[1], rows.strides[0], rows[0, 1]

    buffer = np.arange(6.0)
    assert fill(buffer) == (2, 3, 24, 1.0)
    assert buffer[5] == 7.0  # written through: a view, not a copy
    assert not _counts_references(fill)  # the view adds no code to a loop

    @numba.njit
    def not_literal(buffer, height):
        return view(buffer, height, 3)

    with pytest.raises(numba.core.errors.TypingError):
        not_literal(buffer, 2)  # the sizes must be compile-time constants


#: Views taken in functions compiled with reference counting, then a compilation: without a
#: reference of its own, a view released its buffer's memory a second time (heap corruption,
#: found by the compilation that followed).
VIEWS_SCRIPT = """
import numba, numpy as np
from impactbench.core._jit import constant_shape_view
@numba.njit
def corner(buffer):
    return constant_shape_view(buffer, 2, 3)[1, 2]
assert [corner(np.arange(6.0)) for _ in range(3)] == [5.0, 5.0, 5.0]
assert numba.njit(lambda x: x + 1.0)(1.0) == 2.0
print("ok")
"""


def test_constant_shape_view_counts_its_reference_where_references_are_counted():
    result = subprocess.run(
        [sys.executable, "-c", VIEWS_SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]
    view = _jit.constant_shape_view

    @numba.njit
    def rows(buffer):
        return view(buffer, 2, 3)

    buffer = np.arange(6.0)
    result = rows(buffer)
    del buffer
    gc.collect()
    np.testing.assert_array_equal(rows(np.arange(6.0)), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(result, np.arange(6.0).reshape(2, 3))
    assert numba.njit(lambda x: x + 1.0)(1.0) == 2.0  # and numba still compiles


def test_stack_array_is_a_writable_array_of_constant_shape():
    stack = _jit.stack_array

    @numba.njit(_nrt=False)
    def scratch(out):
        z = stack(2, 3)
        for i in range(2):
            for j in range(3):
                z[i, j] = 10.0 * i + j
        for j in range(3):
            out[j] = z[1, j]
        return z.shape[0] * 100 + z.shape[1], z.strides[0]

    out = np.zeros(3)
    assert scratch(out) == (203, 24)
    np.testing.assert_array_equal(out, [10.0, 11.0, 12.0])
    assert "NRT" not in _llvm(scratch)  # nothing allocated on the heap


# ------------------------------------------------------------------------------------------
# specialize: the digest in a loop's name, which numba's disk cache keys on

SCALE = 1.0


def _scaled(x):
    return SCALE * offset(x)


def _offset(x):
    return x + 1.0


offset = numba.njit(_offset)


def test_specialize_names_a_loop_after_what_is_compiled_into_it(monkeypatch):
    one = _jit.specialize(_scaled, {"SCALE": 2.0}, True)
    assert re.fullmatch(r"_scaled_[0-9a-f]{20}", one.py_func.__qualname__)
    assert one(3.0) == 8.0
    name = one.py_func.__qualname__
    assert _jit.specialize(_scaled, {"SCALE": 2.0}, True).py_func.__qualname__ == name
    assert _jit.specialize(_scaled, {"SCALE": 3.0}, True).py_func.__qualname__ != name
    # numba's cache index is named after the qualified name (and not the compile options)
    assert name in one._cache._cache_file._index_name, (
        "numba's disk cache no longer names its index after the function's qualified name"
    )
    # an edit of a function the loop calls (here: of this module's source) renames the loop
    real = _jit.inspect.getsource
    module = sys.modules[__name__]
    monkeypatch.setattr(
        _jit.inspect,
        "getsource",
        lambda value: real(value) + "\n# edited\n" if value is module else real(value),
    )
    assert _jit.specialize(_scaled, {"SCALE": 2.0}, True).py_func.__qualname__ != name


def test_a_called_helper_is_cached_on_disk_under_its_digest_name():
    helper = _jit.specialize(_offset, {}, True, helper=True)
    assert isinstance(helper, _jit._NonLiteralDispatcher)
    assert helper.py_func.__qualname__ in helper._cache._cache_file._index_name
    assert not helper.targetoptions["forceinline"] and helper.targetoptions["_nrt"] is False


# ------------------------------------------------------------------------------------------
# DirectCall: a dispatcher's compiled entry point


def test_direct_call_finds_the_entry_point_of_the_overload_called():
    """``_jit.compiled_entry``: the overloads keyed by the arguments' numba types."""
    added = numba.njit(lambda a, b: a + b)
    call = DirectCall(added)
    assert call(1.0, 2.0) == 3.0
    assert call.entry is not None, (
        "Dispatcher.overloads is no longer keyed by the numba.typeof of the arguments, or a "
        "compile result has no entry_point"
    )
    assert call(3.0, 4.5) == 7.5
    assert _jit.compiled_entry(added, (1, 2)) is None  # no overload for two ints yet
    assert _jit.compiled_entry(_offset, (1.0,)) is None  # not a dispatcher


# ------------------------------------------------------------------------------------------
# First-class kernels: the problem's kernels as run-time values


@_jit.kernel
def _affine_forces(t, q, v, p, out):
    for j in range(q.shape[0]):
        out[j] = p[0] * q[j] + p[1] * v[j] + t


@_jit.kernel
def _gradient(q, p, out):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = p[0] * (i + 1) + q[j]


def test_a_first_class_kernel_reads_and_writes_the_callers_arrays():
    """Called from compiled code with vectors and with the rows of a wider matrix (a view of
    the driver's buffer: its rows are further apart than its columns), the entry point sees
    the caller's lengths and writes only the caller's view."""
    forces = _jit.first_class_kernel(_affine_forces, "forces")
    gradient = _jit.first_class_kernel(_gradient, "matrix")

    @numba.njit
    def call(forces, gradient, q, v, p, f, buffer):
        forces(0.5, q, v, p, f)
        gradient(q, p, buffer[1:3, :2])

    q = np.array([1.0, 2.0])
    v = np.array([3.0, 4.0])
    p = np.array([2.0, -1.0])
    f = np.zeros(2)
    buffer = np.full((4, 5), -7.0)
    call(forces, gradient, q, v, p, f, buffer)
    np.testing.assert_array_equal(f, 2.0 * q - v + 0.5)
    expected = np.full((4, 5), -7.0)
    expected[1:3, :2] = [[3.0, 4.0], [5.0, 6.0]]
    np.testing.assert_array_equal(buffer, expected)


@_jit.kernel
def _two_coefficients(q, p, mu, e_t):
    for i in range(mu.shape[0]):
        mu[i] = p[0] * q[i]
    for i in range(e_t.shape[0]):
        e_t[i] = p[1] + i


def test_a_first_class_pair_kernel_writes_its_two_vectors():
    """A kernel of the form "pair" (a frictional problem's mu and e_T) writes both of the
    caller's vectors, each with its own length, the rest of the buffer untouched."""
    pair = _jit.first_class_kernel(_two_coefficients, "pair")

    @numba.njit
    def call(pair, q, p, buffer):
        pair(q, p, buffer[0, :2], buffer[1, :3])

    q = np.array([1.0, 2.0, 5.0])
    p = np.array([0.5, 0.25])
    buffer = np.full((3, 4), -7.0)
    call(pair, q, p, buffer)
    expected = np.full((3, 4), -7.0)
    expected[0, :2] = [0.5, 1.0]
    expected[1, :3] = [0.25, 1.25, 2.25]
    np.testing.assert_array_equal(buffer, expected)


@_jit.kernel
def _moving_gap(t, q, p, out):
    for i in range(out.shape[0]):
        out[i] = q[i] - p[0] * t


@_jit.kernel
def _moving_gradient(t, q, p, out):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = t * (i + 1) + q[j]


def test_timed_first_class_kernels_take_the_time_first():
    """The forms "timed vector" and "timed matrix" (a moving obstacle's g(t, q), its rate, and
    G(t, q)) receive the caller's t, not the constant of the position kernels, and write the
    caller's vector and the rows of a wider matrix."""
    gap = _jit.first_class_kernel(_moving_gap, "timed vector")
    gradient = _jit.first_class_kernel(_moving_gradient, "timed matrix")
    assert gap.kind == gradient.kind == "timed"

    @numba.njit
    def call(gap, gradient, t, q, p, g, buffer):
        gap(t, q, p, g)
        gradient(t, q, p, buffer[1:3, :2])

    q = np.array([1.0, 2.0])
    p = np.array([3.0])
    g = np.zeros(2)
    buffer = np.full((4, 5), -7.0)
    call(gap, gradient, 0.25, q, p, g, buffer)
    np.testing.assert_array_equal(g, q - 0.75)
    expected = np.full((4, 5), -7.0)
    expected[1:3, :2] = [[1.25, 2.25], [1.5, 2.5]]
    np.testing.assert_array_equal(buffer, expected)


def _shifted(kernels, q, p, out):
    kernels[0](q, p, out)
    for i in range(out.shape[0]):
        out[i] += 1.0
    return out.shape[0]


@_jit.kernel
def _times_p0(q, p, out):
    for i in range(out.shape[0]):
        out[i] = p[0] * q[i]


def test_a_bound_kernel_passes_its_kernels_to_its_function():
    """A function of the kernels (a projection built from the gap), bound to a problem's
    first-class kernels, is called with the other arguments only and returns its value."""
    function = _jit.specialize(_shifted, {}, True, inline=True)
    bound = _jit.bind_kernels(function, (_jit.first_class_kernel(_times_p0, "vector"),))

    @numba.njit
    def call(bound, q, p, out):
        return bound(q, p, out)

    out = np.zeros(3)
    assert call(bound, np.array([1.0, 2.0, 3.0]), np.array([2.0]), out) == 3
    np.testing.assert_array_equal(out, [3.0, 5.0, 7.0])


def _flags_tuple():
    from collections import namedtuple

    class Flags(_jit.CompileTimeTuple, namedtuple("Flags", "single scale")):
        __slots__ = ()

    return Flags


def test_a_compile_time_choice_compiles_only_the_chosen_function():
    """With the flag a constant of the problem tuple, the function not chosen is never typed:
    here it cannot be (a string added to a float), so compiling both would fail."""

    @_jit.scheme_function
    def closed_form(problem, x):
        return problem.scale * x

    @_jit.scheme_function
    def untypeable(problem, x):
        return x + "not a number"

    choice = _jit.compile_time_choice("single", closed_form, untypeable)

    def caller(problem, x):
        return choice(problem, x)

    Flags = _flags_tuple()
    assert numba.njit(caller)(Flags(True, 3.0), 2.0) == 6.0
    assert choice(Flags(True, 3.0), 2.0) == 6.0  # plain Python: the flag read at run time
    with pytest.raises(TypeError):
        choice(Flags(False, 3.0), 2.0)
    with pytest.raises(numba.core.errors.TypingError):  # a fresh dispatcher for the other flag
        numba.njit(caller)(Flags(False, 3.0), 2.0)


def test_a_compile_time_choice_needs_the_same_parameters_with_a_problem():
    @_jit.scheme_function
    def one(problem, x):
        return x

    @_jit.scheme_function
    def other(problem, y):
        return y

    with pytest.raises(ValueError, match="same parameters"):
        _jit.compile_time_choice("single", one, other)
