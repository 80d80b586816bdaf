"""What every loss here shares: ``get_config_dict`` from ``config_keys`` and ``citation`` from ``bibtex_keys``."""

from __future__ import annotations

from typing import Any, ClassVar

#: The BibTeX entries the losses cite, each stored once, by key.
BIBTEX: dict[str, str] = {
    "cs224n_contrastive_generalizable": """
@misc{cs224n_contrastive_generalizable,
    title = {Contrastive Learning for Generalizable Sentence Embeddings},
    howpublished = {Stanford CS224N (Natural Language Processing with Deep Learning) project report},
    note = {Multi-task BERT: contrastive pre-training, then sentiment / paraphrase / STS heads with an average loss}
}
""",
    "gao2021simcse": """
@inproceedings{gao2021simcse,
    title = {{SimCSE}: Simple Contrastive Learning of Sentence Embeddings},
    author = {Gao, Tianyu and Yao, Xingcheng and Chen, Danqi},
    booktitle = {Empirical Methods in Natural Language Processing (EMNLP)},
    year = {2021},
    url = {https://arxiv.org/abs/2104.08821}
}
""",
    "jian2022nonlinguistic": """
@inproceedings{jian2022nonlinguistic,
    title = {Non-Linguistic Supervision for Contrastive Learning of Sentence Embeddings},
    author = {Jian, Yiren and Gao, Chongyang and Vosoughi, Soroush},
    booktitle = {Advances in Neural Information Processing Systems (NeurIPS)},
    year = {2022},
    url = {https://arxiv.org/abs/2209.09433}
}
""",
    "khosla2020supcon": """
@inproceedings{khosla2020supcon,
    title = {Supervised Contrastive Learning},
    author = {Khosla, Prannay and Teterwak, Piotr and Wang, Chen and Sarna, Aaron and Tian, Yonglong and Isola, Phillip and Maschinot, Aaron and Liu, Ce and Krishnan, Dilip},
    booktitle = {Advances in Neural Information Processing Systems (NeurIPS)},
    year = {2020}
}
""",  # noqa: E501 (a BibTeX author list is one line)
    "gao2021scaling": """
@misc{gao2021scaling,
    title = {Scaling Deep Contrastive Learning Batch Size under Memory Limited Setup},
    author = {Gao, Luyu and Zhang, Yunyi and Han, Jiawei and Callan, Jamie},
    year = {2021},
    eprint = {2101.06983},
    archivePrefix = {arXiv}
}
""",
    "zhang2022mcse": """
@inproceedings{zhang2022mcse,
    title = {{MCSE}: Multimodal Contrastive Learning of Sentence Embeddings},
    author = {Zhang, Miaoran and Mosbach, Marius and Adelani, David and Hedderich, Michael and Klakow, Dietrich},
    booktitle = {North American Chapter of the Association for Computational Linguistics (NAACL)},
    year = {2022},
    url = {https://arxiv.org/abs/2204.10931}
}
""",
    "cui2020macd": """
@inproceedings{cui2020macd,
    title = {Unsupervised Natural Language Inference via Decoupled Multimodal Contrastive Learning},
    author = {Cui, Wanyun and Zheng, Guangyu and Wang, Wei},
    booktitle = {Empirical Methods in Natural Language Processing (EMNLP)},
    year = {2020}
}
""",
    "xu2018attngan": """
@inproceedings{xu2018attngan,
    title = {{AttnGAN}: Fine-Grained Text to Image Generation with Attentional Generative Adversarial Networks},
    author = {Xu, Tao and Zhang, Pengchuan and Huang, Qiuyu and Zhang, Han and Gan, Zhe and Huang, Xiaolei and He, Xiaodong},
    booktitle = {Computer Vision and Pattern Recognition (CVPR)},
    year = {2018},
    url = {https://arxiv.org/abs/1711.10485}
}
""",
    "xiao2024pixel": """
@article{xiao2024pixel,
    title = {Pixel Sentence Representation Learning},
    author = {Xiao, Chenghao and Huang, Zhuoxu and Chen, Danlu and Hudson, G Thomas and Li, Yizhi and Duan, Haoran and Lin, Chenghua and Fu, Jie and Han, Jungong and Al Moubayed, Noura},
    journal = {arXiv preprint arXiv:2402.08183},
    year = {2024}
}
""",  # noqa: E501 (a BibTeX author list is one line)
    "radford2021clip": """
@inproceedings{radford2021clip,
    title = {Learning Transferable Visual Models From Natural Language Supervision},
    author = {Radford, Alec and Kim, Jong Wook and Hallacy, Chris and Ramesh, Aditya and Goh, Gabriel and Agarwal, Sandhini and Sastry, Girish and Askell, Amanda and Mishkin, Pamela and Clark, Jack and Krueger, Gretchen and Sutskever, Ilya},
    booktitle = {International Conference on Machine Learning (ICML)},
    year = {2021}
}
""",  # noqa: E501 (a BibTeX author list is one line)
}


class LossConfig:
    """Mixin (first base) of the package's losses: ``get_config_dict()``, the hyper-parameters of the model card, holds
    the attributes named in ``config_keys`` (as sentence-transformers' ``Module``); ``citation`` joins the
    :data:`BIBTEX` entries named in ``bibtex_keys``. Losses override either only to add a derived entry."""

    config_keys: ClassVar[tuple[str, ...]] = ()
    bibtex_keys: ClassVar[tuple[str, ...]] = ()

    def get_config_dict(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in self.config_keys}

    @property
    def citation(self) -> str:
        return "".join(BIBTEX[key] for key in self.bibtex_keys)
