"""Benchmarks of the queue core against two published DynamoDB queue designs, counted call by call.

`python -m bench.run` runs every scenario and writes docs/benchmarks.md and the plots in docs/img/.
"""
