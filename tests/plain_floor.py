"""A ball above the floor written as a user writes a problem: plain Python, no closed form.

The tests of user code share it: as the class :class:`Floor` (subclass it for another name),
and as :data:`SOURCE`, the text of a user's own module holding it (for the tests that write a
user's files: study files, modules beside them).
"""

SOURCE = '''
import numpy as np

from impactbench import Problem


class Floor(Problem):
    """A ball dropped from 1 m onto the floor q >= 0 (g = 9.81, unit mass); named after its
    class."""

    def __init__(self, restitution=0.5):
        self.name = type(self).__name__
        self.restitution = restitution
        self.q0 = np.array([1.0])
        self.v0 = np.array([0.0])

    def mass_matrix(self, q):
        return np.eye(1)

    def forces(self, t, q, v):
        return np.array([-9.81])

    def gap(self, q):
        return np.array([q[0]])

    def gap_gradient(self, q):
        return np.array([[1.0]])

    def potential_energy(self, q):
        return 9.81 * float(q[0])
'''

exec(SOURCE)  # noqa: S102 - defines Floor here from the one text the user files hold
