"""Policy pack entry point: `pulumi preview --policy-pack policy` runs this file in .venv-policy.

It only builds the pack; the rules live in nemo_rl_policies.py and their pulumi-policy adapters in
nemo_rl_pack.py. Each policy carries its own enforcement level (see RULES for why each is what it is).
"""

from nemo_rl_pack import PACK_NAME, policies
from pulumi_policy import EnforcementLevel, PolicyPack

PolicyPack(name=PACK_NAME, policies=policies(), enforcement_level=EnforcementLevel.ADVISORY)
