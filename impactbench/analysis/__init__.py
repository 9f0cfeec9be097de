"""The analysis of trajectories: metrics, impact events, observed orders and their fits,
long-time fits, reference solutions.

Imports the core only (tests/test_layout.py).
"""
