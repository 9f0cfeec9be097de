"""Property-based tests of the command line: random well-formed and malformed specs and options.

Every generated command line ends in one of two ways, never in a traceback:

* it is refused: exit code 2 with an ``impactbench [COMMAND]: error:`` message;
* it runs, and then its result is the one the same request gives through the Python API, built
  from the values the generator meant (so a misread spec -- a repeated name, a boolean taken as
  1, a value silently clamped -- would show as a wrong result with status ok).

The generators know the meaning of what they write (a real number, a boolean, an integer, an
unknown name, a malformed piece), and the oracle decides from the documented rules alone
whether the command must run or be refused. Scheduler addresses come from a hand-labelled list.

Budget: ``FUZZ_EXAMPLES`` examples per property (default 40, a few seconds);
``IMPACTBENCH_FUZZ_EXAMPLES=2000 python -m pytest -s tests/test_fuzz_cli.py`` runs a larger
budget and prints the counts of each outcome.
"""

from __future__ import annotations

import ast
import contextlib
import io
import math
import os
import re
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from impactbench import simulate
from impactbench.bench import cli, pipeline
from impactbench.bench.runner import MAX_JOBS_PER_CPU, MAX_RETRIES
from impactbench.bench.runner import execute as real_execute
from impactbench.core.timestepping import MAX_LOG_CAPACITY
from impactbench.methods import CatchingUp, MoreauJean, PaoliSchatzman
from impactbench.problems import BouncingBall

FUZZ_EXAMPLES = int(os.environ.get("IMPACTBENCH_FUZZ_EXAMPLES", "40"))

FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

#: Outcome counts of every property, printed at the end of the module (seen with ``-s``).
TALLY: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def report_counts():
    yield
    for name, count in sorted(TALLY.items()):
        print(f"fuzz {name}: {count}")


# --------------------------------------------------------------------------------------------
# Values with a known meaning, and how they are written


@dataclass(frozen=True)
class Value:
    """A parameter value: ``kind`` is "real", "int", "bool" or "junk" (anything a constructor
    must refuse for a number or a flag); ``value`` what it means; ``text`` how it is written."""

    kind: str
    value: object
    text: str


@st.composite
def reals(draw, low=-10.0, high=10.0, quoted=True) -> Value:
    """A real in [low, high], written as a Python literal (in a spec also as a quoted string,
    which the constructors read as the same number)."""
    x = draw(st.one_of(st.floats(low, high), st.sampled_from([0.0, 0.5, 1.0, 2.0])))
    x = min(max(x, low), high)
    texts = [repr(x), f"{x:.17g}", f" {x!r} "] + ([f"'{x!r}'"] if quoted else [])
    return Value("real", x, draw(st.sampled_from(texts)))


INT64_MAX = 2**63 - 1

#: Integers, from negative to beyond int64 and beyond the float range.
INTEGERS = [-2, 0, 1, 3, 1000, MAX_LOG_CAPACITY, MAX_LOG_CAPACITY + 1, 10**12, INT64_MAX]
INTEGERS += [INT64_MAX + 1, 10**400]


@st.composite
def integers(draw) -> Value:
    k = draw(st.sampled_from(INTEGERS))
    return Value("int", k, draw(st.sampled_from([str(k), f" {k} "])))


BOOLEANS = st.booleans().map(lambda b: Value("bool", b, str(b)))

JUNK = st.sampled_from(
    [
        "nan",
        "inf",
        "-inf",
        "1e400",
        "None",
        "'x'",
        "[0.5]",
        "{}",
        "0.5j",
        "1/2",
        "",
        "x y",
        "(1,2)",
        "-" * 3000 + "1",
        "(" * 300 + "1" + ")" * 300,
        "'True'",
    ]
).map(lambda text: Value("junk", None, text))

ANY_VALUE = st.one_of(reals(), integers(), BOOLEANS, JUNK)


# --------------------------------------------------------------------------------------------
# The documented rules (the oracle)


def _is_real(v: Value) -> bool:
    """A real number: a float, or an integer within the float range."""
    return v.kind == "real" or (v.kind == "int" and abs(v.value) <= 1e308)


def _is_count(v: Value, most: int = INT64_MAX) -> bool:
    """An integer (not a boolean) in 1..most (integer parameters fit the loops' int64)."""
    return v.kind == "int" and 1 <= v.value <= most


def _real(v: Value) -> float:
    return float(v.value)


