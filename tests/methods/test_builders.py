"""BUILDERS (methods/__init__.py): every setting of every method config reaches a consumer. Each builder runs on a
config that records the settings it reads; what it does not read is read by the application (named below)."""

from __future__ import annotations

from typing import Any

import pytest

from sbert_nonling.app.recipes import load_recipe
from sbert_nonling.configs import METHOD_CONFIGS
from sbert_nonling.configs.base import Settings
from sbert_nonling.data import DataSources
from sbert_nonling.methods import BUILDERS, TrainingStage

#: Settings no builder reads, and who reads them instead.
READ_ELSEWHERE = {
    "name": "run records, model cards and error messages (sbert_nonling.app, sbert_nonling.export)",
    "description": "model cards (sbert_nonling.export.model_card)",
    "reference": "model cards (sbert_nonling.export.model_card)",
    "tiny": "run records, model cards and reproduce reports (sbert_nonling.app, sbert_nonling.export): the record "
    "that the tiny block was applied; the tiny models themselves are model names (tiny:bert, ...)",
}


def recording(settings: Settings, reads: set[str], prefix: str = "") -> Settings:
    """A copy of ``settings`` that adds the name of every setting read to ``reads`` (a block's as ``block.name``)."""
    names = set(settings.field_names())

    constructed = False  # the config's own checks in __post_init__ read every setting: those reads do not count

    def read(self: Any, name: str) -> Any:
        if constructed and name in names:
            reads.add(prefix + name)
        return object.__getattribute__(self, name)

    values = {}
    for name in names:
        value = getattr(settings, name)
        values[name] = recording(value, reads, f"{prefix}{name}.") if isinstance(value, Settings) else value
    recorded = type(type(settings).__name__, (type(settings),), {"__getattribute__": read})(**values)
    constructed = True
    return recorded


@pytest.fixture(scope="module")
def sentence_transformer_dir(tmp_path_factory, tiny_encoder_dir) -> str:
    """A saved sentence-transformers model: the starting model of the runs below (no tiny encoder)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    folder = tmp_path_factory.mktemp("st-model")
    encoder = Transformer(tiny_encoder_dir)
    SentenceTransformer(modules=[encoder, Pooling(encoder.get_embedding_dimension())]).save(str(folder))
    return str(folder)


def inputs(
    method: str, data_dir, flickr_subset, small_sts_dir, model: str, clip: str
) -> tuple[bool, dict, DataSources]:
    """(tiny, overrides, data) of a small build of ``method`` that takes every path its settings choose between
    (``clip``: a CLIP folder whose embeddings are 16 wide)."""
    corpus = data_dir / "corpus"
    text = {"text_file": corpus / "wiki1m_for_simcse.first11913.txt", "sts_dir": small_sts_dir}
    captions = {"captions_file": flickr_subset / "captions.txt", "image_dir": flickr_subset / "images"}
    start = {"model": model, "keep_model_modules": []}
    images = {"image_encoder": "efficientnet-lite0", "image_dimension": 1280}
    if method == "simcse":
        return False, start, DataSources(**text)
    if method == "visualcse":
        image_dir = data_dir / "images" / "cifar10" / "train"
        return False, {**start, "vit": None, "images_per_class": 2}, DataSources(**text, image_dir=image_dir)
    if method == "audiocse":
        audio = {"audio_dir": data_dir / "audio" / "fsdd", "audio_label_regex": r"^\d+_([a-z]+)_"}
        return False, {**start, "clips_per_class": 2}, DataSources(**text, **audio)
    if method in ("mcse", "macd"):
        return False, {**start, **images}, DataSources(**text, **captions)
    if method == "kdmcse":
        return False, {**start, "clip_encoder": clip, "clip_dimension": 16}, DataSources(**text, **captions)
    if method == "dalr":  # the tiny model is 32 wide, the CLIP 16: no cross-modal term, which needs one width
        teachers = {"teachers": [model, model], "alignment.cross_modal_weight": 0.0}
        return (
            False,
            {**start, **teachers, "clip_encoder": clip, "clip_dimension": 16},
            DataSources(**text, **captions),
        )
    if method == "multitask":
        nli_file = corpus / "snli_devtest_triplets.csv"
        return False, {**start, "train_limit": 48}, DataSources(nli_file=nli_file, sts_dir=data_dir / "sts")
    leapfrog = {"leapfrog_iterations": 1, "parallel_languages": ["de"]}
    data = DataSources(
        text_file=text["text_file"],
        nli_file=corpus / "snli_devtest_triplets.csv",
        sts_dir=small_sts_dir,
        stsb_multi_dir=data_dir / "stsb_multi",
    )
    return True, leapfrog, data


@pytest.mark.parametrize("method", sorted(METHOD_CONFIGS))
def test_every_setting_of_a_method_reaches_the_builder_or_the_application(
    method, data_dir, flickr_subset, small_sts_dir, sentence_transformer_dir, tiny_clip_dir, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    tiny, overrides, data = inputs(
        method, data_dir, flickr_subset, small_sts_dir, sentence_transformer_dir, tiny_clip_dir
    )
    recipe = next(name for name in RECIPES if RECIPES[name] == method)
    reads: set[str] = set()
    for variant in VARIANTS.get(method, [{}]):  # the settings read on each path the method's settings choose
        config = load_recipe(recipe, tiny=tiny, overrides={**overrides, **variant})
        plan = BUILDERS[method](recording(config, reads), data)
        for stage in plan.stages:  # a stage's losses are built when it starts
            if isinstance(stage, TrainingStage):
                stage.build_loss()
    settings = {row.name for row in type(config).describe()}
    unread = settings - reads - set(READ_ELSEWHERE)
    assert not unread, f"{method}: no consumer reads {sorted(unread)}"


#: The paths a method's settings choose between: the joint scheme reads the modality weight, the alternating one the
#: modality learning rate; the anchor's settings count when it is enabled; the text loss's when there is text data;
#: KDMCSE's filter settings when the filter is on.
VARIANTS = {
    "visualcse": [{}, {"scheme": "joint"}],
    "audiocse": [{}, {"scheme": "joint"}],
    "mcse": [{}, {"anchor.enabled": True}],
    "macd": [{}, {"data": "text"}],
    "kdmcse": [{}, {"grounding.filter": True}],
}
#: A recipe of each method.
RECIPES = {
    "simcse-unsup": "simcse",
    "visualcse": "visualcse",
    "audiocse": "audiocse",
    "mcse": "mcse",
    "macd": "macd",
    "kdmcse": "kdmcse",
    "dalr": "dalr",
    "multitask": "multitask",
    "pixel-linguist": "pixel_linguist",
}


def test_the_recording_config_counts_only_what_is_read_after_it_is_built():
    reads: set[str] = set()
    config = recording(load_recipe("kdmcse", tiny=True), reads)
    assert reads == set()  # the config's own checks at construction read every setting: not counted
    assert config.grounding.filter_scores == "cosine" and config.learning_rate > 0
    assert reads == {"grounding", "grounding.filter_scores", "learning_rate"}
