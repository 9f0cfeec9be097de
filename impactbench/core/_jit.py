"""Numba configuration shared by the core kernels and the compiled time-stepping loops.

Every kernel is an ordinary Python function; :data:`kernel` compiles module-level helpers (cached
on disk). A time loop is a *template*: a module-level function whose problem-specific names
(``mass_matrix``, ``forces``, ``gap``, ``gap_gradient`` and flags such as ``CONSTANT_MASS``) are
free globals, bound per problem by :func:`specialize`. The bound copy is compiled by numba and
cached on disk under a name that carries a digest of everything compiled into it, so a loop is
compiled once per machine rather than once per process (closures over the kernels cannot be
cached: numba keys them by a pickle of the closure cells, which differs in every process). With
``compile=False`` the same template runs as plain Python (the path for problems numba cannot
compile, and for debugging; ``NUMBA_DISABLE_JIT=1`` makes the helpers plain Python too).
:func:`with_runtime_sizes` copies a template so that it reads some of those globals (sizes) at
run time instead: one compiled copy then serves every value of them. :func:`first_class_kernel`
turns a problem kernel into a run-time value (a C entry point called through its address, of a
numba type that is the same for every problem) and :func:`bind_kernels` a function of the
kernels (a projection built from the gap) into one: a loop taking them serves every problem.
:func:`compile_time_choice` picks one of two scheme functions by a flag of the problem's kernels
tuple when a loop is compiled, so the other is never compiled (the LCP of a single-constraint
problem).
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import linecache
import sys
import textwrap
import types
from collections.abc import Callable
from typing import Any

import numba
from llvmlite import ir as llvm_ir
from numba.core import cgutils, event
from numba.core import types as numba_types
from numba.core.dispatcher import Dispatcher
from numba.core.errors import TypingError  # noqa: F401 - re-exported: a first call raises it
from numba.core.imputils import impl_ret_borrowed, lower_builtin
from numba.core.registry import CPUDispatcher
from numba.core.typing import signature
from numba.extending import (
    NativeValue,
    intrinsic,
    models,
    overload,
    register_model,
    typeof_impl,
    unbox,
)
from numba.np.arrayobj import make_array, populate_array


class _NonLiteralDispatcher(CPUDispatcher):
    """A dispatcher that its callers type with the non-literal types of their arguments.

    numba types a call with the argument types known at that point of type inference, and
    compiles the callee for them: a counter set to 0 before a loop is first ``Literal[int](0)``
    (then int64 once the loop's update is typed), a constant argument stays literal, and each
    distinct literal compiled a whole specialisation of the callee and of every helper it
    calls, never used by the final code (the event loop compiled its restart three times, its
    root search three times). Compiled for the non-literal types, a helper has one
    specialisation per array layout; constants still fold in the caller, where LLVM inlines it.
    """

    def get_call_template(self, args: tuple, kws: dict) -> tuple:
        args = tuple(numba_types.unliteral(a) for a in args)
        kws = {name: numba_types.unliteral(a) for name, a in kws.items()}
        return super().get_call_template(args, kws)


class _CountingDispatcher(CPUDispatcher):
    """A dispatcher typing a literal 0 passed as one of its ``counts`` parameters as int64.

    A caller's counter started with ``0`` (the number k of active constraints) is first typed
    ``Literal[int](0)``, then int64: the helper, with everything it calls, was compiled for both,
    and the finished loop never calls the first. A count is never 0 where the
    helper runs (it is called for k >= 1), so a literal 0 is always such a start value; a literal
    count >= 1 (all m constraints of a projection) and every other argument keep their literal
    types, on which the helpers' machine code relies (typed non-literal, the step helpers run
    several times slower: ``benchmarks/loops.py``).
    """

    counts: frozenset[str] = frozenset()

    def get_call_template(self, args: tuple, kws: dict) -> tuple:
        code = self.py_func.__code__
        names = code.co_varnames[: code.co_argcount]
        args = tuple(self._typed(names[i], a) for i, a in enumerate(args))
        kws = {name: self._typed(name, a) for name, a in kws.items()}
        return super().get_call_template(args, kws)

    def _typed(self, name: str, argument: Any) -> Any:
        if (
            name in self.counts
            and isinstance(argument, numba_types.IntegerLiteral)
            and argument.literal_value == 0
        ):
            return numba_types.unliteral(argument)
        return argument


class _PythonCallDispatcher(CPUDispatcher):
    """A dispatcher that compiled code calls compiled, and Python calls as plain Python.

    For the functions of a scheme (:mod:`impactbench.core.scheme`): their arguments hold the
    problem's kernels, numba functions in a compiled loop and plain-Python functions in the
    plain loop of a problem numba cannot compile; the same function serves both.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.py_func(*args, **kwargs)


def scheme_function(function: Callable) -> Callable:
    """``function`` as compiled code calls it inside a loop: inlined by LLVM, without reference
    counting or Python wrapper, typed with the literal types of its arguments (a constant
    passed on stays one; numba compiles no branch on ``x is None`` for an argument x given as
    None), not cached (it is compiled into the loops that call it, which are); called from
    Python, ``function`` itself (:class:`_PythonCallDispatcher`)."""
    return _dispatcher(
        _PythonCallDispatcher,
        function,
        nogil=True,
        _nrt=False,
        no_cpython_wrapper=True,
        no_cfunc_wrapper=True,
        forceinline=True,
    )


