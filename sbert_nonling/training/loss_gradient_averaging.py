"""Average the gradients of loss-owned parameters across processes, as DDP does for the model's."""

from __future__ import annotations

import torch
from sentence_transformers.util import get_world_size
from torch import nn
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from sbert_nonling.training.loss_state import Losses, loss_parameters


class LossGradientAveragingCallback(TrainerCallback):
    """Under DDP, averages the gradients of the parameters the losses own (heads, learnable temperatures: outside the
    DDP-wrapped model) over all processes before each optimizer step, as DDP does for the model's, so the heads stay
    identical in every process; clipping has run by then. In a single process it does nothing.

    Args:
        loss: the loss, or the dict of losses, given to the trainer (``trainer.loss`` holds the same modules).

    Example::

        from datasets import Dataset
        from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
        from sbert_nonling.losses import SymmetricInfoNCE
        from sbert_nonling.models import build_sentence_model, build_tiny_encoder
        from sbert_nonling.training import LossGradientAveragingCallback

        sentences = ["A man is playing a guitar.", "A woman slices an onion."]
        # offline: a tiny random encoder; e.g. "bert-base-uncased"
        model = build_sentence_model(str(build_tiny_encoder("tiny-bert", sentences, hidden_size=32)))
        dataset = Dataset.from_dict({"anchor": sentences, "positive": sentences})
        args = SentenceTransformerTrainingArguments(output_dir="checkpoints", max_steps=1, report_to="none")
        # its learnable temperature lives outside the DDP-wrapped model (as SimCSE's and MCSE's heads do)
        loss = SymmetricInfoNCE(model, temperature=0.05, learnable_temperature=True)
        callbacks = [LossGradientAveragingCallback(loss)]
        trainer = SentenceTransformerTrainer(model, args, train_dataset=dataset, loss=loss, callbacks=callbacks)
        trainer.train()  # torchrun --nproc_per_node 2 script.py; in a single process the callback does nothing
    """

    def __init__(self, loss: Losses) -> None:
        self.loss = loss
        self._parameters: list[nn.Parameter] = []

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        model: nn.Module = kwargs["model"]  # the Trainer passes its model to every callback event
        self._parameters = loss_parameters(self.loss, model)

    def on_pre_optimizer_step(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs
    ) -> None:
        world_size = get_world_size()
        if world_size < 2:
            return
        for parameter in self._parameters:
            if parameter.grad is not None:
                torch.distributed.all_reduce(parameter.grad)
                parameter.grad /= world_size
