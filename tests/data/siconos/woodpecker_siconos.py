"""Siconos' MoreauJeanOSI on Glocker's woodpecker toy: writes Woodpecker.siconos.gz.

Run with the Python that has Siconos (Debian's python3-siconos 4.4.0):

    /usr/bin/python3 tests/data/siconos/woodpecker_siconos.py

The model is Siconos' own Woodpecker example (siconos-tutorials, examples/mechanics/Woodpecker,
WoodPecker.cpp with WoodPeckerConsts.h and its FExt plugin), written with the Python API:
q = (y, phi_M, phi_S), one LagrangianLinearTIDS with the constant mass matrix M of
``problems/woodpecker.py``, the spring as its stiffness K = c_phi [[0, 0, 0], [0, 1, -1],
[0, -1, 1]] (C = 0) and the weights as a constant external force; three LagrangianLinearTIR
(rows normal, tangent) with NewtonImpactFrictionNSL: the beak (e_N = 0.5) and the sleeve's two
edges (e_N = 0), e_T = 0, mu = 0.3; the published initial state q0 = (0, -0.1036, -0.2788),
v0 = (-0.3411, 4.8572e-15, -7.4583); MoreauJeanOSI(theta = 0.5) with its default activation,
FrictionContact(2) with its default solver, h = 2e-5, T = 0.3 (15000 steps), as the example.

Output: gzip (``-n``: no name, no time stamp) of a first line "rows cols", then one row per
step: t, y, y', phi_M, phi_M', phi_S, phi_S', each written with repr (the shortest string that
reads back as the same double).
"""

import gzip
import os

import numpy as np
from siconos.kernel import (
    FrictionContact,
    Interaction,
    LagrangianLinearTIDS,
    LagrangianLinearTIR,
    MoreauJeanOSI,
    NewtonImpactFrictionNSL,
    NonSmoothDynamicalSystem,
    TimeDiscretisation,
    TimeStepping,
)

# WoodPeckerConsts.h (the values of problems/woodpecker.py's PUBLISHED).
R_O, R_M, H_M, L_M, L_G, H_S, L_S = 0.0025, 0.0031, 0.0058, 0.010, 0.015, 0.02, 0.0201
M_M, M_S, J_M, J_S, C_PHI, GRAVITY = 0.0003, 0.0045, 5.0e-9, 7.0e-7, 0.0056, 9.81
E_BEAK, E_SLEEVE, E_TANGENT, MU = 0.5, 0.0, 0.0, 0.3
Q0 = [0.0, -0.1036, -0.2788]
V0 = [-0.3411, 4.8572e-15, -7.4583]
THETA = 0.5
H = 2e-5
T_END = 0.3
OUTPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Woodpecker.siconos.gz")


def woodpecker():
    """The dynamical system: M, K, C = 0 and the weights."""
    mass = np.array(
        [
            [M_S + M_M, M_S * L_M, M_S * L_G],
            [M_S * L_M, J_M + M_S * L_M * L_M, M_S * L_M * L_G],
            [M_S * L_G, M_S * L_M * L_G, J_S + M_S * L_G * L_G],
        ]
    )
    stiffness = C_PHI * np.array([[0.0, 0.0, 0.0], [0.0, 1.0, -1.0], [0.0, -1.0, 1.0]])
    body = LagrangianLinearTIDS(Q0, V0, mass, stiffness, np.zeros((3, 3)))
    body.setFExtPtr([-(M_S + M_M) * GRAVITY, -M_S * L_M * GRAVITY, -M_S * L_G * GRAVITY])
    return body


def contacts():
    """(rows H, offsets b, law) of the beak and the sleeve's two edges: y = H q + b."""
    beak = NewtonImpactFrictionNSL(E_BEAK, E_TANGENT, MU, 2)
    sleeve = NewtonImpactFrictionNSL(E_SLEEVE, E_TANGENT, MU, 2)
    return [
        ([[0.0, 0.0, -H_S], [1.0, L_M, L_G - L_S]], [L_M + L_G - L_S - R_O, 0.0], beak),
        ([[0.0, H_M, 0.0], [1.0, R_M, 0.0]], [R_M - R_O, 0.0], sleeve),
        ([[0.0, -H_M, 0.0], [1.0, R_M, 0.0]], [R_M - R_O, 0.0], sleeve),
    ]


def main():
    body = woodpecker()
    nsds = NonSmoothDynamicalSystem(0.0, T_END)
    nsds.insertDynamicalSystem(body)
    for rows, offsets, law in contacts():
        relation = LagrangianLinearTIR(np.array(rows), offsets)
        nsds.link(Interaction(law, relation), body)
    simulation = TimeStepping(
        nsds, TimeDiscretisation(0.0, H), MoreauJeanOSI(THETA), FrictionContact(2)
    )
    q, v = body.q(), body.velocity()

    def row(t):
        return [t, q[0], v[0], q[1], v[1], q[2], v[2]]

    rows = [row(0.0)]
    while simulation.hasNextEvent():
        simulation.computeOneStep()
        rows.append(row(simulation.nextTime()))
        simulation.nextStep()
    data = np.array(rows)
    lines = [f"{data.shape[0]} {data.shape[1]}"]
    lines += [" ".join(repr(float(x)) for x in values) for values in data]
    with open(OUTPUT, "wb") as out:
        out.write(gzip.compress(("\n".join(lines) + "\n").encode(), 9, mtime=0))
    print(f"wrote {OUTPUT}: {data.shape[0]} rows; final q = {data[-1, 1::2]}")


if __name__ == "__main__":
    main()
