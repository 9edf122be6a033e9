"""``python -m iosched``: the ``iosched`` command line (:mod:`iosched.cli`)."""

import sys

from iosched.cli import main

sys.exit(main())
