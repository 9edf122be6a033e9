"""``python -m iosched.experiments.bench`` (``make bench``): the KTH-SP2 benchmark,
:mod:`iosched.experiments.bench.kth`."""

import sys

from iosched.experiments.bench.kth import main

sys.exit(main())
