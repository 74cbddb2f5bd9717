"""A NeMo-RL release's config as NeMo-RL itself builds it, offline: its `defaults:` chain, OmegaConf's YAML and
interpolations, and what one Hydra override would do to it.

Pure code over the vendored trees (nemo-rl-reference/<tag>, SOURCES.md there: every release's whole
`examples/configs/`). hydra-core and OmegaConf are not program packages (requirements-test.txt): this module
re-implements the part of them NeMo-RL's loader uses, and tests/test_config_tree.py proves it equal to the real
thing (each release's own `nemo_rl/utils/config.py` with hydra-core 1.3.2 / omegaconf 2.3.0) on every config
of every release:

- `load()`: `load_config_with_inheritance` of the release (nemo_rl/utils/config.py at the tag), as its
  `NemoRlRelease` record describes it: nested `defaults:` against the top file's directory (v0.4.0, v0.5.0) or
  against each parent's own (`loader_parent_dirs`, v0.7.0), and a section's `_override_: true` replacing the
  parent's section instead of merging (`loader_override_marker`, v0.7.0);
- `resolved`: `OmegaConf.to_container(resolve=True)`, with the resolvers the release's entry script registers
  (the record's `resolvers`: `mul`; v0.7.0 also `div`, `max`) and `oc.env`; a value that cannot be resolved
  offline is `UNRESOLVED`;
- `override_problem()`: whether Hydra's `_apply_overrides_to_config` (struct mode, as NeMo-RL's
  `parse_hydra_overrides` sets it) takes `key=value` / `+key=value`, and whether the value has the config's type
  (OmegaConf checks none: every YAML leaf is an AnyNode, so `lr=abc` would reach NeMo-RL as a string).
"""

from __future__ import annotations

import difflib
import functools
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

import yaml

from core.catalog import NEMO_RL_REFERENCE, NEMO_RL_RELEASES, NEMO_RL_WORKDIR
from core.dotted import get_path

CONFIGS_DIR = "examples/configs"
# Where jobConfigFiles' sources are read: the Pulumi project (this repository's root; the program runs from it).
PROJECT_ROOT = NEMO_RL_REFERENCE.parent
# Per file and in all: the job-scripts ConfigMap carries them next to the programs (~85 KB), and a ConfigMap holds
# at most 1 MiB ("The data stored in a ConfigMap cannot exceed 1 MiB", kubernetes.io ConfigMap concept page).
USER_FILE_MAX_BYTES = 256 * 1024
USER_FILES_MAX_BYTES = 512 * 1024


class _Unresolved:
    def __repr__(self) -> str:
        return "UNRESOLVED"


UNRESOLVED: Any = _Unresolved()  # a value whose interpolation cannot be resolved offline
_ABSENT = object()


class ConfigFileError(ValueError):
    """A config file of the chain is missing or is not a YAML mapping; the message names the file."""


# --- reading YAML as OmegaConf does (omegaconf/_utils.py get_yaml_loader, 2.3.0) ----------------------------------
# libyaml's parser where PyYAML has it (the constructor and resolvers stay Python's, so the rules below hold).
_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_SafeLoader):
    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        keys = set()
        for key_node, _ in node.value:
            if key_node.tag == yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG:
                if key_node.value in keys:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark, f"found duplicate key {key_node.value}"
                    )
                keys.add(key_node.value)
        return super().construct_mapping(node, deep=deep)


# OmegaConf reads `1e-8` (no dot) as a float, where YAML 1.1 keeps a string; and no timestamps.
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?[0-9]+(?:_[0-9]+)*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?[0-9]+(?:_[0-9]+)*(?:[eE][-+]?[0-9]+)
        |\.[0-9]+(?:_[0-9]+)*(?:[eE][-+][0-9]+)?
        |[-+]?[0-9]+(?:_[0-9]+)*(?::[0-5]?[0-9])+\.[0-9_]*
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)
_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in _Loader.yaml_implicit_resolvers.items()
}


