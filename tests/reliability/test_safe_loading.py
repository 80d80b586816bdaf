"""Safe loading: weights the package writes are safetensors, every torch.load is weights_only, tampered pickles in a
checkpoint or model folder are never executed, and full models need an explicit trust_remote_code."""

from __future__ import annotations

import ast
import builtins
import json
from pathlib import Path

import pytest
import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainingArguments

import sbert_nonling
from sbert_nonling import SimCSELoss, export_text_model
from sbert_nonling.training import NonLinguisticTrainer
from sbert_nonling.training.checkpoints import write_complete_marker


class Payload:
    """Unpickling this object creates ``marker``: proof that a pickle was executed."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (builtins.open, (self.marker, "w"))


def _tamper(path: Path, marker: Path) -> None:
    torch.save({"state": Payload(marker)}, path)


def test_every_torch_load_in_the_package_is_weights_only():
    calls = []
    for source in Path(sbert_nonling.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", None) == "load"
                and getattr(node.func.value, "id", None) == "torch"
            ):
                keywords = {keyword.arg: keyword.value for keyword in node.keywords}
                calls.append(source.name)
                assert (
                    isinstance(keywords.get("weights_only"), ast.Constant) and keywords["weights_only"].value is True
                ), source
    assert calls  # the check looked at something (FrozenImageEncoder's EfficientNet weights)


def test_written_weights_are_safetensors_only(tiny_model, tmp_path, wiki_sentences):
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "run"), max_steps=2, per_device_train_batch_size=8, save_steps=2, report_to="none"
    )
    data = Dataset.from_dict({"anchor": wiki_sentences[:16], "positive": wiki_sentences[:16]})
    NonLinguisticTrainer(model=tiny_model, args=args, train_dataset=data, loss=SimCSELoss(tiny_model)).train()
    tiny_model.save(str(tmp_path / "model"))
    export_text_model(tiny_model, tmp_path / "export")
    weights = [path for path in tmp_path.rglob("*") if path.suffix in (".safetensors", ".bin", ".pt", ".pth", ".ckpt")]
    pickled = sorted(path.name for path in weights if path.suffix != ".safetensors")
    # transformers' own trainer states (optimizer, scheduler, RNG) are torch pickles it reads with weights_only=True.
    assert set(pickled) <= {"optimizer.pt", "scheduler.pt", "rng_state.pth", "training_args.bin"}
    assert {"model.safetensors", "loss_state.safetensors"} <= {path.name for path in weights}


def test_tampered_checkpoint_pickles_are_never_executed(tiny_model, tmp_path, wiki_sentences):
    marker = tmp_path / "executed"
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "run"), max_steps=2, per_device_train_batch_size=8, save_steps=2, report_to="none"
    )
    data = Dataset.from_dict({"anchor": wiki_sentences[:16], "positive": wiki_sentences[:16]})
    NonLinguisticTrainer(model=tiny_model, args=args, train_dataset=data, loss=SimCSELoss(tiny_model)).train()
    checkpoint = tmp_path / "run" / "checkpoint-2"
    for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
        _tamper(checkpoint / name, marker)
    resumed_args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "run"), max_steps=4, per_device_train_batch_size=8, save_steps=2, report_to="none"
    )
    trainer = NonLinguisticTrainer(
        model=tiny_model, args=resumed_args, train_dataset=data, loss=SimCSELoss(tiny_model)
    )
    # The completion marker's checksums catch the change before anything is read ...
    with pytest.raises(ValueError, match="No intact checkpoint to resume from.*optimizer.pt has"):
        trainer.train(resume_from_checkpoint=True)
    # ... and a tamperer who also rewrites the marker still meets transformers' weights_only unpickling.
    write_complete_marker(checkpoint, 2)
    with pytest.raises(Exception, match="(?i)weights_only|unpickl|global"):
        trainer.train(resume_from_checkpoint=True)
    assert not marker.exists()


def test_tampered_model_folders_are_never_executed_and_full_models_need_trust(tiny_model, tmp_path):
    marker = tmp_path / "executed"
    tiny_model.save(str(tmp_path / "full"))
    export = export_text_model(tiny_model, tmp_path / "export")
    for folder in (tmp_path / "full", export):
        _tamper(folder / "pytorch_model.bin", marker)  # a pickle beside the safetensors weights
    with pytest.raises(ValueError, match="trust_remote_code"):
        SentenceTransformer(str(tmp_path / "full"))
    SentenceTransformer(str(tmp_path / "full"), trust_remote_code=True).encode(["fine"])
    SentenceTransformer(str(export)).encode(["fine"])  # the text export needs no remote code
    assert not marker.exists()


def test_pickled_pixel_and_image_weights_are_refused(tmp_path):
    from sbert_nonling.data import FrozenImageEncoder
    from sbert_nonling.modules.pixel_encoder import PixelEncoder

    marker = tmp_path / "executed"
    pixel = tmp_path / "pixel"
    pixel.mkdir()
    (pixel / "config.json").write_text(
        json.dumps(
            {
                "model_type": "pixel",
                "image_size": [16, 64],
                "patch_size": 16,
                "num_channels": 3,
                "hidden_size": 32,
                "num_hidden_layers": 1,
                "num_attention_heads": 4,
                "intermediate_size": 64,
                "hidden_act": "gelu",
                "hidden_dropout_prob": 0.0,
                "attention_probs_dropout_prob": 0.0,
                "initializer_range": 0.02,
                "layer_norm_eps": 1e-12,
                "qkv_bias": True,
            }
        )
    )
    _tamper(pixel / "pytorch_model.bin", marker)
    with pytest.raises(Exception, match="(?i)weights_only|unpickl|global"):
        PixelEncoder.from_pretrained(str(pixel), max_patches=4)
    _tamper(tmp_path / "efficientnet.pth", marker)
    with pytest.raises(Exception, match="(?i)weights_only|unpickl|global"):
        FrozenImageEncoder.efficientnet_lite0(tmp_path / "efficientnet.pth")
    assert not marker.exists()


CRAFTED_MODULE = (
    "from pathlib import Path\nPath(__file__).with_name('executed').write_text('code from the model folder ran')\n"
)


@pytest.mark.parametrize("command", ["export", "eval", "robustness"])
def test_no_command_imports_code_a_model_folder_names_unless_asked(
    tiny_model, tmp_path, small_sts_dir, command, capsys
):
    import subprocess
    import sys

    from sbert_nonling.cli import main

    folder = Path(export_text_model(tiny_model, tmp_path / "crafted"))
    modules = json.loads((folder / "modules.json").read_text())
    modules[0]["type"] = "crafted_module.Transformer"  # a class of a file shipped in the folder
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "crafted_module.py").write_text(CRAFTED_MODULE)
    full = tmp_path / "full"
    tiny_model.save(str(full))  # names sbert_nonling classes: an installed package, not sentence_transformers.*
    arguments = {
        "export": lambda model: ["export", str(model), str(tmp_path / f"out-{Path(model).name}")],
        "eval": lambda model: ["eval", str(model), "--sts-dir", str(small_sts_dir)],
        "robustness": lambda model: [
            "robustness",
            str(model),
            "--sts-dir",
            str(small_sts_dir),
            "--perturbations",
            "swap",
        ],
    }[command]
    for model in (folder, full):
        assert main(arguments(model)) == 2
        error = capsys.readouterr().err
        assert "--trust-remote-code" in error and "Traceback" not in error
    assert not (folder / "executed").exists()
    # in a real process too (nothing imported at start-up runs it either)
    completed = subprocess.run(
        [sys.executable, "-m", "sbert_nonling.cli", *arguments(folder)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 2 and not (folder / "executed").exists()
    assert main([*arguments(full), "--trust-remote-code"]) == 0  # asked for: the package's own classes load
