"""A YAML loader for scenario files that bounds what a hostile file can cost.

PyYAML's ``safe_load`` runs no code, but it still lets a file exhaust the machine: nesting 5,000
levels deep overflows Python's recursion (the composer and constructor recurse per level), a
"billion laughs" file (9 anchors each aliasing the previous one 9 times) expands to 387 million
nodes, ``&a [*a]`` builds a list containing itself, and a tag without a value (``!!int``) raises
an ``IndexError`` inside the library. This loader replaces PyYAML's composer (events -> node
graph) with an iterative one that checks, as each parser event arrives:

- nesting depth (``MAX_DEPTH``), before anything deeper is built;
- aliases (``MAX_ALIASES``) and nodes counted with every alias expanded (``MAX_NODES``), so an
  alias bomb fails after a few thousand events, whatever it is used for (a value, an unknown key);
- recursive aliases, unknown tags, tags whose value does not read as the tag says (``!!int two``,
  an invalid timestamp, an integer of 5,000 digits), mapping keys that are not strings, and
  duplicate keys.

Every refusal is a ScenarioError naming the YAML path (``vms[3].cpu``), the value (shortened) and
what is allowed. Construction (nodes -> Python objects) is PyYAML's SafeConstructor, which only
sees a graph already bounded. On libyaml's C parser when PyYAML has it (ten times faster on big
files); a file the C parser refuses is read again with the pure-Python parser, whose messages and
line/column marks are the ones users get.
"""

from __future__ import annotations

from typing import Any, Optional

import yaml
from yaml.composer import ComposerError
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from vmtwin.exceptions import ScenarioError
from vmtwin.scenario.shown import bounded_error, path_key, short

#: Deepest nesting of mappings and sequences: a scenario nests 5 deep; each level costs the
#: constructor three Python frames, and Python allows 1,000.
MAX_DEPTH = 64
#: Most aliases (``*name``) in one file: a 10,000-VM file sharing one workload and one CPU
#: setting per VM uses 20,000.
MAX_ALIASES = 100_000
#: Most nodes, every alias counted as the nodes it stands for: a 30,000-VM file written one VM
#: per entry (benchmarks/run.py build-30k) has 570,000. Each node costs some 300 bytes and 3 us
#: while loading and is validated; at this bound a refused file costs under 5 s.
MAX_NODES = 750_000

_TAG = "tag:yaml.org,2002:"
_STR, _MERGE = _TAG + "str", _TAG + "merge"
_MAPPING_TAGS = {_TAG + "map", _TAG + "omap", _TAG + "set"}
_SEQUENCE_TAGS = {_TAG + "seq", _TAG + "omap", _TAG + "pairs"}
# Scalar tags whose text must parse (str always does): what each accepts, for the message.
_SCALAR_TAGS = {
    _TAG + "int": "an integer (at most 4300 digits)",
    _TAG + "float": "a number",
    _TAG + "bool": "true or false",
    _TAG + "null": "null or nothing",
    _TAG + "timestamp": "a valid date or time, e.g. 2024-03-01 or 2024-03-01T12:00:00",
    _TAG + "binary": "base64 text",
    _STR: "text",
}
_UNVOUCHED = {_TAG + "timestamp", _MERGE}
_LONG_SCALAR = 4000  # int() refuses more than 4300 digits
_ALLOWED_TAGS = "a plain value, or one of the standard tags " + ", ".join(
    "!!" + t[len(_TAG):] for t in (*_SCALAR_TAGS, *_MAPPING_TAGS, _TAG + "seq", _TAG + "pairs")
)


def _tag_name(tag: str) -> str:
    return "!!" + tag[len(_TAG):] if tag.startswith(_TAG) else tag


class _Frame:
    """A mapping or sequence being composed: its node, the next key or index, its keys."""

    __slots__ = ("node", "is_map", "key", "index", "keys")

    def __init__(self, node: Any, is_map: bool) -> None:
        self.node = node
        self.is_map = is_map
        self.key: Optional[Any] = None  # a mapping's key node waiting for its value
        self.index = 0  # a sequence's next item
        self.keys: set = set()

    def step(self) -> str:
        """This frame's part of the YAML path of the node being composed in it."""
        if not self.is_map:
            return f"[{self.index}]"
        k = self.key
        if isinstance(k, ScalarNode):
            return path_key(k.value)
        return ".?"


