"""Shared core: settings, catalog, naming, recipes and sizing. Pure code, no resources; imports neither
`infra/` nor `workloads/`."""
