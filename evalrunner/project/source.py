"""Finding the project file and reading it with the line of every key.

``evalrunner.toml`` (the standard library's ``tomllib``) or ``evalrunner.yaml`` / ``.yml``
(PyYAML's safe loader), in the current folder or the nearest parent up to the repository root
(the first folder holding ``.git``); outside a repository only the current folder is looked
in, so a stray file in a home or temporary folder is never picked up. Every error names the
file and the line of the key it is about, so the reader holds, beside the data, a way to
find a key path's line: YAML's parser keeps a mark on every node; TOML's parsers do not (see
:class:`TomlLines`).
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from evalrunner.errors import ConfigError

PROJECT_FILES = ("evalrunner.toml", "evalrunner.yaml", "evalrunner.yml")
#: The most values a YAML project file may mean once its aliases (``*name``) are expanded:
#: far above any real project, far below what a "billion laughs" file would make every walk
#: of the data (the key checks, the model, masking) spend.
MAX_YAML_VALUES = 100_000
KeyPath = Sequence[str | int]


class ProjectError(ConfigError):
    """The project file is missing, unreadable, or breaks its schema; each line of the
    message is ``file:line: key.path: what is wrong`` and how to fix it."""


class Lines(Protocol):
    def line_of(self, path: KeyPath) -> int | None:
        """The line (1-based) where the value at ``path`` starts, or None."""


def find_project(start: Path) -> Path | None:
    """The project file of ``start``: in it, or in the nearest parent up to the repository
    root (a folder holding ``.git``, a folder in a checkout or a worktree's file). Two
    project files in one folder are refused: which one runs must never be a guess."""
    start = start.resolve()
    folders = [start, *start.parents]
    root = next((f for f in folders if (f / ".git").exists()), None)
    for folder in folders if root is not None else [start]:
        found = [folder / n for n in PROJECT_FILES if (folder / n).is_file()]
        if len(found) > 1:
            raise ProjectError(
                f"{folder}: both {found[0].name} and {found[1].name} are here; keep one project "
                "file, or name one with --config"
            )
        if found:
            return found[0]
        if folder == root:
            break
    return None


@dataclass
class ProjectSource:
    """A project file read: its path, its data, and where each key is."""

    path: Path
    data: Any
    lines: Lines

    @property
    def name(self) -> str:
        return self.path.name

    def where(self, path: KeyPath) -> str:
        """``file:line`` of the key at ``path`` (of its nearest parent that exists when the
        key itself is missing), or just ``file``."""
        for n in range(len(path), 0, -1):
            line = self.lines.line_of(path[:n])
            if line is not None:
                return f"{self.name}:{line}"
        return self.name


def read_project(path: Path) -> ProjectSource:
    """The project file at ``path``, parsed; a syntax error names its line."""
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProjectError(f"{path}: cannot be read ({exc})") from None
    try:
        if path.suffix.lower() == ".toml":
            try:
                data: Any = tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                raise ProjectError(f"{path.name}: not valid TOML: {exc}") from None
            return ProjectSource(path, data, TomlLines(text))
        if path.suffix.lower() in (".yaml", ".yml"):
            return _read_yaml(path, text)
    except RecursionError:  # both parsers recurse per level of nesting
        raise ProjectError(
            f"{path.name}: nested too deeply (arrays or tables inside each other hundreds of "
            "levels deep); a project file needs a few levels"
        ) from None
    raise ProjectError(f"{path}: a project file is .toml, .yaml or .yml (e.g. evalrunner.toml)")


def _read_yaml(path: Path, text: str) -> ProjectSource:
    import yaml  # the CLI's dependency (the local extra); only a YAML project needs it

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        _check_aliases(node, path.name)  # before anything walks or builds the data
        repeated = _repeated_keys(node, path.name)
        if repeated:  # YAML's loader keeps the last silently; TOML refuses them, and so do we
            raise ProjectError("\n".join(repeated))
        data = yaml.load(text, Loader=_names_loader())  # a SafeLoader: no Python tags
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ProjectError(f"{path.name}{line}: not valid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise ProjectError(f"{path.name}: not valid YAML: {exc}") from None
    return ProjectSource(path, data, YamlLines(node))


def _names_loader() -> type[Any]:
    """PyYAML's safe loader, but a mapping's keys are the text written: a project's keys are
    names, as TOML's always are, so ``on`` is not true, ``2024-01-01`` not a date and ``1``
    not a number (each would be refused as a name, or crash the messages that quote it)."""
    import yaml

    class NamesLoader(yaml.SafeLoader):
        pass

    def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[str, Any]:
        loader.flatten_mapping(node)  # merge keys (<<: *defaults) as the safe loader does
        data: dict[str, Any] = {}
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise yaml.constructor.ConstructorError(
                    None, None, "a key must be a name (text), not a list or table", key.start_mark
                )
            data[key.value] = loader.construct_object(value, deep=True)
        return data

    NamesLoader.add_constructor("tag:yaml.org,2002:map", mapping)
    return NamesLoader


def _check_aliases(root: Any, name: str) -> None:
    """Refuse a node graph that aliases make cyclic (``&r {x: *r}``: every walk of it would
    never end) or that expands to more than :data:`MAX_YAML_VALUES` values. Aliases stay
    allowed (``headers: *shared``); the walk visits each distinct node once, without
    recursion, so the check costs the file's size, not its expansion."""
    import yaml

    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children: list[Any] = []
        if isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        if done:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[key] > MAX_YAML_VALUES:
                raise ProjectError(
                    f"{name}: its aliases (*name) expand to more than {MAX_YAML_VALUES} values; "
                    f"a project file holds at most {MAX_YAML_VALUES}: write the values out or "
                    "alias fewer times"
                )
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise ProjectError(
                f"{name}:{node.start_mark.line + 1}: this value refers to itself through an "
                "alias (*name inside the &name it names); give it the values it should hold"
            )
        on_path.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)