class _BoundedComposer:
    """``get_single_node`` for a PyYAML loader, iterative and bounded (see the module docstring).

    Mixed in before a parser (``Parser`` or libyaml's ``CParser``), a ``SafeConstructor`` and a
    ``Resolver``; it only uses their ``get_event``/``check_event``/``resolve``.
    """

    def get_single_node(self) -> Optional[Any]:
        self.get_event()  # StreamStart
        node = None
        if not self.check_event(StreamEndEvent):
            self.get_event()  # DocumentStart
            node = self._compose_bounded()
            self.get_event()  # DocumentEnd
        if not self.check_event(StreamEndEvent):
            event = self.get_event()
            raise ComposerError("expected a single document in the stream", node.start_mark if node else None,
                                "but found another document", event.start_mark)
        self.get_event()  # StreamEnd
        return node

    # -- the composer -----------------------------------------------------------------------

    def _compose_bounded(self) -> Any:
        anchors: dict[str, Any] = {}
        sizes: dict[int, int] = {}  # id(anchored node) -> nodes it stands for, once closed
        open_ids: set[int] = set()  # anchored collections not closed yet
        # counts[k]: nodes under stack[k] so far, aliases expanded (for anchored nodes' sizes)
        counts: list[int] = []
        stack: list[_Frame] = []
        total = aliases = 0
        checker = yaml.constructor.SafeConstructor()
        get_event, resolve = self.get_event, self.resolve
        while True:
            event = get_event()
            cls = type(event)
            if cls is ScalarEvent:  # most events: keep this path short
                tag = event.tag
                explicit = tag is not None and tag != "!"
                if not explicit:
                    tag = resolve(ScalarNode, event.value, event.implicit)
                node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
                # The resolver's patterns already vouch for implicit ints, floats, bools and nulls,
                # but not for dates (2024-13-45) or ints too long for int().
                if tag != _STR and (explicit or tag in _UNVOUCHED or len(event.value) > _LONG_SCALAR):
                    self._check_scalar(stack, node, checker)
                size = 1
                if event.anchor is not None:
                    anchors[event.anchor] = node
            elif cls is SequenceEndEvent or cls is MappingEndEvent:
                frame = stack.pop()
                node = frame.node
                node.end_mark = event.end_mark
                size = counts.pop()
                if id(node) in open_ids:
                    open_ids.discard(id(node))
                    sizes[id(node)] = size
                if not stack:
                    return node
                counts[-1] += size
                self._attach(stack, node)
                continue
            elif cls is AliasEvent:
                node = anchors.get(event.anchor)
                if node is None:
                    raise ComposerError(None, None, f"found undefined alias {short(event.anchor, 40)}", event.start_mark)
                aliases += 1
                if aliases > MAX_ALIASES:
                    raise bounded_error(_path_of(stack), f"alias number {aliases} (*{short(event.anchor, 40, quote=False)})",
                                        f"at most {MAX_ALIASES:,} aliases in a file (each is expanded when the "
                                        "scenario is validated)")
                if id(node) in open_ids:
                    raise bounded_error(_path_of(stack), f"*{short(event.anchor, 40, quote=False)}",
                                        "an alias to a node that is complete where it is used (a node cannot "
                                        "contain itself)")
                size = sizes.get(id(node), 1)
            else:  # SequenceStartEvent or MappingStartEvent
                is_map = cls is MappingStartEvent
                kind = MappingNode if is_map else SequenceNode
                tag = event.tag
                if tag is None or tag == "!":
                    tag = resolve(kind, None, event.implicit)
                elif tag not in (_MAPPING_TAGS if is_map else _SEQUENCE_TAGS):
                    raise bounded_error(_path_of(stack), f"{_tag_name(tag)} on a {'mapping' if is_map else 'list'}",
                                        _ALLOWED_TAGS + " (on a mapping: !!map, !!omap, !!set; on a list: !!seq, "
                                        "!!omap, !!pairs)")
                node = kind(tag, [], event.start_mark, None, flow_style=event.flow_style)
                if event.anchor is not None:
                    anchors[event.anchor] = node
                    open_ids.add(id(node))
                if stack and stack[-1].is_map and stack[-1].key is None:
                    self._check_key(stack, node)  # a mapping or list used as a key: refused
                total += 1
                if total > MAX_NODES:
                    raise self._too_many(stack, total)
                if len(stack) >= MAX_DEPTH:
                    raise bounded_error(_path_of(stack), f"a {'mapping' if is_map else 'list'} nested "
                                        f"{len(stack) + 1} levels deep (line {event.start_mark.line + 1})",
                                        f"at most {MAX_DEPTH} levels of nesting (a scenario needs 5; deeper input "
                                        "would exhaust Python's recursion)")
                stack.append(_Frame(node, is_map))
                counts.append(1)
                continue
            # a scalar or an alias: one finished item of the innermost collection
            total += size
            if total > MAX_NODES:
                raise self._too_many(stack, total)
            if not stack:
                return node
            counts[-1] += size
            frame = stack[-1]
            if frame.is_map:
                self._attach(stack, node)
            else:  # inline: lists of scalars are the bulk of a big file
                frame.node.value.append(node)
                frame.index += 1

    def _too_many(self, stack: list[_Frame], total: int) -> ScenarioError:
        return bounded_error(_path_of(stack), f"more than {MAX_NODES:,} values (aliases expanded)",
                             f"at most {MAX_NODES:,} values in a file, each alias counting as what it stands for "
                             "(each costs memory and validation; use count: for many identical VMs)")

    def _attach(self, stack: list[_Frame], node: Any) -> None:
        frame = stack[-1]
        if not frame.is_map:
            frame.node.value.append(node)
            frame.index += 1
        elif frame.key is None:
            if node.__class__ is not ScalarNode or node.tag != _STR or node.value in frame.keys:
                self._check_key(stack, node)  # raises, unless a merge key
            else:
                frame.keys.add(node.value)
            frame.key = node
        else:
            frame.node.value.append((frame.key, node))
            frame.key = None

    def _check_key(self, stack: list[_Frame], node: Any) -> None:
        frame = stack[-1]
        if isinstance(node, ScalarNode) and node.tag == _MERGE:
            return
        if not isinstance(node, ScalarNode) or node.tag != _STR:
            shown = node.value if isinstance(node, ScalarNode) else ("a mapping" if isinstance(node, MappingNode) else "a list")
            kind = _tag_name(node.tag) if isinstance(node, ScalarNode) else "a collection"
            raise bounded_error(_container_path(stack), shown,
                                f"keys that are text (this key reads as {kind}, line {node.start_mark.line + 1}; "
                                "quote it if it is meant as a name)")
        if node.value in frame.keys:
            container = _container_path(stack)
            at = ("" if container == "(top level)" else container) + path_key(node.value)
            raise bounded_error(at.lstrip("."), node.value,
                                f"each key once in a mapping (found duplicate key {short(node.value, 40)}, "
                                f"line {node.start_mark.line + 1})")
        frame.keys.add(node.value)

    def _check_scalar(self, stack: list[_Frame], node: Any, checker: Any) -> None:
        tag = node.tag
        if tag == _STR:
            return
        if tag == _MERGE:
            if stack and stack[-1].is_map and stack[-1].key is None:
                return  # `<<: *base` merges a mapping
            raise bounded_error(_path_of(stack), node.value, "'<<' only as a merge key ('<<: *anchor')")
        is_key = bool(stack) and stack[-1].is_map and stack[-1].key is None
        where = f"{_container_path(stack)} (a key)" if is_key else _path_of(stack)
        construct = yaml.constructor.SafeConstructor.yaml_constructors.get(tag)
        if construct is None or tag not in _SCALAR_TAGS:
            raise bounded_error(where, f"{_tag_name(tag)} {short(node.value, 60, quote=False)}".strip(),
                                _ALLOWED_TAGS)
        try:
            construct(checker, node)
        except Exception:  # noqa: BLE001 - PyYAML raises ValueError, IndexError, OverflowError...
            raise bounded_error(where, node.value,
                                f"{_SCALAR_TAGS[tag]} ({_tag_name(tag)}, line {node.start_mark.line + 1})") from None


