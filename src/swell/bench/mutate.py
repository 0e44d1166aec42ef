"""Mutation operators for `swell bench make`, on a module's `ast`: each mutant changes
one expression or statement in the source text and leaves the rest as written, so
the patch that reverts it is as small as a real fix."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

OPERATORS = ("flip_comparison", "off_by_one", "remove_branch", "swap_arguments")

_FLIPPED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


@dataclass(frozen=True)
class Mutant:
    path: str  # the file, relative to the repository
    operator: str
    line: int
    description: str
    mutated: str  # the file's whole text, mutated


class _Text:
    """Source text edited at `ast` positions (whose columns count UTF-8 bytes)."""

    def __init__(self, text: str) -> None:
        self.data = text.encode("utf-8")
        self.starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def segment(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8")

    def replaced(self, start: int, end: int, new: str) -> str:
        return (self.data[:start] + new.encode("utf-8") + self.data[end:]).decode("utf-8")


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def mutants(path: str, text: str) -> Iterator[Mutant]:
    """Every mutant of one module the operators make, in source order per operator."""
    tree = ast.parse(text)
    source = _Text(text)
    docstrings = _docstrings(tree)
    nodes = sorted(
        (n for n in ast.walk(tree) if hasattr(n, "lineno")),
        key=lambda n: (n.lineno, n.col_offset),  # type: ignore[attr-defined]
    )
    for node in nodes:
        for found in _mutate(node, source, docstrings):
            operator, description, start, end, new = found
            mutated = source.replaced(start, end, new)
            if mutated != text and _compiles(mutated):
                yield Mutant(path, operator, node.lineno, description, mutated)


Edit = tuple[str, str, int, int, str]  # operator, description, start, end, replacement


def _mutate(node: ast.AST, source: _Text, docstrings: set[int]) -> Iterator[Edit]:
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _FLIPPED:
        flipped = ast.Compare(node.left, [_FLIPPED[type(node.ops[0])]()], node.comparators)
        start, end = source.span(node)
        new = ast.unparse(flipped)
        yield "flip_comparison", f"{source.segment(start, end)} -> {new}", start, end, new
    elif isinstance(node, ast.Constant) and type(node.value) is int and id(node) not in docstrings:
        start, end = source.span(node)
        new = str(node.value + 1)
        yield "off_by_one", f"{node.value} -> {new}", start, end, new
    elif isinstance(node, ast.If) and not node.orelse and node.body:
        line_start = source.offset(node.lineno, 0)
        start, end = source.span(node)
        indent = source.segment(line_start, start)
        if indent.strip():
            return  # `if` after other code on its line
        yield "remove_branch", f"if {ast.unparse(node.test)}: (removed)", start, end, "pass"
    elif (
        isinstance(node, ast.Call)
        and len(node.args) >= 2
        and not any(isinstance(a, ast.Starred) for a in node.args[:2])
    ):
        first, second = node.args[0], node.args[1]
        a_start, a_end = source.span(first)
        b_start, b_end = source.span(second)
        between = source.segment(a_end, b_start)
        new = source.segment(b_start, b_end) + between + source.segment(a_start, a_end)
        name = ast.unparse(node.func)
        yield "swap_arguments", f"{name}(...) first two arguments swapped", a_start, b_end, new


def _compiles(text: str) -> bool:
    try:
        compile(text, "<mutant>", "exec")
    except SyntaxError:
        return False
    return True
