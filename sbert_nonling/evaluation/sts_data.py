"""Readers for the STS evaluation sets in their release formats (SentEval's STS12-16 folders, the STS Benchmark and
SICK files, stsb_multi_mt CSVs); task names are MTEB's. Further reading: docs/evaluation.md, "Files"."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import get_args

from sbert_nonling.util.choices import Split
from sbert_nonling.util.validation import check_sentence, read_lines, read_tab_rows

SPLITS: tuple[str, ...] = get_args(Split)

#: Subsets of each STS year as used by SentEval and the papers (STS13 without the licensed SMT subset).
STS_YEAR_SUBSETS: dict[str, tuple[str, ...]] = {
    "STS12": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    "STS13": ("FNWN", "headlines", "OnWN"),
    "STS14": ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    "STS15": ("answers-forums", "answers-students", "belief", "headlines", "images"),
    "STS16": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}
STSB_FILES: dict[str, str] = {"dev": "sts-dev.csv", "test": "sts-test.csv"}
SICK_FILES: dict[str, str] = {"dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}
#: The 7 tasks of the papers' STS table, in its column order.
STS_TASKS: tuple[str, ...] = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICK-R")


@dataclass
class STSData:
    """One STS task: sentence pairs and gold scores, their source and split (``"dev"`` / ``"test"``; ``""``: not
    said).

    Args:
        name: the task name (MTEB's, e.g. ``"STSBenchmark"``).
        sentences1: the first sentence of every pair.
        sentences2: the second sentence of every pair.
        scores: the gold score of every pair.
        source: the file or folder the task was read from.
        split: ``"dev"``, ``"test"``, or ``""`` when not said.
    """

    name: str
    sentences1: list[str] = field(default_factory=list)
    sentences2: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    source: str = ""
    split: str = ""

    def add(self, sentence1: str, sentence2: str, score: float) -> None:
        """Append one pair and its gold score.

        Args:
            sentence1: the first sentence.
            sentence2: the second sentence.
            score: the gold score.
        """
        self.sentences1.append(sentence1)
        self.sentences2.append(sentence2)
        self.scores.append(score)

    def __len__(self) -> int:
        return len(self.scores)


def _parse_score(text: str, where: str) -> float:
    try:
        score = float(text)
    except ValueError:
        raise ValueError(f"{where}: score {text!r} is not a number.") from None
    if not math.isfinite(score):
        raise ValueError(f"{where}: score {text!r} is not a finite number.")
    return score


def read_sts_year(folder: str | Path, name: str) -> STSData:
    """Read an STS12-16 folder in the "all" setting (every subset of the year in one task), skipping unscored pairs.

    Args:
        folder: the year's folder (e.g. ``STS/STS12-en-test``), holding ``STS.input.*`` and ``STS.gs.*`` files.
        name: the task name (e.g. ``"STS12"``).
    """
    folder = Path(folder)
    if name not in STS_YEAR_SUBSETS:
        raise ValueError(f"Unknown STS year {name!r}; expected one of {list(STS_YEAR_SUBSETS)}.")
    data = STSData(name=name, source=str(folder))
    for subset in STS_YEAR_SUBSETS[name]:
        input_path, gold_path = folder / f"STS.input.{subset}.txt", folder / f"STS.gs.{subset}.txt"
        for path in (input_path, gold_path):
            if not path.is_file():
                raise ValueError(f"{name}: missing file {path} (subsets of {name}: {list(STS_YEAR_SUBSETS[name])}).")
        inputs, golds = read_lines(input_path), read_lines(gold_path)
        if len(inputs) != len(golds):
            raise ValueError(
                f"{input_path} has {len(inputs)} lines but {gold_path} has {len(golds)}; they must be aligned."
            )
        for line_number, (line, gold) in enumerate(zip(inputs, golds), start=1):
            if not gold.strip():
                continue
            where = f"{input_path}:{line_number}"
            fields = line.split("\t")
            if len(fields) < 2:
                raise ValueError(f"{where}: expected 2 TAB-separated sentences, found {len(fields)} field(s).")
            first, second = (check_sentence(fields[column], f"{where} sentence {column + 1}") for column in (0, 1))
            data.add(first, second, _parse_score(gold.strip(), f"{gold_path}:{line_number}"))
    return data


def _read_tab_separated(
    path: Path, name: str, sentence_columns: tuple[int, int], score_column: int, header_prefix: str | None = None
) -> STSData:
    """Rows of a TAB-separated release file read without any quoting; extra trailing columns are ignored."""
    data = STSData(name=name, source=str(path))
    for where, fields in read_tab_rows(path, max(*sentence_columns, score_column) + 1, header_prefix):
        first, second = (
            check_sentence(fields[column], f"{where} sentence {number}")
            for number, column in enumerate(sentence_columns, 1)
        )
        data.add(first, second, _parse_score(fields[score_column], where))
    return data


def read_stsb_csv(path: str | Path, name: str = "STSBenchmark") -> STSData:
    """Read an STS Benchmark release file: TAB-separated, no quoting, score in column 5, sentences in 6 and 7.

    Args:
        path: the release file (``sts-dev.csv`` / ``sts-test.csv``).
        name: the task name.
    """
    return _read_tab_separated(Path(path), name, sentence_columns=(5, 6), score_column=4)


def read_sick(path: str | Path, name: str = "SICK-R") -> STSData:
    """Read a SICK release file (pair_ID, sentence_A, sentence_B, relatedness_score, ...), with or without header.

    Args:
        path: the release file (``SICK_trial.txt``, ``SICK_test_annotated.txt``, ...).
        name: the task name.
    """
    return _read_tab_separated(Path(path), name, sentence_columns=(1, 2), score_column=3, header_prefix="pair_ID")


def read_stsb_multi(path: str | Path, name: str) -> STSData:
    """Read an stsb_multi_mt file: comma-separated with CSV quoting, ``sentence1,sentence2,score``, no header.

    Args:
        path: the ``stsb-<lang>-<split>.csv`` file.
        name: the task name.
    """
    path = Path(path)
    data = STSData(name=name, source=str(path))
    for line_number, row in enumerate(csv.reader(read_lines(path)), start=1):
        if not row:
            continue
        where = f"{path}:{line_number}"
        if len(row) != 3:
            raise ValueError(f"{where}: expected 3 columns (sentence1, sentence2, score), found {len(row)}.")
        data.add(
            check_sentence(row[0], f"{where} sentence1"),
            check_sentence(row[1], f"{where} sentence2"),
            _parse_score(row[2], where),
        )
    return data


def load_sts_dir(sts_dir: str | Path, split: Split = "dev", tasks: tuple[str, ...] = STS_TASKS) -> list[STSData]:
    """Every task of ``split`` found in ``sts_dir`` (dev: STS-B dev, SICK trial; test: the 7 tasks), in table order.

    Args:
        sts_dir: the SentEval-layout STS folder.
        split: ``"dev"`` or ``"test"``.
        tasks: the task names to look for.
    """
    if split not in SPLITS:
        raise ValueError(f"split={split!r} must be one of {list(SPLITS)}.")
    sts_dir = Path(sts_dir)
    if not sts_dir.is_dir():
        raise ValueError(f"STS directory {str(sts_dir)!r} does not exist.")
    unknown = [task for task in tasks if task not in STS_TASKS]
    if unknown:
        raise ValueError(f"Unknown STS task(s) {unknown}; expected names from {list(STS_TASKS)}.")
    files = {
        "STSBenchmark": (sts_dir / "STSBenchmark" / STSB_FILES[split], read_stsb_csv),
        "SICK-R": (sts_dir / "SICK" / SICK_FILES[split], read_sick),
    }
    found: list[STSData] = []
    for task in tasks:
        if task in STS_YEAR_SUBSETS:
            if split == "test" and (sts_dir / f"{task}-en-test").is_dir():
                found.append(read_sts_year(sts_dir / f"{task}-en-test", task))
        elif files[task][0].is_file():
            found.append(files[task][1](files[task][0]))
    if not found:
        raise ValueError(
            f"No STS {split} files found in {str(sts_dir)!r}; expected SentEval's layout, e.g. "
            f"STSBenchmark/{STSB_FILES[split]} or SICK/{SICK_FILES[split]}."
        )
    for data in found:
        data.split = split
    return found


def load_stsb_multi_dir(
    directory: str | Path, split: Split = "dev", languages: tuple[str, ...] | None = None
) -> list[STSData]:
    """The stsb_multi_mt files ``stsb-<lang>-<split>.csv`` of ``directory``: tasks
    ``STSBenchmarkMultilingualSTS-<lang>``.

    Args:
        directory: the folder of the stsb_multi_mt files.
        split: ``"dev"`` or ``"test"``.
        languages: the languages to read; None reads every language found.
    """
    if split not in SPLITS:
        raise ValueError(f"split={split!r} must be one of {list(SPLITS)}.")
    directory = Path(directory)
    available = {path.name.split("-")[1]: path for path in sorted(directory.glob(f"stsb-*-{split}.csv"))}
    languages = tuple(available) if languages is None else languages
    missing = [language for language in languages if language not in available]
    if missing or not languages:
        raise ValueError(
            f"No stsb_multi {split} file for language(s) {missing or '(any)'} in {str(directory)!r}; found "
            f"{sorted(available)}."
        )
    found = [read_stsb_multi(available[language], f"STSBenchmarkMultilingualSTS-{language}") for language in languages]
    for data in found:
        data.split = split
    return found


def check_sts_test_dir(sts_dir: str | Path | None) -> list[STSData]:
    """The 7 STS test sets of ``sts_dir`` (SentEval's layout), read and checked, STS-B dev too; a ValueError names
    what is missing.

    Args:
        sts_dir: the STS folder (None: refused, saying what it must hold).
    """
    if sts_dir is None:
        raise ValueError(
            "reproduce scores the 7 STS test sets and selects on STS-B dev: pass sts_dir (--sts-dir), a "
            "SentEval-layout folder with STS12-en-test ... STS16-en-test, STSBenchmark/sts-dev.csv, sts-test.csv and "
            "SICK/SICK_test_annotated.txt."
        )
    load_sts_dir(sts_dir, "dev", ("STSBenchmark",))
    tasks = load_sts_dir(sts_dir, "test")
    missing = [name for name in STS_TASKS if name not in {task.name for task in tasks}]
    if missing:
        raise ValueError(
            f"The STS folder {str(sts_dir)!r} lacks the test set of {', '.join(missing)} (SentEval's layout: "
            "STS1X-en-test/, STSBenchmark/sts-test.csv, SICK/SICK_test_annotated.txt); every one of the 7 is needed."
        )
    return tasks


def check_sts_dev_dir(sts_dir: str | Path) -> list[STSData]:
    """The dev tasks of ``sts_dir``, STS-B dev first, read and checked; a ValueError when it holds no STS-B dev set,
    whose score selects the best checkpoint during training. Imports nothing heavy, so the CLI checks it first.

    Args:
        sts_dir: the SentEval-layout STS folder.
    """
    dev_tasks = load_sts_dir(sts_dir, split="dev")
    if not dev_tasks or dev_tasks[0].name != "STSBenchmark":
        found = ", ".join(task.name for task in dev_tasks) or "no dev task"
        raise ValueError(
            f"--sts-dir {str(sts_dir)!r} holds no STS-B dev set (STSBenchmark/sts-dev.csv), whose score selects "
            f"the best checkpoint during training; it holds {found}. Add it, or train without --sts-dir."
        )
    return dev_tasks