def compile_time_choice(flag: str, if_true: Callable, if_false: Callable) -> Callable:
    """A scheme function that runs ``if_true`` when ``problem.<flag>`` is set, else ``if_false``.

    ``if_true`` and ``if_false`` are scheme functions with the same parameters, one of them
    named ``problem`` (the kernels tuple, a :class:`CompileTimeTuple` whose bool fields are
    compile-time constants). Compiled code compiles only the function the flag chooses (a plain
    ``if problem.<flag>:`` types and compiles both branches: numba prunes branches on
    arguments that are None, not on literal fields); plain Python reads the flag at run time.
    """
    names = list(inspect.signature(if_true.py_func).parameters)
    if names != list(inspect.signature(if_false.py_func).parameters) or "problem" not in names:
        raise ValueError("if_true and if_false must take the same parameters, 'problem' among them")
    arguments = ", ".join(names)
    source = (
        f"def choice({arguments}):\n"
        f"    if problem.{flag}:\n"
        f"        return if_true({arguments})\n"
        f"    return if_false({arguments})\n"
        f"def call_if_true({arguments}):\n"
        f"    return if_true({arguments})\n"
        f"def call_if_false({arguments}):\n"
        f"    return if_false({arguments})\n"
    )
    namespace = {"if_true": if_true, "if_false": if_false}
    generated_functions(source, namespace, if_true.py_func.__module__)
    choice = namespace["choice"]

    def implementation(*argument_types: Any) -> Callable:
        problem = argument_types[names.index("problem")]
        fields = getattr(getattr(problem, "instance_class", None), "_fields", ())
        if flag in fields:
            value = problem.types[fields.index(flag)]
            if isinstance(value, numba_types.BooleanLiteral):
                return namespace["call_if_true" if value.literal_value else "call_if_false"]
        return choice  # the flag not a constant: both compiled, chosen at run time

    typer = generated_functions(
        f"def typer({arguments}):\n    return implementation({arguments})\n",
        {"implementation": implementation},
        __name__,
    )["typer"]
    if not numba.config.DISABLE_JIT:
        overload(choice, prefer_literal=True, inline="always")(typer)
    return choice


class CompileTimeTuple:
    """Base of the named tuples whose bool and int fields are compile-time constants.

    numba types such a tuple's bools and ints as literals (:func:`_typeof_compile_time`), also
    when it is passed on as an argument: a function reading ``problem.single_constraint``
    sees a constant, and passes it on to its helpers as one. Subclass it before the named tuple:
    ``class Flags(CompileTimeTuple, namedtuple("Flags", "a b")): __slots__ = ()``.
    """

    __slots__ = ()


@typeof_impl.register(CompileTimeTuple)
def _typeof_compile_time(value: Any, context: Any) -> numba_types.Type:
    fields = [
        numba_types.literal(item)
        if isinstance(item, (bool, int))
        else numba.typeof(item, context.purpose)
        for item in value
    ]
    return numba_types.NamedTuple(fields, type(value))


def _dispatcher(kind: type, function: Callable, **options: Any) -> Callable:
    """``function`` compiled by a dispatcher of class ``kind`` with numba's ``options`` (cached
    on disk when ``cache``); ``function`` itself when the JIT is disabled."""
    if numba.config.DISABLE_JIT:
        return function
    targetoptions = {"nopython": True, **options}
    cache = targetoptions.pop("cache", False)
    dispatcher = kind(py_func=function, locals={}, targetoptions=targetoptions)
    if cache:
        dispatcher.enable_caching()
    return dispatcher


def compiled_entry(function: Callable, arguments: tuple) -> Callable | None:
    """The entry point of the overload of the numba dispatcher ``function`` compiled for the
    numba types of ``arguments``: a callable that converts its arguments by that overload's
    signature without selecting or checking it (:class:`impactbench.core.entry.DirectCall`).
    None when ``function`` is not a dispatcher or has no such overload."""
    overloads = getattr(function, "overloads", None)
    if overloads is None:
        return None
    compiled = overloads.get(tuple(numba.typeof(argument) for argument in arguments))
    return None if compiled is None else compiled.entry_point


#: Attribute by which :func:`count_arguments` marks a function for :data:`kernel` and
#: :data:`hot_kernel`.
_COUNTS = "_impactbench_count_arguments"


def count_arguments(*names: str) -> Callable[[Callable], Callable]:
    """Decorator, under :data:`kernel` or :data:`hot_kernel`: the parameters ``names`` are counts
    that callers build at run time; a literal 0 passed for them is typed int64
    (:class:`_CountingDispatcher`)."""

    def mark(function: Callable) -> Callable:
        setattr(function, _COUNTS, frozenset(names))
        return function

    return mark


def _compiler(**options: Any) -> Callable[[Callable], Callable]:
    """A decorator compiling with numba's ``options`` (``cache`` among them), honouring
    :func:`count_arguments`."""

    def decorate(function: Callable) -> Callable:
        counts = getattr(function, _COUNTS, None)
        if counts is None:
            return numba.njit(**options)(function)
        dispatcher = _dispatcher(_CountingDispatcher, function, **options)
        if dispatcher is not function:
            dispatcher.counts = counts
        return dispatcher

    return decorate


