"""``python -m gemmgen ARGS`` runs ``gemmgen ARGS`` (for an environment whose scripts are not on PATH)."""
import sys

from .cli import main

sys.exit(main())
