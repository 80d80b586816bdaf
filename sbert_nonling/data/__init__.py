from __future__ import annotations

from sbert_nonling.data.text import nli_triplets_dataset, read_nli_triplets, read_sentences, sentence_pairs_dataset

__all__ = ["nli_triplets_dataset", "read_nli_triplets", "read_sentences", "sentence_pairs_dataset"]
