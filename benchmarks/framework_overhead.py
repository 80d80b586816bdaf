"""What does the framework cost? Trainer steps vs a minimal hand-written PyTorch loop doing the same math.

Three methods, each measured A/B/A/B in one process on the same model weights and the same batches:

- VisualCSE alternating: an image SupCon step (two views, own AdamW) then a text SimCSE step (own AdamW), in
  ``UnpairedModalityTrainer``; one "step" below is the pair.
- MCSE: SimCSE on a caption batch + text -> image grounding on precomputed image features, in ``NonLinguisticTrainer``
  with ``MultimodalAlignLoss``.
- Pixel Linguist: ``SymmetricInfoNCE`` on (sentence, typo'd sentence) pairs read as pixels (``build_pixel_model``
  with a small ``PixelEncoder.from_config``), rendering included on both sides.

The hand loop calls the same Hugging Face modules and parameters directly (``BertModel``, the front-end's conv /
[CLS] / positions, ``ViTMAEModel``), tokenises or renders each batch itself, computes the loss by hand, clips the
gradient norm at 1.0 and steps AdamW, as the trainer does. Per-column forwards as the losses do; the "hand, merged"
row forwards both views as one batch of 2B (what the losses could do) to show that saving. Goal: trainer / hand <=
1.05.

Run: ``python benchmarks/framework_overhead.py [--size tiny|mini] [--batch-size 32] [--image-batch-size 16]
[--image-size 64] [--rounds 4] [--steps 4] [--quick]``. Prints a table, then one JSON line. ``--quick``: batches of 4
(images 2 x 32 px), 1 timed step in 1 round, a run of seconds that checks the code (the test suite runs it).
"""

from __future__ import annotations

import argparse
import functools
import tempfile

import common
import torch
import torch.nn.functional as F
from datasets import Dataset, DatasetDict

from sbert_nonling import (
    ImagePatchEmbed,
    MultimodalAlignLoss,
    SimCSELoss,
    SymmetricInfoNCE,
    UnpairedModalityContrastiveLoss,
)
from sbert_nonling.data.perturbations import perturbation_pairs_dataset
from sbert_nonling.models import build_pixel_model, build_sentence_model
from sbert_nonling.modules.pixel_encoder import PixelEncoder
from sbert_nonling.training import NonLinguisticTrainer, UnpairedModalityTrainer

GOAL = 1.05
IMAGE_FEATURE_DIM = 256
#: ``--quick``: tiny batches, one timed step in one round.
QUICK = {
    "batch_size": 4,
    "image_batch_size": 2,
    "image_size": 32,
    "max_seq_length": 16,
    "max_patches": 16,
    "steps": 1,
    "rounds": 1,
}


