"""Back-of-the-envelope benchmarks: arithmetic over the catalog, no cloud calls."""
