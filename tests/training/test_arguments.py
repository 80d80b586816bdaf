"""training_arguments: precision and DataLoader workers resolved for this machine; bf16 on the CPU is CPU autocast,
and a CPU without native bf16 gets a warning, not a slow surprise; compile and padding reach the trainer."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

from sbert_nonling.app import load_recipe
from sbert_nonling.configs import StageConfig
from sbert_nonling.training.arguments import (
    FUSED_ADAMW,
    cpu_has_native_bf16,
    resolved_compile,
    resolved_precision,
    resolved_workers,
    stage_arguments,
    training_arguments,
)


def test_native_bf16_detection_agrees_with_the_cpu_flags():
    flags = set(Path("/proc/cpuinfo").read_text(encoding="utf-8").split())
    if not {"avx512bw", "amx_bf16", "avx512_bf16"} & flags:
        assert not cpu_has_native_bf16()
    if {"avx512_bf16", "amx_bf16"} & flags:
        assert cpu_has_native_bf16()


def test_bf16_on_the_cpu_is_autocast_and_warns_exactly_where_it_is_emulated(tmp_path, caplog):
    config = load_recipe("simcse-unsup", tiny=True)
    with caplog.at_level(logging.WARNING, logger="sbert_nonling.training.arguments"):
        fp32 = training_arguments(config, tmp_path, evaluating=False, run=config)
    assert not fp32.bf16 and not caplog.records
    with caplog.at_level(logging.WARNING, logger="sbert_nonling.training.arguments"):
        bf16 = training_arguments(config.replace(precision="bf16"), tmp_path, evaluating=False, run=config)
    assert (fp32.learning_rate, fp32.per_device_train_batch_size, fp32.seed) == (
        config.learning_rate,
        config.batch_size,
        config.seed,
    )
    assert fp32.output_dir == str(tmp_path) and fp32.eval_strategy == "no" and not fp32.load_best_model_at_end
    assert bf16.bf16 and bf16.use_cpu == (not torch.cuda.is_available())
    warned = [record.getMessage() for record in caplog.records if "no native bf16" in record.getMessage()]
    assert bool(warned) == (not cpu_has_native_bf16() and not torch.cuda.is_available())
    if warned:
        assert torch.backends.cpu.get_cpu_capability() in warned[0]


def test_the_run_settings_come_from_the_run_and_the_shared_ones_from_the_config(tmp_path):
    config = load_recipe("simcse-unsup", tiny=True)
    stage = StageConfig(learning_rate=2e-5, batch_size=16, epochs=2, max_steps=7, warmup_steps=3)
    args = stage_arguments(config, "contrastive", stage, evaluating=False)
    assert (
        args.learning_rate,
        args.per_device_train_batch_size,
        args.num_train_epochs,
        args.max_steps,
        args.warmup_steps,
    ) == (2e-5, 16, 2, 7, 3)
    assert args.output_dir == "stages/contrastive/checkpoints" and args.seed == config.seed
    single = training_arguments(config.replace(warmup_steps=0.1), tmp_path, evaluating=False, run=config)
    assert (single.learning_rate, single.max_steps, single.warmup_steps) == (config.learning_rate, 200, 0)
    assert training_arguments(config, tmp_path, False, run=config.replace(warmup_steps=0.1)).warmup_steps == 0.1


def test_auto_is_fp32_without_workers_on_a_cpu_and_explicit_settings_hold(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # what auto means on a machine without a GPU
    config = load_recipe("visualcse", tiny=True)
    assert (config.precision, config.dataloader_num_workers, config.dataloader_pin_memory) == ("auto", "auto", "auto")
    assert resolved_precision("auto") == "fp32" and resolved_workers("auto") == 0 and resolved_workers(3) == 3
    plain = training_arguments(config, tmp_path, evaluating=False, run=config)
    assert not plain.fp16 and not plain.bf16 and plain.dataloader_num_workers == 0 and not plain.dataloader_pin_memory
    fed = training_arguments(
        config.replace(dataloader_num_workers=2, dataloader_pin_memory=True),
        tmp_path,
        evaluating=False,
        run=config,
    )
    assert fed.dataloader_num_workers == 2 and fed.dataloader_persistent_workers and fed.dataloader_pin_memory
    with pytest.raises(ValueError, match=r"precision='fp16' needs a CUDA GPU .* use 'fp32' or 'bf16'"):
        training_arguments(config.replace(precision="fp16"), tmp_path, evaluating=False, run=config)


def test_auto_picks_bf16_on_a_gpu_that_has_it_and_fp16_on_an_older_one(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)
    assert resolved_precision("auto") == "bf16" and resolved_precision("fp16") == "fp16"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: False)
    assert resolved_precision("auto") == "fp16" and resolved_precision("fp32") == "fp32"
    monkeypatch.setattr("os.cpu_count", lambda: 32)
    assert resolved_workers("auto") == 8  # 16 cores per GPU: 8 workers each (docs/benchmarks.md: 224-px augmentation)
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    assert resolved_workers("auto") == 2


def test_every_optimizer_of_a_run_is_fused_adamw_the_per_modality_ones_included(tmp_path, monkeypatch, data_dir):
    from sbert_nonling.data import DataSources
    from sbert_nonling.methods import build_unpaired_modality

    monkeypatch.chdir(tmp_path)
    text_file = tmp_path / "wiki.txt"
    text_file.write_text(
        "\n".join(
            (data_dir / "corpus" / "wiki1m_for_simcse.first11913.txt").read_text(encoding="utf-8").splitlines()[:32]
        )
        + "\n"
    )
    config = load_recipe(
        "visualcse", tiny=True, overrides={"batch_size": 8, "images_per_class": 2, "modality_batch_size": 4}
    )
    plan = build_unpaired_modality(
        config, DataSources(text_file=text_file, image_dir=data_dir / "images" / "cifar10" / "train")
    )
    (stage,) = plan.stages
    assert stage.args.optim == FUSED_ADAMW
    trainer = stage.trainer(plan.model)
    trainer.create_optimizer()
    optimizers = trainer.modality_optimizer.optimizers
    assert set(optimizers) == {"image", "text"}
    for (
        optimizer
    ) in optimizers.values():  # on a GPU the same setting picks AdamW's CUDA kernel (the parameters' device)
        assert (
            type(optimizer) is torch.optim.AdamW and optimizer.defaults["fused"] and not optimizer.defaults["foreach"]
        )


def test_compile_and_padding_settings_reach_the_trainer_arguments(tmp_path):
    config = load_recipe("simcse-unsup", tiny=True)
    assert (config.compile, config.padding) == ("auto", "auto")

    def arguments(**settings):
        built = training_arguments(config.replace(**settings), tmp_path, evaluating=False, run=config)
        return built.compile_loss, built.pad_to_max_length, built.dataloader_drop_last

    # a compiled run has static shapes: text padded to max_length (padding auto), the short last batch dropped
    assert arguments(compile=False) == (False, False, False)
    assert arguments(compile=True) == (True, True, True)
    assert arguments(compile=True, padding="longest") == (True, False, True)
    assert arguments(compile=False, padding="max_length") == (False, True, False)
    with pytest.raises(ValueError, match="'padding' must be one of"):
        config.replace(padding="fixed")
    with pytest.raises(ValueError, match="'compile'"):
        config.replace(compile="sometimes")


def test_compile_auto_is_on_when_training_on_a_cuda_gpu_and_off_elsewhere(tmp_path, monkeypatch):
    config = load_recipe("simcse-unsup", tiny=True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a CPU (MPS alike: no CUDA)
    built = training_arguments(config, tmp_path, evaluating=False, run=config)
    assert (built.compile_loss, built.pad_to_max_length, built.dataloader_drop_last) == (False, False, False)
    assert resolved_compile("auto") is False
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolved_compile("auto") is True
    assert (resolved_compile(False), resolved_compile(True)) == (False, True)  # explicit settings hold


def test_every_recipe_resolves_to_eager_on_a_machine_without_a_gpu(tmp_path, monkeypatch):
    from sbert_nonling.app import list_recipes

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for name in list_recipes():
        for tiny in (False, True):
            config = load_recipe(name, tiny=tiny)
            assert config.compile == "auto", name  # no recipe pins it
            built = training_arguments(config, tmp_path, evaluating=False, run=StageConfig())
            assert not built.compile_loss and not built.pad_to_max_length and not built.dataloader_drop_last, name
