"""Where the time of a training step goes (torch.profiler), and the DAMSM rewrite measured side by side.

1. Profiles: one VisualCSE image step, one SimCSE text step, one Pixel Linguist step (SymmetricInfoNCE with the
   token head, rendering outside the profile) and one MACD caption step (grounding + DAMSM local term + anchor) on a
   mini-size encoder (all-MiniLM-L6-v2's shape, random weights): forward + backward under ``torch.profiler``, the
   top operators by self CPU time and the share of matrix multiplications (work that cannot be removed, only made
   cheaper by bf16 / a GPU). A step dominated by anything else has waste to remove.
2. DAMSM (MACD's word <-> region term) at MACD's shapes (64 captions x 32 words x 49 regions, projection 768): the
   direct form that builds every (caption, image, word) context vector vs the form in
   :func:`sbert_nonling.losses.damsm.damsm_scores` (Gram matrix of the regions; same values and
   gradients, tested), forward + backward, A/B/A/B. ``ratio`` = new / direct seconds.

Run: ``python benchmarks/profile_steps.py [--size mini] [--rounds 4] [--threads 2] [--quick]``. Prints tables, then
one JSON line. ``--quick``: the tiny encoder, batches of 4 (images 2), 1 DAMSM step in 1 round, a run of seconds that
checks the code (the test suite runs it).
"""

from __future__ import annotations

import argparse
import functools

import common
import torch
import torch.nn.functional as F
from PIL import Image
from torch.profiler import ProfilerActivity, profile

from sbert_nonling import (
    DistillAnchorLoss,
    ImagePatchEmbed,
    MultimodalAlignLoss,
    SimCSELoss,
    SymmetricInfoNCE,
    UnpairedModalityContrastiveLoss,
)
from sbert_nonling.data.perturbations import PerturbationPairs
from sbert_nonling.losses.damsm import damsm_scores
from sbert_nonling.models import build_pixel_model, build_sentence_model
from sbert_nonling.modules.pixel_encoder import PixelEncoder

MATMUL_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear", "aten::einsum")
GAMMAS = (1.0, 5.0, 10.0)
#: ``--quick``: the tiny encoder, tiny batches, one DAMSM step in one round, one thread.
QUICK = {"size": "tiny", "batch_size": 4, "image_batch_size": 2, "top": 3, "steps": 1, "rounds": 1, "threads": 1}


def damsm_direct(words: torch.Tensor, word_mask: torch.Tensor, regions: torch.Tensor) -> torch.Tensor:
    """AttnGAN's Eq. 7-10 as written: a context vector per (caption, image, word), then its cosine with the word."""
    gamma1, gamma2, gamma3 = GAMMAS
    words, regions = F.normalize(words, dim=-1), F.normalize(regions, dim=-1)
    attention = torch.softmax(gamma1 * torch.einsum("itd,jrd->ijtr", words, regions), dim=-1)
    context = torch.einsum("ijtr,jrd->ijtd", attention, regions)  # (B_t, B_i, T, D): the cost
    relevance = (gamma2 * F.cosine_similarity(context, words[:, None], dim=-1)).masked_fill(
        ~word_mask[:, None, :].bool(), float("-inf")
    )
    return gamma3 * torch.logsumexp(relevance, dim=-1) / gamma2


def profiled(step, label: str, top: int) -> dict[str, object]:
    """Profile one call of ``step`` (after one warm-up call): step seconds, matmul share, top operators."""
    step()
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        step()
    events = [event for event in profiler.key_averages() if event.key.startswith("aten::")]
    total = sum(event.self_cpu_time_total for event in events)
    matmul = sum(event.self_cpu_time_total for event in events if event.key in MATMUL_OPS)
    ranked = sorted(events, key=lambda event: event.self_cpu_time_total, reverse=True)[:top]
    print(f"\n{label}: {total / 1e6:.3f} s of aten self time, matmul share {matmul / total:.0%}")
    common.print_table(
        ["operator", "self s", "share", "calls"],
        [
            [event.key, event.self_cpu_time_total / 1e6, f"{event.self_cpu_time_total / total:.1%}", event.count]
            for event in ranked
        ],
    )
    return {"aten_seconds": total / 1e6, "matmul_share": matmul / total, "top": [event.key for event in ranked]}


