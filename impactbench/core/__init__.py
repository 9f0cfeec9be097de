"""The mechanics and numerics: the Problem and Method contracts, the trajectory, the shared
contact numerics, the one time loop and its compilation, the compiled Runge-Kutta core.

Imports nothing from the analysis or the benchmarking layers (tests/test_layout.py).
"""
