"""Siconos' MoreauJeanOSI on a column of beads falling on the floor: writes ColumnOfBeadsTS4.ref.

Run with the Python that has Siconos (Debian's python3-siconos 4.4.0):

    /usr/bin/python3 tests/data/siconos/column_of_beads_siconos.py

The model is Siconos' own ColumnOfBeads example (siconos-tutorials,
examples/mechanics/ColumnOfBeads/ColumnOfBeadsTS.cpp) reduced to the vertical degree of freedom
of each bead: N beads of mass m and radius r, heights q_i of their centres, one
LagrangianLinearTIDS per bead with M = m and the weight -m g; a bead-floor interaction
q_1 - r >= 0 and bead-bead interactions q_{i+1} - q_i - 2r >= 0 (LagrangianLinearTIR), all with
NewtonImpactNSL(e); MoreauJeanOSI(theta = 0.5) with its default activation rule, an LCP at
velocity level. All interactions are declared at the start (the tutorial declares them when a
gap falls below an alert distance; with the position activation rule this changes nothing: an
interaction enters the LCP only once g(q_k + h/2 v_k) <= 0).

Output: a first line "rows cols", then one row per step: t, q_1..q_N, v_1..v_N, each written
with repr (the shortest string that reads back as the same double).
"""

import os

import numpy as np
from siconos.kernel import (
    LCP,
    Interaction,
    LagrangianLinearTIDS,
    LagrangianLinearTIR,
    MoreauJeanOSI,
    NewtonImpactNSL,
    NonSmoothDynamicalSystem,
    TimeDiscretisation,
    TimeStepping,
)

N_BEADS = 4
MASS = 1.0
RADIUS = 0.1
GRAVITY = 9.81
RESTITUTION = 0.9
THETA = 0.5
H = 1e-3
T_END = 4.0
# ColumnOfBeads' default: bottom centre 10 r above the floor, centres 2.5 r apart (gaps r/2).
Q0 = [RADIUS * (10.0 + 2.5 * i) for i in range(N_BEADS)]
OUTPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ColumnOfBeadsTS4.ref")


def main():
    beads = []
    for i in range(N_BEADS):
        bead = LagrangianLinearTIDS([Q0[i]], [0.0], np.array([[MASS]]))
        bead.setFExtPtr([-MASS * GRAVITY])
        beads.append(bead)
    nsds = NonSmoothDynamicalSystem(0.0, T_END)
    for bead in beads:
        nsds.insertDynamicalSystem(bead)
    law = NewtonImpactNSL(RESTITUTION)
    floor = Interaction(law, LagrangianLinearTIR(np.array([[1.0]]), [-RADIUS]))
    nsds.link(floor, beads[0])
    for i in range(N_BEADS - 1):
        relation = LagrangianLinearTIR(np.array([[-1.0, 1.0]]), [-2.0 * RADIUS])
        nsds.link(Interaction(law, relation), beads[i], beads[i + 1])
    simulation = TimeStepping(nsds, TimeDiscretisation(0.0, H), MoreauJeanOSI(THETA), LCP())
    positions = [bead.q() for bead in beads]
    velocities = [bead.velocity() for bead in beads]

    def row(t):
        return [t] + [x[0] for x in positions] + [x[0] for x in velocities]

    rows = [row(0.0)]
    while simulation.hasNextEvent():
        simulation.computeOneStep()
        rows.append(row(simulation.nextTime()))
        simulation.nextStep()
    data = np.array(rows)
    with open(OUTPUT, "w") as out:
        out.write(f"{data.shape[0]} {data.shape[1]}\n")
        for values in data:
            out.write(" ".join(repr(float(x)) for x in values) + "\n")
    print(f"wrote {OUTPUT}: {data.shape[0]} rows; final q = {data[-1, 1 : N_BEADS + 1]}")


if __name__ == "__main__":
    main()