def _path_of(stack: list[_Frame]) -> str:
    """YAML path of the node being composed in the innermost frame of ``stack``."""
    steps = [f.step() for f in stack]
    if len(steps) > 12:  # a path 64 levels deep is unreadable: its start and its end
        steps = steps[:6] + [".…"] + steps[-5:]
    return "".join(steps).lstrip(".") or "(top level)"


def _container_path(stack: list[_Frame]) -> str:
    """YAML path of the innermost mapping (the one whose key is being checked)."""
    return _path_of(stack[:-1])


def _construct_int(loader: Any, node: Any) -> int:
    # Plain decimal digits (nearly every int of a scenario) without PyYAML's general parser,
    # which handles 0x, 0o, 1_000 and 1:30 at five times the cost.
    v = node.value
    if v.isascii() and v.isdigit() and len(v) < 4000 and (v[0] != "0" or v == "0"):  # 0777 is octal in YAML 1.1
        return int(v)
    return yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)


class _PyLoader(_BoundedComposer, yaml.SafeLoader):
    """The pure-Python parser under the bounded composer: the best error marks."""


_LOADERS: list[type] = [_PyLoader]
if getattr(yaml, "__with_libyaml__", False):
    _SCALAR_RESOLVED: dict = {}  # (text, implicit) -> tag: a scenario repeats the same few scalars

    class _CLoader(_BoundedComposer, yaml.CSafeLoader):  # type: ignore[misc]
        """libyaml's parser under the bounded composer; remembers how plain scalars resolve."""

        def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
            # A pure function of its arguments for scalars: SafeLoader has no path resolvers.
            if kind is not ScalarNode:
                return super().resolve(kind, value, implicit)
            key = (value, implicit)
            tag = _SCALAR_RESOLVED.get(key)
            if tag is None:
                tag = super().resolve(kind, value, implicit)
                if len(_SCALAR_RESOLVED) < 65536:
                    _SCALAR_RESOLVED[key] = tag
            return tag

    _LOADERS.insert(0, _CLoader)


