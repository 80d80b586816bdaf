"""NonLinguisticModelCardData: a plain SentenceTransformerTrainer accepts VisualCSE's datasets (image + text dict) and
trains the joint scheme (sentence-transformers' widget sampling died on the image rows: IndexError); the README
sentence-transformers writes on save loads the full model with the package and trust_remote_code=True, the text
export plainly."""

from __future__ import annotations

import re

from datasets import DatasetDict
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments

from sbert_nonling import ImagePatchEmbed, SimCSELoss, UnpairedModalityContrastiveLoss, export_text_model
from sbert_nonling.data import image_folder_dataset, sentence_pairs_dataset
from sbert_nonling.models import build_sentence_model
from sbert_nonling.util.model_card_data import INSTALL_LINE, NonLinguisticModelCardData


def test_a_plain_trainer_trains_visualcses_datasets(tiny_encoder_dir, wiki_sentences, data_dir, tmp_path):
    model = build_sentence_model(tiny_encoder_dir, front_ends={"image": ImagePatchEmbed(image_size=16, patch_size=8)})
    assert isinstance(model.model_card_data, NonLinguisticModelCardData)
    images, _ = image_folder_dataset(data_dir / "images" / "cifar10" / "train", image_size=16, limit_per_class=2)
    train = DatasetDict({"image": images, "text": sentence_pairs_dataset(wiki_sentences[:32])})
    loss = {"image": UnpairedModalityContrastiveLoss(model), "text": SimCSELoss(model)}
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=2,
        per_device_train_batch_size=4,
        report_to=[],
        save_strategy="no",
        multi_dataset_batch_sampler="round_robin",
    )
    before = model[0].encoder.auto_model.embeddings.word_embeddings.weight.detach().clone()
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=train, loss=loss)
    trainer.train()
    assert trainer.state.global_step == 2
    assert not model[0].encoder.auto_model.embeddings.word_embeddings.weight.equal(before)
    assert all(isinstance(sentence, str) for sentence in model.model_card_data.usage_examples or [])
    model.save(str(tmp_path / "model"))
    reloaded = SentenceTransformer(str(tmp_path / "model"), trust_remote_code=True)
    assert isinstance(reloaded.model_card_data, NonLinguisticModelCardData)  # loaded models train the same way


def loading_lines(readme: str) -> list[str]:
    return re.findall(r"^model = SentenceTransformer\(.*$", readme, flags=re.MULTILINE)


def test_a_saved_full_model_s_card_needs_the_package_and_an_export_s_card_does_not(tiny_encoder_dir, tmp_path):
    model = build_sentence_model(
        tiny_encoder_dir, front_ends={"image": ImagePatchEmbed(image_size=16, patch_size=8, embedding_dimension=32)}
    )
    assert isinstance(model.model_card_data, NonLinguisticModelCardData)
    model.model_card_data.model_id = "me/visualcse-tiny"
    model.save(str(tmp_path / "full"))
    full = (tmp_path / "full" / "README.md").read_text(encoding="utf-8")
    assert loading_lines(full) == ['model = SentenceTransformer("me/visualcse-tiny", trust_remote_code=True)']
    assert INSTALL_LINE in full
    SentenceTransformer(str(tmp_path / "full"), trust_remote_code=True)  # the line works (locally)

    export_text_model(model, tmp_path / "export")
    plain = (tmp_path / "export" / "README.md").read_text(encoding="utf-8")
    assert all("trust_remote_code" not in line for line in loading_lines(plain)) and loading_lines(plain)
    assert INSTALL_LINE not in plain
