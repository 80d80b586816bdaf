"""NonLinguisticModelCardData: a plain SentenceTransformerTrainer accepts VisualCSE's datasets (image + text dict) and
trains the joint scheme; sentence-transformers' widget sampling died on the image rows (IndexError)."""

from __future__ import annotations

from datasets import DatasetDict
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments

from sbert_nonling import ImagePatchEmbed, SimCSELoss, UnpairedModalityContrastiveLoss
from sbert_nonling.data import image_folder_dataset, sentence_pairs_dataset
from sbert_nonling.models import build_sentence_model
from sbert_nonling.util.model_card_data import NonLinguisticModelCardData


def test_a_plain_trainer_trains_visualcses_datasets(tiny_encoder_dir, wiki_sentences, data_dir, tmp_path):
    model = build_sentence_model(tiny_encoder_dir, front_ends={"image": ImagePatchEmbed(img_size=16, patch_size=8)})
    assert isinstance(model.model_card_data, NonLinguisticModelCardData)
    images, _ = image_folder_dataset(data_dir / "images" / "cifar10" / "train", img_size=16, limit_per_class=2)
    train = DatasetDict({"image": images, "text": sentence_pairs_dataset(wiki_sentences[:32])})
    loss = {"image": UnpairedModalityContrastiveLoss(model), "text": SimCSELoss(model)}
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=4, report_to=[], save_strategy="no",
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
