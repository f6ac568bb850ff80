"""``python -m gemmgen.cli ...`` runs the same commands as the ``gemmgen`` script."""
import sys

from . import main

sys.exit(main())
