"""Checks of command-line values, run before anything starts: GPU detection, workers, databases, files.

Each raises ValueError whose message is one line naming the bad value and what would be valid; none
of them creates a file, a folder or a database.

>>> at_least(1, trials=200, jobs=2)
>>> at_least(1, trials=-5)
Traceback (most recent call last):
ValueError: --trials -5: must be at least 1
>>> storage_url("badscheme://x")
Traceback (most recent call last):
ValueError: --storage 'badscheme://x': unknown database 'badscheme'; valid: sqlite:///FILE.db, postgresql://USER@HOST/DB or another SQLAlchemy URL
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import re
from pathlib import Path

STORAGE_EXAMPLES = "sqlite:///FILE.db, postgresql://USER@HOST/DB or another SQLAlchemy URL"


def at_least(low: float, **values: float | None) -> None:
    """Every given option (``--name value``; None: not given) is a finite number >= ``low``."""
    for name, value in values.items():
        if value is not None and not (math.isfinite(value) and value >= low):
            raise ValueError(f"--{name.replace('_', '-')} {value:g}: must be at least {low:g}")


def positive(**values: float | None) -> None:
    """Every given option is a finite number above 0 (seconds, milliseconds).

    >>> positive(timeout=-1.0)
    Traceback (most recent call last):
    ValueError: --timeout -1: must be a number of seconds above 0
    """
    for name, value in values.items():
        if value is not None and not (math.isfinite(value) and value > 0):
            unit = "milliseconds" if name.endswith("_ms") else "seconds"
            raise ValueError(f"--{name.replace('_', '-')} {value:g}: must be a number of {unit} above 0")


# The sizes a GEMM may have: the kernels take M, N and K as 32-bit ints, and A, B and C in fp32 must fit
# the memory of one GPU: an H200's 141 GB, the most of any GPU in gemmgen's table.
MAX_DIM = 2**31 - 1
MAX_BYTES = 141 * 10**9


def problem_size(text: str, option: str = "shape") -> None:
    """A shape 'MxNxK[/LAYOUT]' that is well formed and small enough for a kernel and a GPU's memory.

    >>> problem_size("3000000000x3000000000x3")
    Traceback (most recent call last):
    ValueError: shape '3000000000x3000000000x3': M = 3000000000 is above 2147483647, the largest size the kernels index (32-bit int)
    >>> problem_size("2000000x2000000x1")
    Traceback (most recent call last):
    ValueError: shape '2000000x2000000x1': A, B and C take 16000 GB in fp32; one GPU holds at most 141 GB (an H200)
    """
    from ..base.shape import Shape

    s = Shape.parse(text)
    for name, size in (("M", s.M), ("N", s.N), ("K", s.K)):
        if size > MAX_DIM:
            raise ValueError(f"{option} {text!r}: {name} = {size} is above {MAX_DIM}, the largest size the kernels "
                             "index (32-bit int)")
    need = 4 * (s.M * s.K + s.K * s.N + s.M * s.N)
    if need > MAX_BYTES:
        raise ValueError(f"{option} {text!r}: A, B and C take {need / 1e9:.0f} GB in fp32; one GPU holds at most "
                         f"{MAX_BYTES / 1e9:.0f} GB (an H200)")


def shapes_may_start_with_minus(parser: argparse.ArgumentParser) -> None:
    """Let a value such as '-1x2x3' reach the shape check (which names it) instead of argparse taking it
    for an unknown option and saying only that the shape is missing."""
    parser._negative_number_matcher = re.compile(r"^-\d[\dxX/A-Za-z]*$")   # argparse's hook for '-1', '-2.5'


def input_file(path: str, option: str) -> Path:
    """A file that exists and can be read (``--space``, ``--shapes``, ``--config``)."""
    p = Path(path)
    if not p.exists():
        raise ValueError(f"{option} {path!r}: no such file")
    if not p.is_file():
        raise ValueError(f"{option} {path!r} is a folder; give a file")
    return p


def input_folder(path: str | None, option: str = "--results") -> None:
    """A folder to read that must exist (``--results`` of ``results list|show|export``)."""
    if path is not None and not Path(path).is_dir():
        what = "is a file" if Path(path).exists() else "does not exist"
        raise ValueError(f"{option} {path!r} {what}; give an existing folder")


def output_folder(path: str | None, option: str) -> None:
    """A folder to write into: one that exists, or one whose parent exists (it is made then, as by
    ``mkdir``; a whole missing tree is more likely a typo than a wish)."""
    if path is None:
        return
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ValueError(f"{option} {path!r} is a file; give a folder")
    if not p.exists() and not p.absolute().parent.is_dir():
        raise ValueError(f"{option} {path!r}: its parent folder {str(p.absolute().parent)!r} does not exist")


def output_file(path: str | None, option: str) -> None:
    """A file to write whose folder exists (``--plot``)."""
    if path is None:
        return
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{option} {path!r} is a folder; give a file name")
    if not p.absolute().parent.is_dir():
        raise ValueError(f"{option} {path!r}: its folder {str(p.absolute().parent)!r} does not exist")


def plotting(option: str = "--plot") -> None:
    """matplotlib is installed (plots are optional, so it is not a dependency)."""
    if importlib.util.find_spec("matplotlib") is None:
        raise ValueError(f"{option} draws with matplotlib, which is not installed: pip install 'gemmgen[plot]'")


def storage_url(url: str | None, option: str = "--storage") -> None:
    """An RDB URL whose database kind and Python driver are known here (nothing is connected to)."""
    if url is None:
        return
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    from ..tune.storage import _with_driver   # postgresql:// means psycopg2 where psycopg 3 is absent

    try:
        parsed = make_url(_with_driver(url))
    except ArgumentError:
        raise ValueError(f"{option} {hidden(url)!r} is not a database URL; valid: {STORAGE_EXAMPLES}") from None
    try:
        dialect = parsed.get_dialect()
    except NoSuchModuleError:
        raise ValueError(f"{option} {hidden(url)!r}: unknown database {parsed.drivername!r}; "
                         f"valid: {STORAGE_EXAMPLES}") from None
    try:
        dialect.import_dbapi()
    except ImportError as err:
        hint = "pip install 'gemmgen[postgres]'" if parsed.get_backend_name() == "postgresql" else \
            f"install the Python driver {err.name!r}"
        raise ValueError(f"{option} {hidden(url)!r} needs the database driver {err.name!r}: {hint}") from None


def existing_studies(url: str, option: str = "--storage") -> list[str]:
    """The study names of a storage that must already hold studies (``report``): a SQLite file
    that does not exist is not created, a server database without Optuna's tables is not set up.

    >>> existing_studies("sqlite:////no/such/studies.db")
    Traceback (most recent call last):
    ValueError: --storage 'sqlite:////no/such/studies.db': no such database file /no/such/studies.db; run `gemmgen search` first, or name the storage it used
    """
    storage_url(url, option)
    import sqlalchemy
    from sqlalchemy.engine import make_url

    from ..tune.storage import _with_driver

    parsed = make_url(_with_driver(url))
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:") \
            and not Path(parsed.database).is_file():
        raise ValueError(f"{option} {hidden(url)!r}: no such database file {parsed.database}; run `gemmgen "
                         "search` first, or name the storage it used")
    engine = sqlalchemy.create_engine(parsed)
    try:
        with engine.connect() as conn:
            if not sqlalchemy.inspect(conn).has_table("studies"):
                return []
            return [row[0] for row in conn.execute(sqlalchemy.text("SELECT study_name FROM studies"))]
    except sqlalchemy.exc.SQLAlchemyError as err:
        reason = str(getattr(err, "orig", None) or err).strip().splitlines()[0]
        raise ValueError(f"{option} {hidden(url)!r}: cannot read the database: {reason}") from None
    finally:
        engine.dispose()


def hidden(url: str) -> str:
    """The URL with its password masked, for messages."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return url
    return parsed.render_as_string(hide_password=True) if parsed.password else url
