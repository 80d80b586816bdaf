"""loading: an OSError of a load becomes one ValueError line naming the thing, its setting and the offline way."""

from __future__ import annotations

import pytest
from transformers import AutoConfig

from sbert_nonling.util.unreachable import ModelUnreachable, loading


def test_the_oserror_of_an_offline_load_becomes_one_line():
    with pytest.raises(ValueError) as raised:
        with loading("Encoder", "nobody/no-such-encoder", "the setting 'model'", "pass a local folder."):
            AutoConfig.from_pretrained("nobody/no-such-encoder")  # HF_HUB_OFFLINE=1: transformers' OSError
    message = str(raised.value)
    assert "\n" not in message and isinstance(raised.value.__cause__, OSError)
    assert message.startswith("Encoder 'nobody/no-such-encoder' (the setting 'model') could not be loaded")
    assert message.endswith("Offline: pass a local folder.")


def test_other_errors_pass_through():
    with pytest.raises(KeyError):
        with loading("Encoder", "x", "the setting 'model'", "pass a local folder."):
            raise KeyError("not a load failure")


def test_an_enclosing_loading_names_the_model_in_its_own_terms():
    """A library function's own loading (build_sentence_model's) is named again by its caller's (a recipe's
    --model)."""
    with pytest.raises(ModelUnreachable) as raised:
        with loading("Model", "nobody/no-such-encoder", "--model", "pass --model PATH."):
            with loading("Encoder", "nobody/no-such-encoder", "the encoder argument", "pass a local folder."):
                AutoConfig.from_pretrained("nobody/no-such-encoder")
    message = str(raised.value)
    assert message.startswith("Model 'nobody/no-such-encoder' (--model) could not be loaded") and message.endswith(
        "Offline: pass --model PATH."
    )
    assert (
        "the encoder argument" not in message
        and "OSError: " in message
        and isinstance(raised.value.__cause__, OSError)
    )
