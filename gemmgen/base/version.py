"""gemmgen's version, stamped into results files (devices.fingerprint) and shown by ``gemmgen --version``.

Kept apart from the package's ``__init__`` so that modules of every stage can read it without
importing the whole package (pyproject.toml holds the same number for the wheel).
"""
__version__ = "0.1.0"
