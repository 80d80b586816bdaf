from __future__ import annotations

from sbert_nonling.evaluation.sts import STSEvaluator, evaluate_sts, evaluate_sts_dir, sts_dev_evaluator
from sbert_nonling.evaluation.sts_data import STS_TASKS, STSData, load_sts_dir, load_stsb_multi_dir
from sbert_nonling.evaluation.table import format_sts_table

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
