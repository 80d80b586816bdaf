"""The STS scores a paper reports for a recipe's setting, as its recipe file's ``"paper"`` block gives them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from sbert_nonling.evaluation.sts_data import STS_TASKS


@dataclass(frozen=True)
class PaperResult:
    """What a paper reports for one recipe's setting: Spearman x100 of cosine similarity on the 7 STS test sets
    (STS12-16 in the "all" setting, STS-B test, SICK-R test). A recipe file holds it as its ``"paper"`` block, next to
    its ``"reference"``; ``reproduce`` prints it beside the reproduced scores.

    Args:
        average: the average over the 7 tasks, as printed in the paper.
        source: the paper, the table and the row the numbers come from; whether they were read first hand (the
            paper or its authors' README) and, where not, why.
        tasks: the per-task scores where the paper prints them and they could be read, first hand or, as ``source``
            says, from a reprint whose cells average to the paper's value (task names as in
            :data:`~sbert_nonling.evaluation.sts_data.STS_TASKS`); empty where only the average is known.
        seeds: how many training runs the numbers summarise (1: a single run).

    Example::

        from sbert_nonling.evaluation.paper_results import PaperResult

        paper = PaperResult.from_dict({"average": 76.25, "source": "Gao et al. 2021, SimCSE, Table 5"}, "my.json")
        print(paper.average, paper.tasks, paper.seeds)  # 76.25 {} 1
    """

    average: float
    source: str
    tasks: dict[str, float] = field(default_factory=dict)
    seeds: int = 1

    @classmethod
    def from_dict(cls, values: Any, source: str) -> PaperResult:
        """The reported values of a recipe's ``"paper"`` block; a block that is not one (a missing or unknown key, a
        value of the wrong type, a task that is not an STS test set) raises a ValueError naming the recipe.

        Args:
            values: the block, e.g. ``{"average": 76.25, "source": "...", "tasks": {"STS12": 68.4, ...}}``.
            source: how the error names the recipe (``"recipe file simcse-unsup.json"``).
        """
        where = f'{source}: the "paper" block'
        keys = [item.name for item in dataclasses.fields(cls)]
        if not isinstance(values, dict) or not {"average", "source"} <= set(values) or not set(values) <= set(keys):
            raise ValueError(
                f"{where} must be an object of 'average' and 'source', and optionally 'tasks' and 'seeds', got "
                f"{values!r}."
            )
        average, text = values["average"], values["source"]
        tasks, seeds = values.get("tasks", {}), values.get("seeds", 1)
        numbers = isinstance(tasks, dict) and all(_is_number(score) for score in tasks.values())
        if not (_is_number(average) and isinstance(text, str) and numbers and _is_count(seeds)):
            raise ValueError(
                f"{where} takes a number 'average', a text 'source', 'tasks' of numbers and a count 'seeds' (at least "
                f"1), got {values!r}."
            )
        unknown = [task for task in tasks if task not in STS_TASKS]
        if unknown:
            raise ValueError(f"{where}: {unknown[0]!r} is not one of the 7 STS test sets {list(STS_TASKS)}.")
        return cls(float(average), text, {task: float(score) for task, score in tasks.items()}, seeds)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
