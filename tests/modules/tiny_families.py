"""Tiny random encoders of every family the bypass supports, built offline from transformers configs.

Every family gets the same WordPiece tokenizer (the model's own tokenizer type does not matter to the seam) with
[PAD] = 0, so the configs set ``pad_token_id=0``; sizes: hidden 32, 2 layers, 2 heads.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import (
    AutoModel,
    BertConfig,
    BertTokenizer,
    DebertaV2Config,
    DistilBertConfig,
    ElectraConfig,
    Gemma3TextConfig,
    ModernBertConfig,
    MPNetConfig,
    Qwen3Config,
    RobertaConfig,
    XLMRobertaConfig,
)

from sbert_nonling.models.tiny_encoder import word_piece_vocab

HIDDEN = 32
BERT_LIKE = {"num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64, "hidden_size": HIDDEN}
DECODER = {
    "hidden_size": HIDDEN,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 16,
    "max_position_embeddings": 128,
}

#: family name -> (config class, config arguments, the pooling its embedders use)
FAMILIES = {
    "bert": (BertConfig, BERT_LIKE, "cls"),
    "roberta": (RobertaConfig, {**BERT_LIKE, "max_position_embeddings": 130}, "cls"),
    "xlm-roberta": (XLMRobertaConfig, {**BERT_LIKE, "max_position_embeddings": 130}, "cls"),
    "electra": (ElectraConfig, {**BERT_LIKE, "embedding_size": HIDDEN}, "cls"),  # electra-base: embedding = hidden
    "distilbert": (DistilBertConfig, {"dim": HIDDEN, "n_layers": 2, "n_heads": 2, "hidden_dim": 64}, "cls"),
    "mpnet": (MPNetConfig, {**BERT_LIKE, "max_position_embeddings": 130}, "mean"),
    "deberta-v2": (
        DebertaV2Config,
        {
            **BERT_LIKE,
            "relative_attention": True,
            "position_buckets": 16,
            "pos_att_type": ["p2c", "c2p"],
            "position_biased_input": False,
            "norm_rel_ebd": "layer_norm",
        },
        "mean",
    ),
    "modernbert": (
        ModernBertConfig,
        {
            **BERT_LIKE,
            "global_attn_every_n_layers": 2,
            "local_attention": 4,
            "max_position_embeddings": 128,
            "bos_token_id": 2,
            "eos_token_id": 3,
            "cls_token_id": 2,
            "sep_token_id": 3,
        },
        "mean",
    ),
    "qwen3": (Qwen3Config, DECODER, "lasttoken"),
    "gemma3_text": (
        Gemma3TextConfig,
        {
            **DECODER,
            "sliding_window": 4,
            "layer_types": ["sliding_attention", "full_attention"],
            "use_bidirectional_attention": True,
        },
        "mean",
    ),
}


def build_tiny_family(family: str, output_dir: str | Path, sentences: list[str], seed: int = 0) -> str:
    """Write a random ``family`` encoder (config + weights) and a WordPiece tokenizer into ``output_dir``."""
    config_class, arguments, _ = FAMILIES[family]
    tokenizer = BertTokenizer(vocab=word_piece_vocab(sentences, 300), do_lower_case=True)
    config = config_class(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, **arguments)
    torch.manual_seed(seed)
    model = AutoModel.from_config(config)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    return str(output_dir)
