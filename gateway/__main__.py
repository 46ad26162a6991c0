"""``python -m gateway`` is the ``switchboard`` command."""

import sys

from .cli import main

sys.exit(main())
