"""One ValueError line, naming the setting and the offline way out, for a model that cannot be loaded."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


def error_summary(error: BaseException) -> str:
    """``"OSError: first line of its message"``: a library's error in one line."""
    reason = next((line.strip() for line in str(error).splitlines() if line.strip()), "")
    return f"{type(error).__name__}: {reason}"


@contextmanager
def loading(what: str, name: str, named_by: str, offline: str) -> Iterator[None]:
    """Run a load; an ``OSError`` it raises (no network, unknown name, missing files) becomes a one-line ValueError
    naming ``what``, ``name``, the setting ``named_by`` and the ``offline`` way out, chained to the original.

    Example::

        from transformers import ViTModel
        from sbert_nonling.util.unreachable import loading

        try:
            with loading("ViT", "google/vit-base-patch16-224-in21k", "the setting 'vit'", "--set vit=null"):
                vit = ViTModel.from_pretrained("google/vit-base-patch16-224-in21k")
        except ValueError as error:  # offline (HF_HUB_OFFLINE=1) and not in the cache
            print(error)  # ViT 'google/vit-base-patch16-224-in21k' (the setting 'vit') could not be loaded, ... Offline: --set vit=null
    """
    try:
        yield
    except OSError as error:
        raise ValueError(
            f"{what} {name!r} ({named_by}) could not be loaded, neither as a local folder nor from the Hugging Face Hub / "
            f"the weights' download site: {error_summary(error)} Offline: {offline}"
        ) from error
