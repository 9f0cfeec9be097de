"""What the cuts of simulate's per-call work must keep: the contract check of a compiled
problem skipped only while its attributes are unchanged, reused work buffers that carry nothing
from one run to the next, and the integration time reported next to the wall time."""

import numpy as np
import pytest

from impactbench import simulate
from impactbench.core import problem as problem_module
from impactbench.methods import EventDriven, MoreauJean
from impactbench.problems import BouncingBall, TightJoint


@pytest.fixture
def full_checks(monkeypatch):
    """The number of full runs of Problem.check (the checks of the values at q0)."""
    calls = []
    original = problem_module.Problem.check

    def counted(self):
        calls.append(type(self).__name__)
        original(self)

    monkeypatch.setattr(problem_module.Problem, "check", counted)
    monkeypatch.setattr(problem_module, "_PASSED_VALUES", {})  # no contract passed before
    return calls


def test_an_unchanged_compiled_problem_is_not_checked_again(full_checks):
    ball = BouncingBall(restitution=1.0)  # checked by its constructor
    assert full_checks == ["BouncingBall"]
    for _ in range(3):
        simulate(ball, MoreauJean(), 0.01, h=1e-3)
    assert full_checks == ["BouncingBall"]
    ball.v0 = np.array([0.5])  # a new valid value: checked in full, once
    simulate(ball, MoreauJean(), 0.01, h=1e-3)
    simulate(ball, MoreauJean(), 0.01, h=1e-3)
    assert full_checks == ["BouncingBall"] * 2


def test_a_new_problem_of_the_values_of_a_checked_one_is_not_checked_in_full(full_checks):
    BouncingBall(restitution=1.0, q0=2.0)
    assert full_checks == ["BouncingBall"]
    BouncingBall(restitution=1.0, q0=2.0)  # equal parameters: the check of the first holds
    simulate(BouncingBall(restitution=1.0, q0=2.0), MoreauJean(), 0.01, h=1e-3)
    assert full_checks == ["BouncingBall"]
    BouncingBall(restitution=1.0, q0=2.5)  # another initial state: checked in full
    BouncingBall(restitution=1.0, q0=2.0, gravity=5.0)  # another parameter vector
    BouncingBall(restitution=1.0, q0=2.0, t0=-0.0)  # another t0 (its sign bit)
    assert full_checks == ["BouncingBall"] * 4


@pytest.mark.parametrize(
    ("mutate", "name"),
    [
        (lambda ball: ball.q0.__setitem__(0, -1.0), "q0"),
        (lambda ball: setattr(ball, "restitution", 2.0), "restitution"),
        (lambda ball: setattr(ball, "stable_step", -1.0), "stable_step"),
        (lambda ball: setattr(ball, "state_scale", (1.0, 0.0)), "state_scale"),
    ],
)
def test_a_problem_built_equal_to_a_checked_one_and_then_mutated_is_refused(mutate, name):
    simulate(BouncingBall(restitution=0.9), MoreauJean(), 0.01, h=1e-3)
    ball = BouncingBall(restitution=0.9)  # its check is that of the equal problem above
    simulate(ball, MoreauJean(), 0.01, h=1e-3)
    mutate(ball)
    with pytest.raises(ValueError, match=name):
        simulate(ball, MoreauJean(), 0.01, h=1e-3)
    simulate(BouncingBall(restitution=0.9), MoreauJean(), 0.01, h=1e-3)  # the values still run


@pytest.mark.parametrize(
    ("method", "options"),
    [(MoreauJean, {"h": 1e-3}), (EventDriven, {})],
    ids=["time-stepping", "event-driven"],
)
def test_what_is_prepared_is_shared_by_equal_parameters_only(method, options):
    from impactbench.core.problem import checked_state
    from impactbench.core.snapshot import kept

    def prepared(problem, instance):
        problem.check()
        return kept(instance, checked_state(problem))

    simulate(BouncingBall(restitution=0.85), method(), 0.5, **options)
    first = prepared(BouncingBall(restitution=0.85), method())
    assert first is not None  # a new problem and a new method of the same parameters find it
    assert prepared(BouncingBall(restitution=0.85), method()) is first
    assert prepared(BouncingBall(restitution=0.85, mass=2.0), method()) is None
    assert prepared(BouncingBall(restitution=0.86), method()) is None
    other = method(theta=1.0) if method is MoreauJean else method(rtol=1e-8)
    assert prepared(BouncingBall(restitution=0.85), other) is None
    moved = method()
    simulate(BouncingBall(restitution=0.85), moved, 0.5, **options)
    assert prepared(BouncingBall(restitution=0.85), moved) is first
    if method is MoreauJean:
        moved.theta = 0.75  # set after construction: the instance's values now differ
    else:
        moved.rtol = 1e-7
    assert prepared(BouncingBall(restitution=0.85), moved) is None
    # and runs of fresh instances are those of reused ones
    ball, instance = BouncingBall(restitution=0.85), method()
    reused = [_run(ball, instance, 0.5, **options) for _ in range(2)]
    fresh = _run(BouncingBall(restitution=0.85), method(), 0.5, **options)
    _same(reused[0], fresh)
    _same(reused[1], fresh)


