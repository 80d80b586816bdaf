"""Print STS results the way the papers do: one column per task, then Avg."""

from __future__ import annotations

from collections.abc import Mapping

from sbert_nonling.evaluation.sts_data import STS_TASKS


def format_sts_table(rows: Mapping[str, Mapping[str, float]]) -> str:
    """A plain-text table of ``rows`` (label -> an evaluator's ``{task: score x100, "avg": mean}``): one column per
    task (papers' order first; ``-`` where a row lacks it), then the row's own ``Avg``.

    Args:
        rows: row label -> scores x100 by task name, plus ``"avg"``.

    Example::

        from sbert_nonling.evaluation import format_sts_table

        rows = {"before": {"STSBenchmark": 20.1, "avg": 20.1}, "after": {"STSBenchmark": 55.3, "avg": 55.3}}
        print(format_sts_table(rows))
    """
    if not rows:
        raise ValueError("format_sts_table needs at least one row.")
    seen = {task for scores in rows.values() for task in scores if task != "avg"}
    tasks = [task for task in STS_TASKS if task in seen] + sorted(seen - set(STS_TASKS))
    label_width = max(len("Model"), *(len(label) for label in rows))
    widths = [max(len(task), 6) for task in tasks]
    header = "  ".join(
        ["Model".ljust(label_width), *(task.rjust(width) for task, width in zip(tasks, widths)), "   Avg"]
    )
    lines = [header, "-" * len(header)]
    for label, scores in rows.items():
        cells = [f"{scores[task]:.2f}" if task in scores else "-" for task in tasks]
        average = f"{scores['avg']:.2f}" if "avg" in scores else "-"
        lines.append(
            "  ".join([label.ljust(label_width), *(c.rjust(w) for c, w in zip(cells, widths)), average.rjust(6)])
        )
    return "\n".join(lines)