#: Rules of each parameter: a predicate on the drawn Value.
BALL_RULES = {
    "q0": lambda v: _is_real(v) and _real(v) >= 0.0,
    "v0": _is_real,
    "gravity": lambda v: _is_real(v) and _real(v) > 0.0,
    "restitution": lambda v: _is_real(v) and 0.0 <= _real(v) <= 1.0,
    "mass": lambda v: _is_real(v) and _real(v) > 0.0,
    "t0": _is_real,
}
_STEPPER_RULES = {
    "compiled": lambda v: v.kind == "bool",
    "log_capacity": lambda v: _is_count(v, MAX_LOG_CAPACITY),
}
METHOD_RULES = {
    "MoreauJean": (
        MoreauJean,
        {**_STEPPER_RULES, "theta": lambda v: _is_real(v) and 0.0 < _real(v) <= 1.0},
    ),
    "PaoliSchatzman": (
        PaoliSchatzman,
        {
            **_STEPPER_RULES,
            "projection_tol": lambda v: _is_real(v) and _real(v) > 0.0,
            "projection_max_iter": _is_count,
        },
    ),
    "CatchingUp": (CatchingUp, _STEPPER_RULES),
}


@dataclass(frozen=True)
class Spec:
    """A spec as written (``text``), whether it is valid, and the parameters it means."""

    text: str
    name: str
    valid: bool
    kwargs: dict


#: Values that usually meet each parameter's rule (drawn more often in well-formed commands).
PLAUSIBLE = {
    "q0": reals(0.0, 2.0),
    "v0": reals(-3.0, 3.0),
    "gravity": reals(0.1, 20.0),
    "restitution": reals(0.0, 1.0),
    "mass": reals(0.1, 5.0),
    "t0": reals(0.0, 0.04),
    "theta": reals(0.01, 1.0),
    "projection_tol": reals(1e-15, 1e-6),
    "compiled": BOOLEANS,
    "log_capacity": st.sampled_from([1, 3, 1000, MAX_LOG_CAPACITY]).map(
        lambda k: Value("int", k, str(k))
    ),
    "projection_max_iter": st.sampled_from([1, 3, 1000, INT64_MAX]).map(
        lambda k: Value("int", k, str(k))
    ),
}


@st.composite
def specs(draw, names: list[str], rules: dict[str, dict], well_formed: bool) -> Spec:
    """``Name[key=value,...]`` with known or unknown names and keys, repeated keys, values of
    every kind (``well_formed``: known names, distinct known keys, plausible values); the spec
    is valid when the name and keys are known, no key repeats and every value meets its rule."""
    others = [] if well_formed else ["bouncingball", "NoSuchName", "", "Moreau Jean"]
    name = draw(st.sampled_from([*names, *others]))
    known = rules.get(name, {})
    others = [] if well_formed else ["colour", "class", "Theta"]
    choices = st.sampled_from([*known, *others]) if known or others else st.nothing()
    keys = draw(st.lists(choices, max_size=3, unique=well_formed))
    values = [draw(PLAUSIBLE[k] if well_formed else ANY_VALUE) for k in keys]
    body = ",".join(f"{k}={v.text}" for k, v in zip(keys, values, strict=True))
    form = draw(st.sampled_from(["brackets", "trailing comma", "bare"]))
    if form == "bare" and not keys:
        text = name
    else:
        text = f"{name}[{body}{',' if form == 'trailing comma' and keys else ''}]"
    parseable = all("," not in v.text for v in values)  # (1,2) splits the list: malformed
    valid = (
        name in rules
        and parseable
        and len(set(keys)) == len(keys)
        and all(k in known and known[k](v) for k, v in zip(keys, values, strict=True))
    )
    kwargs = {k: v.value for k, v in zip(keys, values, strict=True)} if valid else {}
    return Spec(text, name, valid, kwargs)


@st.composite
def simulate_commands(draw):
    """``simulate PROBLEM METHOD --t-end T --h H --output-every K``; half of them well formed
    (known names and keys, plausible values and options), half anything."""
    well_formed = draw(st.booleans())
    problem = draw(specs(["BouncingBall"], {"BouncingBall": BALL_RULES}, well_formed))
    rules = {name: rules for name, (_, rules) in METHOD_RULES.items()}
    method = draw(specs(list(METHOD_RULES), rules, well_formed))
    steps = [0.1, 0.05, 0.013, 0.01] + ([] if well_formed else [5.0, 1e-19, 0.0, -0.1])
    h = Value("real", draw(st.sampled_from(steps)), "")
    h = Value("real", h.value, repr(h.value))
    everies = ["1", "3", str(INT64_MAX)]
    if well_formed:
        t_end = draw(reals(0.05, 3.0, quoted=False))
    else:
        t_end = draw(
            st.one_of(reals(0.05, 3.0, quoted=False), JUNK, st.just(Value("real", -1.0, "-1")))
        )
        h = draw(st.one_of(st.just(h), JUNK))
        everies += [str(INT64_MAX + 1), "0", "-1", "x"]
    every = draw(st.sampled_from(everies))
    argv = ["simulate", problem.text, method.text, "--t-end", t_end.text, "--h", h.text]
    argv += ["--output-every", every]
    return argv, problem, method, t_end, h, every


