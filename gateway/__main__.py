"""``python -m gateway`` is the ``switchboard`` command."""

import sys

from gateway.cli.main import main

sys.exit(main())
