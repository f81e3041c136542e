"""Headless batch grasp evaluation: thousands of candidates, parallel, resumable, on Dask.

::

    from graspsim.batch import load_config, run_batch, summarize, export_results, read_results

    cfg = load_config("examples/batch_barrett_mug.yaml")          # or a dict with the same keys
    run = run_batch(cfg, "mug.sqlite", workers=2)                  # resume=True continues a stopped run
    print(summarize("mug.sqlite").text())
    export_results("mug.sqlite", "mug.parquet")

Modules: :mod:`.config` (the batch file), :mod:`.candidates` (deterministic candidates),
:mod:`.evaluate` (one candidate -> one row), :mod:`.store` (SQLite, export), :mod:`.lock` (one
run per database), :mod:`.runner` (serial, worker processes, Dask), :mod:`.security` (TLS to a
Dask scheduler), :mod:`.outcomes` (what became of a candidate), :mod:`.progress`,
:mod:`.summary`, :mod:`.cli`.
See docs/batch.md.
"""
from __future__ import annotations

from .candidates import Candidate, generate_candidates
from .config import BatchConfig, BatchError, load_config
from .evaluate import Evaluator
from .runner import RunResult, prepare, run_batch
from .store import COLUMNS, RESULT_COLUMNS, TIMING_COLUMNS, ResultStore, export_results, read_config, read_results
from .summary import Summary, summarize

__all__ = ["load_config", "BatchConfig", "BatchError", "Candidate", "generate_candidates", "Evaluator", "run_batch",
           "RunResult", "prepare", "ResultStore", "read_results", "read_config", "export_results", "COLUMNS",
           "RESULT_COLUMNS", "TIMING_COLUMNS", "summarize", "Summary"]
