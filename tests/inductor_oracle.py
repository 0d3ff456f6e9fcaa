"""An independent evaluator of Inductor's sympy index text: Python's own integer arithmetic on
the text, with each function written out from its definition in torch/utils/_sympy/functions.py
(no verifidx code involved)."""

from __future__ import annotations

import ast
from fractions import Fraction


def _c_mod(a: int, m: int) -> int:
    """C's %: the sign of the dividend (ModularIndexing and torch's Mod)."""
    r = abs(a) % abs(m)
    return r if a >= 0 else -r


def _floor(x: Fraction | int) -> int:
    return int(x) if isinstance(x, int) else x.numerator // x.denominator


def _ceiling(x: Fraction | int) -> int:
    return -_floor(-x)


FUNCTIONS = {
    "FloorDiv": lambda a, b: a // b,
    "CleanDiv": lambda a, b: a // b,
    "CeilDiv": lambda a, b: -(-a // b),
    "ModularIndexing": lambda x, d, m: _c_mod(x // d, m),
    "PythonMod": lambda a, b: a % b,
    "Mod": lambda a, b: _c_mod(a, b),
    "Identity": lambda x: x,
    "floor": _floor,
    "ceiling": _ceiling,
    "FloorToInt": _floor,
    "CeilToInt": _ceiling,
    "Min": min,
    "Max": max,
    "Where": lambda c, a, b: a if c else b,
    "Eq": lambda a, b: a == b,
    "Ne": lambda a, b: a != b,
    "ToFloat": float,
    "TruncToInt": lambda x: int(x),  # toward zero, as C's cast
}


class _Exact(ast.NodeTransformer):
    """`a / b` as an exact Fraction (Python's `/` would round through a float)."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Div):
            frac = ast.Call(ast.Name("Fraction", ast.Load()), [node.left, node.right], [])
            return ast.copy_location(frac, node)
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        """`~c` of sympy's printing is `not c` (Python's `~` on a bool is bitwise)."""
        self.generic_visit(node)
        if isinstance(node.op, ast.Invert):
            return ast.copy_location(ast.UnaryOp(ast.Not(), node.operand), node)
        return node


def evaluate(text: str, point: dict[str, int]) -> int:
    tree = _Exact().visit(ast.parse(text, mode="eval"))
    ast.fix_missing_locations(tree)
    value = eval(compile(tree, "<oracle>", "eval"),  # noqa: S307 - test inputs only
                 {"__builtins__": {}, "Fraction": Fraction, **FUNCTIONS}, dict(point))
    assert value == int(value), (text, point, value)
    return int(value)
