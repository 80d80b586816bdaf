"""training_arguments: bf16 on the CPU is CPU autocast, and a CPU without native bf16 gets a warning, not a slow surprise."""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from sbert_nonling.training import get_recipe
from sbert_nonling.training.arguments import cpu_has_native_bf16, training_arguments


def test_native_bf16_detection_agrees_with_the_cpu_flags():
    flags = set(Path("/proc/cpuinfo").read_text(encoding="utf-8").split())
    if not {"avx512bw", "amx_bf16", "avx512_bf16"} & flags:
        assert not cpu_has_native_bf16()
    if {"avx512_bf16", "amx_bf16"} & flags:
        assert cpu_has_native_bf16()


def test_bf16_on_the_cpu_is_autocast_and_warns_exactly_where_it_is_emulated(tmp_path, caplog):
    settings = get_recipe("simcse-unsup", tiny=True)
    with caplog.at_level(logging.WARNING, logger="sbert_nonling.training.arguments"):
        fp32 = training_arguments(settings, tmp_path, evaluating=False, joint=False, interleaved=False)
    assert not fp32.bf16 and not caplog.records
    with caplog.at_level(logging.WARNING, logger="sbert_nonling.training.arguments"):
        bf16 = training_arguments({**settings, "bf16": True}, tmp_path, evaluating=False, joint=False, interleaved=False)
    assert bf16.bf16 and bf16.use_cpu == (not torch.cuda.is_available())
    warned = [record.getMessage() for record in caplog.records if "no native bf16" in record.getMessage()]
    assert bool(warned) == (not cpu_has_native_bf16() and not torch.cuda.is_available())
    if warned:
        assert torch.backends.cpu.get_cpu_capability() in warned[0]
