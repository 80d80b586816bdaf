"""training_arguments: bf16 on the CPU is CPU autocast, and a CPU without native bf16 gets a warning, not a slow surprise."""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from sbert_nonling.training import load_recipe
from sbert_nonling.training.arguments import cpu_has_native_bf16, training_arguments


def test_native_bf16_detection_agrees_with_the_cpu_flags():
    flags = set(Path("/proc/cpuinfo").read_text(encoding="utf-8").split())
    if not {"avx512bw", "amx_bf16", "avx512_bf16"} & flags:
        assert not cpu_has_native_bf16()
    if {"avx512_bf16", "amx_bf16"} & flags:
        assert cpu_has_native_bf16()


def test_bf16_on_the_cpu_is_autocast_and_warns_exactly_where_it_is_emulated(tmp_path, caplog):
    config = load_recipe("simcse-unsup", tiny=True)
    with caplog.at_level(logging.WARNING, logger="sbert_nonling.training.arguments"):
        fp32 = training_arguments(config, tmp_path, evaluating=False, learning_rate=config.learning_rate, batch_size=config.batch_size)
    assert not fp32.bf16 and not caplog.records
    with caplog.at_level(logging.WARNING, logger="sbert_nonling.training.arguments"):
        bf16 = training_arguments(config.replace(bf16=True), tmp_path, evaluating=False, learning_rate=1e-4, batch_size=8)
    assert (fp32.learning_rate, fp32.per_device_train_batch_size, fp32.seed) == (config.learning_rate, config.batch_size, config.seed)
    assert fp32.output_dir == str(tmp_path) and fp32.eval_strategy == "no" and not fp32.load_best_model_at_end
    assert bf16.bf16 and bf16.use_cpu == (not torch.cuda.is_available())
    warned = [record.getMessage() for record in caplog.records if "no native bf16" in record.getMessage()]
    assert bool(warned) == (not cpu_has_native_bf16() and not torch.cuda.is_available())
    if warned:
        assert torch.backends.cpu.get_cpu_capability() in warned[0]
