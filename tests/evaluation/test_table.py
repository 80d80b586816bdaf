"""format_sts_table: the papers' layout."""

from __future__ import annotations

import pytest

from sbert_nonling.evaluation import format_sts_table


def test_table_has_one_column_per_task_in_paper_order():
    table = format_sts_table(
        {"SimCSE": {"SICK-R": 70.0, "STS12": 68.4, "avg": 69.2}, "ours": {"STS12": 70.0, "avg": 70.0}}
    )
    header, _, first, second = table.splitlines()
    assert header.split() == ["Model", "STS12", "SICK-R", "Avg"]
    assert first.split() == ["SimCSE", "68.40", "70.00", "69.20"]
    assert second.split() == ["ours", "70.00", "-", "70.00"]
    with pytest.raises(ValueError, match="at least one row"):
        format_sts_table({})
