"""Stage 2, KernelConfig -> CUDA source: the Jinja2 templates and the facts they read.

- ``render``: :func:`render` / :func:`emit` (validate for a target, then render),
  :func:`render_validated` (for configs validated already), :class:`KernelSource`;
- ``facts``: what templates need beyond the config (header lines, how each tile is loaded);
- ``build_line``: the nvcc command an emitted source's header prints, and the flags nvcc builds with;
- ``smem``: where the tensor-core families put a tile's elements in shared memory (swizzles).
"""
from .facts import accepts_text, launch_lines
from .render import KernelSource, emit, environment, render, render_validated

__all__ = ["KernelSource", "accepts_text", "emit", "environment", "launch_lines", "render", "render_validated"]
