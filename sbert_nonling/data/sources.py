"""DataSources: where a method's data lives, as one typed object the builders and the runner take whole."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from sbert_nonling.util.option_field import option_field

#: A local file or folder, or a Hub dataset named as :func:`~sbert_nonling.data.hub.hub_source` reads it.
Source = str | Path | None


@dataclass(frozen=True)
class DataSources:
    """The files, folders or Hub datasets of a run; each method reads the ones it needs, naming any missing.

    Every argument takes a local path or a Hub dataset, ``owner/name`` with optional ``?key=value&...`` options:
    ``split``, ``config``, ``data_files``, ``revision`` and ``ROLE=COLUMN`` for a column not named as its role (e.g.
    ``?image=img&label=speaker_id``); :mod:`sbert_nonling.data.hub` reads them. Each field's metadata gives its
    command-line ``flag``, its ``help`` and, for a path, whether it is a ``folder``: ``train`` and ``reproduce`` build
    their data options from them.

    Args:
        text_file: one sentence per line.
        nli_file: SimCSE-format NLI triplets CSV ``sent0,sent1,hard_neg``.
        sts_dir: SentEval-layout STS folder (dev evaluation, checkpoint selection, multitask's task files).
        image_dir: images in one sub-folder per class (VisualCSE), or the images of ``captions_file`` (MCSE, MACD).
        audio_dir, audio_label_regex: audio files (AudioCSE) and the pattern whose first group is a file's class.
        captions_file: image-caption pairs (Flickr token file, CSV or JSONL).
        image_features: precomputed features of those images (``sbert-nonling features``); default: extracted.
        heldout_images_file: image names, one per line, kept out of training for caption <-> image retrieval.
        stsb_multi_dir: stsb_multi_mt files (Pixel Linguist's multilingual dev scores and parallel pairs).

    Example::

        from sbert_nonling.data import DataSources

        data = DataSources(text_file="wiki1m_for_simcse.txt", sts_dir="SentEval/data/downstream")
        print(data.card_lines())  # ['text_file: wiki1m_for_simcse.txt', 'sts_dir: downstream']
    """

    text_file: Source = option_field(
        None,
        "--text-file",
        "one sentence per line (unsupervised recipes), or a Hub dataset: owner/name?split=...&text=COLUMN",
        folder=False,
    )
    nli_file: Source = option_field(
        None,
        "--nli-file",
        "NLI triplets CSV with header sent0,sent1,hard_neg (supervised recipes), or a Hub dataset with those columns",
        folder=False,
    )
    sts_dir: Source = option_field(
        None,
        "--sts-dir",
        "SentEval-layout STS folder: dev scores before/after and model selection",
        folder=True,
    )
    image_dir: Source = option_field(
        None,
        "--image-dir",
        "images: unpaired, one sub-folder per class, or those of --captions-file; or a Hub dataset: "
        "owner/name?image=COLUMN&label=COLUMN",
        folder=True,
    )
    audio_dir: Source = option_field(
        None,
        "--audio-dir",
        "unpaired audio files, wav/flac/ogg, or a Hub dataset: owner/name?audio=COLUMN&label=COLUMN",
        folder=True,
    )
    audio_label_regex: str | None = option_field(
        None,
        "--audio-label-regex",
        r"pattern whose first group of the file name is the class, e.g. '^\d+_([a-z]+)_'",
    )
    captions_file: Source = option_field(
        None,
        "--captions-file",
        "image-caption pairs: Flickr token file, CSV, JSONL, or a Hub dataset: owner/name?image=COL&caption=COL",
        folder=False,
    )
    image_features: Source = option_field(
        None,
        "--image-features",
        "precomputed features of --image-dir (sbert-nonling features: an image encoder's or CLIP's)",
        folder=False,
    )
    heldout_images_file: Source = option_field(
        None,
        "--heldout-images",
        "image names kept out of training for caption<->image Recall@K (a method with a caption-image space)",
        folder=False,
    )
    stsb_multi_dir: Source = option_field(
        None,
        "--stsb-multi-dir",
        "stsb_multi_mt files: multilingual STS-B dev scores, parallel pairs",
        folder=True,
    )

    def card_lines(self, *names: str) -> list[str]:
        """One model-card line per given source among ``names`` (default: all): a file's name or a Hub dataset as
        given."""
        given = [(name, getattr(self, name)) for name in names or [item.name for item in dataclasses.fields(self)]]
        return [
            f"{name}: {value if _names_hub_dataset(value) else Path(value).name}"
            for name, value in given
            if value is not None
        ]


def _names_hub_dataset(value: str | Path) -> bool:
    """Whether a data option names a Hub dataset; its options (split, column roles) were checked when it was read."""
    from sbert_nonling.data.hub import hub_source  # imports datasets: not when the command line reads the fields

    return not isinstance(value, Path) and hub_source(value.partition("?")[0], ()) is not None
