"""ModalityRouter: modality-named routes of the built-in Router that all end in one shared encoder."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Self

from sentence_transformers import SentenceTransformerModelCardData
from sentence_transformers.base.modality import format_modality, infer_modality
from sentence_transformers.base.modality_types import Modality
from sentence_transformers.base.modules import InputModule, Module, Router
from torch import nn

from sbert_nonling.modules.front_end import FrontEnd
from sbert_nonling.util.model_card_data import NonLinguisticModelCardData
from sbert_nonling.util.validation import check_text_inputs
from sbert_nonling.version import __version__

#: Tasks sentence-transformers' own API passes (``encode_query`` / ``encode_document``); they select the default route.
GENERIC_TASKS = ("query", "document")
#: A 2-D array is read as audio only when one axis can hold its channels.
MAX_AUDIO_CHANNELS = 8
#: Route names a ModalityRouter accepts. "pixel" reads text as rendered pixels (selected with ``task="pixel"``).
MODALITY_ROUTES = ("text", "image", "audio", "pixel")
#: Ends the message of a bad item: a module sees only the batch it is given, not the caller's list.
POSITION_NOTE = (
    "(Positions count within the batch being preprocessed: model.encode sorts its inputs by length and preprocesses "
    "them batch_size at a time, so there it may differ from the position in the list passed to encode.)"
)


class ModalityRouter(Router):
    """A :class:`~sentence_transformers.base.modules.Router` whose routes are modalities and share one encoder.

    Every route is ``[front_end, encoder]`` (the text route ``[encoder]``) and ends in the *same* encoder object, so
    all modalities train one set of weights (docs/architecture.md). Routes are picked by the modality inferred from
    the inputs or by ``task`` (``model.encode(texts, task="pixel")``); a model with a "pixel" route and no "text"
    route (Pixel Linguist) sends all text to the pixel route.

    What it adds to the built-in Router: routes restricted to :data:`MODALITY_ROUTES` and one shared encoder (checked);
    strict preprocessing (a bad item is named by its position in the batch: docs/reliability.md, "Bad input"); audio
    dicts routed as audio; and NonLinguisticModelCardData for the model (:meth:`on_model_ready`).
    Loading a saved model needs ``trust_remote_code=True``; :func:`sbert_nonling.export_text_model` writes the text
    route with built-in modules only.

    Args:
        sub_modules: route name -> list of modules; see :meth:`from_encoder` for the usual way to build it.
        default_route: route used when neither task nor modality selects one; defaults to "text" if present.
        allow_empty_key: as in Router: fall back to the first route if ``default_route`` is None.
        route_mappings: as in Router: explicit ``(task, modality) -> route`` rules.

    Example:
        ::

            from sentence_transformers import SentenceTransformer
            from sentence_transformers.sentence_transformer.modules import Pooling
            from sbert_nonling import ModalityRouter, SharedEncoder
            from sbert_nonling.models import build_tiny_encoder

            sentences = ["A man is playing a guitar."]
            path = build_tiny_encoder("tiny-bert", sentences, hidden_size=32)  # offline; e.g. "bert-base-uncased"
            encoder = SharedEncoder(str(path), max_seq_length=32)
            router = ModalityRouter.from_encoder(encoder)  # later: front_ends={"image": ImagePatchEmbed(...)}
            model = SentenceTransformer(modules=[router, Pooling(encoder.get_embedding_dimension(), "cls")])
            model.encode(["A man is playing a guitar."])
    """

    #: What a saved model needs, written to ``config_sentence_transformers.json`` by NonLinguisticModelCardData.
    requirements = {"sbert-nonling": {"specifier": f">={__version__}", "reason": "the model uses ModalityRouter"}}

    def __init__(
        self,
        sub_modules: dict[str, list[Module]],
        default_route: str | None = None,
        allow_empty_key: bool = True,
        route_mappings: dict[tuple[str | None, str | tuple[str, ...] | None], str] | None = None,
    ) -> None:
        if not sub_modules:
            raise ValueError("ModalityRouter needs at least one route, e.g. {'text': [encoder]}.")
        for route, modules in sub_modules.items():
            self._check_route(route, modules)
        if default_route is None and "text" in sub_modules:
            default_route = "text"
        if "text" not in sub_modules and "pixel" in sub_modules:
            # A pixel-only model reads every sentence as pixels, whatever task (query / document) the caller names.
            route_mappings = {(None, "text"): "pixel", **(route_mappings or {})}
        super().__init__(
            sub_modules, default_route=default_route, allow_empty_key=allow_empty_key, route_mappings=route_mappings
        )
        first_route, encoder = next(iter(self.sub_modules.items()))[0], self.encoder
        for route in self.sub_modules:
            chain = self.route_chain(route)
            if chain[-1] is not encoder:
                raise ValueError(
                    f"Every route of a ModalityRouter must end in the same encoder object, but route {route!r} ends "
                    f"in a different {type(chain[-1]).__name__} than route {first_route!r}. Build it with "
                    "ModalityRouter.from_encoder(encoder, front_ends=...) to share one encoder."
                )
            self._check_width(route, chain[0], encoder)
        #: mode -> every module of the router with its mode as the last full ``train(mode)`` left them
        self._modes_after_train: dict[bool, list[tuple[nn.Module, bool]]] = {}

    @classmethod
    def from_encoder(
        cls, encoder: InputModule, front_ends: dict[str, InputModule] | None = None, default_route: str | None = None
    ) -> ModalityRouter:
        """Build the router: a "text" route ``[encoder]`` plus a ``[front_end, encoder]`` route per front-end.

        Args:
            encoder: the encoder every route ends in (a :class:`SharedEncoder`).
            front_ends: route name (a modality) -> its front-end, e.g. ``{"image": ImagePatchEmbed()}``.
            default_route: as the constructor's.
        """
        sub_modules: dict[str, list[Module]] = {
            modality: [front_end, encoder] for modality, front_end in (front_ends or {}).items()
        }
        return cls({"text": [encoder], **sub_modules}, default_route=default_route)

    @property
    def encoder(self) -> nn.Module:
        """The encoder shared by every route."""
        return self.route_chain(next(iter(self.sub_modules)))[-1]

    def route_chain(self, route: str) -> nn.Sequential:
        """The modules of ``route`` (the Router keeps every route as an ``nn.Sequential``).

        Args:
            route: a route name.
        """
        chain = self.sub_modules[route]
        assert isinstance(chain, nn.Sequential)
        return chain

    def train(self, mode: bool = True) -> Self:
        """Training mode (``mode`` True) or evaluation mode for the router and every module of its routes, each module
        set once. torch's ``Module.train`` recurses into every route, and so through the shared encoder once per
        route; transformers' trainer calls it before every micro-batch. Each route module's own ``train`` is called,
        so a module that overrides it (a frozen part kept in eval mode) still decides its mode.

        A call that finds the same modules in the same modes as the last call with this ``mode`` left them returns at
        once: it would set each module as it is. This is the trainer's case from its second micro-batch on, where
        setting every module again costs more host time than reading their modes (docs/benchmarks.md, "Host
        overhead per family"); a module added, replaced or switched since is set as before.

        Args:
            mode: True for training mode, False for evaluation mode (``eval()`` passes False).

        Example::

            from sbert_nonling import ImagePatchEmbed, ModalityRouter, SharedEncoder
            from sbert_nonling.models import build_tiny_encoder

            path = build_tiny_encoder("tiny-bert", ["A man is playing a guitar."], hidden_size=32)  # offline
            encoder = SharedEncoder(str(path))
            front_ends = {"image": ImagePatchEmbed(image_size=32, patch_size=8, embedding_dimension=32)}
            router = ModalityRouter.from_encoder(encoder, front_ends=front_ends)
            router.eval()  # the shared encoder's modules set once, not once per route
            print(router.training, encoder.training)  # False False
        """
        if not isinstance(mode, bool):
            raise ValueError(f"train(mode={mode!r}): mode must be True (training) or False (evaluation).")
        if [(module, module.training) for module in self.modules()] == self._modes_after_train.get(mode):
            return self
        self.training = self.sub_modules.training = mode
        visited: set[nn.Module] = set()
        for route in self.sub_modules:
            chain = self.route_chain(route)
            chain.training = mode
            for module in chain:
                if module not in visited:  # the shared encoder ends every route
                    visited.add(module)
                    module.train(mode)
        self._modes_after_train[mode] = [(module, module.training) for module in self.modules()]
        return self

    def add_route(self, modality: str, front_end: InputModule) -> None:
        """Add a ``[front_end, shared encoder]`` route named after ``modality``.

        Args:
            modality: the route's name, one of :data:`MODALITY_ROUTES` not used yet.
            front_end: the route's first module; one built without a width takes the encoder's.
        """
        if modality in self.sub_modules:
            raise ValueError(f"Route {modality!r} already exists; routes: {list(self.sub_modules)}.")
        self._check_route(modality, [front_end, self.encoder])
        self._check_width(modality, front_end, self.encoder)
        self.sub_modules[modality] = nn.Sequential(front_end, self.encoder)

    @staticmethod
    def _check_route(route: str, modules: Sequence[nn.Module]) -> None:
        if route not in MODALITY_ROUTES:
            raise ValueError(f"Route {route!r} is not a modality; ModalityRouter routes are {list(MODALITY_ROUTES)}.")
        if not modules or not isinstance(modules[0], InputModule):
            first = type(modules[0]).__name__ if modules else "nothing"
            raise ValueError(
                f"Route {route!r} must start with an InputModule (a front-end or the encoder), got {first}."
            )

    @staticmethod
    def _check_width(route: str, front_end: nn.Module, encoder: Any) -> None:
        if not isinstance(front_end, FrontEnd):  # the encoder itself, or a route of its own kind (PIXEL's renderer)
            return
        if front_end.get_embedding_dimension() is None:
            front_end.take_encoder_width(encoder.get_embedding_dimension())  # built without a width: the encoder's
        width, hidden_size = front_end.get_embedding_dimension(), encoder.get_embedding_dimension()
        if width != hidden_size:
            raise ValueError(
                f"Route {route!r}: {type(front_end).__name__} makes tokens of width {width}, but the shared encoder's "
                f"hidden size is {hidden_size}; build the front-end with embedding_dimension={hidden_size}."
            )

    def infer_batch_modality(self, inputs: Sequence[Any]) -> Modality:
        """Infer the one modality of ``inputs``; raise a ValueError naming the item that is unknown or differs.

        Args:
            inputs: one batch (sentences, images or audio).
        """
        batch_modality, first_index = None, 0
        for index, item in enumerate(inputs):
            if item is None:
                raise ValueError(f"input {index} is None; expected a sentence, an image or an audio waveform.")
            try:
                modality = infer_modality(item, supported_modalities=self.modalities)
            except ValueError as error:
                raise ValueError(f"input {index} ({type(item).__name__}) has no known modality: {error}") from None
            if batch_modality is None:
                batch_modality, first_index = modality, index
            elif modality != batch_modality:
                raise ValueError(
                    f"This batch mixes modalities: input {first_index} is {format_modality(batch_modality)!r} but "
                    f"input {index} is {format_modality(modality)!r}. Encode each modality in its own call."
                )
        if batch_modality is None:
            raise ValueError("no inputs: the modality of an empty batch cannot be inferred.")
        return batch_modality

    def check_inputs(self, inputs: Sequence[Any], modality: Modality | None = None) -> Modality:
        """The one modality of ``inputs`` (``modality`` if given); a ValueError names the first text item that is not
        a string, or a 2-D array read as audio whose axes hold no channels.

        Args:
            inputs: one batch.
            modality: the batch's modality if the caller knows it; None infers it.
        """
        if modality is None:
            modality = self.infer_batch_modality(inputs)
        if modality == "text":
            check_text_inputs(inputs)
        if modality == "audio":
            for index, item in enumerate(inputs):
                shape = tuple(getattr(item, "shape", ()))
                if len(shape) == 2 and min(shape) > MAX_AUDIO_CHANNELS:
                    raise ValueError(
                        f"input {index} is a 2-D array of shape {shape}, read as audio (channels, samples), but "
                        f"neither axis is a channel axis (at most {MAX_AUDIO_CHANNELS} channels). A grayscale image "
                        "needs a channel axis: pass it as a PIL image or an (H, W, 1) / (H, W, 3) array."
                    )
        return modality

    def check_task(self, task: str | None) -> None:
        """Refuse a ``task`` that is neither a route name, a task of ``route_mappings`` nor in :data:`GENERIC_TASKS`.

        Args:
            task: the ``task`` the caller passed to ``encode``, or None.
        """
        tasks = {mapped for mapped, _ in self.route_mappings if mapped is not None} - set(self.sub_modules)
        if task is not None and task not in set(self.sub_modules) | tasks and task not in GENERIC_TASKS:
            named = f" (tasks: {sorted(tasks)})" if tasks else ""
            raise ValueError(
                f"task={task!r} selects no route of this model; its routes are {list(self.sub_modules)}{named}."
            )

    def preprocess(
        self,
        inputs: Sequence[Any],
        prompt: str | None = None,
        task: str | None = None,
        modality: Modality | None = None,
        **kwargs,
    ) -> dict[str, Any]:
        """Check the batch strictly (one modality, text items strings, a task that selects a route), then preprocess
        it as the built-in Router does."""
        if not inputs:
            return {}
        try:
            modality = self.check_inputs(inputs, modality)
        except ValueError as error:
            raise ValueError(f"{error} {POSITION_NOTE}") from None
        self.check_task(task)
        if isinstance(modality, str) and all(isinstance(item, dict) and set(item) == {modality} for item in inputs):
            inputs = [item[modality] for item in inputs]  # {"image": x} dicts carry nothing but the input
        if task is None and isinstance(inputs[0], dict) and isinstance(modality, str) and modality in self.sub_modules:
            # The built-in Router reads a batch of dicts without a task as legacy {task: input} dicts, which audio
            # dicts are not. The route named after the batch's modality, as a task, selects that same route.
            task = modality
        return super().preprocess(inputs, prompt=prompt, task=task, modality=modality, **kwargs)

    def on_model_ready(self, model: Any) -> None:
        """Also give the model :class:`NonLinguisticModelCardData`, so that a plain ``SentenceTransformerTrainer``
        accepts image / audio datasets."""
        super().on_model_ready(model)
        card = model.model_card_data
        if type(card) is SentenceTransformerModelCardData:
            # sentence-transformers picks a model's card data class only through its constructor argument: the default
            # one is replaced by one with the same settings and base model (nothing else is recorded at construction).
            settings = {field.name: getattr(card, field.name) for field in dataclasses.fields(card) if field.init}
            model.model_card_data = NonLinguisticModelCardData(**settings)
            model.model_card_data.base_model = card.base_model
            model.model_card_data.base_model_revision = card.base_model_revision
            model.model_card_data.register_model(model)
