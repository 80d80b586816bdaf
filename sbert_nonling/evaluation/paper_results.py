"""The STS scores the papers report for the recipes' settings, with the source of every number."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PaperResult:
    """What a paper reports for one recipe's setting: Spearman x100 of cosine similarity on the 7 STS test sets
    (STS12-16 in the "all" setting, STS-B test, SICK-R test).

    Args:
        average: the average over the 7 tasks, as printed in the paper.
        source: the paper, the table and the row the numbers come from.
        tasks: the per-task scores where the paper prints them (task names as in
            :data:`~sbert_nonling.evaluation.sts_data.STS_TASKS`); empty where it gives the average alone.
        seeds: how many training runs the numbers summarise (1: a single run).

    Example::

        from sbert_nonling.evaluation.paper_results import PAPER_RESULTS

        print(PAPER_RESULTS["simcse-unsup"].average, PAPER_RESULTS["simcse-unsup"].source)  # 76.25 Gao et al. ...
    """

    average: float
    source: str
    tasks: dict[str, float] = field(default_factory=dict)
    seeds: int = 1


#: Reported results by recipe name (the recipe's default starting model); a recipe without an entry has no
#: comparable single number in its paper.
PAPER_RESULTS: dict[str, PaperResult] = {
    "simcse-unsup": PaperResult(
        76.25,
        "Gao et al. 2021, SimCSE (EMNLP), Table 5, unsup-SimCSE-BERT-base",
        {
            "STS12": 68.40,
            "STS13": 82.41,
            "STS14": 74.38,
            "STS15": 80.91,
            "STS16": 78.56,
            "STSBenchmark": 76.85,
            "SICK-R": 72.23,
        },
    ),
    "simcse-sup": PaperResult(
        81.57,
        "Gao et al. 2021, SimCSE (EMNLP), Table 5, sup-SimCSE-BERT-base",
        {
            "STS12": 75.30,
            "STS13": 84.67,
            "STS14": 80.19,
            "STS15": 85.40,
            "STS16": 80.82,
            "STSBenchmark": 84.25,
            "SICK-R": 80.39,
        },
    ),
    "visualcse": PaperResult(
        77.50,
        "Jian et al. 2022, Non-Linguistic Supervision for Contrastive Learning of Sentence Embeddings "
        "(NeurIPS), VisualCSE BERT-base",
    ),
    "visualcse-roberta-base": PaperResult(77.87, "Jian et al. 2022 (NeurIPS), VisualCSE RoBERTa-base"),
    "visualcse-roberta-large": PaperResult(79.71, "Jian et al. 2022 (NeurIPS), VisualCSE RoBERTa-large"),
    "audiocse": PaperResult(77.85, "Jian et al. 2022 (NeurIPS), AudioCSE BERT-base"),
    "mcse": PaperResult(
        77.3, "Zhang et al. 2022, MCSE (NAACL), wiki + Flickr30k, BERT-base, mean of 5 seeds", seeds=5
    ),
    "mcse-coco": PaperResult(76.6, "Zhang et al. 2022, MCSE (NAACL), wiki + MS-COCO, BERT-base", seeds=5),
    "kdmcse": PaperResult(
        78.6,
        "Nguyen et al. 2024, KDMCSE (NAACL), wiki + Flickr30k, BERT-base; quoted second-hand (DALR's comparison "
        "table), not yet checked against the KDMCSE paper's own table",
    ),
    "dalr": PaperResult(
        79.5,
        "He et al. 2025, DALR (ACL Findings), wiki + Flickr30k, BERT-base; quoted second-hand (a note on the paper's "
        "main table), not yet checked against the paper's own table",
    ),
}
