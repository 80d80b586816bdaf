from __future__ import annotations

from pathlib import Path

import pytest

from sbert_nonling.evaluation.sts_data import (
    load_sts_dir,
    load_stsb_multi_dir,
    read_sick,
    read_sts_year,
    read_stsb_csv,
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def make_sts16(root: Path) -> Path:
    folder = root / "STS16-en-test"
    for index, subset in enumerate(("answer-answer", "headlines", "plagiarism", "postediting", "question-question")):
        write(
            folder / f"STS.input.{subset}.txt", f"a {index}\tb {index}\tsrc1\tsrc2\nc {index}\td {index}\tsrc1\tsrc2\n"
        )
        write(folder / f"STS.gs.{subset}.txt", f"{index}\n\n")  # second pair unscored
    return folder


def test_sts_year_concatenates_subsets_and_skips_unscored_pairs(tmp_path):
    data = read_sts_year(make_sts16(tmp_path), "STS16")
    assert len(data) == 5
    assert data.sentences1 == [f"a {index}" for index in range(5)]
    assert data.sentences2 == [f"b {index}" for index in range(5)]
    assert data.scores == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_sts_year_reports_a_missing_subset_and_misaligned_files(tmp_path):
    folder = make_sts16(tmp_path)
    (folder / "STS.gs.plagiarism.txt").unlink()
    with pytest.raises(ValueError, match="missing file .*STS.gs.plagiarism.txt"):
        read_sts_year(folder, "STS16")
    write(folder / "STS.gs.plagiarism.txt", "1\n2\n3\n")
    with pytest.raises(ValueError, match="has 2 lines but .* has 3"):
        read_sts_year(folder, "STS16")


def test_stsb_reads_quotes_literally_and_tolerates_extra_columns(tmp_path):
    path = write(
        tmp_path / "sts-dev.csv",
        'main-news\tfile\t2012\t0001\t3.5\t"Quoted" start\tplain\textra\tmore\nmain-news\tfile\t2012\t0002\t1\tx\ty\n',
    )
    data = read_stsb_csv(path)
    assert data.sentences1 == ['"Quoted" start', "x"] and data.scores == [3.5, 1.0]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("main\tf\t2012\t1\t3.5\tonly one sentence", r"sts-dev.csv:1: expected at least 7"),
        ("g\tf\t2012\t1\tfive\ta\tb", r"sts-dev.csv:1: score 'five' is not a number"),
    ],
)
def test_stsb_malformed_lines_are_named(tmp_path, line, message):
    with pytest.raises(ValueError, match=message):
        read_stsb_csv(write(tmp_path / "sts-dev.csv", line + "\n"))


def test_sick_with_and_without_header(tmp_path):
    body = "1\tA dog runs\tA dog is running\t4.5\tENTAILMENT\n"
    with_header = read_sick(
        write(tmp_path / "a.txt", "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n" + body)
    )
    without = read_sick(write(tmp_path / "b.txt", body))
    assert with_header.scores == without.scores == [4.5]
    with pytest.raises(ValueError, match=r"c.txt:1 sentence 2 is empty"):
        read_sick(write(tmp_path / "c.txt", "1\tA dog\t \t4.5\tNEUTRAL\n"))


def test_non_utf8_file_is_rejected(tmp_path):
    path = tmp_path / "sts-dev.csv"
    path.write_bytes(b"g\tf\t2012\t1\t3\tcaf\xe9\tb\n")
    with pytest.raises(ValueError, match="not valid UTF-8"):
        read_stsb_csv(path)


def test_load_sts_dir_finds_the_dev_tasks_of_the_shared_data(data_dir):
    tasks = load_sts_dir(data_dir / "sts", "dev")
    assert [(task.name, len(task)) for task in tasks] == [("STSBenchmark", 1500), ("SICK-R", 500)]
    assert tasks[0].sentences1[0] == "A man with a hard hat is dancing." and tasks[0].scores[0] == 5.0


def test_load_sts_dir_errors(tmp_path, data_dir):
    with pytest.raises(ValueError, match="does not exist"):
        load_sts_dir(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="No STS test files found"):
        load_sts_dir(data_dir / "sts", "test")
    with pytest.raises(ValueError, match="split='train' must be one of"):
        load_sts_dir(data_dir / "sts", "train")


def test_test_split_reads_sts_years(tmp_path):
    make_sts16(tmp_path)
    assert [task.name for task in load_sts_dir(tmp_path, "test")] == ["STS16"]


def test_stsb_multi(data_dir):
    tasks = load_stsb_multi_dir(data_dir / "stsb_multi", "dev", ("de", "zh"))
    assert [(task.name, len(task)) for task in tasks] == [
        ("STSBenchmarkMultilingualSTS-de", 1500),
        ("STSBenchmarkMultilingualSTS-zh", 1500),
    ]
    with pytest.raises(ValueError, match=r"language\(s\) \['xx'\]"):
        load_stsb_multi_dir(data_dir / "stsb_multi", "dev", ("xx",))
