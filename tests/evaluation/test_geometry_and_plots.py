"""Alignment / uniformity / anisotropy against hand computation; visual STS; every eval plot is written."""

from __future__ import annotations

import json
import math

import pytest
import torch
from PIL import Image

from sbert_nonling import ImagePatchEmbed
from sbert_nonling.evaluation.geometry import alignment_uniformity, anisotropy
from sbert_nonling.evaluation.sts_data import STSData, load_sts_dir
from sbert_nonling.evaluation.visual_sts import evaluate_visual_sts, render_as_image
from sbert_nonling.models import build_pixel_model, build_sentence_model
from sbert_nonling.modules.pixel_encoder import PixelEncoder
from sbert_nonling.modules.pixel_renderer import PixelRenderer


def test_alignment_uniformity_and_anisotropy_match_their_definitions(tiny_model):
    tiny_model.eval()
    task = STSData("toy", ["a man plays", "dogs run", "it rains"], ["a man is playing", "cats sleep", "rain falls"], [4.5, 1.0, 4.0])
    result = alignment_uniformity(tiny_model, task)
    unit = lambda texts: torch.nn.functional.normalize(tiny_model.encode(texts, convert_to_tensor=True).float(), dim=-1)  # noqa: E731
    first, second = unit(["a man plays", "it rains"]), unit(["a man is playing", "rain falls"])
    assert result["alignment"] == pytest.approx(((first - second) ** 2).sum(-1).mean().item(), rel=1e-5)
    distinct = unit(sorted(set(task.sentences1) | set(task.sentences2)))
    pairs = [(i, j) for i in range(6) for j in range(i + 1, 6)]
    expected = math.log(sum(math.exp(-2 * ((distinct[i] - distinct[j]) ** 2).sum().item()) for i, j in pairs) / len(pairs))
    assert result["uniformity"] == pytest.approx(expected, rel=1e-3)  # float32 pdist vs float64 sums of tiny distances
    sentences = ["one", "two words", "three words here"]
    embeddings = unit(sentences)
    cosines = [(embeddings[i] @ embeddings[j]).item() for i in range(3) for j in range(3) if i != j]
    assert anisotropy(tiny_model, sentences) == pytest.approx(sum(cosines) / 6, rel=1e-5)
    with pytest.raises(ValueError, match="no pair has a score >= 5"):
        alignment_uniformity(tiny_model, task, positive_threshold=5.0)


def test_visual_sts_reads_rendered_sentences_through_the_image_route(tiny_encoder_dir, tiny_model, small_sts_dir):
    image = render_as_image(PixelRenderer(max_patches=16), "A man is playing a guitar.")
    assert image.size == (64, 64) and image.mode == "RGB"
    assert min(Image.Image.getdata(image.convert("L"))) == 0  # ink (and the EOS patch) made it into the square
    model = build_sentence_model(tiny_encoder_dir, pooling="mean", front_ends={"image": ImagePatchEmbed(img_size=32, embedding_dimension=32)})
    stsb = load_sts_dir(small_sts_dir, "dev", tasks=("STSBenchmark",))
    scores = evaluate_visual_sts(model, stsb, max_patches=16)
    assert set(scores) == {"VisualSTSBenchmark", "avg"} and -100 <= scores["avg"] <= 100
    with pytest.raises(ValueError, match="needs an 'image' route"):
        evaluate_visual_sts(tiny_model, stsb)


def test_eval_cli_writes_every_plot_and_the_multilingual_and_visual_tables(tmp_path, small_sts_dir, data_dir, capsys):
    from sbert_nonling.cli import main

    multi = tmp_path / "multi"
    multi.mkdir()
    for language in ("en", "de"):
        lines = (data_dir / "stsb_multi" / f"stsb-{language}-dev.csv").read_text(encoding="utf-8").splitlines()[:30]
        (multi / f"stsb-{language}-dev.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    encoder = PixelEncoder.from_config(max_patches=16, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64)
    build_pixel_model(encoder, max_patches=16).save(str(tmp_path / "pixel"))
    run = tmp_path / "run" / "checkpoints" / "checkpoint-4"
    run.mkdir(parents=True)
    history = [{"step": 2, "loss": 3.0}, {"step": 4, "loss": 2.5, "eval_STSBenchmark_spearman_cosine": 0.3}]
    (run / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    argv = ["eval", str(tmp_path / "pixel"), "--trust-remote-code", "--tasks", "sts", "sts-multilingual", "--sts-dir",
            str(small_sts_dir), "--stsb-multi-dir", str(multi), "--plots", str(tmp_path / "plots"), "--run-dir",
            str(tmp_path / "run"), "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(result["sts-multilingual"]) == {"en", "de", "avg"} and "STSBenchmark" in result["sts"]
    names = sorted(path.split("/")[-1] for path in result["plots"])
    assert names == ["alignment_uniformity.png", "anisotropy.png", "rendered.png", "robustness.png", "training_curves.png"]
    for path in result["plots"]:
        assert Image.open(path).size[0] > 100
    assert main(["eval", str(tmp_path / "pixel"), "--trust-remote-code", "--tasks", "sts-multilingual"]) == 2
    assert "needs --sts-dir" in capsys.readouterr().err
