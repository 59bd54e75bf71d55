"""Benchmarks (`make bench`), the chaos soak (`make chaos`) and the fuzz run (`make fuzz`).

Not part of the installed package: run from the repository root with `python -m bench`.
"""
