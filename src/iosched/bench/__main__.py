"""``python -m iosched.bench`` (``make bench``): the KTH-SP2 benchmark,
:mod:`iosched.bench.kth`."""

import sys

from iosched.bench.kth import main

sys.exit(main())