@pytest.mark.parametrize(
    ("mutate", "name"),
    [
        (lambda ball: ball.q0.__setitem__(0, -1.0), "q0"),  # in place: the same array object
        (lambda ball: ball.v0.__setitem__(0, np.nan), "v0"),
        (lambda ball: setattr(ball, "restitution", np.float64(2.0)), "restitution"),
        (lambda ball: setattr(ball, "n_dof", 2), "q0"),  # q0 no longer has n_dof entries
        (lambda ball: setattr(ball, "mass_structure", "banded"), "mass_structure"),
    ],
)
def test_an_attribute_mutated_after_a_run_is_still_a_value_error_naming_it(mutate, name):
    ball = BouncingBall()
    simulate(ball, MoreauJean(), 0.01, h=1e-3)  # passes, and its check is kept
    mutate(ball)
    with pytest.raises(ValueError, match=name):
        simulate(ball, MoreauJean(), 0.01, h=1e-3)


def _run(problem, method, t_end, **options):
    trajectory = simulate(problem, method, t_end, **options)
    return trajectory.t, trajectory.q, trajectory.v, trajectory.impacts.t, trajectory.stats


def _same(first, second):
    for a, b in zip(first[:4], second[:4], strict=True):
        np.testing.assert_array_equal(a, b)
    keys = ("steps", "force_evaluations", "impacts")
    assert [first[4][k] for k in keys] == [second[4][k] for k in keys]


@pytest.mark.parametrize(
    ("method", "options"),
    [(MoreauJean(), {"h": 1e-3}), (EventDriven(), {})],
    ids=["time-stepping", "event-driven"],
)
def test_reused_work_buffers_carry_nothing_from_one_run_to_the_next(method, options):
    # the resting ball (contact at every step: warm-started LCPs, Zeno cut) run again after a
    # different run of the same sizes, which takes the same pooled buffers
    first = _run(BouncingBall(restitution=0.8), method, 6.0, **options)
    _run(BouncingBall(restitution=0.5, q0=2.0), method, 3.0, **options)
    _same(first, _run(BouncingBall(restitution=0.8), method, 6.0, **options))
    joint = TightJoint()  # two constraints
    second = _run(joint, method, 2.0, **options)
    _run(TightJoint(restitution=0.2), method, 1.0, **options)
    _same(second, _run(joint, method, 2.0, **options))


@pytest.mark.parametrize(
    ("method", "options"),
    [
        (MoreauJean(), {"h": 1e-3}),
        (MoreauJean(compiled=False), {"h": 1e-2}),
        (EventDriven(), {}),
        (EventDriven(compiled=False), {}),
    ],
    ids=["compiled loop", "plain loop", "compiled engine", "scipy"],
)
def test_the_integration_time_is_part_of_the_wall_time(method, options):
    stats = simulate(BouncingBall(), method, 0.5, **options).stats
    assert 0.0 < stats["integration_time"] <= stats["wall_time"]


def test_a_freed_problem_leaves_no_kept_check():
    ball = BouncingBall()
    key = id(ball)
    assert key in problem_module._PASSED
    del ball
    assert key not in problem_module._PASSED


def test_an_engine_run_that_outgrows_its_output_is_the_same_run():
    # capacity 2 fills up at once: the run is repeated with 4, 8, ... samples, each size taking
    # its own pooled buffers; the trajectory is that of a run with room from the start
    from impactbench.core.events import simulate_compiled

    ball = BouncingBall(restitution=0.8)
    roomy = simulate_compiled(ball, 6.0)
    for _ in range(2):
        grown = simulate_compiled(ball, 6.0, capacity=2)
        for a, b in ((roomy.t, grown.t), (roomy.q, grown.q), (roomy.impacts.t, grown.impacts.t)):
            np.testing.assert_array_equal(a, b)
        assert grown.stats["steps"] == roomy.stats["steps"] and len(grown.t) > 2


@pytest.mark.parametrize(
    ("method", "options"),
    [(MoreauJean(), {"h": 1e-3}), (EventDriven(), {})],
    ids=["time-stepping", "event-driven"],
)
def test_what_a_method_keeps_per_problem_follows_every_change_of_either(method, options):
    # each run's result is that of the same problem and method built afresh: the prepared
    # arguments (kernel parameters, method parameters, bounds, names) are not stale
    ball = BouncingBall(restitution=0.8)
    simulate(ball, method, 1.0, **options)
    ball.gravity = 5.0  # not in the contract: read by kernel_parameters() only
    fresh = _run(BouncingBall(gravity=5.0), method, 1.0, **options)
    _same(_run(ball, method, 1.0, **options), fresh)
    ball.mass = 2.0
    assert simulate(ball, method, 1.0, **options).problem == ball.name
    if isinstance(method, MoreauJean):
        method.theta = 1.0
        fresh = MoreauJean(theta=1.0)
    else:
        method.rtol = 1e-6
        fresh = EventDriven(rtol=1e-6)
    moved = _run(ball, method, 1.0, **options)
    _same(moved, _run(BouncingBall(gravity=5.0, mass=2.0), fresh, 1.0, **options))
    assert simulate(ball, method, 1.0, **options).method == fresh.name


