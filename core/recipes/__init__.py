"""NeMo-RL GRPO job recipes: what the RayJob runs, rendered from the stack settings. Pure code, no resources.

- model.py: `Recipe` (a typed GRPO run) and the built-in recipes that reproduce the seeds;
- resolve.py: the recipe the job runs (built-in + `jobOverrides`), every rule it must meet, the run name;
- overrides.py: the training command's arguments (entry script, `--config`, Hydra overrides in Hydra's grammar);
- commands.py: the entrypoint script, the runtime env, the job's metadata, the programs' commands.
This package only re-exports their names, so call sites read `recipes.X`.
"""

from core.recipes.commands import *  # noqa: F403
from core.recipes.model import *  # noqa: F403
from core.recipes.overrides import *  # noqa: F403
from core.recipes.resolve import *  # noqa: F403