def _run_allowed(problem: Spec, method: Spec, t_end: Value, h: Value, every: str) -> bool:
    """The documented rules of simulate for the options (given valid specs)."""
    if t_end.kind != "real" or not every.lstrip("-").isdigit():
        return False  # --t-end and --output-every are parsed by float() and int()
    if not 1 <= int(every) <= INT64_MAX:
        return False
    if h.kind != "real":
        return False
    t0 = float(problem.kwargs.get("t0", 0.0))
    span, step = t_end.value - t0, h.value
    smallest = 4 * np.finfo(float).eps * max(abs(t0), abs(t_end.value))
    return span > 0 and 0 < step <= span * (1 + 1e-12) and step >= smallest


def _main(argv: list[str]) -> tuple[int, str, str]:
    """Run the command line in this process: exit code, stdout, stderr. Any exception other
    than SystemExit propagates (that would be a traceback at the command line)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exit_:
            code = exit_.code
    return code, out.getvalue(), err.getvalue()


_ERROR = re.compile(r"^impactbench( \w+)?: error: ", re.MULTILINE)


def _assert_refused(code: int, err: str) -> None:
    """Exit code 2 and the usage line and error message of argparse, no traceback."""
    assert code == 2, err
    assert _ERROR.search(err) and "Traceback" not in err, err


_RESULT = re.compile(r"q\(T\) = (\[.*?\]), v\(T\) = (\[.*?\])")


@FUZZ
@given(command=simulate_commands())
def test_simulate_either_refuses_or_gives_the_apis_result(command):
    argv, problem, method, t_end, h, every = command
    code, out, err = _main(argv)
    if not (problem.valid and method.valid and _run_allowed(problem, method, t_end, h, every)):
        _assert_refused(code, err)
        TALLY["simulate: refused as it must be"] += 1
        return
    assert code == 0, (argv, err)
    assert ": ok" in out.splitlines()[0]
    factory = METHOD_RULES[method.name][0]
    expected = simulate(
        BouncingBall(**problem.kwargs),
        factory(**method.kwargs),
        t_end.value,
        h=h.value,
        output_every=int(every),
    )
    q_end, v_end = (ast.literal_eval(text) for text in _RESULT.search(out).groups())
    assert q_end == expected.q[-1].tolist() and v_end == expected.v[-1].tolist()
    TALLY["simulate: ran with the API's result"] += 1


# --------------------------------------------------------------------------------------------
# run: options only (a valid command is stopped before any run)

#: Scheduler addresses, labelled by hand: well formed (True) or refused up front (False).
SCHEDULERS = {
    "tcp://127.0.0.1:8786": True,
    "localhost:8786": True,
    "inproc://x": True,
    "tls://127.0.0.1:1": True,  # well formed; the client refuses it when connecting
    "foo://bar": False,
    "garbage": False,
    "tcp://": False,
    "tcp://127.0.0.1:notaport": False,
    "tcp://127.0.0.1:99999": False,
    "tcp://127.0.0.1:0": False,
    "tcp://[::1": False,
    " ": False,
}


class WouldRun(Exception):
    """Raised in place of running a study whose options were all accepted."""


def _checking_execute(runs, **options):
    """The real execute's checks (on no runs: nothing runs, nothing connects), then stop."""
    real_execute([], **{k: v for k, v in options.items() if k != "description"})
    raise WouldRun


def _run_valid(studies, jobs, backend, scheduler, retries) -> bool:
    """The documented rules of ``impactbench run``'s options."""
    if not all(name in ("convergence", "energy_decay") for name in studies):
        return False
    if backend == "ray" or (backend != "dask" and scheduler is not None):
        return False
    if scheduler is not None and not SCHEDULERS[scheduler]:
        return False
    if retries is not None and not (retries.isdigit() and int(retries) <= MAX_RETRIES):
        return False
    if jobs is None or jobs == "-1":
        return True
    remote = backend == "dask" and scheduler is not None  # else processes on this machine
    most = math.inf if remote else MAX_JOBS_PER_CPU * (os.cpu_count() or 1)
    return jobs.isdigit() and 1 <= int(jobs) <= most


