"""SentenceTransformerTrainer for unpaired text + modality training (VisualCSE / AudioCSE)."""

from __future__ import annotations

from typing import Any, get_args

import torch
from datasets import DatasetDict
from torch.utils.data import BatchSampler, ConcatDataset

from sbert_nonling.training.modality_optimizer import ModalityOptimizer, ModalitySchedule
from sbert_nonling.training.trainer import NonLinguisticTrainer
from sbert_nonling.training.unpaired_sampler import UnpairedBatchSampler
from sbert_nonling.util.choices import Scheme


class UnpairedModalityTrainer(NonLinguisticTrainer):
    """Trains one model on a text dataset and unpaired modality datasets (images, audio), each with its own loss.

    ``train_dataset`` and ``loss`` are dicts with the same keys, e.g. ``{"image": ..., "text": ...}``; batches come
    in the order of :class:`UnpairedBatchSampler`. Two optimisation schemes:

    - ``"alternating"`` (VisualCSE's Algorithm 1): every batch is its own optimizer step, taken by that dataset's own
      optimizer (:class:`ModalityOptimizer`, sentence-transformers' parameter groups and ``learning_rate_mapping``)
      under one schedule. Needs ``gradient_accumulation_steps=1``.
    - ``"joint"``: one batch per dataset accumulated into one optimizer step, the gradient of L_text + w * L_modality.
      Needs ``gradient_accumulation_steps`` = number of datasets.

    Args:
        text_dataset: key of the text dataset in ``train_dataset`` (its batch size is the trainer's).
        scheme: ``"alternating"`` or ``"joint"``.
        batch_sizes: batch size per modality dataset key (paper: 48 images).
        learning_rates: learning rate per modality dataset key (alternating; paper, BERT-base: image 1e-6).
        weights: loss weight per modality dataset key (joint; paper Eq. 1 weight w, e.g. 0.05).
        **kwargs: the SentenceTransformerTrainer arguments (``model``, ``args``, ``train_dataset``, ``loss``, ...).
    """

    def __init__(
        self,
        *args,
        text_dataset: str = "text",
        scheme: Scheme = "alternating",
        batch_sizes: dict[str, int] | None = None,
        learning_rates: dict[str, float] | None = None,
        weights: dict[str, float] | None = None,
        **kwargs,
    ) -> None:
        if scheme not in get_args(Scheme):
            raise ValueError(f"scheme={scheme!r} must be one of {list(get_args(Scheme))}.")
        self.text_dataset = text_dataset
        self.scheme = scheme
        self.batch_sizes = dict(batch_sizes or {})
        self.learning_rates = dict(learning_rates or {})
        self.weights = dict(weights or {})
        self.modality_optimizer: ModalityOptimizer | None = None
        model, train_dataset = kwargs.get("model"), kwargs.get("train_dataset")
        if (
            model is not None
            and isinstance(train_dataset, dict)
            and text_dataset in train_dataset
            and not model.model_card_data.widget
        ):
            # The model card's widget examples are sentences: sentence-transformers fails to pick them from media rows.
            model.model_card_data.set_widget_examples(DatasetDict({text_dataset: train_dataset[text_dataset]}))
        super().__init__(*args, **kwargs)
        names = list(self.train_dataset) if isinstance(self.train_dataset, dict) else []
        if text_dataset not in names or len(names) < 2 or not isinstance(self.loss, dict):
            raise ValueError(
                "UnpairedModalityTrainer needs train_dataset and loss dicts holding the text dataset "
                f"{text_dataset!r} and at least one modality dataset; got datasets {names}."
            )
        modalities = set(names) - {text_dataset}
        for setting, values in (
            ("batch_sizes", self.batch_sizes),
            ("learning_rates", self.learning_rates),
            ("weights", self.weights),
        ):
            if not set(values) <= modalities:
                raise ValueError(
                    f"{setting} keys must be modality dataset names {sorted(modalities)}; got {sorted(values)}."
                )
        expected_accumulation = 1 if scheme == "alternating" else len(names)
        if self.args.gradient_accumulation_steps != expected_accumulation:
            raise ValueError(
                f"scheme={scheme!r} with {len(names)} datasets needs "
                f"gradient_accumulation_steps={expected_accumulation} (one "
                f"{'batch' if scheme == 'alternating' else 'batch of every dataset'} per optimizer step), got "
                f"{self.args.gradient_accumulation_steps}."
            )
        self.dataset_names = names

    def get_multi_dataset_batch_sampler(
        self,
        dataset: ConcatDataset,
        batch_samplers: list[BatchSampler],
        generator: torch.Generator | None = None,
        seed: int | None = 0,
    ) -> BatchSampler:
        sizes = {
            index: self.batch_sizes.get(name, self.args.per_device_train_batch_size)
            for index, name in enumerate(self.dataset_names)
        }
        return UnpairedBatchSampler(
            dataset,
            batch_samplers,
            self.dataset_names.index(self.text_dataset),
            sizes,
            generator=generator,
            seed=seed or 0,
        )

    def create_optimizer(self, model=None) -> torch.optim.Optimizer:
        if self.optimizer is None and self.scheme == "alternating":
            # sentence-transformers' parameter groups over every loss; each dataset's optimizer keeps what its loss
            # trains.
            optimizer_cls, optimizer_kwargs = self.get_optimizer_cls_and_kwargs(self.args)
            if set(optimizer_kwargs) & {"params", "model"} or "optimizer_dict" not in optimizer_kwargs:
                raise ValueError(
                    "scheme='alternating' builds one optimizer per dataset from parameter groups; "
                    f"optim={self.args.optim!r} brings its own parameter handling. Use an AdamW / SGD-style optimizer "
                    "or scheme='joint'."
                )
            groups = optimizer_kwargs.pop("optimizer_dict")
            optimizers = {}
            for name in self.dataset_names:
                trained = {id(parameter) for parameter in self.loss[name].parameters()}
                dataset_groups = [
                    {**group, "params": [parameter for parameter in group["params"] if id(parameter) in trained]}
                    for group in groups
                ]
                kwargs = {**optimizer_kwargs, "lr": self.learning_rates.get(name, self.args.learning_rate)}
                optimizers[name] = optimizer_cls([group for group in dataset_groups if group["params"]], **kwargs)
            self.optimizer = self.modality_optimizer = ModalityOptimizer(optimizers)
        return super().create_optimizer(model)

    def create_scheduler(self, num_training_steps: int, optimizer: torch.optim.Optimizer | None = None):
        """Under the alternating scheme, transformers' scheduler for each dataset's optimizer, stepped together
        (:class:`ModalitySchedule`; the text rate first: it is the logged ``learning_rate``)."""
        if self.lr_scheduler is not None or self.modality_optimizer is None:
            return super().create_scheduler(num_training_steps, optimizer)
        schedules = {}
        for name in [self.text_dataset] + [name for name in self.dataset_names if name != self.text_dataset]:
            self.lr_scheduler = None
            schedules[name] = super().create_scheduler(num_training_steps, self.modality_optimizer.optimizers[name])
        # typed LambdaLR by transformers, which only calls step() / get_last_lr() / state_dict() on it
        self.lr_scheduler = ModalitySchedule(schedules)  # type: ignore[assignment]
        return self.lr_scheduler

    def compute_loss(self, model, inputs: dict[str, Any], return_outputs: bool = False, num_items_in_batch=None):
        name = inputs.get("dataset_name")
        if self.modality_optimizer is not None and name is not None and model.training:
            self.modality_optimizer.set_active(name)
        result = super().compute_loss(
            model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch
        )
        weight = self.weights.get(name, 1.0) if self.scheme == "joint" and name is not None else 1.0
        if weight == 1.0:
            return result
        return (result[0] * weight, result[1]) if return_outputs else result * weight

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        """:class:`NonLinguisticTrainer`'s log, plus each dataset's optimizer's rate (``learning_rate_<dataset>``)."""
        if "loss" in logs and isinstance(self.lr_scheduler, ModalitySchedule):
            logs = {
                **logs,
                **{f"learning_rate_{name}": rate for name, rate in self.lr_scheduler.stepped_rates.items()},
            }
        super().log(logs, start_time)
