"""A stand-in for the Hugging Face `datasets` package, so the GSM8K preparation step runs offline.

`install(target)` writes `target/datasets/__init__.py`; with `target` on PYTHONPATH (or sys.path),
`load_dataset("openai/gsm8k", "main")` returns the given splits as lists of row dicts, which is all the
preparation step uses of a DatasetDict. Like the real hub dataset, it refuses a missing config name. Each
call is appended, with the HF_HOME it saw, to the file named by $FAKE_DATASETS_CALLS when that is set.
"""

from __future__ import annotations

import json
from pathlib import Path

CALLS_ENV = "FAKE_DATASETS_CALLS"

# GSM8K's shape: a question, and a worked solution ending in '#### <final answer>'.
SAMPLE_GSM8K: dict[str, list[dict[str, str]]] = {
    "train": [
        {
            "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in "
            "May. How many clips did Natalia sell altogether in April and May?",
            "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips "
            "altogether in April and May.\n#### 72",
        },
        {
            "question": "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of babysitting. "
            "How much did she earn?",
            "answer": "Weng earns 12/60 = $<<12/60=0.2>>0.2 per minute.\nWorking 50 minutes, she earned "
            "0.2 x 50 = $<<0.2*50=10>>10.\n#### 10",
        },
        {
            "question": 'A company pays "Tom\'s" team $1,500 a week for 2 weeks. How much is that?',
            "answer": "2 x 1,500 = 3,000\n#### 3,000",
        },
    ],
    "test": [
        {
            "question": "Janet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes "
            "muffins for her friends every day with four. She sells the remainder at the farmers' "
            "market daily for $2 per fresh duck egg. How much in dollars does she make every day?",
            "answer": "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\nShe makes 9 * 2 = $<<9*2=18>>18 "
            "every day at the farmer's market.\n#### 18",
        },
    ],
}

_MODULE = '''"""Offline stand-in for `datasets` (see tests/standin/fake_datasets.py)."""
import json
import os

_SPLITS = json.loads(__SPLITS__)


def load_dataset(path, name=None, **kwargs):
    log = os.environ.get("__CALLS_ENV__")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"path": path, "name": name, "revision": kwargs.get("revision"),
                                "hf_home": os.environ.get("HF_HOME")}) + "\\n")
    if path != "openai/gsm8k":
        raise FileNotFoundError(f"stand-in datasets knows only openai/gsm8k, not {path!r}")
    if name is None:
        raise ValueError("Config name is missing. Please pick one among the available configs: ['main', 'socratic']")
    if name != "main":
        raise ValueError(f"BuilderConfig {name!r} not found")
    return {split: [dict(row) for row in rows] for split, rows in _SPLITS.items()}
'''


def install(target: Path, splits: dict[str, list[dict[str, str]]] = SAMPLE_GSM8K) -> Path:
    """Write the stand-in package under `target`; returns `target` (the directory to put on the path)."""
    pkg = Path(target) / "datasets"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(
        _MODULE.replace("__SPLITS__", repr(json.dumps(splits))).replace("__CALLS_ENV__", CALLS_ENV), encoding="utf-8"
    )
    return Path(target)
