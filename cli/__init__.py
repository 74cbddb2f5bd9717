"""The laptop CLI (cli/ray_jobs.py): the Ray Jobs API of a running stack. Imports neither Pulumi nor the components."""
