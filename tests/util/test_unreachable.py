"""loading: an OSError of a load becomes one ValueError line naming the thing, its setting and the offline way."""

from __future__ import annotations

import pytest
from transformers import AutoConfig

from sbert_nonling.util.unreachable import loading


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
