"""Stage 5, the search: draw configs from a space, measure them (injected), keep the winner of a study.

- ``space`` and ``space_parts``: a family's search space as data (``search/<family>.json``); ``draws``:
  the share of its random draws the rules reject on a device;
- ``shapeset``: the shapes a GPU is tuned on by default, derived from its SM count, in value order;
  ``budget``: ``--budget`` parsed and split between tuning and timing, with an estimate;
- ``plan``: :class:`SearchPlan` and :func:`make_plan`, what one search tunes and is given;
- ``driver``: :func:`run_search`, presets first, one :class:`~.runner.TrialRunner` per GPU;
- ``runner``: the ask/validate/prepare/measure/tell loop of one search process;
- ``finalists``: re-timing the fastest configs and naming the winner;
- ``storage``, ``samplers``, ``studies``, ``trial_stats``: Optuna storage, samplers, studies and
  what their trials say; ``report``: plots of a study;
- ``gpu``: the GPU-backed measure, prepare and retime callables (isolated measuring workers).
"""
from .driver import run_search, setup_study
from .finalists import SearchError, SearchResult, pick_winner
from .gpu import GpuMeasure, GpuRetime, NvrtcPrepare
from .plan import GpuMismatch, SearchPlan, make_plan, match_gpu
from .space import Space, default_shapes, families, load_space, sample_valid
from .space_parts import SpaceError
from .storage import StudyError, default_storage, open_storage

__all__ = ["GpuMeasure", "GpuMismatch", "GpuRetime", "NvrtcPrepare", "SearchError", "SearchPlan", "SearchResult",
           "Space", "SpaceError", "StudyError", "default_shapes", "default_storage", "families", "load_space",
           "make_plan", "match_gpu", "open_storage", "pick_winner", "run_search", "sample_valid", "setup_study"]
