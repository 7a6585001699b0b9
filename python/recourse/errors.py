"""The package's exceptions: each carries the engine's diagnostic records."""

from __future__ import annotations

from typing import List

from .types import Diagnostic


class RecourseError(Exception):
    """A call the engine refused. ``diagnostics`` lists every record (file, line, column, code,
    message, help); ``str()`` is the first error's message."""

    def __init__(self, message: str, diagnostics: List[Diagnostic]):
        super().__init__(message)
        self.diagnostics = diagnostics

    @property
    def code(self) -> str:
        """The first diagnostic's code ("E012", "C001", ...)."""
        return self.diagnostics[0].code if self.diagnostics else ""


class CompileError(RecourseError):
    """Policies that did not compile (E0xx with file, line and column); the bundle in use stays."""


class ContextError(RecourseError, ValueError):
    """A malformed context (C001): a known key with a wrong type or range. The context is the
    host's own knowledge and is read strictly; the envelope never raises."""


class InputError(RecourseError, ValueError):
    """A raw form an adapter cannot read (N001): not a JSON object, past a limit, no protocol."""


class StoreError(RecourseError):
    """A store spec that is malformed (S001) or a store that cannot be opened or reached (S002)."""


class RunnerError(RecourseError):
    """A runner spec without tool or operation id (R002), or an outcome that answers no pending
    action (R003), or one that cannot be read (R001)."""