def load_yaml(text: str, source: str) -> Any:
    """Parse one YAML document with the bounds of this module.

    Parameters
    ----------
    text : str
        The YAML text.
    source : str
        How to name it in syntax errors (the file path, or ``<scenario>``).

    Returns
    -------
    Any
        The document (None for an empty one).

    Raises
    ------
    ScenarioError
        Malformed YAML (with line and column) or a bound crossed (with the YAML path).
    """
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise bounded_error(source, f"a NUL byte on line {line}", "YAML text (NUL bytes are not allowed in YAML)")
    for loader in _LOADERS:
        try:
            return yaml.load(text, Loader=loader)  # noqa: S506 - SafeLoader/CSafeLoader subclasses
        except ScenarioError:
            raise
        except yaml.YAMLError as exc:
            if loader is not _LOADERS[-1]:
                continue  # read again: the pure-Python parser's messages and marks are the ones users get
            err = _syntax_error(exc, source, text)
        except RecursionError:  # pragma: no cover - the depth bound is far below Python's limit
            err = bounded_error(source, "deeply nested YAML", f"at most {MAX_DEPTH} levels of nesting")
        raise err
    raise AssertionError("unreachable")  # pragma: no cover


def _syntax_error(exc: yaml.YAMLError, source: str, text: str) -> ScenarioError:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}, line {mark.line + 1}, column {mark.column + 1}" if mark else source
        problem = short(" ".join(p for p in (exc.context, exc.problem) if p), 300, quote=False)
        err = ScenarioError(f"{where}: malformed YAML: {problem}")
    elif isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow, by position
        pos = min(max(exc.position, 0), len(text))
        line, column = text.count("\n", 0, pos) + 1, pos - text.rfind("\n", 0, pos)
        char = f" #x{exc.character:04x}" if isinstance(exc.character, int) else ""
        err = ScenarioError(f"{source}, line {line}, column {column}: malformed YAML: unacceptable character{char}: "
                            f"{short(exc.reason, 100, quote=False)}")
    else:
        err = ScenarioError(f"{source}: malformed YAML: {short(' '.join(str(exc).split()), 300, quote=False)}")
    err.path = source
    err.value = None
    err.allowed = "well-formed YAML"
    return err


for _loader in _LOADERS:
    _loader.add_constructor(_TAG + "int", _construct_int)
