"""Reproductions of the seed systems' experiments (scripts that drive the `wirelab` CLI).

Each module is runnable as ``python -m wirelab.repro.NAME --wirelab PATH --out DIR`` and
writes its tables and figures into DIR; the reports live under ``docs/reproductions/``.
"""
