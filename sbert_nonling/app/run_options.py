"""How a run treats its folder and its checks: the flags that ``train``, ``reproduce`` and the runner share, as one
object."""

from __future__ import annotations

from dataclasses import dataclass

from sbert_nonling.util.option_field import option_field


@dataclass(frozen=True)
class RunOptions:
    """The options of a run that are not settings of its method: whether it continues, replaces or only checks what
    its folder holds, and which refusals it relaxes. :func:`~sbert_nonling.app.runner.train_recipe`,
    :func:`~sbert_nonling.app.reproduce.reproduce` and :func:`~sbert_nonling.app.runner.run_method` take it whole,
    and the command line makes one flag of each field (its ``flag`` and ``help`` metadata). The method's settings
    (recipe, ``--set``, ``--tiny``, ``--max-steps``) are its config, recorded in ``recipe.json``; these are not.

    Args:
        resume: continue an interrupted run from its newest intact checkpoint (``reproduce``: reuse the finished runs
            and resume the interrupted ones); a changed setting is refused unless ``allow_changed`` names it.
        overwrite: replace the run the folder holds, once the new run has finished (the earlier run stays whole
            until then).
        allow_changed: settings a resume may change
            (:data:`~sbert_nonling.training.run_settings.SAFE_TO_CHANGE`); recorded in the results.
        dry_run: check every input and build the plan, then return what the run would do, writing nothing.
        allow_unused_datasets: let a ``max_steps`` cap leave a training dataset without a batch (a warning); by
            default such a cap is refused before the first step.

    Example::

        from sbert_nonling.app.run_options import RunOptions

        options = RunOptions(resume=True, allow_changed=("eval_steps",))
        print(options.resume, options.overwrite)  # True False
        # train_recipe("simcse-unsup", "runs/simcse", data, options=options)
    """

    resume: bool = option_field(
        False,
        "--resume",
        "continue an interrupted run in --output from its newest intact checkpoint (reproduce: reuse the "
        "finished runs, resume the interrupted ones)",
    )
    overwrite: bool = option_field(
        False,
        "--overwrite",
        "replace the run --output already holds (refused without it); the earlier run stays whole until "
        "the new one has finished",
    )
    allow_changed: tuple[str, ...] = option_field(
        (),
        "--allow-changed",
        "with --resume: accept this setting differing from the run's (eval_steps, eval_tasks, "
        "description, reference, dataloader_*; recorded)",
    )
    dry_run: bool = option_field(
        False,
        "--dry-run",
        "check every input and build the plan, print each stage's optimizer steps per dataset, the "
        "precision, the DataLoader workers and where the run would write; write nothing",
    )
    allow_unused_datasets: bool = option_field(
        False,
        "--allow-unused-datasets",
        "train even when --max-steps ends before a dataset's first batch (a warning instead of an error)",
    )
