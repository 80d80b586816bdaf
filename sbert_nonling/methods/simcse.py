"""SimCSE (Gao et al., 2021) as a plan: sentences as their own positives (unsup) or NLI triplets (sup)."""

from __future__ import annotations

from sbert_nonling.configs.simcse import SimCSEConfig
from sbert_nonling.data.sources import DataSources
from sbert_nonling.evaluation.sts import sts_dev_evaluator
from sbert_nonling.methods.plan import MethodPlan, TrainingStage
from sbert_nonling.methods.sentence_encoder import (
    single_run_arguments,
    starting_sentence_model,
    text_contrastive_loss,
    text_training_data,
)


def build_simcse(config: SimCSEConfig, data: DataSources) -> MethodPlan:
    """SimCSE's pieces (docs/simcse.md): the sentence model, ``(s, s)`` pairs of ``text_file`` (``config.data ==
    "text"``) or NLI triplets of ``nli_file`` (``"nli"``), :class:`SimCSELoss` and one run of
    :class:`NonLinguisticTrainer`; with ``sts_dir`` the STS-B dev evaluator selects the best checkpoint. Nothing is
    written or evaluated; call ``transformers.set_seed(config.seed)`` first to draw the head as the runner does.

    Args:
        config: :class:`SimCSEConfig` (the ``simcse-unsup`` / ``simcse-sup`` recipes).
        data: ``text_file`` or ``nli_file`` (a local file or a Hub dataset); ``sts_dir``: SentEval-layout STS folder.

    Example::

        import os
        from transformers import set_seed

        from sbert_nonling.configs import SimCSEConfig
        from sbert_nonling.data import DataSources
        from sbert_nonling.methods import build_simcse

        # offline: a tiny random BERT; e.g. SimCSEConfig(): bert-base-uncased, the paper's unsupervised row
        config = SimCSEConfig(model="tiny:bert", pooling="mean", max_steps=2, batch_size=8)
        set_seed(config.seed)
        text_file = os.environ["SBERT_NONLING_SHARED"] + "/data/corpus/wiki1m_for_simcse.first11913.txt"
        plan = build_simcse(config, DataSources(text_file=text_file))
        plan.train("simcse-bert")  # checkpoints in simcse-bert/checkpoints
        plan.model.save("simcse-bert/model")
    """
    train_dataset, sentences = text_training_data(config, data.text_file, data.nli_file)
    sentence_model = starting_sentence_model(config, sentences)
    evaluator = sts_dev_evaluator(data.sts_dir, config.eval_tasks) if data.sts_dir is not None else None
    args = single_run_arguments(config, evaluator is not None)
    loss = text_contrastive_loss(sentence_model, config.text_loss, args.world_size > 1)
    return MethodPlan(
        sentence_model,
        [TrainingStage("train", train_dataset, loss, args, trainer_kwargs={"train_dataset_name": config.data})],
        evaluator,
    )
