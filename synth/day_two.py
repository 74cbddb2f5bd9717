"""The day-two table of docs/operations.md ("Changing a deployed stack"), generated from the settings' records.

`python -m synth.day_two` rewrites the part of docs/operations.md between the two markers below; a test fails when it
and the records disagree. One row per setting: what changing it on a deployed stack does (the record's class, with the
conditions under which a stack gets another), and what it may change. tests/test_day2_settings.py checks every claim
against the replacement plan of every shipped stack, so the table says what the sweep has checked.
"""

from __future__ import annotations

from pathlib import Path

from core.settings.record import CLASSES, MEANING, SettingRecord
from core.settings.registry import declared

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "operations.md"
BEGIN = (
    "<!-- day-two table: generated from the settings' records (core/settings/) by `make generated` "
    "(python -m synth.day_two); edit the records, not this table -->"
)
END = "<!-- end of the day-two table -->"


def _claims(r: SettingRecord) -> str:
    own, *others = r.claims()
    text = f"**{own[0]}**" + (f": {r.day_two.note}" if r.day_two.note else "")
    return "; ".join([text] + [f"{condition}: **{cls}**" for cls, condition in others])


def _touches(r: SettingRecord) -> str:
    if r.day_two.touches == ("*",):
        return "everything"
    return ", ".join(f"`{t}`" for t in r.day_two.touches) or "nothing rendered"


def table() -> str:
    """The generated block, markers included."""
    lines = [
        BEGIN,
        "",
        "| class | what happens |",
        "|---|---|",
        *(f"| {cls} | {MEANING[cls]} |" for cls in CLASSES),
        "",
        "| setting | changing it on a deployed stack | may change |",
        "|---|---|---|",
    ]
    for k, d in sorted(declared().items(), key=lambda kv: kv[0].lower()):
        lines.append(f"| `{k}` | {_claims(d.record)} | {_touches(d.record)} |")
    return "\n".join(lines + ["", END])


def render(text: str) -> str:
    """`text` (docs/operations.md) with its generated block replaced."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{OUT.name} has no day-two block: put the two markers where the table goes")
    return text[:start] + table() + text[end + len(END) :]


if __name__ == "__main__":
    OUT.write_text(render(OUT.read_text()))
    print(f"wrote the day-two table of {OUT.relative_to(ROOT)}")
