"""Facts the program relies on, each with its source: one module per subject, one record per GPU type and release.

Nothing here builds resources. Settings validation, the components and the tests read these tables instead of
repeating literals. Where a new thing goes:
- a GPU type: one `Accelerator` record in gpus.py (its machine, shape, NICs, disks, capacity models, sources);
- a NeMo-RL release: one `NemoRlRelease` record in nemo_rl.py, plus the release's files the tests read;
- a Lustre tier, a GKE floor, an image pin, a gate default: lustre.py, gke.py, pins.py, gate.py.
This package only re-exports every module's names, so call sites read `catalog.X`.
"""

from core.catalog.capacity import *  # noqa: F403
from core.catalog.gate import *  # noqa: F403
from core.catalog.gke import *  # noqa: F403
from core.catalog.gpus import *  # noqa: F403
from core.catalog.hub import *  # noqa: F403
from core.catalog.kueue import *  # noqa: F403
from core.catalog.lustre import *  # noqa: F403
from core.catalog.nemo_rl import *  # noqa: F403
from core.catalog.pins import *  # noqa: F403
from core.catalog.prices import *  # noqa: F403
from core.catalog.security import *  # noqa: F403
from core.catalog.startup import *  # noqa: F403
from core.catalog.tenancy import *  # noqa: F403
