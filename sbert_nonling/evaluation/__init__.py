"""Evaluation: STS files read and checked (``sts_data``, torch-free, so the command line checks an STS folder before
loading torch), the STS evaluator, retrieval, geometry, plots and the robustness report. Names are imported on first
use (PEP 562)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sbert_nonling.util.lazy_names import lazy_names

if TYPE_CHECKING:
    from sbert_nonling.evaluation.sts import STSEvaluator, evaluate_sts, evaluate_sts_dir, sts_dev_evaluator
    from sbert_nonling.evaluation.sts_data import STS_TASKS, STSData, load_sts_dir, load_stsb_multi_dir
    from sbert_nonling.evaluation.table import format_sts_table

#: The module of this package that defines each public name.
_LAZY = {
    "STSEvaluator": "sts",
    "evaluate_sts": "sts",
    "evaluate_sts_dir": "sts",
    "sts_dev_evaluator": "sts",
    "STS_TASKS": "sts_data",
    "STSData": "sts_data",
    "load_sts_dir": "sts_data",
    "load_stsb_multi_dir": "sts_data",
    "format_sts_table": "table",
}

__getattr__, __dir__ = lazy_names(
    __name__, globals(), {name: f"{__name__}.{module}" for name, module in _LAZY.items()}
)

__all__ = [
    "STSEvaluator",
    "STSData",
    "STS_TASKS",
    "evaluate_sts",
    "evaluate_sts_dir",
    "format_sts_table",
    "load_sts_dir",
    "load_stsb_multi_dir",
    "sts_dev_evaluator",
]
