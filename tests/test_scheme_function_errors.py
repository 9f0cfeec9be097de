"""The common mistakes of a scheme's compiled functions (calling another scheme's step through its
class, a static method through its class, an undecorated helper) fail with a short message that
names the offending name and the fix, ``@scheme_function`` (impactbench.core.typing_errors),
instead of numba's typing error of tens of lines; the fix itself runs."""

from __future__ import annotations

import numpy as np
import pytest

import impactbench as ib
from impactbench.core.scheme import scheme_function
from impactbench.core.typing_errors import SchemeFunctionError, explain_typing_error
from impactbench.methods import MoreauJean
from impactbench.problems import BouncingBall


def squared(e):
    """An undecorated helper: numba cannot call it from compiled code."""
    return e * e


class CallsAnotherStep(MoreauJean):
    @staticmethod
    def step(s, problem, options, n, m, k, t, t_next, h, p, e, par):
        return MoreauJean.step(s, problem, options, n, m, k, t, t_next, h, p, e, par)


moreau_jean_step = scheme_function(MoreauJean.step)


class CallsAStaticMethod(MoreauJean):
    @staticmethod
    def restitution(e):
        return e

    @staticmethod
    def step(s, problem, options, n, m, k, t, t_next, h, p, e, par):
        e_used = CallsAStaticMethod.restitution(e)
        return moreau_jean_step(s, problem, options, n, m, k, t, t_next, h, p, e_used, par)


class CallsAPlainHelper(MoreauJean):
    @staticmethod
    def step(s, problem, options, n, m, k, t, t_next, h, p, e, par):
        return moreau_jean_step(s, problem, options, n, m, k, t, t_next, h, p, squared(e), par)


@pytest.mark.parametrize(
    ("scheme", "names"),
    [
        (
            CallsAnotherStep,
            ("MoreauJean.step", "moreau_jean_step = scheme_function(MoreauJean.step)"),
        ),
        (CallsAStaticMethod, ("CallsAStaticMethod.restitution", "scheme_function(")),
        (CallsAPlainHelper, ("squared", "@scheme_function")),
    ],
)
def test_a_compiled_call_numba_cannot_type_names_the_function_and_the_fix(scheme, names):
    with pytest.raises(SchemeFunctionError) as raised:
        ib.simulate(BouncingBall(), scheme(), 0.1, h=1e-2)
    message = str(raised.value)
    for name in names:
        assert name in message
    assert "test_scheme_function_errors.py, line" in message  # where the call is
    assert message.count("\n") == 0 and len(message) < 600  # one paragraph, not numba's pages
    assert "Untyped global name" in str(raised.value.__context__)  # numba's message kept


def test_the_same_step_runs_plain_python_where_the_mistake_does_not_matter():
    """Without compilation the three schemes are valid Python: the error is numba's alone."""
    run = ib.simulate(BouncingBall(), CallsAPlainHelper(compiled=False), 0.5, h=1e-3)
    ratios = run.impacts.normal_velocity_after / run.impacts.normal_velocity_before
    assert np.allclose(ratios[:1], -(0.8**2))  # squared(e): Newton's law with e^2


def test_other_typing_errors_are_left_as_numba_raised_them():
    from impactbench.core._jit import TypingError

    assert explain_typing_error(TypingError("No implementation of function sqrt(unicode)")) is None