#: Decorator for module-level numerical helpers and problem kernels.
kernel = _compiler(cache=True, nogil=True)

#: Decorator for the small helpers called in every step (factorisations, solves, the impact law):
#: compiled once (cached on disk) without reference counting and marked ``alwaysinline`` for
#: LLVM, which inlines them into every loop that calls them. Both matter: an opaque call passes
#: each array as a struct and reference-counts it (more than the arithmetic of a small system),
#: and LLVM's own heuristics leave large helpers as calls. numba's IR-level inlining
#: (``inline="always"``) gives the same machine code but copies and retypes the callee's IR at
#: every call site, which multiplies the compile time of a loop.
hot_kernel = _compiler(cache=True, nogil=True, _nrt=False, forceinline=True)

#: Compiled copies without reference counting of the numba functions bound into loops.
_NRT_FREE: dict[int, tuple[Dispatcher, Dispatcher]] = {}


def _helper(function: Callable, inline: bool, cache: bool) -> Callable:
    """``function`` compiled as a helper of a loop: no reference counting, no Python or C
    wrapper (only compiled code calls it), typed with non-literal arguments; marked
    ``alwaysinline`` for LLVM when ``inline``, else called (compiled once into each library that
    calls it), cached on disk when ``cache``."""
    # forceinline set either way: a flag not set is inherited from the function being compiled
    # when numba compiles this one (a called helper first compiled for an inlined one would be
    # inlined).
    return _dispatcher(
        _NonLiteralDispatcher,
        function,
        cache=cache,
        nogil=True,
        _nrt=False,
        no_cpython_wrapper=True,
        no_cfunc_wrapper=True,
        forceinline=inline,
    )


def _digest(value: Any, hasher: Any, seen: set[int]) -> None:
    """Feed ``value`` and everything it calls to ``hasher``.

    A function (or numba dispatcher) contributes its module's source, and so does every function
    and module it names as a global, recursively: the digest follows what is actually compiled
    into a loop, so editing any helper it inlines gives the loop a new cache name. Other values
    (compile-time constants) contribute their repr.
    """
    function = getattr(value, "py_func", value)
    if isinstance(value, tuple):  # e.g. a CompileTimeTuple of kernels and flags
        hasher.update(f"{type(value).__qualname__}{getattr(value, '_fields', '')}".encode())
        for item in value:
            _digest(item, hasher, seen)
        return
    if isinstance(value, types.ModuleType):
        if id(value) in seen:
            return
        seen.add(id(value))
        try:
            hasher.update(inspect.getsource(value).encode())
        except (OSError, TypeError):
            hasher.update(value.__name__.encode())
        return
    if not isinstance(function, types.FunctionType):
        hasher.update(repr(value).encode())
        return
    if id(function) in seen:
        return
    seen.add(id(function))
    hasher.update(f"{function.__module__}.{function.__qualname__}".encode())
    # its parameters and locals: a copy of a template reading names at run time
    # (with_runtime_sizes) differs from the template in them
    hasher.update(repr(function.__code__.co_varnames).encode())
    module = sys.modules.get(function.__module__)
    if module is not None:
        _digest(module, hasher, seen)
    else:  # defined where no module holds its source (exec'd): its code, constants and names
        _digest_code(function.__code__, hasher)
    if function.__code__.co_filename.startswith(GENERATED):  # its source is in no module
        hasher.update("".join(linecache.getlines(function.__code__.co_filename)).encode())
    for name in sorted(_global_names(function.__code__)):
        if name in function.__globals__:
            target = function.__globals__[name]
            if isinstance(target, (types.FunctionType, types.ModuleType, Dispatcher, tuple)):
                _digest(target, hasher, seen)
            elif isinstance(target, (bool, int, float)):
                hasher.update(f"{name}={target!r}".encode())


def _digest_code(code: types.CodeType, hasher: Any) -> None:
    hasher.update(code.co_code)
    hasher.update(repr(code.co_names).encode())
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            _digest_code(constant, hasher)
        else:
            hasher.update(repr(constant).encode())


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _global_names(constant)
    return names


def _nrt_free(value: Any) -> Any:
    """A numba function as a loop calls it: compiled without reference counting or Python wrapper
    and inlined by LLVM (:func:`_helper`); any other value unchanged.

    The copy is made once per process and cached on disk under its own name (numba's cache
    index does not key on compile options, so sharing the original's name would let one load
    the other's machine code).
    """
    if isinstance(value, CompileTimeTuple):
        return value._make(_nrt_free(item) for item in value)
    if not isinstance(value, Dispatcher) or value.targetoptions.get("_nrt") is False:
        return value
    if value.targetoptions.get("inline") == "always":  # copied into its caller, never compiled
        return value
    if id(value) not in _NRT_FREE:
        original = value.py_func
        copy = types.FunctionType(
            original.__code__, original.__globals__, original.__name__, original.__defaults__
        )
        copy.__module__ = original.__module__
        copy.__qualname__ = f"{original.__qualname__}_nrt_free"
        _NRT_FREE[id(value)] = (value, _helper(copy, inline=True, cache=True))
    return _NRT_FREE[id(value)][1]


