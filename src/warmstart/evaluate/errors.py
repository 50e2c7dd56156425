"""Errors of the evaluation package (all under :class:`~warmstart.errors.WarmstartError`).

WarmstartError
 └── EvaluationError          a bad evaluation request (unknown strategy, experiment, ...)
      ├── EnvironmentUnavailable  an A/B environment cannot be loaded (missing extra, bad tasks)
      └── SandboxViolation        a workspace tool was asked to leave its directory
"""

from __future__ import annotations

from warmstart.errors import WarmstartError


class EvaluationError(WarmstartError):
    """An evaluation cannot run as asked (bad options, unknown experiment, empty corpus)."""


class EnvironmentUnavailable(EvaluationError):
    """An A/B tool environment cannot be loaded: a missing optional package or bad tasks."""


class SandboxViolation(EvaluationError):
    """A workspace tool was given an absolute path or a ``..`` escape.

    Raised inside the tool, so the runtime turns it into an ``Error:`` result the model
    sees; the run goes on.
    """
