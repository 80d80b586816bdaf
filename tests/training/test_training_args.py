"""NonLinguisticTrainingArguments: sentence-transformers' arguments plus the package trainer's speed options, read
from a command line like any Hugging Face arguments, recorded with the others, ignored by another trainer."""

from __future__ import annotations

import json

from datasets import Dataset
from sentence_transformers import SentenceTransformerTrainer
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from transformers import HfArgumentParser

from sbert_nonling.training import NonLinguisticTrainingArguments

SPEED_OPTIONS = {
    "compile_loss": True,
    "compile_backend": "aot_eager",
    "compile_mode": "reduce-overhead",
    "pad_to_max_length": True,
}


def test_the_speed_options_are_off_by_default_and_read_from_a_command_line_beside_sentence_transformers_own(tmp_path):
    defaults = NonLinguisticTrainingArguments(str(tmp_path), report_to="none")
    assert (defaults.compile_loss, defaults.compile_backend, defaults.compile_mode, defaults.pad_to_max_length) == (
        False,
        "inductor",
        None,
        False,
    )
    argv = [
        *["--output_dir", str(tmp_path), "--report_to", "none", "--batch_sampler", "no_duplicates"],
        *["--compile_loss", "--compile_backend", "aot_eager", "--compile_mode", "reduce-overhead"],
        "--pad_to_max_length",
    ]
    (args,) = HfArgumentParser(NonLinguisticTrainingArguments).parse_args_into_dataclasses(argv)
    assert {name: getattr(args, name) for name in SPEED_OPTIONS} == SPEED_OPTIONS
    assert args.batch_sampler == "no_duplicates"  # sentence-transformers' own options still parse
    recorded = json.loads(args.to_json_string())  # what the trainer logs and the model card's hyper-parameters read
    assert {name: recorded[name] for name in SPEED_OPTIONS} == SPEED_OPTIONS


def test_a_plain_sentence_transformers_trainer_ignores_them(tiny_model, tmp_path):
    settings = {"max_steps": 2, "per_device_train_batch_size": 2, "report_to": "none", "save_strategy": "no"}
    args = NonLinguisticTrainingArguments(str(tmp_path), **settings, **SPEED_OPTIONS)
    pairs = Dataset.from_dict({"anchor": ["A man plays.", "Dogs run.", "It rains.", "A cat sleeps."]})
    pairs = pairs.add_column("positive", pairs["anchor"])
    before = [parameter.detach().clone() for parameter in tiny_model.parameters()]
    trainer = SentenceTransformerTrainer(
        model=tiny_model, args=args, train_dataset=pairs, loss=MultipleNegativesRankingLoss(tiny_model)
    )
    result = trainer.train()
    assert result.global_step == 2
    assert any(not parameter.equal(old) for parameter, old in zip(tiny_model.parameters(), before))
