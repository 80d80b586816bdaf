"""One ValueError line for a model, ViT or image CNN that cannot be loaded (offline, mistyped, not on the Hub).

transformers, huggingface_hub and torchvision report a name that is neither a local folder nor reachable as an
``OSError`` dozens of traceback lines deep, without the setting that named it. The builders of
:mod:`sbert_nonling.methods` know that setting: they load through :func:`loading`, which turns the OSError into one
line naming the thing, the setting (or flag) and how to proceed offline.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


def error_summary(error: BaseException) -> str:
    """``"OSError: first line of its message"``: a library's error in one line."""
    reason = next((line.strip() for line in str(error).splitlines() if line.strip()), "")
    return f"{type(error).__name__}: {reason}"


def unreachable_message(what: str, name: str, named_by: str, offline: str, error: BaseException) -> str:
    """``"{what} {name!r} ({named_by}) could not be loaded ...: {first line of error} Offline: {offline}"``."""
    return (
        f"{what} {name!r} ({named_by}) could not be loaded, neither as a local folder nor from the Hugging Face Hub / "
        f"the weights' download site: {error_summary(error)} Offline: {offline}"
    )


@contextmanager
def loading(what: str, name: str, named_by: str, offline: str) -> Iterator[None]:
    """Run a load; an ``OSError`` it raises (no network, unknown name, missing files) becomes a one-line ValueError
    (:func:`unreachable_message`), chained to the original for the full story.

    Example:
        ::

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
        raise ValueError(unreachable_message(what, name, named_by, offline, error)) from error
