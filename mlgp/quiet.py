"""TensorFlow imported without its start-up lines: the library is as quiet as the ``mlgp`` command.

TensorFlow's C++ core writes lines to the process's standard error before its own logging is set
up (``WARNING: All log messages before absl::InitializeLog() …``, ``I0000 … oneDNN custom
operations``, ``cudart_stub``, ``cpu_feature_guard``, and on a machine without a GPU ``E0000 …
failed call to cuInit``) whatever ``TF_CPP_MIN_LOG_LEVEL`` says. :func:`quiet_tensorflow`, which
every mlgp module that uses TensorFlow calls before its first import of it (the GP sub-packages'
``__init__``, GenEML's joint distribution), therefore imports TensorFlow, and lets it look for
devices, with file descriptor 2 pointed at ``os.devnull``, after setting ``TF_CPP_MIN_LOG_LEVEL=2``
(error lines still show); then it sets the Python loggers of TensorFlow and absl to errors only.
An exception raised by the import is still shown (the descriptor is restored first).

It does nothing when the user has chosen for themselves: ``TF_CPP_MIN_LOG_LEVEL`` set in the
environment by anyone but this module (``mlgp --verbose`` sets it to ``0``), or TensorFlow imported
before mlgp needed it. Worker processes inherit the setting together with :data:`MARK`, which says
that mlgp, not the user, set it, so they are quiet too.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys

__all__ = ["LEVEL", "MARK", "quiet_tensorflow", "user_chose"]

#: TensorFlow's environment variable for the least severe C++ log line it prints
LEVEL = "TF_CPP_MIN_LOG_LEVEL"
#: set beside :data:`LEVEL` to the value this module gave it, so that a child process tells
#: mlgp's setting from the user's
MARK = "MLGP_SET_TF_CPP_MIN_LOG_LEVEL"
_QUIET_LEVEL = "2"


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


def user_chose() -> bool:
    """Whether ``TF_CPP_MIN_LOG_LEVEL`` was set by someone other than :func:`quiet_tensorflow`."""
    level = os.environ.get(LEVEL)
    return level is not None and os.environ.get(MARK) != level


def quiet_tensorflow() -> None:
    """Import TensorFlow silently and keep its later log lines below error level out of the output,
    unless the user chose TensorFlow's logging (module docstring); safe to call any number of times."""
    if user_chose():
        return
    if "tensorflow" not in sys.modules:
        os.environ[LEVEL] = os.environ[MARK] = _QUIET_LEVEL
        with _stderr_to_devnull():
            import tensorflow as tf

            tf.config.list_physical_devices()  # device discovery logs the cuInit line
    elif os.environ.get(MARK) is None:
        return  # TensorFlow came up before mlgp needed it: its logging is the user's
    import tensorflow as tf

    tf.get_logger().setLevel(logging.ERROR)
    tf.autograph.set_verbosity(0)
    try:
        from absl import logging as absl_logging

        absl_logging.set_verbosity(absl_logging.ERROR)
    except ImportError:  # pragma: no cover - absl comes with TensorFlow
        pass
