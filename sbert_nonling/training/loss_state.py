"""The losses' own parameters (projection heads, learnable temperatures): saved in every checkpoint, restored on
resume."""

from __future__ import annotations

import logging
import os

from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import Tensor, nn
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from sbert_nonling.training.checkpoints import CHECKPOINT_PREFIX, write_failure

logger = logging.getLogger(__name__)

#: The file of a checkpoint folder that holds :func:`loss_state_dict`.
LOSS_STATE_FILE = "loss_state.safetensors"

Losses = nn.Module | dict[str, nn.Module]


def _named_losses(losses: Losses) -> list[tuple[str, nn.Module]]:
    """``(dataset name, loss)`` pairs; a single loss is named ``"loss"``."""
    return list(losses.items()) if isinstance(losses, dict) else [("loss", losses)]


def loss_state_dict(losses: Losses, model: nn.Module) -> dict[str, Tensor]:
    """The parameters and buffers the losses own (in their state dicts, not the model's), keyed
    ``<dataset name>.<key>`` (``loss.<key>`` for a single loss); a tensor shared by several losses is stored once,
    under its first key.

    Args:
        losses: the trainer's loss, or its dict of losses by dataset name.
        model: the model, whose own tensors are left out.
    """
    model_tensors = {id(tensor) for tensor in (*model.parameters(), *model.buffers())}
    state, seen = {}, set()
    for name, loss in _named_losses(losses):
        for key, tensor in loss.state_dict(keep_vars=True).items():
            if id(tensor) in model_tensors or id(tensor) in seen:
                continue
            seen.add(id(tensor))
            state[f"{name}.{key}"] = tensor.detach().cpu().contiguous()
    return state


def loss_parameters(losses: Losses, model: nn.Module) -> list[nn.Parameter]:
    """The trainable parameters the losses own (not the model's), each once, in a fixed order.

    Args:
        losses: the trainer's loss, or its dict of losses by dataset name.
        model: the model, whose own parameters are left out.
    """
    model_parameters = {id(parameter) for parameter in model.parameters()}
    owned, seen = [], set()
    for _, loss in _named_losses(losses):
        for parameter in loss.parameters():
            if parameter.requires_grad and id(parameter) not in model_parameters and id(parameter) not in seen:
                seen.add(id(parameter))
                owned.append(parameter)
    return owned


def load_loss_state_dict(losses: Losses, state: dict[str, Tensor]) -> None:
    """Copy a :func:`loss_state_dict` into the losses' own tensors, in place (shared tensors and the optimizer
    agree).

    Args:
        losses: the trainer's loss, or its dict of losses by dataset name.
        state: a :func:`loss_state_dict`, e.g. read from a checkpoint.
    """
    targets = {
        f"{name}.{key}": tensor
        for name, loss in _named_losses(losses)
        for key, tensor in loss.state_dict(keep_vars=True).items()
    }
    unknown = sorted(set(state) - set(targets))
    if unknown:
        raise ValueError(f"The checkpoint's loss state has entries the current losses lack: {unknown[:5]}.")
    for key, value in state.items():
        targets[key].data.copy_(value.to(targets[key].device))


def save_loss_state(folder: str | os.PathLike, losses: Losses, model: nn.Module) -> None:
    """Write :func:`loss_state_dict` to :data:`LOSS_STATE_FILE` in checkpoint ``folder`` (nothing when the losses own
    no tensor); a failed write raises the :class:`~sbert_nonling.training.checkpoints.CheckpointWriteError` of
    :func:`~sbert_nonling.training.checkpoints.write_failure`.

    Args:
        folder: the checkpoint folder.
        losses: the trainer's loss, or its dict of losses by dataset name.
        model: the model, whose own tensors are left out.
    """
    loss_state = loss_state_dict(losses, model)
    if not loss_state:
        return
    try:
        save_file(loss_state, os.path.join(folder, LOSS_STATE_FILE))
    except (OSError, SafetensorError) as error:
        raise write_failure(folder, error) from error


def restore_loss_state(checkpoint: str | os.PathLike, losses: Losses, model: nn.Module) -> None:
    """Load the :data:`LOSS_STATE_FILE` of ``checkpoint`` into the losses (:func:`load_loss_state_dict`); a checkpoint
    without one, of losses that own tensors, leaves them as they are, with a warning.

    Args:
        checkpoint: the checkpoint folder training resumes from.
        losses: the trainer's loss, or its dict of losses by dataset name.
        model: the model, whose own tensors are left out.
    """
    path = os.path.join(checkpoint, LOSS_STATE_FILE)
    if os.path.isfile(path):
        load_loss_state_dict(losses, load_file(path))
    elif loss_state_dict(losses, model):
        logger.warning(f"{checkpoint} has no {LOSS_STATE_FILE}: the losses' heads restart from their initialisation.")


class LossStateCallback(TrainerCallback):
    """Saves the losses' own parameters in every checkpoint and restores them when training resumes.

    sentence-transformers optimises loss-owned parameters but neither checkpoints nor restores them. This writes
    :func:`loss_state_dict` to :data:`LOSS_STATE_FILE` in each checkpoint (not with ``save_only_model``) and loads it
    back on resume, before the first step; the heads never enter the saved model. Add it before the marker callback.

    Args:
        loss: the loss, or the dict of losses, given to the trainer (``trainer.loss`` holds the same modules).
        resume_from_checkpoint: the checkpoint folder training resumes from (callbacks are not told it); when None, a
            resumed run reads ``<output_dir>/checkpoint-<step>``, as ``train(resume_from_checkpoint=True)`` does.

    Example::

        from datasets import Dataset
        from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
        from sbert_nonling.losses import SimCSELoss
        from sbert_nonling.models import build_sentence_model, build_tiny_encoder
        from sbert_nonling.training import CheckpointMarkerCallback, LossStateCallback

        sentences = ["A man is playing a guitar.", "A woman slices an onion."]
        # offline: a tiny random encoder; e.g. "bert-base-uncased"
        model = build_sentence_model(str(build_tiny_encoder("tiny-bert", sentences, hidden_size=32)))
        dataset = Dataset.from_dict({"anchor": sentences, "positive": sentences})
        args = SentenceTransformerTrainingArguments(output_dir="checkpoints", max_steps=1, report_to="none")
        loss = SimCSELoss(model, training_head="mlp")
        callbacks = [LossStateCallback(loss), CheckpointMarkerCallback()]
        trainer = SentenceTransformerTrainer(
            model=model, args=args, train_dataset=dataset, loss=loss, callbacks=callbacks
        )
        trainer.train()  # later: trainer.train(resume_from_checkpoint=True) restores loss.head too
    """

    def __init__(self, loss: Losses, resume_from_checkpoint: str | os.PathLike | None = None) -> None:
        self.loss = loss
        self.resume_from_checkpoint = resume_from_checkpoint

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        if state.global_step == 0:
            return  # a fresh start: the heads keep their initialisation
        assert args.output_dir is not None  # TrainingArguments fills its default
        checkpoint = self.resume_from_checkpoint or os.path.join(
            args.output_dir, f"{CHECKPOINT_PREFIX}{state.global_step}"
        )
        restore_loss_state(checkpoint, self.loss, kwargs["model"])  # the Trainer passes its model to every event

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        if not args.should_save or args.save_only_model:
            return
        assert args.output_dir is not None  # TrainingArguments fills its default
        folder = os.path.join(args.output_dir, f"{CHECKPOINT_PREFIX}{state.global_step}")
        save_loss_state(folder, self.loss, kwargs["model"])  # the Trainer passes its model to every event