def steps(args) -> dict[str, object]:
    folder = common.encoder_dir(args.size)
    hidden = common.ENCODER_SIZES[args.size][0]
    sentences = common.wiki_sentences(args.batch_size)
    torch.manual_seed(0)
    model = build_sentence_model(
        folder,
        pooling="cls",
        max_seq_length=32,
        front_ends={"image": ImagePatchEmbed(image_size=64, patch_size=16, embedding_dimension=hidden)},
    )
    model.train()
    images = [Image.new("RGB", (64, 64), (index * 5 % 256, 90, 160)) for index in range(args.image_batch_size)]
    image_features = model.preprocess(images)
    image_loss = UnpairedModalityContrastiveLoss(model, mode="supcon")
    labels = torch.arange(args.image_batch_size) % 10
    text_loss = SimCSELoss(model)
    text_features = model.preprocess(sentences)
    align = MultimodalAlignLoss(
        model,
        image_dimension=1280,
        weight=1.0,
        direction="symmetric",
        temperature=0.1,
        projection_dimension=hidden,
        projection_head="linear",
        local_weight=1.0,
    )
    macd = DistillAnchorLoss(model, base_loss=align)
    regions = torch.randn(args.batch_size, 49, 1280)

    pixel_model = build_pixel_model(
        PixelEncoder.from_config(
            max_patches=64,
            hidden_size=hidden,
            num_hidden_layers=common.ENCODER_SIZES[args.size][1],
            num_attention_heads=common.ENCODER_SIZES[args.size][2],
            intermediate_size=common.ENCODER_SIZES[args.size][3],
        ),
        max_patches=64,
    )
    pixel_model.train()
    pairs = PerturbationPairs(["swap"], rate=0.1, seed=0)({"text": sentences})
    pixel_loss = SymmetricInfoNCE(pixel_model, token_head="linear_gelu_layernorm")
    rendered = [pixel_model.preprocess(pairs["anchor"]), pixel_model.preprocess(pairs["positive"])]

    def run(loss, features, target):
        def step():
            value = loss([dict(feature) for feature in features], target)
            total = sum(value.values()) if isinstance(value, dict) else value
            total.backward()
            model.zero_grad(set_to_none=True)
            pixel_model.zero_grad(set_to_none=True)

        return step

    return {
        "visualcse_image": profiled(
            run(image_loss, [image_features, image_features], labels), "VisualCSE image step (2 views)", args.top
        ),
        "simcse_text": profiled(
            run(text_loss, [text_features, text_features], None), "SimCSE text step (2 dropout views)", args.top
        ),
        "pixel": profiled(run(pixel_loss, rendered, None), "Pixel Linguist step (token head)", args.top),
        "macd": profiled(
            run(macd, [text_features, text_features], regions),
            "MACD caption step (grounding + DAMSM + anchor)",
            args.top,
        ),
    }


def damsm_ab(args) -> dict[str, object]:
    generator = torch.Generator().manual_seed(0)
    words = torch.randn(args.batch_size, 32, 768, generator=generator, requires_grad=True)
    regions = torch.randn(args.batch_size, 49, 768, generator=generator, requires_grad=True)
    mask = torch.ones(args.batch_size, 32, dtype=torch.long)

    def candidate(function):
        def step():
            function(words, mask, regions).logsumexp(dim=1).mean().backward()

        return functools.partial(common.timed_steps, step, args.steps)

    samples = common.interleave(
        {
            "direct": candidate(damsm_direct),
            "gram": candidate(functools.partial(damsm_scores, gammas=GAMMAS)),
        },
        args.rounds,
    )
    direct, gram = common.median(samples["direct"]), common.median(samples["gram"])
    print(f"\nDAMSM forward + backward, {args.batch_size} x 32 words x 49 regions x 768")
    common.print_table(["form", "s / step"], [["direct contexts", direct], ["Gram (package)", gram]])
    return {"direct_s": direct, "gram_s": gram, "ratio": gram / direct, "samples": len(samples["gram"])}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=list(common.ENCODER_SIZES), default="mini")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences / captions / pixel pairs per batch")
    parser.add_argument("--image-batch-size", type=int, default=48)
    parser.add_argument("--top", type=int, default=8, help="operators listed per profile")
    parser.add_argument("--steps", type=int, default=2, help="timed DAMSM steps per round and form")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    args = common.parse_arguments(parser, QUICK, argv)
    common.quiet()
    common.set_threads(args.threads)
    damsm = damsm_ab(args)
    profiles = steps(args)
    common.emit(
        {
            "benchmark": "profile_steps",
            "ratio": damsm["ratio"],
            "goal": "DAMSM new / direct < 1",
            "met": damsm["ratio"] < 1,
            "damsm": damsm,
            "profiles": profiles,
            "settings": vars(args),
        }
    )


if __name__ == "__main__":
    main()
