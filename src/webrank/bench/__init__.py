"""Benchmark support: machine description, timing helpers and result files."""
