"""Worker of tests/distributed/test_ddp.py: run once under ``torchrun --nproc_per_node 2`` (gloo, CPU) and once as a
single process with the doubled batch; writes what the test compares (loss values, gradients, trained weights).

Modes:
    losses  every contrastive loss of the package on one fixed global batch of 8; each process takes its 8 / world
            slice, losses gather across devices, gradients are averaged across processes as DDP does.
    train   a few real trainer steps (text SimCSE, or VisualCSE's alternating scheme) with per-device batch
            8 / world and SGD (Adam would turn float rounding in near-zero gradients into lr-sized sign flips);
            every process saves the model's and the losses' weights and the logged losses (rank 0 to --output,
            rank r beside it with the suffix ``.rank<r>``); ``--token-keep-ratio`` turns on patch dropout.
"""

from __future__ import annotations

import argparse
import os

import torch
from datasets import Dataset, DatasetDict
from safetensors.torch import save_file
from sentence_transformers import SentenceTransformerTrainingArguments
from sentence_transformers.base.sampler import BatchSamplers
from sentence_transformers.util import get_rank, get_world_size

from sbert_nonling import (
    ImagePatchEmbed,
    MultimodalAlignLoss,
    SimCSELoss,
    SymmetricInfoNCE,
    UnpairedModalityContrastiveLoss,
)
from sbert_nonling.models import build_sentence_model
from sbert_nonling.training import NonLinguisticTrainer, UnpairedModalityTrainer
from sbert_nonling.training.loss_state import loss_parameters

GLOBAL_BATCH = 8
SENTENCES = [
    "A man is playing a guitar.",
    "A woman is slicing an onion.",
    "Two dogs run through a field.",
    "The stock market fell sharply today.",
    "A child reads a book in bed.",
    "Rain is expected this weekend.",
    "He cooked pasta for dinner.",
    "The train arrived late at the station.",
]
PARAPHRASES = [
    "Someone plays the guitar.",
    "An onion is being sliced.",
    "Dogs are running in a meadow.",
    "Stocks dropped steeply.",
    "A kid is reading in bed.",
    "It will rain on the weekend.",
    "Pasta was made for supper.",
    "The station saw the train come in late.",
]


def build_model(encoder_dir: str, token_keep_ratio: float = 1.0):
    torch.manual_seed(0)
    front_end = ImagePatchEmbed(
        image_size=32, patch_size=16, embedding_dimension=32, token_keep_ratio=token_keep_ratio
    )
    return build_sentence_model(encoder_dir, pooling="cls", max_seq_length=32, front_ends={"image": front_end})


