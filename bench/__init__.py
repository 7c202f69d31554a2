"""Benchmarks: each prints its figures, with ratios against baselines measured in the same run."""
