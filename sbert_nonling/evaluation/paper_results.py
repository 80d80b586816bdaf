"""The STS scores the papers report for the recipes' settings, with the source of every number."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PaperResult:
    """What a paper reports for one recipe's setting: Spearman x100 of cosine similarity on the 7 STS test sets
    (STS12-16 in the "all" setting, STS-B test, SICK-R test).

    Args:
        average: the average over the 7 tasks, as printed in the paper.
        source: the paper, the table and the row the numbers come from; whether they were read first hand (the
            paper or its authors' README) and, where not, why.
        tasks: the per-task scores where the paper or its authors' README prints them and they could be read (task
            names as in :data:`~sbert_nonling.evaluation.sts_data.STS_TASKS`); empty where only the average is known.
        seeds: how many training runs the numbers summarise (1: a single run).

    Example::

        from sbert_nonling.evaluation.paper_results import PAPER_RESULTS

        print(PAPER_RESULTS["simcse-unsup"].average, PAPER_RESULTS["simcse-unsup"].source)  # 76.25 Gao et al. ...
    """

    average: float
    source: str
    tasks: dict[str, float] = field(default_factory=dict)
    seeds: int = 1


#: The authors' repositories whose READMEs print per-task tables (read at the commits named).
NONLING_CSE = "github.com/yiren-jian/NonLing-CSE @3e1e01c"
MCSE_REPOSITORY = "github.com/uds-lsv/MCSE @3031426"

#: Why the per-task values of the papers that print them are missing below: the tools this package is built with
#: store only the opening of a paper's web page (abstract and first paragraphs), not its tables.
UNREAD = "the paper's own table was not seen (only the opening paragraphs of its pages can be read here)"

#: Reported results by recipe name (the recipe's default starting model); a recipe without an entry has no
#: comparable single number in its paper. Every ``source`` names the table its numbers come from, and says when a
#: number is second hand or a paper's per-task values could not be entered.
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
        "Jian et al. 2022, Non-Linguistic Supervision for Contrastive Learning of Sentence Embeddings (NeurIPS), "
        "unsup-VisualCSE BERT-base, one run; per-task values from the authors' README table (bert-base-uncased, "
        f"RTX-6000; {NONLING_CSE}, VisualCSE/README.md; the same row in "
        "VisualCSE/training_logs/unsup-VisualCSE-bert-base-uncased.txt), whose average is the paper's 77.50; "
        f"{UNREAD}",
        {
            "STS12": 71.16,
            "STS13": 83.29,
            "STS14": 75.13,
            "STS15": 81.59,
            "STS16": 80.05,
            "STSBenchmark": 80.03,
            "SICK-R": 71.23,
        },
    ),
    "visualcse-roberta-base": PaperResult(
        77.87,
        "Jian et al. 2022 (NeurIPS), unsup-VisualCSE RoBERTa-base, one run; per-task values from the authors' README "
        f"table (roberta-base, RTX-6000; {NONLING_CSE}, VisualCSE/README.md; the same row in "
        "VisualCSE/training_logs/unsup-VisualCSE-roberta-base.txt), whose average is the paper's 77.87; "
        f"{UNREAD}",
        {
            "STS12": 70.41,
            "STS13": 83.51,
            "STS14": 74.87,
            "STS15": 82.79,
            "STS16": 81.67,
            "STSBenchmark": 81.89,
            "SICK-R": 69.95,
        },
    ),
    "visualcse-roberta-large": PaperResult(
        79.71,
        "Jian et al. 2022 (NeurIPS), unsup-VisualCSE RoBERTa-large, the paper's STS table (number not seen); average "
        f"only: the authors' README prints no RoBERTa-large row and {UNREAD}",
    ),
    "audiocse": PaperResult(
        77.85,
        "Jian et al. 2022 (NeurIPS), unsup-AudioCSE BERT-base, one run; per-task values from the authors' README "
        f"table (bert-base-uncased, RTX-6000; {NONLING_CSE}, AudioCSE/README.md), whose average is the paper's 77.85; "
        f"{UNREAD}",
        {
            "STS12": 71.65,
            "STS13": 84.27,
            "STS14": 76.69,
            "STS15": 83.22,
            "STS16": 78.69,
            "STSBenchmark": 79.94,
            "SICK-R": 70.49,
        },
    ),
    "mcse": PaperResult(
        77.3,
        "Zhang et al. 2022, MCSE (NAACL), the paper's STS table (number not seen), MCSE-BERT wiki + Flickr30k, mean "
        f"of 5 seeds (0-4, as the authors' README says: {MCSE_REPOSITORY}); average only: {UNREAD} and the README "
        "prints averages only (its 77.70 is one released checkpoint, not this mean)",
        seeds=5,
    ),
    "mcse-coco": PaperResult(
        76.6,
        "Zhang et al. 2022, MCSE (NAACL), the paper's STS table (number not seen), MCSE-BERT wiki + MS-COCO, mean "
        f"of 5 seeds ({MCSE_REPOSITORY}, README); average only: {UNREAD} and the README prints averages only (its "
        "77.08 is one released checkpoint, not this mean)",
        seeds=5,
    ),
    "kdmcse": PaperResult(
        78.6,
        "Nguyen et al. 2024, KDMCSE (NAACL), its STS table (number not seen), wiki + Flickr30k, KDMCSE-BERT; second "
        "hand: quoted in DALR's main STS table (as a paper note on DALR reproduces it) and in a machine-written "
        "summary of the KDMCSE paper; neither paper's text could be read here (arXiv 2403.17486 and 2506.21096v1: "
        "only their opening paragraphs are stored). Average only: the per-task cells quoted second hand average "
        "78.66, which one-decimal rounding of the cells and of the average allows",
    ),
    "dalr": PaperResult(
        79.5,
        "He et al. 2025, DALR (ACL Findings), main STS table (number not seen), wiki + Flickr30k, DALR-BERT; second "
        f"hand: as a paper note on DALR reproduces the table; {UNREAD}, arXiv HTML 2506.21096v1. "
        "Average only: the per-task cells quoted second hand average 79.49",
    ),
}
