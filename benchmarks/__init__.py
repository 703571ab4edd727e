"""dive benchmarks (``make bench``)."""
