"""The benchmarking: study runs and their cache, result tables, reports and figures, the
Python API and the command line, plug-ins, the conformance suite.

Imports the core and the analysis (tests/test_layout.py).
"""