def _repeated_keys(node: Any, name: str, where: tuple[str, ...] = ()) -> list[str]:
    """Every key given twice in one mapping, at its second occurrence's line."""
    import yaml

    found: list[str] = []
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            text = str(key.value)
            line = key.start_mark.line + 1
            if text in seen:
                found.append(
                    f"{name}:{line}: {'.'.join((*where, text))}: given twice (first on line "
                    f"{seen[text]}); keep one"
                )
            seen.setdefault(text, line)
            found += _repeated_keys(value, name, (*where, text))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            found += _repeated_keys(item, name, (*where, f"[{index}]"))
    return found


@dataclass
class YamlLines:
    """Lines from the parser's own marks: each node of the composed tree knows where it
    starts, so a key's line is its key node's (an item's, its node's)."""

    root: Any

    def line_of(self, path: KeyPath) -> int | None:
        import yaml

        node, line = self.root, None
        for part in path:
            if isinstance(node, yaml.MappingNode):
                match = [(k, v) for k, v in node.value if k.value == str(part)]
                if not match:
                    return None
                key, node = match[-1]  # the loader keeps a repeated key's last value
                line = key.start_mark.line + 1
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
                if not 0 <= part < len(node.value):
                    return None
                node = node.value[part]
                line = node.start_mark.line + 1
            else:
                return None
        return line


@dataclass
class TomlLines:
    """Lines of TOML keys, from the real parser.

    Neither ``tomllib`` nor tomlkit (the well-kept style-preserving parser) reports where a key
    is: tomlkit keeps each item's text and trivia, not its line. A regex over the text would
    be a second, wrong TOML parser (dotted keys, quoted keys, inline tables, arrays of tables,
    multi-line strings). So the standard parser is asked instead: a key is on the first line
    after which the file's first lines, parsed, hold it; a value spanning several lines (a
    multi-line array or string) starts on the line after the last prefix that still parses.
    Only run for errors; the first such prefix is found by halving (a prefix holds the key
    from the key's line on), so a key costs a few dozen parses of the file."""

    text: str
    _prefixes: dict[int, dict[str, Any] | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._lines = self.text.splitlines(keepends=True)

    def _parsed(self, count: int) -> dict[str, Any] | None:
        if count not in self._prefixes:
            try:
                self._prefixes[count] = tomllib.loads("".join(self._lines[:count]))
            except tomllib.TOMLDecodeError:
                self._prefixes[count] = None
        return self._prefixes[count]

    def _holds_by(self, count: int, path: KeyPath) -> bool:
        """Whether the longest prefix of at most ``count`` lines that parses holds ``path``:
        false, then true from the key's line on (TOML only adds keys as lines are added)."""
        while count > 0:
            parsed = self._parsed(count)
            if parsed is not None:
                return _holds(parsed, path)
            count -= 1
        return False

    def line_of(self, path: KeyPath) -> int | None:
        # halving, not prefix by prefix: a few dozen parses, not one per line of the file
        low, high = 1, len(self._lines)
        if high == 0 or not self._holds_by(high, path):
            return None
        while low < high:
            middle = (low + high) // 2
            if self._holds_by(middle, path):
                high = middle
            else:
                low = middle + 1
        start = low
        while start > 1 and self._parsed(start - 1) is None:
            start -= 1
        return start


def _holds(data: Any, path: KeyPath) -> bool:
    for part in path:
        if isinstance(data, dict) and isinstance(part, str) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return False
    return True
