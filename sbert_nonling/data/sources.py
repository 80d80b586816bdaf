"""DataSources: where a method's data lives, as one typed object the builders and the runner take whole."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from sbert_nonling.data.hub import hub_source

#: A local file or folder, or a Hub dataset named as :func:`~sbert_nonling.data.hub.hub_source` reads it.
Source = str | Path | None


@dataclass(frozen=True)
class DataSources:
    """The files, folders or Hub datasets of a run; each method reads the ones it needs, naming any missing.

    Every argument takes a local path or a Hub dataset, ``owner/name`` with optional ``?key=value&...`` options:
    ``split``, ``config``, ``data_files``, ``revision`` and ``ROLE=COLUMN`` for a column not named as its role (e.g.
    ``?image=img&label=speaker_id``); :mod:`sbert_nonling.data.hub` reads them.

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

    text_file: Source = None
    nli_file: Source = None
    sts_dir: Source = None
    image_dir: Source = None
    audio_dir: Source = None
    audio_label_regex: str | None = None
    captions_file: Source = None
    image_features: Source = None
    heldout_images_file: Source = None
    stsb_multi_dir: Source = None

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
    return not isinstance(value, Path) and hub_source(value.partition("?")[0], ()) is not None
