"""The laptop CLIs: cli/ray_jobs.py (the Ray Jobs API of a running stack) and cli/team.py (every job in the platform's
GPU queue, from the cluster). They import neither Pulumi nor the components (cli/team.py uses core/cost.py's
arithmetic)."""