#: Values of each option of ``run``: the well-formed ones, then the others (None: absent).
RUN_OPTIONS = {
    "studies": ([[], ["convergence"], ["convergence", "energy_decay"]], [["nosuch"], [""]]),
    "jobs": ([None, "1", "2", "-1"], ["0", "-2", "x", "1.5", "100000"]),
    "retries": ([None, "0", "1", str(MAX_RETRIES)], ["-1", str(MAX_RETRIES + 1), "x"]),
}
_GOOD_SCHEDULERS = [address for address, good in SCHEDULERS.items() if good]
_BAD_SCHEDULERS = [address for address, good in SCHEDULERS.items() if not good]


@st.composite
def run_commands(draw):
    """``run`` with its options: well formed, or with one or more options drawn from the
    malformed values (unknown study, bad jobs or retries, a bad backend/scheduler pair)."""
    corrupt = draw(st.sets(st.sampled_from(["studies", "jobs", "retries", "backend"])))
    good = {name: draw(st.sampled_from(RUN_OPTIONS[name][0])) for name in RUN_OPTIONS}
    bad = {name: draw(st.sampled_from(RUN_OPTIONS[name][1])) for name in RUN_OPTIONS}
    studies, jobs, retries = (
        bad[name] if name in corrupt else good[name] for name in ("studies", "jobs", "retries")
    )
    if "backend" in corrupt:
        backend, scheduler = draw(
            st.one_of(
                st.tuples(st.just("dask"), st.sampled_from(_BAD_SCHEDULERS)),
                st.tuples(
                    st.sampled_from([None, "loky", "ray"]), st.sampled_from(list(SCHEDULERS))
                ),
            )
        )
    else:
        backend, scheduler = draw(
            st.one_of(
                st.tuples(st.just("dask"), st.sampled_from([None, *_GOOD_SCHEDULERS])),
                st.tuples(st.sampled_from([None, "loky"]), st.just(None)),
            )
        )
    flags = draw(st.lists(st.sampled_from(["--quick", "--no-cache"]), unique=True))
    argv = ["run", *studies, *flags]
    for option, value in (
        ("--jobs", jobs),
        ("--backend", backend),
        ("--scheduler", scheduler),
        ("--retry-failed", retries),
    ):
        if value is not None:
            argv += [option, value]
    valid = _run_valid(studies, jobs, backend, scheduler, retries)
    return argv, valid


@FUZZ
@given(command=run_commands())
def test_run_options_are_accepted_or_refused_without_a_traceback(command, monkeypatch_module):
    argv, valid = command
    if valid:
        with pytest.raises(WouldRun):
            _main(argv)
        TALLY["run: accepted as it must be"] += 1
        return
    code, _, err = _main(argv)
    _assert_refused(code, err)
    TALLY["run: refused as it must be"] += 1


@pytest.fixture(scope="module")
def monkeypatch_module():
    """Replace the execute of ``impactbench run`` by the checking stub for this module's run
    tests."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline, "execute", _checking_execute)
        yield


# --------------------------------------------------------------------------------------------
# Arbitrary text anywhere

ARGV_TEXT = st.text(st.characters(exclude_characters="\x00", exclude_categories=()), max_size=30)


@pytest.fixture(scope="module")
def empty_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("reports")


@FUZZ
@given(
    command=st.sampled_from(["simulate", "run", "report", "list"]),
    tokens=st.lists(ARGV_TEXT, max_size=5),
)
def test_arbitrary_arguments_never_give_a_traceback(
    command, tokens, monkeypatch_module, empty_folder
):
    """Random tokens after a command: refused with exit 2, or (rarely) a valid command line
    (``report`` reads an empty folder: exit 1, nothing to report)."""
    argv = [command, *tokens]
    if command == "report":
        argv = [command, "--output", str(empty_folder), *tokens]
    try:
        code, _, err = _main(argv)
    except WouldRun:
        TALLY["text: a valid run command"] += 1
        return
    if code == 2:
        _assert_refused(code, err)
        TALLY["text: refused"] += 1
    else:
        assert code in (0, 1), (argv, code, err)
        assert not math.isnan(code)
        TALLY["text: accepted (list, report or simulate)"] += 1