def parse_yaml(text: str, where: str) -> dict:
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as e:
        raise ConfigFileError(f"{where}: not valid YAML ({str(e).splitlines()[0]})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigFileError(f"{where}: a NeMo-RL config must be a YAML mapping, not a {type(data).__name__}")
    return data


# --- the release's files ----------------------------------------------------------------------------------------
def release_root(tag: str) -> Path:
    return NEMO_RL_REFERENCE / tag


def _is_in_tree(root: Path, rel: str) -> bool:
    return (root / rel).is_file()


def shipped(tag: str, rel: str) -> bool:
    """Whether the release's image holds `rel` (relative to /opt/nemo-rl), as far as the vendored files tell."""
    return _is_in_tree(release_root(tag), posixpath.normpath(rel))


@functools.lru_cache(maxsize=None)
def shipped_configs(tag: str) -> tuple[str, ...]:
    """Every YAML config of the release's examples/configs, relative to /opt/nemo-rl."""
    root = release_root(tag)
    return tuple(sorted(str(p.relative_to(root)) for p in (root / CONFIGS_DIR).rglob("*.yaml")))


# --- load_config_with_inheritance ---------------------------------------------------------------------------------
def _merge(base: Any, over: Any) -> Any:
    """OmegaConf.merge of two plain containers: mappings merge key by key, anything else replaces."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merge(out[k], v) if k in out else _copy(v)
        return out
    return _copy(over)


def _copy(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


def _merge_with_override(base: dict, over: dict) -> dict:
    # v0.7.0 merge_with_override: a top-level section of `over` marked `_override_: true` replaces base's.
    base = dict(base)
    over = dict(over)
    for k, v in list(over.items()):
        if isinstance(v, dict) and v.get("_override_", False):
            over[k] = {kk: vv for kk, vv in v.items() if kk != "_override_"}
            base.pop(k, None)
    return _merge(base, over)


def _inherit(
    tag: str,
    rel: str,
    base_dir: str,
    files: Mapping[str, str],
    seen: tuple[str, ...],
    trace: Optional[list[tuple[str, dict]]] = None,
) -> dict:
    rel = posixpath.normpath(rel)
    if rel in seen:
        raise ConfigFileError(f"{rel}: inherits from itself through defaults: ({' -> '.join(seen + (rel,))})")
    if rel in files:
        text = files[rel]
    else:
        path = release_root(tag) / rel
        if rel.startswith("../") or not path.is_file():
            raise ConfigFileError(f"{rel}: no such file in NeMo-RL {tag} (nor among jobConfigFiles)")
        text = path.read_text(encoding="utf-8")
    config = parse_yaml(text, rel)
    if "defaults" not in config:
        if trace is not None:
            trace.append((rel, config))
        return config
    defaults = config.pop("defaults")
    parents = [defaults] if isinstance(defaults, str) else [str(d) for d in (defaults or [])]
    release = NEMO_RL_RELEASES[tag]
    merge = _merge_with_override if release.loader_override_marker else _merge
    merged: dict = {}
    for parent in parents:
        ppath = _install_relative(parent) if parent.startswith("/") else posixpath.join(base_dir, parent)
        pdir = posixpath.dirname(posixpath.normpath(ppath)) if release.loader_parent_dirs else base_dir
        loaded = _inherit(tag, ppath, pdir, files, seen + (rel,), trace)
        merged = merge(merged, loaded)
    if trace is not None:
        trace.append((rel, config))
    return merge(merged, config)


def setter(tag: str, config_path: str, files: Optional[Mapping[str, str]], key: str) -> Optional[str]:
    """The file of the config's defaults: chain whose value of `key` the loaded config holds: the last one in merge
    order (parents first, each file after its parents, as _inherit merges them) that sets the key or a section
    above it to a value that is not a section. None when no file sets it."""
    trace: list[tuple[str, dict]] = []
    rel = posixpath.normpath(config_path)
    _inherit(tag, rel, posixpath.dirname(rel), dict(files or {}), (), trace)
    parts = key.split(".")
    for path, config in reversed(trace):
        for n in range(len(parts), 0, -1):
            present, value = lookup(config, ".".join(parts[:n]))
            if present and (n == len(parts) or not isinstance(value, dict)):
                return path
    return None


def _install_relative(path: str) -> str:
    """An absolute `defaults:` entry inside the image's /opt/nemo-rl, relative to it (anything else is outside)."""
    prefix = NEMO_RL_WORKDIR.rstrip("/") + "/"
    if not path.startswith(prefix):
        raise ConfigFileError(f"{path}: an absolute defaults: entry must lie under {NEMO_RL_WORKDIR}")
    return path[len(prefix) :]


# --- interpolation (OmegaConf's ${path}, ${.relative}, ${resolver:args}) --------------------------------------------
_NUMBER = re.compile(r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?")


class _ResolveError(Exception):
    pass


# The resolvers NeMo-RL's entry scripts register, as they define them (the release record says which one registers
# which: NemoRlRelease.resolvers, with the upstream lines).
_RESOLVER_FUNCTIONS = {"mul": lambda a, b: a * b, "div": lambda a, b: a / b, "max": lambda a, b: max(a, b)}


def _resolvers(tag: str) -> dict:
    return {name: _RESOLVER_FUNCTIONS[name] for name in NEMO_RL_RELEASES[tag].resolvers}


def _split_top(s: str, sep: str) -> list[str]:
    """`s` split at `sep` outside ${...} and quotes."""
    parts: list[str] = []
    cur: list[str] = []
    depth, quote = 0, ""
    i = 0
    while i < len(s):
        c = s[i]
        if quote:
            cur.append(c)
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
            cur.append(c)
        elif s.startswith("${", i):
            depth += 1
            cur.append("${")
            i += 2
            continue
        elif c == "}" and depth:
            depth -= 1
            cur.append(c)
        elif c == sep and not depth:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def _interpolations(s: str) -> list[tuple[int, int]]:
    """(start, end) of each top-level ${...} in s."""
    spans: list[tuple[int, int]] = []
    i = 0
    while True:
        start = s.find("${", i)
        if start < 0:
            return spans
        depth, j = 0, start
        while j < len(s):
            if s.startswith("${", j):
                depth += 1
                j += 2
                continue
            if s[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        if depth:
            raise _ResolveError(f"unterminated interpolation in {s!r}")
        spans.append((start, j + 1))
        i = j + 1


class _Resolver:
    def __init__(self, tag: str, root: dict, env: Mapping[str, str]):
        self.root, self.env, self.fns = root, env, _resolvers(tag)
        self.stack: list[tuple[str, ...]] = []

    def node(self, path: tuple[str, ...]) -> Any:
        cur: Any = self.root
        for p in path:
            if isinstance(cur, dict) and p in cur:
                cur = cur[p]
            elif isinstance(cur, list) and p.isdigit() and int(p) < len(cur):
                cur = cur[int(p)]
            else:
                raise _ResolveError(f"no key {'.'.join(path)}")
        return cur

    def value(self, v: Any, path: tuple[str, ...]) -> Any:
        if isinstance(v, dict):
            return {k: self.value(x, path + (str(k),)) for k, x in v.items()}
        if isinstance(v, list):
            return [self.value(x, path + (str(i),)) for i, x in enumerate(v)]
        if isinstance(v, str) and "${" in v:
            if path in self.stack:
                raise _ResolveError(f"interpolation cycle at {'.'.join(path)}")
            self.stack.append(path)
            try:
                return self.string(v, path)
            finally:
                self.stack.pop()
        return v

    def string(self, s: str, path: tuple[str, ...]) -> Any:
        spans = _interpolations(s)
        if len(spans) == 1 and spans[0] == (0, len(s)):
            return self.expr(s[2:-1], path)
        out, last = [], 0
        for a, b in spans:
            out.append(s[last:a])
            v = self.expr(s[a + 2 : b - 1], path)
            out.append(str(v) if not isinstance(v, bool) else str(v))
            last = b
        out.append(s[last:])
        return "".join(out)

    def expr(self, body: str, path: tuple[str, ...]) -> Any:
        body = body.strip()
        head = _split_top(body, ":")[0]
        if head != body and re.fullmatch(r"[A-Za-z_][\w.]*", head.strip()):
            name, args = head.strip(), body[len(head) + 1 :]
            values = [self.arg(a.strip(), path) for a in _split_top(args, ",")] if args.strip() else []
            if name == "oc.env":
                var = values[0]
                if var in self.env:
                    return self.env[var]
                if len(values) > 1:
                    return values[1] if values[1] is None else str(values[1])
                raise _ResolveError(f"environment variable {var} is not set")
            if name not in self.fns:
                raise _ResolveError(f"unsupported resolver {name}")
            return self.fns[name](*values)
        return self.ref(body, path)

    def ref(self, ref: str, path: tuple[str, ...]) -> Any:
        if ref.startswith("."):
            ups = len(ref) - len(ref.lstrip("."))
            base = path[: len(path) - ups]
            if ups > len(path):
                raise _ResolveError(f"relative interpolation ${{{ref}}} goes above the root")
            target = base + tuple(p for p in ref.lstrip(".").split(".") if p)
        else:
            target = tuple(ref.split("."))
        return self.value(self.node(target), target)

    def arg(self, a: str, path: tuple[str, ...]) -> Any:
        if a.startswith("${") and _interpolations(a) == [(0, len(a))]:
            return self.expr(a[2:-1], path)
        if "${" in a:
            return self.string(a, path)
        if len(a) >= 2 and a[0] == a[-1] and a[0] in "'\"":
            return a[1:-1]
        low = a.lower()
        if low in ("true", "false"):
            return low == "true"
        if low == "null":
            return None
        if _NUMBER.fullmatch(a):
            return float(a) if any(c in a for c in ".eE") else int(a)
        return a


def _resolve_all(tag: str, raw: dict, env: Mapping[str, str]) -> dict:
    r = _Resolver(tag, raw, env)

    def walk(v: Any, path: tuple[str, ...]) -> Any:
        if isinstance(v, dict):
            return {k: walk(x, path + (str(k),)) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x, path + (str(i),)) for i, x in enumerate(v)]
        try:
            return r.value(v, path)
        except (_ResolveError, TypeError, ZeroDivisionError, IndexError):
            return UNRESOLVED

    return walk(raw, ())


# --- the tree -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConfigTree:
    """One config of one release as NeMo-RL loads it, before overrides."""

    tag: str
    config_path: str
    raw: dict  # merged, interpolations kept (OmegaConf.to_container(resolve=False))
    resolved: dict  # OmegaConf.to_container(resolve=True); UNRESOLVED where offline resolution is not possible

    def lookup(self, key: str, *, resolved: bool = False) -> tuple[bool, Any]:
        return lookup(self.resolved if resolved else self.raw, key)

    @functools.cached_property
    def keys(self) -> tuple[str, ...]:
        """Every dotted key, inner nodes included (list items by index)."""
        return tuple(flatten(self.raw, inner=True))

    def has_sections(self, *sections: str) -> bool:
        return all(isinstance(self.raw.get(s), dict) for s in sections)


def lookup(tree: Any, key: str) -> tuple[bool, Any]:
    """(present, value) of a dotted key; a null on the way means absent (as OmegaConf.select)."""
    value = get_path(tree, key, _ABSENT)
    return (False, None) if value is _ABSENT else (True, value)


def flatten(tree: Any, prefix: str = "", *, inner: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    items = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, list) else ()
    for k, v in items:
        key = f"{prefix}{k}"
        if isinstance(v, (dict, list)) and v:
            if inner:
                out[key] = v
            out.update(flatten(v, key + ".", inner=inner))
        else:
            out[key] = v
    return out


def _files_key(files: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(files.items()))


def load(
    tag: str, config_path: str, files: Optional[Mapping[str, str]] = None, env: Optional[Mapping[str, str]] = None
) -> ConfigTree:
    """`config_path` (relative to /opt/nemo-rl, as `--config`) of release `tag` through its defaults chain.
    `files`: the user's own config files (install path relative to /opt/nemo-rl -> text), read in place of / next
    to the release's; `env`: the variables `${oc.env:...}` sees in the pod. ConfigFileError names a bad file."""
    return _load(tag, config_path, _files_key(files or {}), tuple(sorted((env or {}).items())))


@functools.lru_cache(maxsize=256)
def _load(tag: str, config_path: str, files: tuple, env: tuple) -> ConfigTree:
    rel = posixpath.normpath(config_path)
    raw = _inherit(tag, rel, posixpath.dirname(rel), dict(files), ())
    return ConfigTree(tag, config_path, raw, _resolve_all(tag, raw, dict(env)))


# --- one override, as Hydra would apply it -------------------------------------------------------------------------
_SCALARS = (bool, int, float, str, type(None))


_KINDS = ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"), (list, "a list"))


def _kind(v: Any) -> str:
    if isinstance(v, dict):
        return "a section"
    return next((name for t, name in _KINDS if isinstance(v, t)), "null")  # bool before int: True is an int


def closest(tree: ConfigTree, key: str, n: int = 3) -> list[str]:
    return difflib.get_close_matches(key, tree.keys, n=n, cutoff=0.6)


def override_problem(tree: ConfigTree, key: str, value: Any) -> Optional[str]:
    """Why Hydra (struct mode) would refuse `key=value` on `tree`, or why the value has the wrong type; None when it
    applies. `key` may start with `+` (an explicit addition, Hydra's append)."""
    add = key.startswith("+")
    dotted = key[1:] if add else key
    where = f"{tree.config_path} (NeMo-RL {tree.tag})"
    if not re.fullmatch(r"[A-Za-z_][\w-]*(\.[\w-]+)*", dotted):
        return "is not a dotted config key (letters, digits, '_', '-' between dots; '+' first for an addition)"
    present, raw = lookup(tree.raw, dotted)
    if add:
        if present and raw is not None:
            return f"{dotted} is already in {where}; set it without the '+'"
        parent, _, _ = dotted.rpartition(".")
        node: Any = tree.raw
        for part in parent.split(".") if parent else ():
            if isinstance(node, dict) and isinstance(node.get(part), (dict, type(None))):
                node = node.get(part) or {}
            else:
                return f"cannot add {dotted}: {part} in {where} is not a section"
        return _value_problem(value, None)
    if not present:
        near = closest(tree, dotted)
        hint = f"; closest: {', '.join(near)}" if near else ""
        return (
            f"is not a key of {where}{hint}; a key the config lacks is added by writing it with a leading '+' "
            f"(jobOverrides.+{dotted})"
        )
    _, base = lookup(tree.resolved, dotted)
    # A whole section may be set to null (Hydra assigns None to a config node in struct mode), nothing else.
    if value is not None and (isinstance(base, dict) or (base is None and isinstance(raw, dict))):
        children = [k for k in tree.keys if k.startswith(dotted + ".")][:3]
        return f"is a section of {where}; set its keys one by one (e.g. {', '.join(children)})"
    return _value_problem(value, base)


def _value_problem(value: Any, base: Any) -> Optional[str]:
    """The config's type rule (OmegaConf has none): a value of the base value's type; null fits any key; an
    integer fits a number (rendered as a float); a key without a typed value takes a scalar or a list."""
    if isinstance(value, dict):
        return "a section cannot be set as one value; set its keys one by one"
    if isinstance(value, list):
        if not all(isinstance(x, _SCALARS) for x in value):
            return "a list may hold only strings, numbers, booleans and null"
    if value is None or base is None or base is UNRESOLVED:
        return None
    if isinstance(base, float) and _float_text(value) is not None:
        return None
    ok = {
        bool: isinstance(value, bool),
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, (int, float)) and not isinstance(value, bool),
        str: isinstance(value, str),
        list: isinstance(value, list),
    }.get(type(base), True)
    if ok:
        return None
    return f"{value!r} is {_kind(value)}, but the config's value ({base!r}) is {_kind(base)}"


def _float_text(value: Any) -> Optional[float]:
    """A finite number written as text: `pulumi config set --path` stores every value but true/false and integers as
    a string (pulumi config set docs), so `2.0e-6` set from the CLI arrives as "2.0e-6"."""
    if not isinstance(value, str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None


def render_value(tree: ConfigTree, key: str, value: Any) -> Any:
    """The value as NeMo-RL should see it: an integer, or a number written as text, for a float key becomes a float."""
    dotted = key.lstrip("+")
    _, base = lookup(tree.resolved, dotted)
    if isinstance(base, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(base, float) and _float_text(value) is not None:
        return _float_text(value)
    return value


def with_overrides(tree: ConfigTree, overrides: Mapping[str, Any], env: Optional[Mapping[str, str]] = None) -> dict:
    """The resolved config NeMo-RL runs with after these overrides (key, '+' or not -> value), each already
    accepted by `override_problem`: set on the raw tree (an addition creates its sections), then resolved, so a
    key interpolating an overridden one moves with it."""
    raw = _copy(tree.raw)
    for key, value in overrides.items():
        parts = key.lstrip("+").split(".")
        node: Any = raw
        for part in parts[:-1]:
            if isinstance(node, list):
                node = node[int(part)]
                continue
            if not isinstance(node.get(part), (dict, list)):
                node[part] = {}
            node = node[part]
        if isinstance(node, list):
            node[int(parts[-1])] = _copy(value)
        else:
            node[parts[-1]] = _copy(value)
    return _resolve_all(tree.tag, raw, env or {})
