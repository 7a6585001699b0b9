"""Bundle: compiled policies, reloadable while other threads decide, and decide()."""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from . import _recourse
from .types import Decision, Diagnostic

Envelope = Union[Mapping[str, Any], str, bytes, "Adapted", None]  # noqa: F821
Context = Union[Mapping[str, Any], str, bytes, None]


class Bundle:
    """The policies in use (recourse::Engine): compiled from files or texts, swapped atomically
    on reload while other threads decide, with an optional decision log and counters.

    Thread rules: every method may be called from any thread; ``decide()`` releases the GIL
    while the engine decides, so threads decide in parallel. A decision is a plain value.
    """

    def __init__(self, *, count: bool = False):
        """An empty bundle (every decision is stop, ``no_policy``) until a load; ``count``
        counts decisions per route, rule and exhausted budget (``counters()``)."""
        self._engine = _recourse._Engine(count)
        self.warnings: List[Diagnostic] = []

    @classmethod
    def from_paths(cls, *paths: Union[str, "os.PathLike[str]"], count: bool = False) -> "Bundle":
        """Compiles files and directories (every ``*.recourse`` below, sorted by path) as one
        bundle. Raises CompileError with every diagnostic."""
        bundle = cls(count=count)
        bundle.reload_paths(*paths)
        return bundle

    @classmethod
    def from_sources(cls, sources: Mapping[str, str], *, count: bool = False) -> "Bundle":
        """Compiles policy texts (``{path: text}``; the path names them in diagnostics)."""
        bundle = cls(count=count)
        bundle.reload_sources(sources)
        return bundle

    def reload_paths(self, *paths: Union[str, "os.PathLike[str]"]) -> int:
        """Compiles and swaps in a new bundle; returns the new generation. All or nothing: a
        CompileError (also E004, sources without a policy) keeps the bundle in use. The
        compile's warnings are in ``self.warnings``."""
        generation, self.warnings = self._engine.load_paths([os.fspath(p) for p in paths])
        return generation

    def reload_sources(self, sources: Mapping[str, str]) -> int:
        """As reload_paths(), from ``{path: text}``."""
        generation, self.warnings = self._engine.load_sources(list(sources.items()))
        return generation

    def load_candidate_paths(self, *paths: Union[str, "os.PathLike[str]"]) -> int:
        """Compiles files and directories as the shadow candidate (docs/embedding.md, "Shadow
        policies"): every decision for a tool the candidate has a policy for is decided by it
        too, read-only; ``decide()`` still returns the live decision, and a disagreement is
        counted (``shadow_counters()``) and logged (the record's ``shadow``). Returns the new
        generation; a CompileError keeps both bundles as they were."""
        generation, self.warnings = self._engine.load_candidate_paths([os.fspath(p) for p in paths])
        return generation

    def load_candidate_sources(self, sources: Mapping[str, str]) -> int:
        """As load_candidate_paths(), from ``{path: text}``."""
        generation, self.warnings = self._engine.load_candidate_sources(list(sources.items()))
        return generation

    def drop_candidate(self) -> int:
        """Drops the shadow candidate; returns the new generation."""
        return self._engine.drop_candidate()

    def shadow_counters(self) -> Dict[str, Any]:
        """``{"decisions", "disagreements", "rules": {policy: {"live -> candidate": n}},
        "differences": {"route": n, ...}}`` since the bundle was made."""
        return self._engine.shadow_counters()

    def decide(self, envelope: Envelope, context: Context = None) -> Decision:
        """Decides how to recover from one failed call.

        ``envelope``: what the tool returned, untrusted: a dict with the envelope's JSON keys
        (``code``, ``message``, ``retryable``, ``field``, ``suggestion``, ``retryAfterMs`` in ms,
        ``traceId``), its JSON text, an ``Adapted`` from an adapter, or None. A malformed field
        is absent with a warning in ``Decision.warnings``, never an error; text that is not a
        JSON object is decided as ``unreadable_envelope`` (stop).

        ``context``: what the host knows, trusted and read strictly (docs/language.md section
        13): a dict with read_context()'s camelCase keys (``tool``, ``sideEffect``, ``attempt``,
        ``elapsedMs``, ...), its JSON text, or None. Raises ContextError (C001) when a known key
        has a wrong type or range.
        """
        return self._engine.decide(envelope, context)

    @property
    def generation(self) -> int:
        """Swaps so far (loads and set_log calls); 0 before the first load."""
        return self._engine.generation

    def counters(self) -> Dict[str, Any]:
        """``{"decisions", "routes": {route: n}, "rules": {policy: {rule: n}}, "exhausted":
        {budget: n}}``; zero unless made with ``count=True``."""
        return self._engine.counters()

    def set_log(self, log: Optional[Callable[[Dict[str, Any]], None]]) -> None:
        """Calls ``log(record)`` for every decision, on the deciding thread, with the record of
        docs/embedding.md section 3 as a dict (docs/schema/decision-log.schema.json). None stops
        logging. An exception the log raises is reported as unraisable and the record dropped."""
        self._engine.set_log(log)
