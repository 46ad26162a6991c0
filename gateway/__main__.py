"""``python -m gateway`` is the ``switchboard`` command."""

import sys

from gateway.cli import main

sys.exit(main())
