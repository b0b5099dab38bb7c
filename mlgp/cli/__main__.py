"""``python -m mlgp.cli``: the ``mlgp`` command."""

import sys

from . import main

sys.exit(main())
