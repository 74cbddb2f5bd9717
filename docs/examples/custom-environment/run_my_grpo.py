"""jobEntry: register the custom environment, then run NeMo-RL's GRPO entry with this job's arguments.

No NeMo-RL release selects an unregistered environment by config alone: create_env asserts the name is in
ENV_REGISTRY (nemo_rl/environments/utils.py, v0.5.0 and v0.7.0), and every actor's Python must be in
ACTOR_ENVIRONMENT_REGISTRY (nemo_rl/distributed/ray_actor_environment_registry.py, get_actor_python_env). Both
registries are module state of this process, the driver, which creates the environment: register here, then run
examples/run_grpo.py (not run_grpo_math.py, which builds MathEnvironment itself) as __main__ in the same process.
The job runs this from /opt/nemo-rl with `--config ... <Hydra overrides>`, as it would run the release's entry.
"""

import os
import runpy
import sys

from nemo_rl.distributed.ray_actor_environment_registry import ACTOR_ENVIRONMENT_REGISTRY
from nemo_rl.distributed.virtual_cluster import PY_EXECUTABLES
from nemo_rl.environments.utils import register_env

ENV_NAME = "contains_answer"  # what the config selects: data.env_name (v0.5.0) or data.default.env_name (v0.7.0)
ACTOR = "answer_env.environment.ContainsAnswerEnvironment"

# The image's own interpreter: the environment needs nothing beyond what the image has.
ACTOR_ENVIRONMENT_REGISTRY[ACTOR] = PY_EXECUTABLES.SYSTEM
register_env(ENV_NAME, ACTOR)

entry = os.path.join(os.getcwd(), "examples", "run_grpo.py")
sys.argv[0] = entry
runpy.run_path(entry, run_name="__main__")
