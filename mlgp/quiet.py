"""Keeping TensorFlow's start-up and log lines out of the ``mlgp`` command's output.

TensorFlow's C++ core writes lines to the process's standard error before its own logging is set
up (``WARNING: All log messages before absl::InitializeLog() …``, ``I0000 … cudart_stub``, and on a
machine without a GPU ``E0000 … failed call to cuInit``) whatever ``TF_CPP_MIN_LOG_LEVEL`` says.
:func:`quiet_tensorflow` therefore imports TensorFlow, and lets it look for devices, with file
descriptor 2 pointed at ``os.devnull``, after setting ``TF_CPP_MIN_LOG_LEVEL=2`` (error lines still
show); then it sets the Python loggers of TensorFlow and absl to errors only. It must run before anything else imports
TensorFlow; ``mlgp --verbose`` skips it. An exception raised by the import is still shown (the
descriptor is restored first).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys

__all__ = ["quiet_tensorflow"]


@contextlib.contextmanager
def _stderr_to_devnull():
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 2)
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(devnull)
    finally:
        os.close(saved)


def quiet_tensorflow() -> None:
    """Import TensorFlow silently and keep its later log lines below error level out of the output."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if "tensorflow" not in sys.modules:
        with _stderr_to_devnull():
            import tensorflow as tf

            tf.config.list_physical_devices()  # device discovery logs the cuInit line
    import tensorflow as tf

    tf.get_logger().setLevel(logging.ERROR)
    tf.autograph.set_verbosity(0)
    try:
        from absl import logging as absl_logging

        absl_logging.set_verbosity(absl_logging.ERROR)
    except ImportError:  # pragma: no cover - absl comes with TensorFlow
        pass