def test_an_array_attribute_changed_in_place_is_seen():
    # TightJoint2D's load is no attribute of the contract; kernel_parameters() reads it
    from impactbench.problems import TightJoint2D

    joint = TightJoint2D()
    first = _run(joint, MoreauJean(), 0.5, h=1e-3)
    joint.load[1] = -0.5
    changed = _run(joint, MoreauJean(), 0.5, h=1e-3)
    _same(changed, _run(TightJoint2D(load=(0.0, -0.5)), MoreauJean(), 0.5, h=1e-3))
    assert not np.array_equal(first[1], changed[1])


class _ListedGravity(BouncingBall):
    """A ball whose gravity is read from a list (a value a snapshot cannot follow)."""

    def __init__(self, gravity):
        self.listed = [gravity]
        super().__init__()

    def kernel_parameters(self):
        return np.array([self.listed[0], self.mass])


@pytest.mark.parametrize(
    ("method", "options"),
    [(MoreauJean(), {"h": 1e-3}), (EventDriven(), {})],
    ids=["time-stepping", "event-driven"],
)
def test_a_problem_holding_a_mutable_value_is_prepared_at_every_run(method, options):
    ball = _ListedGravity(9.81)
    simulate(ball, method, 1.0, **options)
    ball.listed[0] = 5.0  # in place: the problem's attributes hold the same objects
    fresh = _run(BouncingBall(gravity=5.0), method, 1.0, **options)
    _same(_run(ball, method, 1.0, **options), fresh)


def test_runs_of_one_method_and_problem_with_other_ends_and_steps_are_their_own():
    ball, method = BouncingBall(restitution=0.8), MoreauJean()
    for t_end, h, every in ((1.0, 1e-3, 1), (2.0, 1e-3, 7), (1.0, 2e-3, 1), (1.0, 1e-3, 1)):
        _same(
            _run(ball, method, t_end, h=h, output_every=every),
            _run(BouncingBall(restitution=0.8), MoreauJean(), t_end, h=h, output_every=every),
        )


def test_engine_runs_of_one_method_and_problem_with_other_ends_are_their_own():
    # the compiled engine keeps a Run and an initial buffer (the state's bounds included) per
    # (t_end, output_every): each run is that of a fresh method and problem
    ball, method = BouncingBall(restitution=0.8), EventDriven()
    for t_end, every in ((1.0, 1), (2.0, 7), (1.0, 3), (1.0, 1)):
        kept = simulate(ball, method, t_end, output_every=every)
        fresh = simulate(BouncingBall(restitution=0.8), EventDriven(), t_end, output_every=every)
        for a, b in (
            (kept.t, fresh.t),
            (kept.q, fresh.q),
            (kept.stats["growth"], fresh.stats["growth"]),
        ):
            np.testing.assert_array_equal(a, b)
        assert kept.stats["impact_interval"] == fresh.stats["impact_interval"]


@pytest.mark.parametrize(
    ("integrator", "n", "m", "friction"),
    [("DOP853", 1, 1, False), ("RK45", 3, 2, False), ("DOP853", 2, 3, True)],
)
def test_the_event_loop_takes_its_work_arrays_in_a_few_blocks_and_cuts_the_same_views(
    integrator, n, m, friction
):
    # the compiled event loop is passed Buffers.packed (a call of a called helper then passes a
    # few arrays, not the sixty of Work) and cuts Work's views from it with packed_views; a
    # frictional problem's workspace (rws) has the friction scratch rows, 2 m wide
    from impactbench.core.events.buffers import Buffers, packed_views
    from impactbench.core.events.dynamics import friction_layout
    from impactbench.core.events.engine import buffer_shapes

    shapes = buffer_shapes(integrator, n, m)
    buffers = Buffers(*shapes, 8, friction=friction)
    assert len(buffers.packed) <= 8 < len(buffers.work) + len(buffers.work.cws)
    rows = 2 * n + 6 * m + 6 + (friction_layout(n, m)["F_END"] if friction else 0)
    assert buffers.work.rws.shape == (rows, max(n, (1 + friction) * m, 4))
    cut = packed_views(*shapes, friction=friction)(buffers.packed)
    for name, mine, theirs in zip(buffers.work._fields, cut, buffers.work, strict=True):
        pairs = zip(mine, theirs, strict=True) if name == "cws" else [(mine, theirs)]
        for a, b in pairs:
            assert (a.shape, a.dtype, a.ctypes.data) == (b.shape, b.dtype, b.ctypes.data), name
            assert a.flags.c_contiguous and a.base is not None
