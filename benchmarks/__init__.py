"""The benchmark suites of gemmgen (benchmarks/README.md lists them); run each from the repository root as
``python -m benchmarks.NAME``, so its imports of gemmgen and of the other suites resolve to this tree."""
