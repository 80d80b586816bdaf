"""One ValueError line, naming the setting and the offline way out, for a model that cannot be loaded."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


def error_summary(error: BaseException) -> str:
    """``"OSError: first line of its message"``: a library's error in one line.

    Args:
        error: the error to summarise.
    """
    reason = next((line.strip() for line in str(error).splitlines() if line.strip()), "")
    return f"{type(error).__name__}: {reason}"


class ModelUnreachable(ValueError):
    """A model that could not be loaded (:func:`loading`'s one line); an enclosing :func:`loading`, which knows how
    the caller named the model, says it again in its own terms.

    Args:
        message: the one-line message.
        cause: the library's error.
    """

    def __init__(self, message: str, cause: OSError) -> None:
        super().__init__(message)
        self.cause = cause


@contextmanager
def loading(what: str, name: str, named_by: str, offline: str) -> Iterator[None]:
    """Run a load; an ``OSError`` it raises (no network, unknown name, missing files) becomes a one-line ValueError
    (:class:`ModelUnreachable`) naming ``what``, ``name``, the setting ``named_by`` and the ``offline`` way out,
    chained to the original. One raised by a nested ``loading`` (a library function's own) is named again by this one.

    Args:
        what: the kind of model, e.g. ``"Model"`` or ``"Image encoder"``.
        name: the Hub name or path that was given.
        named_by: the setting, argument or flag that named it.
        offline: what to do instead without the network.

    Example::

        from transformers import ViTModel
        from sbert_nonling.util.unreachable import loading

        try:
            with loading("ViT", "google/vit-base-patch16-224-in21k", "the setting 'vit'", "--set vit=null"):
                vit = ViTModel.from_pretrained("google/vit-base-patch16-224-in21k")
        except ValueError as error:  # offline (HF_HUB_OFFLINE=1) and not in the cache
            # ViT 'google/vit-base-patch16-224-in21k' (the setting 'vit') could not be loaded, ...
            # Offline: --set vit=null
            print(error)
    """
    try:
        yield
    except (OSError, ModelUnreachable) as error:
        cause = error.cause if isinstance(error, ModelUnreachable) else error
        raise ModelUnreachable(
            f"{what} {name!r} ({named_by}) could not be loaded, neither as a local folder nor from the Hugging Face "
            f"Hub / the weights' download site: {error_summary(cause)} Offline: {offline}",
            cause,
        ) from cause