def global_images(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    view_1 = torch.randn(GLOBAL_BATCH, 3, 32, 32, generator=generator)
    view_2 = view_1 + 0.1 * torch.randn(GLOBAL_BATCH, 3, 32, 32, generator=generator)
    labels = torch.tensor([0, 1, 0, 2, 1, 3, 2, 0])
    return view_1, view_2, labels


def loss_cases(model):
    """name -> (loss, inputs(local slice) -> (features, labels))."""
    view_1, view_2, classes = global_images()
    image_features = torch.randn(GLOBAL_BATCH, 16, generator=torch.Generator().manual_seed(2))

    def text_pairs(part):
        return [model.preprocess(SENTENCES[part]), model.preprocess(PARAPHRASES[part])], None

    def text_triplets(part):
        negatives = SENTENCES[part][::-1]
        return [
            model.preprocess(SENTENCES[part]),
            model.preprocess(PARAPHRASES[part]),
            model.preprocess(negatives),
        ], None

    def image_views(part):
        views = [model.preprocess(list(view[part]), modality="image") for view in (view_1, view_2)]
        return views, classes[part]

    def captions(part):
        return text_pairs(part)[0], image_features[part]

    torch.manual_seed(3)  # loss heads: the same initialisation in every process
    return {
        "simcse": (SimCSELoss(model, gather_across_devices=True), text_pairs),
        "simcse_without_gathering": (SimCSELoss(model), text_pairs),  # negative control: local negatives only
        "symmetric_info_nce": (
            SymmetricInfoNCE(model, learnable_temperature=True, gather_across_devices=True),
            text_pairs,
        ),
        "symmetric_info_nce_hard_negatives": (SymmetricInfoNCE(model, gather_across_devices=True), text_triplets),
        "unpaired_supcon": (
            UnpairedModalityContrastiveLoss(model, mode="supcon", gather_across_devices=True),
            image_views,
        ),
        "unpaired_simclr": (
            UnpairedModalityContrastiveLoss(model, mode="simclr", gather_across_devices=True),
            image_views,
        ),
        "unpaired_released_label_rank": (
            UnpairedModalityContrastiveLoss(model, mode="released_label_rank", gather_across_devices=True),
            image_views,
        ),
        "multimodal_align": (
            MultimodalAlignLoss(
                model,
                image_dimension=16,
                text_loss=SimCSELoss(model, gather_across_devices=True),
                weight=1.0,
                direction="symmetric",
                projection_dimension=8,
                gather_across_devices=True,
            ),
            captions,
        ),
    }


def run_losses(encoder_dir: str, output: str) -> None:
    world, rank = get_world_size(), get_rank()
    part = slice(rank * GLOBAL_BATCH // world, (rank + 1) * GLOBAL_BATCH // world)
    results = {}
    for name in loss_cases(build_model(encoder_dir)):
        model = build_model(encoder_dir).eval()  # eval: no dropout, so every process computes the same function
        loss, inputs = loss_cases(model)[name]
        features, labels = inputs(part)
        value = loss(features, labels)
        value = torch.stack(list(value.values())).sum() if isinstance(value, dict) else value
        value.backward()
        parameters = [*model.parameters(), *loss_parameters(loss, model)]
        gradients = torch.cat(
            [
                (parameter.grad if parameter.grad is not None else torch.zeros_like(parameter)).flatten()
                for parameter in parameters
            ]
        )
        reduced = torch.stack([value.detach()])
        if world > 1:  # what DDP does: average gradients (and here the logged loss) over processes
            torch.distributed.all_reduce(gradients)
            torch.distributed.all_reduce(reduced)
        results[f"{name}.loss"] = reduced / world
        results[f"{name}.gradient"] = gradients / world
    if rank == 0:
        save_file(results, output)


def run_training(encoder_dir: str, scheme: str, output: str, token_keep_ratio: float = 1.0) -> None:
    world = int(os.environ.get("WORLD_SIZE", "1"))  # the trainer sets up the process group later
    model = build_model(encoder_dir, token_keep_ratio)
    torch.manual_seed(3)
    args = SentenceTransformerTrainingArguments(
        output_dir=os.path.dirname(output) + "/trainer",
        max_steps=3,
        per_device_train_batch_size=GLOBAL_BATCH // world,
        optim="sgd",
        learning_rate=5.0,
        seed=0,
        batch_sampler=BatchSamplers.BATCH_SAMPLER,
        save_strategy="no",
        report_to="none",
        logging_steps=1,
        dataloader_drop_last=True,
        use_cpu=True,
    )
    text = Dataset.from_dict({"anchor": SENTENCES * 4, "positive": PARAPHRASES * 4})
    text_loss = SimCSELoss(model, gather_across_devices=True)
    if scheme == "text":
        trainer = NonLinguisticTrainer(model=model, args=args, train_dataset=text, loss=text_loss)
    else:
        view_1, view_2, labels = global_images()
        images = Dataset.from_dict({"index": list(range(2 * GLOBAL_BATCH)), "label": labels.tolist() * 2})
        images.set_transform(
            lambda batch: {  # fixed views (no random augmentation), as tensors
                "view_1": [view_1[index % GLOBAL_BATCH] for index in batch["index"]],
                "view_2": [view_2[index % GLOBAL_BATCH] for index in batch["index"]],
                "label": batch["label"],
            }
        )
        image_loss = UnpairedModalityContrastiveLoss(model, mode="supcon", gather_across_devices=True)
        trainer = UnpairedModalityTrainer(
            model=model,
            args=args,
            train_dataset=DatasetDict({"image": images, "text": text}),
            loss={"image": image_loss, "text": text_loss},
            scheme="alternating",
            batch_sizes={"image": GLOBAL_BATCH // world},
            learning_rates={"image": 0.05},
        )
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    state = {f"model.{key}": value.clone().contiguous() for key, value in model.state_dict().items()}
    owned = loss_parameters(trainer.loss, model)
    state.update({f"loss.{index}": parameter.detach().contiguous() for index, parameter in enumerate(owned)})
    state["logged_losses"] = torch.tensor(losses)
    save_file(state, output if get_rank() == 0 else f"{output}.rank{get_rank()}")  # the other replicas beside it


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["losses", "train"])
    parser.add_argument("--encoder", required=True)
    parser.add_argument("--scheme", choices=["text", "visualcse"], default="text")
    parser.add_argument("--output", required=True)
    parser.add_argument(
        "--token-keep-ratio", type=float, default=1.0, help="the image front-end's patch dropout (train)"
    )
    args = parser.parse_args()
    if args.mode == "losses":
        if "LOCAL_RANK" in os.environ:
            torch.distributed.init_process_group("gloo")
        run_losses(args.encoder, args.output)
    else:
        run_training(args.encoder, args.scheme, args.output, args.token_keep_ratio)
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
