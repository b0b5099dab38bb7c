"""The ``mlgp`` command's quieting of TensorFlow: :func:`mlgp.quiet.quiet_tensorflow`, re-exported
for the subcommands (the function lives at the package root so that the comparison's worker
processes use it too)."""

from __future__ import annotations

from ..quiet import quiet_tensorflow

__all__ = ["quiet_tensorflow"]