def clip_and_step(parameters: list[torch.nn.Parameter], optimizer: torch.optim.Optimizer) -> None:
    torch.nn.utils.clip_grad_norm_(parameters, 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def info_nce(logits: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits, torch.arange(logits.shape[0]))


def supcon(view_1: torch.Tensor, view_2: torch.Tensor, labels: torch.Tensor, temperature: float) -> torch.Tensor:
    anchors = F.normalize(torch.cat([view_1, view_2]), dim=-1)
    labels = torch.cat([labels, labels])
    logits = anchors @ anchors.T / temperature
    not_self = ~torch.eye(anchors.shape[0], dtype=torch.bool)
    log_prob = logits - torch.logsumexp(logits.masked_fill(~not_self, float("-inf")), dim=1, keepdim=True)
    positives = (labels[:, None] == labels[None, :]) & not_self
    return -((log_prob * positives).sum(1) / positives.sum(1)).mean()


def batches(rows: list, size: int):
    """Endless consecutive batches of ``rows`` (the hand loop's data loader)."""
    while True:
        for offset in range(0, len(rows) - size + 1, size):
            yield rows[offset : offset + size]


class VisualCSE:
    """Image SupCon step + text SimCSE step, each with its own AdamW."""

    def __init__(self, args, sentences: list[str]) -> None:
        torch.manual_seed(0)
        folder = common.encoder_dir(args.size)
        hidden = common.ENCODER_SIZES[args.size][0]
        self.model = build_sentence_model(
            folder,
            pooling="cls",
            max_seq_length=args.max_seq_length,
            front_ends={
                "image": ImagePatchEmbed(image_size=args.image_size, patch_size=16, embedding_dimension=hidden)
            },
        )
        self.text_loss = SimCSELoss(self.model)
        self.image_loss = UnpairedModalityContrastiveLoss(self.model, mode="supcon")
        generator = torch.Generator().manual_seed(1)
        count = args.image_batch_size * 4
        self.view_1 = torch.randn(count, 3, args.image_size, args.image_size, generator=generator)
        self.view_2 = self.view_1 + 0.1 * torch.randn(count, 3, args.image_size, args.image_size, generator=generator)
        self.labels = torch.randint(0, 10, (count,), generator=generator)
        self.sentences, self.args = sentences, args
        encoder = self.model[0].encoder
        self.bert, self.tokenizer = encoder.model, encoder.tokenizer
        self.front_end = self.model[0].sub_modules["image"][0]
        self.image_parameters = list(self.image_loss.parameters())
        self.text_parameters = list(self.text_loss.parameters())
        self.image_optimizer = torch.optim.AdamW(self.image_parameters, lr=1e-6)
        self.text_optimizer = torch.optim.AdamW(self.text_parameters, lr=3e-5)
        self.image_batches = batches(list(range(count)), args.image_batch_size)
        self.text_batches = batches(sentences, args.batch_size)

    def trainer_round(self) -> list[float]:
        args, view_1, view_2 = self.args, self.view_1, self.view_2
        images = Dataset.from_dict({"index": list(range(len(self.labels))), "label": self.labels.tolist()})
        images.set_transform(
            lambda batch: {
                "view_1": [view_1[index] for index in batch["index"]],
                "view_2": [view_2[index] for index in batch["index"]],
                "label": batch["label"],
            }
        )
        text = Dataset.from_dict({"anchor": self.sentences, "positive": self.sentences})
        clock = common.StepClock()
        trainer = UnpairedModalityTrainer(
            model=self.model,
            args=common.trainer_arguments(tempfile.mkdtemp(), 2 * (args.steps + 1), args.batch_size),
            train_dataset=DatasetDict({"image": images, "text": text}),
            loss={"image": self.image_loss, "text": self.text_loss},
            scheme="alternating",
            batch_sizes={"image": args.image_batch_size},
            learning_rates={"image": 1e-6},
            callbacks=[clock],
        )
        common.silence(trainer)
        trainer.train()
        gaps = clock.step_seconds(skip=2)  # gaps[0] is the first image step after the first (warm-up) pair
        return [gaps[index] + gaps[index + 1] for index in range(0, len(gaps) - 1, 2)]

    def encode_text(self, tokens: dict, merged: bool) -> list[torch.Tensor]:
        head = self.text_loss.head
        if merged:
            doubled = {key: torch.cat([value, value]) for key, value in tokens.items()}
            return list(head(self.bert(**doubled).last_hidden_state[:, 0]).chunk(2))
        return [head(self.bert(**tokens).last_hidden_state[:, 0]) for _ in range(2)]

    def encode_images(self, pixels: torch.Tensor) -> torch.Tensor:
        embeddings = self.front_end.embeddings
        patches = embeddings.patch_embeddings.projection(pixels).flatten(2).transpose(1, 2)
        tokens = (
            torch.cat([embeddings.cls_token.expand(patches.shape[0], -1, -1), patches], dim=1)
            + embeddings.position_embeddings
        )
        return self.image_loss.head(self.bert.encoder(tokens).last_hidden_state[:, 0])

    def hand_step(self, merged: bool) -> None:
        index = torch.tensor(next(self.image_batches))
        view_1, view_2 = self.view_1[index], self.view_2[index]
        if merged:
            embeddings_1, embeddings_2 = self.encode_images(torch.cat([view_1, view_2])).chunk(2)
        else:
            embeddings_1, embeddings_2 = self.encode_images(view_1), self.encode_images(view_2)
        supcon(embeddings_1, embeddings_2, self.labels[index], self.image_loss.temperature).backward()
        clip_and_step(self.image_parameters, self.image_optimizer)
        tokens = self.tokenizer(
            next(self.text_batches),
            padding=True,
            truncation=True,
            max_length=self.args.max_seq_length,
            return_tensors="pt",
        )
        anchors, positives = self.encode_text(tokens, merged)
        info_nce(F.normalize(anchors, dim=-1) @ F.normalize(positives, dim=-1).T * 20.0).backward()
        clip_and_step(self.text_parameters, self.text_optimizer)


class MCSE:
    """SimCSE + text -> image grounding (weight 0.01) on a caption batch with precomputed image features."""

    def __init__(self, args, sentences: list[str]) -> None:
        torch.manual_seed(0)
        self.model = build_sentence_model(
            common.encoder_dir(args.size), pooling="cls", max_seq_length=args.max_seq_length
        )
        self.loss = MultimodalAlignLoss(
            self.model, image_dimension=IMAGE_FEATURE_DIM, text_loss=SimCSELoss(self.model), weight=0.01
        )
        features = torch.randn(len(sentences), IMAGE_FEATURE_DIM, generator=torch.Generator().manual_seed(2))
        self.rows = list(zip(sentences, features))
        self.dataset = Dataset.from_dict({"anchor": sentences, "positive": sentences, "label": features.numpy()})
        encoder = self.model[0].encoder
        self.bert, self.tokenizer, self.args = encoder.model, encoder.tokenizer, args
        self.parameters = list(self.loss.parameters())
        self.optimizer = torch.optim.AdamW(self.parameters, lr=3e-5)
        self.batches = batches(self.rows, args.batch_size)

    def trainer_round(self) -> list[float]:
        clock = common.StepClock()
        trainer = NonLinguisticTrainer(
            model=self.model,
            args=common.trainer_arguments(tempfile.mkdtemp(), self.args.steps + 2, self.args.batch_size),
            train_dataset=self.dataset,
            loss=self.loss,
            callbacks=[clock],
        )
        common.silence(trainer)
        trainer.train()
        return clock.step_seconds(skip=2)

    def hand_step(self, merged: bool) -> None:
        batch = next(self.batches)
        tokens = self.tokenizer(
            [text for text, _ in batch],
            padding=True,
            truncation=True,
            max_length=self.args.max_seq_length,
            return_tensors="pt",
        )
        features = torch.stack([feature for _, feature in batch])
        if merged:
            doubled = {key: torch.cat([value, value]) for key, value in tokens.items()}
            pooled = list(self.bert(**doubled).last_hidden_state[:, 0].chunk(2))
        else:
            pooled = [self.bert(**tokens).last_hidden_state[:, 0] for _ in range(2)]
        head = self.loss.text_loss.head
        anchors, positives = (F.normalize(head(view), dim=-1) for view in pooled)
        loss = info_nce(anchors @ positives.T * 20.0)
        images = F.normalize(self.loss.image_head(features), dim=-1)
        grounding = [
            info_nce(F.normalize(self.loss.text_head(view), dim=-1) @ images.T / self.loss.temperature)
            for view in pooled
        ]
        (loss + 0.01 * torch.stack(grounding).mean()).backward()
        clip_and_step(self.parameters, self.optimizer)


class Pixel:
    """SymmetricInfoNCE on (sentence, perturbed sentence) pairs read as pixels."""

    def __init__(self, args, sentences: list[str]) -> None:
        torch.manual_seed(0)
        hidden, layers, heads, intermediate = common.ENCODER_SIZES[args.size]
        encoder = PixelEncoder.from_config(
            max_patches=args.max_patches,
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            intermediate_size=intermediate,
        )
        self.model = build_pixel_model(encoder, max_patches=args.max_patches)
        self.loss = SymmetricInfoNCE(self.model)
        self.dataset = self._pairs(sentences)
        self.rows = list(zip(self.dataset["anchor"], self.dataset["positive"]))
        router = self.model[0]
        self.renderer, self.vit = router.sub_modules["pixel"][0], router.encoder.model
        self.parameters = list(self.loss.parameters())
        self.optimizer = torch.optim.AdamW(self.parameters, lr=3e-5)
        self.batches = batches(self.rows, args.batch_size)
        self.args = args

    @staticmethod
    def _pairs(sentences: list[str]) -> Dataset:
        from sbert_nonling.data.perturbations import PERTURBATIONS

        dataset = perturbation_pairs_dataset(sentences, sorted(PERTURBATIONS)[:2])
        materialised = dataset[:]  # apply the (seeded) perturbations once: both sides read the same pairs
        return Dataset.from_dict({"anchor": materialised["anchor"], "positive": materialised["positive"]})

    def trainer_round(self) -> list[float]:
        clock = common.StepClock()
        trainer = NonLinguisticTrainer(
            model=self.model,
            args=common.trainer_arguments(tempfile.mkdtemp(), self.args.steps + 2, self.args.batch_size),
            train_dataset=self.dataset,
            loss=self.loss,
            callbacks=[clock],
        )
        common.silence(trainer)
        trainer.train()
        return clock.step_seconds(skip=2)

    def embed(self, rendered: dict) -> torch.Tensor:
        pixels, mask = rendered["pixel_values"], rendered["attention_mask"]
        batch_size = pixels.shape[0]
        in_order = torch.arange(mask.shape[1]).expand(batch_size, -1)
        with_cls = torch.cat([mask.new_ones(batch_size, 1), mask], dim=1)
        tokens = self.vit(pixel_values=pixels, noise=in_order, attention_mask=with_cls).last_hidden_state[:, 1:]
        weights = mask.unsqueeze(-1).to(tokens.dtype)
        return F.normalize((tokens * weights).sum(1) / weights.sum(1).clamp(min=1.0), dim=-1)

    def hand_step(self, merged: bool) -> None:
        batch = next(self.batches)
        anchors = self.renderer.preprocess([anchor for anchor, _ in batch])
        positives = self.renderer.preprocess([positive for _, positive in batch])
        if merged:
            both = {key: torch.cat([anchors[key], positives[key]]) for key in ("pixel_values", "attention_mask")}
            embeddings_a, embeddings_b = self.embed(both).chunk(2)
        else:
            embeddings_a, embeddings_b = self.embed(anchors), self.embed(positives)
        logits = embeddings_a @ embeddings_b.T * 20.0
        ((info_nce(logits) + info_nce(logits.T)) / 2).backward()
        clip_and_step(self.parameters, self.optimizer)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=list(common.ENCODER_SIZES), default="tiny")
    parser.add_argument("--batch-size", type=int, default=32, help="text / caption / pixel pairs per batch")
    parser.add_argument("--image-batch-size", type=int, default=16)
    parser.add_argument("--image-size", type=int, default=64, help="image side in pixels (16-px patches)")
    parser.add_argument("--max-seq-length", type=int, default=32)
    parser.add_argument("--max-patches", type=int, default=64)
    parser.add_argument("--steps", type=int, default=4, help="timed steps per round and candidate")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--methods", default="visualcse,mcse,pixel")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: stable ratios on a shared machine)")
    args = common.parse_arguments(parser, QUICK, argv)
    common.quiet()
    common.set_threads(args.threads)
    sentences = common.wiki_sentences(args.batch_size * (args.steps + 2) * 2)

    classes = {"visualcse": VisualCSE, "mcse": MCSE, "pixel": Pixel}
    rows, figures = [], {}
    for name in args.methods.split(","):
        method = classes[name](args, sentences)

        def hand(merged: bool, method=method):
            def run() -> list[float]:
                method.model.train()
                return common.timed_steps(functools.partial(method.hand_step, merged), args.steps, warmup=1)

            return run

        samples = common.interleave(
            {"trainer": method.trainer_round, "hand": hand(False), "hand, merged": hand(True)}, args.rounds
        )
        medians = {key: common.median(values) for key, values in samples.items()}
        ratio = medians["trainer"] / medians["hand"]
        figures[name] = {
            "trainer_s": medians["trainer"],
            "hand_s": medians["hand"],
            "hand_merged_s": medians["hand, merged"],
            "ratio": ratio,
            "merged_saving": 1 - medians["hand, merged"] / medians["hand"],
            "samples": len(samples["trainer"]),
        }
        rows.append(
            [
                name,
                medians["trainer"],
                medians["hand"],
                medians["hand, merged"],
                ratio,
                medians["hand, merged"] / medians["hand"],
            ]
        )

    print(
        f"encoder {args.size} {common.ENCODER_SIZES[args.size]}; text/caption/pixel batch {args.batch_size} x "
        f"{args.max_seq_length} tokens / {args.max_patches} patches; images {args.image_batch_size} x "
        f"{args.image_size}^2; {args.rounds} rounds A/B/C/C/B/A"
    )
    common.print_table(
        ["method", "trainer s/step", "hand s/step", "hand merged s/step", "trainer/hand", "merged/hand"], rows
    )
    worst = max(figure["ratio"] for figure in figures.values())
    common.emit(
        {
            "benchmark": "framework_overhead",
            "ratio": worst,
            "goal": f"<= {GOAL}",
            "met": worst <= GOAL,
            "methods": figures,
            "settings": vars(args),
        }
    )


if __name__ == "__main__":
    main()
