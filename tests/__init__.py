"""Tests of the nemo-rl-gke program; a package so `from tests.k8s_validation import ...` works from the repo root."""
