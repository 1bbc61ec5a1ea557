"""Reproductions of the seed systems' experiments, built on the package's own API
(``wirelab.run`` in-process, :mod:`wirelab.stats`, :mod:`wirelab.repro.common`).

Each module is runnable as ``python -m wirelab.repro.NAME [...] --out DIR`` (default
``./wirelab-repro-NAME``) and writes its tables, figures and a ``PROVENANCE.json`` (commit,
command) into DIR only; the reports live under ``docs/reproductions/``.
"""
