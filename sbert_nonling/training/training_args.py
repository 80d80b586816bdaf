"""NonLinguisticTrainingArguments: sentence-transformers' training arguments plus the package trainer's options."""

from __future__ import annotations

from dataclasses import dataclass, field

from sentence_transformers import SentenceTransformerTrainingArguments


@dataclass
class NonLinguisticTrainingArguments(SentenceTransformerTrainingArguments):
    """``SentenceTransformerTrainingArguments`` plus the speed options of
    :class:`~sbert_nonling.training.trainer.NonLinguisticTrainer` (another trainer ignores them).

    Args:
        compile_loss: compile each training loss with ``torch.compile`` when the trainer is built: the model's
            forward and the loss in one graph per loss (``nn.Module.compile``, so the loss and its model keep their
            names and state dicts). transformers' own ``torch_compile`` compiles the model alone and leaves the loss
            eager.
        compile_backend: the ``torch.compile`` backend (``"inductor"``; ``"aot_eager"`` traces without generating
            code).
        compile_mode: the ``torch.compile`` mode (None: the default; ``"reduce-overhead"``: CUDA graphs).
        pad_to_max_length: pad every text batch to the text route's ``max_seq_length`` instead of to its longest
            sentence, so that every batch has the same shape and a compiled graph is built once (the padding is
            masked: the embeddings are those of the shorter padding, up to rounding).
        *args, **kwargs: ``SentenceTransformerTrainingArguments``'.

    Example::

        from sbert_nonling.training import NonLinguisticTrainingArguments

        args = NonLinguisticTrainingArguments("checkpoints", compile_loss=True, pad_to_max_length=True)
    """

    compile_loss: bool = field(default=False, metadata={"help": "torch.compile each training loss, model included"})
    compile_backend: str = field(default="inductor", metadata={"help": "the torch.compile backend"})
    compile_mode: str | None = field(default=None, metadata={"help": "the torch.compile mode"})
    pad_to_max_length: bool = field(
        default=False, metadata={"help": "pad text batches to max_seq_length: one shape for every batch"}
    )
