"""A custom NeMo-RL environment, shipped in your image (docs/operations.md "Your own environment")."""