#: Start of the file name of generated source (:func:`generated_functions`).
GENERATED = "<impactbench generated"


def generated_functions(source: str, namespace: dict[str, Any], module: str) -> dict[str, Any]:
    """Execute ``source`` in ``namespace`` (its globals) and return the namespace, whose
    functions then read as if written in ``module``: their source is kept where
    :func:`inspect.getsource` finds it (for :func:`with_runtime_sizes`) and :func:`_digest`
    reads it (the loops' cache names)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    filename = f"{GENERATED} {module} {digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    for value in namespace.values():
        if isinstance(value, types.FunctionType) and value.__code__.co_filename == filename:
            value.__module__ = module
    return namespace


#: Name of the parameter through which :func:`with_runtime_sizes` passes the sizes.
SIZES = "sizes"


def with_runtime_sizes(template: Callable, names: dict[str, int], callees: set[str]) -> Callable:
    """A copy of ``template`` that reads the globals ``names`` at run time.

    The copy takes one more parameter, first: ``sizes``, a tuple of ints, and begins by
    assigning ``name = sizes[names[name]]`` for each of ``names`` it reads, which makes those
    names its locals; a call of a global in ``callees`` (a template copied the same way) passes
    ``sizes`` on. Everything else is the template's source, with its file and line numbers:
    bound by :func:`specialize`, compiled by numba or run as plain Python, the copy is the
    template with those globals replaced by values given at each call.

    Parameters
    ----------
    template : function
        A module-level function (its source is read with :func:`inspect.getsource`).
    names : dict
        Name -> index in ``sizes`` of the globals to read at run time.
    callees : set of str
        Globals naming functions copied the same way.
    """
    source = textwrap.dedent(inspect.getsource(template))
    tree = ast.parse(source)
    definition = tree.body[0]
    if not isinstance(definition, ast.FunctionDef) or definition.decorator_list:
        raise ValueError(f"{template.__qualname__} is not an undecorated module-level function")
    read = {node.id for node in ast.walk(definition) if isinstance(node, ast.Name)}
    for node in ast.walk(definition):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in callees:
                node.args.insert(0, ast.Name(SIZES, ast.Load()))
    definition.args.args.insert(0, ast.arg(SIZES))
    prologue = [
        ast.parse(f"{name} = {SIZES}[{index}]").body[0]
        for name, index in sorted(names.items())
        if name in read
    ]
    after_docstring = 0 if ast.get_docstring(definition) is None else 1
    definition.body[after_docstring:after_docstring] = prologue
    ast.fix_missing_locations(tree)
    ast.increment_lineno(tree, template.__code__.co_firstlineno - 1)
    namespace: dict[str, Any] = {}
    exec(compile(tree, template.__code__.co_filename, "exec"), namespace)  # noqa: S102
    code = namespace[template.__name__].__code__
    function = types.FunctionType(code, template.__globals__, template.__name__)
    function.__module__ = template.__module__
    function.__qualname__ = template.__qualname__
    return function


def specialize(
    template: Callable,
    bindings: dict[str, Any],
    compile: bool,
    inline: bool = False,
    nrt: bool = True,
    helper: bool = False,
    ir_inline: bool = False,
    cache: bool = True,
) -> Callable:
    """Copy ``template`` with its free globals bound to ``bindings``; compile it if asked.

    Parameters
    ----------
    template : function
        A module-level function whose problem-specific names are globals.
    bindings : dict
        Name -> value for those globals (numba functions, or bools/ints, which numba treats as
        compile-time constants, so branches on them are pruned). Compiled, the numba functions
        are bound as their copies without reference counting (:func:`_nrt_free`), which LLVM
        inlines: inlined, the kernels a step calls share their work (the same sin q evaluated
        by the forces and the gap).
    compile : bool
        False: return the plain-Python copy. True: compile it with numba, cached on disk under a
        name carrying a digest of every source compiled into it (:func:`_digest`).
    inline : bool
        Compile as a helper of a loop (the options of :data:`hot_kernel`: no reference counting,
        inlined by LLVM into its caller); not cached itself, it is compiled into its caller.
    nrt : bool
        False: compile without numba's reference counting (``_nrt=False``), for a loop that
        allocates nothing (its buffers are passed in): every array passed to an inlined helper
        is otherwise reference-counted at each call.
    helper : bool
        Compile as a helper of a loop (:func:`_helper`: no reference counting, no Python
        wrapper, typed with non-literal arguments), inlined by LLVM when ``inline``, else a
        function its callers call (for code on rare paths: compiled once instead of once per
        call site), cached on disk under a digest name.
    ir_inline : bool
        Inline with numba's IR-level inlining (``inline="always"``): the callee's code is
        copied into its caller before typing and never compiled on its own. For a helper with
        one call site (each site types its own copy): an LLVM-inlined helper is also compiled
        and optimised as a function of its own, with everything it inlines, only for its IR.
    cache : bool
        Cache a compiled loop or helper on disk (the default); False for one that compiles in
        functions numba cannot find again in another process (defined in ``exec``'d code).
    """
    namespace = dict(template.__globals__)
    if compile:
        bindings = {name: _nrt_free(value) for name, value in bindings.items()}
    namespace.update(bindings)
    function = types.FunctionType(
        template.__code__, namespace, template.__name__, template.__defaults__
    )
    function.__module__ = template.__module__
    if not compile:
        return function
    if ir_inline:
        return numba.njit(inline="always")(function)
    if inline and helper:
        return _helper(function, inline=True, cache=False)
    if inline:
        return numba.njit(nogil=True, _nrt=False, forceinline=True)(function)
    hasher = hashlib.sha256()
    hasher.update(f"nrt={nrt}, helper={helper}".encode())
    seen: set[int] = set()
    # this module too: how a loop's helpers are compiled (their options, how their calls are
    # typed) changes its machine code, and numba's cache index keys on the name only
    _digest(sys.modules[__name__], hasher, seen)
    _digest(function, hasher, seen)
    function.__qualname__ = f"{template.__qualname__}_{hasher.hexdigest()[:20]}"
    if helper:
        return _helper(function, inline=False, cache=cache)
    return numba.njit(cache=cache, nogil=True, _nrt=nrt)(function)


@intrinsic
def constant_shape_view(typingctx, buffer, height, width):  # noqa: ARG001
    """A 2-D C-contiguous view (height, width) of the float64 ``buffer``, with literal sizes.

    Its shape and strides are compile-time constants, unlike those of ``buffer.reshape(...)``
    (computed at run time): the row offsets of a buffer passed to a loop then fold into
    constants, and LLVM can prove its rows disjoint. The caller guarantees
    ``buffer.size == height * width`` (:func:`impactbench.core.driver.make_loop` does). The view
    holds a reference to the buffer's memory, like ``reshape``, in a caller compiled with
    reference counting.
    """
    if not (
        isinstance(height, numba_types.IntegerLiteral)
        and isinstance(width, numba_types.IntegerLiteral)
    ):
        return None
    rows = height.literal_value
    columns = width.literal_value
    view_type = numba_types.Array(numba_types.float64, 2, "C")

    def codegen(context, builder, signature, arguments):
        source = make_array(signature.args[0])(context, builder, arguments[0])
        view = make_array(view_type)(context, builder)
        intp = context.get_value_type(numba_types.intp)
        populate_array(
            view,
            data=source.data,
            shape=(intp(rows), intp(columns)),
            strides=(intp(8 * columns), intp(8)),
            itemsize=intp(8),
            meminfo=source.meminfo,
            parent=None,
        )
        # a second reference to the buffer's memory: counted where reference counting is on
        # (the loops compile without it, _nrt=False, and then this adds no code)
        return impl_ret_borrowed(context, builder, view_type, view._getvalue())

    return view_type(buffer, height, width), codegen


@intrinsic
def stack_array(typingctx, height, width):  # noqa: ARG001
    """A 2-D C-contiguous float64 array (height, width) on the stack of the calling function.

    For the scratch values of one step that never outlive it (the candidate state of the time
    loop): LLVM promotes a stack array indexed at constant offsets to registers, so its stores and
    loads vanish, which a heap buffer (visible to the caller, possibly aliased by the output
    arrays) does not allow. Literal sizes only; no reference counting (``meminfo`` is null), so
    the array must not escape the function (compile its caller with ``_nrt=False``).
    """
    if not (
        isinstance(height, numba_types.IntegerLiteral)
        and isinstance(width, numba_types.IntegerLiteral)
    ):
        return None
    rows = height.literal_value
    columns = width.literal_value
    array_type = numba_types.Array(numba_types.float64, 2, "C")

    def codegen(context, builder, signature, arguments):
        double = context.get_value_type(numba_types.float64)
        data = cgutils.alloca_once(builder, double, size=rows * columns)
        array = make_array(array_type)(context, builder)
        intp = context.get_value_type(numba_types.intp)
        populate_array(
            array,
            data=data,
            shape=(intp(rows), intp(columns)),
            strides=(intp(8 * columns), intp(8)),
            itemsize=intp(8),
            meminfo=None,
            parent=None,
        )
        return array._getvalue()

    return array_type(height, width), codegen


# --------------------------------------------------------------------------------------------
# First-class problem kernels: one compiled loop for every problem


class FirstClassKernel:
    """A problem kernel as a run-time value of compiled code: the address of a C entry point.

    Made by :func:`first_class_kernel`. In compiled code a value of it (a field of the
    ``problem`` tuple of a scheme's functions) is called as the kernel is,
    ``forces(t, q, v, p, out)`` or ``gap(q, p, out)`` with float64 arrays, and the call goes
    through the pointer: the code calling it is compiled once for every kernel of its kind
    (:class:`KernelType`), and a problem compiles only its own entry points.

    Attributes
    ----------
    kind : str
        ``"forces"`` (called with ``t, q, v, p, out``), ``"position"`` (``q, p, out``),
        ``"timed"`` (``t, q, p, out``: a geometric kernel of a moving obstacle, g(t, q)) or
        ``"pair"`` (``q, p, out, second_out``).
    address : int
        The entry point, ``void(t, q, len q, v, len v, p, len p, out, rows, columns,
        row stride)`` (float64 pointers, lengths in items; ``out`` is a matrix of ``rows`` x
        ``columns`` items whose rows start ``row stride`` items apart, or a vector of ``rows``).
    cfunc : numba cfunc
        The compiled entry point (kept alive with this object).
    """

    __slots__ = ("kind", "address", "cfunc")

    def __init__(self, kind: str, cfunc: Any) -> None:
        self.kind = kind
        self.cfunc = cfunc
        self.address = cfunc.address

    def __repr__(self) -> str:
        return f"FirstClassKernel({self.kind}, {self.cfunc.__wrapped__.__qualname__})"


#: The arities of the kinds of kernels: forces(t, q, v, p, out), position(q, p, out),
#: timed(t, q, p, out) (the gap of a moving obstacle and its derivatives in q and t) and
#: pair(q, p, out, second_out) (a kernel writing two vectors: a frictional problem's
#: coefficients mu and e_T).
_KERNEL_ARITY = {"forces": 5, "position": 3, "timed": 4, "pair": 4}

#: The kinds whose first argument is the time t.
_TIMED_KINDS = ("forces", "timed")


class KernelType(numba_types.Callable):
    """numba's type of a :class:`FirstClassKernel` of one kind (the same for every problem)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        super().__init__(name=f"FirstClassKernel({kind})")

    @property
    def key(self) -> str:
        return self.kind

    def get_call_type(self, context: Any, args: tuple, kws: dict) -> Any:
        args = tuple(numba_types.unliteral(a) for a in args)
        if kws or len(args) != _KERNEL_ARITY[self.kind]:
            return None
        if self.kind == "pair":
            *vectors, out = args[:2] + args[3:] + args[2:3]  # the second output as "v"
        else:
            *vectors, out = args[1:] if self.kind in _TIMED_KINDS else args
        if self.kind in _TIMED_KINDS and not isinstance(args[0], numba_types.Number):
            return None
        for array in (*vectors, out):
            if not (isinstance(array, numba_types.Array) and array.dtype == numba_types.float64):
                return None
        # the entry point takes the vectors as pointer and length: contiguous ones only; a
        # matrix ``out`` as rows of contiguous items (the views of the driver's buffer are)
        if any(v.ndim != 1 or v.layout != "C" for v in vectors) or out.ndim > 2:
            return None
        if out.ndim == 1 and out.layout != "C":
            return None
        return signature(numba_types.none, *args, recvr=self)

    def get_call_signatures(self) -> tuple[list, bool]:
        return [], True

    def get_impl_key(self, sig: Any) -> type:
        return type(self)


@typeof_impl.register(FirstClassKernel)
def _typeof_first_class(value: FirstClassKernel, context: Any) -> KernelType:
    return KernelType(value.kind)


@register_model(KernelType)
class _KernelModel(models.PrimitiveModel):
    def __init__(self, dmm: Any, fe_type: Any) -> None:
        super().__init__(dmm, fe_type, llvm_ir.IntType(8).as_pointer())


@unbox(KernelType)
def _unbox_kernel(typ: Any, obj: Any, c: Any) -> NativeValue:
    address = c.pyapi.object_getattr_string(obj, "address")
    pointer = c.pyapi.long_as_voidptr(address)
    c.pyapi.decref(address)
    return NativeValue(pointer, is_error=c.pyapi.c_api_error())


_DOUBLE = llvm_ir.DoubleType()
_INTP = llvm_ir.IntType(64)
_ENTRY = llvm_ir.FunctionType(
    llvm_ir.VoidType(),
    [_DOUBLE, *([_DOUBLE.as_pointer(), _INTP] * 3), _DOUBLE.as_pointer(), _INTP, _INTP, _INTP],
)


@lower_builtin(KernelType, numba_types.VarArg(numba_types.Any))
def _call_kernel(context: Any, builder: Any, sig: Any, args: tuple) -> Any:
    kernel_type = sig.args[0]
    types_, values = sig.args[1:], args[1:]
    if kernel_type.kind in _TIMED_KINDS:
        t = context.cast(builder, values[0], types_[0], numba_types.float64)
        types_, values = types_[1:], values[1:]
    else:
        t = llvm_ir.Constant(_DOUBLE, 0.0)
    arrays = [
        make_array(ty)(context, builder, value) for ty, value in zip(types_, values, strict=True)
    ]
    if kernel_type.kind in ("position", "timed"):  # no velocity: the position in its place
        arrays.insert(1, arrays[0])
    elif kernel_type.kind == "pair":  # (q, p, out, second): the second output in v's place
        arrays = [arrays[0], arrays[3], arrays[1], arrays[2]]
        types_ = (types_[0], types_[3], types_[1], types_[2])
    pointers = []
    for array in arrays[:3]:
        pointers += [array.data, cgutils.unpack_tuple(builder, array.shape)[0]]
    out = arrays[3]
    shape = cgutils.unpack_tuple(builder, out.shape)
    one = llvm_ir.Constant(_INTP, 1)
    if types_[-1].ndim == 2:
        stride = cgutils.unpack_tuple(builder, out.strides)[0]
        columns, row_stride = shape[1], builder.sdiv(stride, llvm_ir.Constant(_INTP, 8))
    else:
        columns, row_stride = one, one
    entry = builder.bitcast(args[0], _ENTRY.as_pointer())
    builder.call(entry, [t, *pointers, out.data, shape[0], columns, row_stride])
    return context.get_dummy_value()


#: The C signature of a kernel's entry point (:class:`FirstClassKernel`).
_POINTER = numba_types.CPointer(numba_types.float64)
_ENTRY_SIGNATURE = numba_types.void(
    numba_types.float64,
    *((_POINTER, numba_types.intp) * 3),
    _POINTER,
    numba_types.intp,
    numba_types.intp,
    numba_types.intp,
)

# Name bound per kernel by first_class_kernel.
inner = None


def _forces_entry(t, q, nq, v, nv, p, n_p, out, rows, columns, ld):
    inner(
        t,
        numba.carray(q, (nq,)),
        numba.carray(v, (nv,)),
        numba.carray(p, (n_p,)),
        numba.carray(out, (rows,)),
    )


def _vector_entry(t, q, nq, v, nv, p, n_p, out, rows, columns, ld):
    inner(numba.carray(q, (nq,)), numba.carray(p, (n_p,)), numba.carray(out, (rows,)))


def _matrix_entry(t, q, nq, v, nv, p, n_p, out, rows, columns, ld):
    matrix = numba.carray(out, (rows, ld))
    inner(numba.carray(q, (nq,)), numba.carray(p, (n_p,)), matrix[:, :columns])


def _timed_vector_entry(t, q, nq, v, nv, p, n_p, out, rows, columns, ld):
    inner(t, numba.carray(q, (nq,)), numba.carray(p, (n_p,)), numba.carray(out, (rows,)))


def _timed_matrix_entry(t, q, nq, v, nv, p, n_p, out, rows, columns, ld):
    matrix = numba.carray(out, (rows, ld))
    inner(t, numba.carray(q, (nq,)), numba.carray(p, (n_p,)), matrix[:, :columns])


def _first_row_entry(t, q, nq, v, nv, p, n_p, out, rows, columns, ld):
    inner(numba.carray(q, (nq,)), numba.carray(p, (n_p,)), numba.carray(out, (columns,)))


def _pair_entry(t, q, nq, v, nv, p, n_p, out, rows, columns, ld):
    inner(
        numba.carray(q, (nq,)),
        numba.carray(p, (n_p,)),
        numba.carray(out, (rows,)),
        numba.carray(v, (nv,)),
    )


#: Entry templates by the form of the kernel's output.
_ENTRIES = {
    "forces": ("forces", _forces_entry),
    "vector": ("position", _vector_entry),
    "matrix": ("position", _matrix_entry),
    "first row": ("position", _first_row_entry),
    "timed vector": ("timed", _timed_vector_entry),
    "timed matrix": ("timed", _timed_matrix_entry),
    "pair": ("pair", _pair_entry),
}

#: First-class kernels of this process, by (kernel, form).
_FIRST_CLASS: dict[tuple[int, str], tuple[Any, FirstClassKernel]] = {}


def first_class_kernel(function: Callable, form: str) -> FirstClassKernel:
    """The numba function ``function`` (a problem kernel) as a first-class kernel.

    Parameters
    ----------
    function : numba dispatcher
        ``forces(t, q, v, p, out)`` (also a moving obstacle's ``gap_drift(t, q, v, p, out)``),
        ``kernel(q, p, out, second_out)`` for the form ``"pair"``, ``kernel(t, q, p, out)``
        for the timed forms, or ``kernel(q, p, out)`` for the other forms.
    form : {"forces", "vector", "matrix", "first row", "pair", "timed vector", "timed matrix"}
        What the kernel writes: the forces (a vector), a vector (the gaps, a diagonal of M),
        a matrix (M, G: ``out`` is the caller's (rows, columns) matrix), a vector into the
        first row of the caller's matrix (the diagonal of M into its (1, n) block), two
        vectors (a frictional problem's mu and e_T), or, for a moving obstacle (a rheonomic
        problem, whose geometric kernels take the time first), a vector (g(t, q), the rate
        dg/dt) or a matrix (G(t, q)).

    Returns
    -------
    FirstClassKernel
        Made once per process and ``function``; its entry point is compiled once per machine
        (cached on disk under a name carrying the digest of ``function``'s source).
        ``function`` itself when numba's JIT is disabled (the loops then run as plain Python).
    """
    if numba.config.DISABLE_JIT:
        return function
    key = (id(function), form)
    if key not in _FIRST_CLASS:
        kind, template = _ENTRIES[form]
        namespace = dict(template.__globals__)
        # inlined into the entry point, without reference counting (the arrays it gets are
        # views of the caller's memory)
        namespace["inner"] = _nrt_free(function)
        entry = types.FunctionType(template.__code__, namespace, template.__name__)
        entry.__module__ = template.__module__
        hasher = hashlib.sha256()
        _digest(function, hasher, set())
        entry.__qualname__ = f"{template.__qualname__}_{hasher.hexdigest()[:20]}"
        cfunc = numba.cfunc(_ENTRY_SIGNATURE, nopython=True, cache=True)(entry)
        _FIRST_CLASS[key] = (function, FirstClassKernel(kind, cfunc))
    return _FIRST_CLASS[key][1]


class BoundKernel:
    """``function(kernels, *arguments)`` as a value called with ``*arguments``.

    For a function derived from a problem's first-class kernels (a projection onto K built from
    the gap and its gradient): ``function`` is compiled once for every problem, and ``kernels``
    (a tuple of :class:`FirstClassKernel`) is a run-time value, like the kernels themselves.
    Made by :func:`bind_kernels`.
    """

    __slots__ = ("name", "kernels")

    def __init__(self, name: str, kernels: tuple) -> None:
        self.name = name
        self.kernels = kernels

    def __repr__(self) -> str:
        return f"BoundKernel({self.name}, {self.kernels!r})"


#: The functions of the bound kernels of this process, by name (their digest).
_BOUND: dict[str, Any] = {}


class BoundKernelType(numba_types.Callable):
    """numba's type of a :class:`BoundKernel`: its function's name and its kernels' type."""

    def __init__(self, function: str, kernels: Any) -> None:
        self.function = function
        self.kernels = kernels
        super().__init__(name=f"BoundKernel({function}, {kernels})")

    @property
    def key(self) -> tuple:
        return self.function, self.kernels

    def _resolve(self, context: Any, args: tuple, kws: dict) -> tuple[Any, Any]:
        dispatcher = numba_types.Dispatcher(_BOUND[self.function])
        return dispatcher, context.resolve_function_type(dispatcher, (self.kernels, *args), kws)

    def get_call_type(self, context: Any, args: tuple, kws: dict) -> Any:
        if kws:
            return None
        full = self._resolve(context, args, kws)[1]
        if full is None:
            return None
        return signature(full.return_type, *args, recvr=self)

    def get_call_signatures(self) -> tuple[list, bool]:
        return [], True

    def get_impl_key(self, sig: Any) -> type:
        return type(self)


@typeof_impl.register(BoundKernel)
def _typeof_bound(value: BoundKernel, context: Any) -> BoundKernelType:
    return BoundKernelType(value.name, numba.typeof(value.kernels, context.purpose))


@register_model(BoundKernelType)
class _BoundModel(models.StructModel):
    def __init__(self, dmm: Any, fe_type: Any) -> None:
        super().__init__(dmm, fe_type, [("kernels", fe_type.kernels)])


@unbox(BoundKernelType)
def _unbox_bound(typ: Any, obj: Any, c: Any) -> NativeValue:
    kernels = c.pyapi.object_getattr_string(obj, "kernels")
    native = c.unbox(typ.kernels, kernels)
    c.pyapi.decref(kernels)
    bound = cgutils.create_struct_proxy(typ)(c.context, c.builder)
    bound.kernels = native.value
    return NativeValue(bound._getvalue(), is_error=native.is_error)


@lower_builtin(BoundKernelType, numba_types.VarArg(numba_types.Any))
def _call_bound(context: Any, builder: Any, sig: Any, args: tuple) -> Any:
    bound_type = sig.args[0]
    bound = cgutils.create_struct_proxy(bound_type)(context, builder, value=args[0])
    dispatcher, full = bound_type._resolve(context.typing_context, sig.args[1:], {})
    values = [
        context.cast(builder, value, given, wanted)
        for value, given, wanted in zip(args[1:], sig.args[1:], full.args[1:], strict=True)
    ]
    call = context.get_function(dispatcher, full)
    result = call(builder, [bound.kernels, *values])
    return context.cast(builder, result, full.return_type, sig.return_type)


def bind_kernels(function: Callable, kernels: tuple) -> BoundKernel:
    """``function`` (compiled by :func:`specialize` with ``inline``) with its first argument
    bound to ``kernels``, a tuple of first-class kernels (:class:`BoundKernel`).

    ``function`` is registered under a name carrying the digest of its source and bindings,
    which is part of the numba type of the value (and so of the cache keys of the loops taking
    it): the same function bound to any problem's kernels has one type.
    """
    hasher = hashlib.sha256()
    _digest(function, hasher, set())
    name = f"{function.py_func.__qualname__}_{hasher.hexdigest()[:20]}"
    _BOUND.setdefault(name, function)
    return BoundKernel(name, kernels)


class _Callbacks(event.Listener):
    """A numba event listener calling ``on_start`` and ``on_end`` (no argument)."""

    def __init__(self, on_start: Callable[[], None], on_end: Callable[[], None]) -> None:
        self._on_start, self._on_end = on_start, on_end

    def on_start(self, event: event.Event) -> None:
        self._on_start()

    def on_end(self, event: event.Event) -> None:
        self._on_end()


def watch_compilation(
    lock_taken: Callable[[], None],
    lock_released: Callable[[], None],
    compiling: Callable[[], None],
) -> None:
    """Call ``lock_taken`` and ``lock_released`` when numba's compiler lock is asked for and
    released (it is held to compile a function and to load one from numba's disk cache; nested
    in the same thread), and ``compiling`` when numba starts compiling a function (not loading
    it), from then on in this process."""
    event.register("numba:compiler_lock", _Callbacks(lock_taken, lock_released))
    event.register("numba:compile", _Callbacks(compiling, lambda: None))
