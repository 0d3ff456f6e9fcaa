"""An independent numpy evaluator of substitution graphs (test oracle).

Inputs are arrays of unique integer ids, so an output element names the input element it came
from. Written from HLO's op definitions with numpy, sharing nothing with verifidx.analysis.subst
except the parsed graph; every shape rule is checked explicitly (numpy would clamp a bad slice).
"""

from __future__ import annotations

import itertools

import numpy as np

from verifidx.analysis.subst.model import Node, SizeList, evaluate


class OracleIllFormed(Exception):
    pass


def _ints(v, env, lists) -> list[int]:
    assert isinstance(v, SizeList)
    if v.variadic:
        return [env[n] for n in lists[v.variadic]]
    return [int(evaluate(e, env)) for e in v.items]


def _perm(v, perms) -> list[int]:
    if isinstance(v, SizeList):
        return [int(e) for e in v.items]
    if isinstance(v, str):
        return list(perms[v])
    if v[0] == "inverse":
        return list(np.argsort(_perm(v[1], perms)))
    p, q = _perm(v[1], perms), _perm(v[2], perms)
    # transposing by p then by q: np.transpose(np.transpose(x, p), q) == np.transpose(x, p[q])
    return [p[k] for k in q]


class Oracle:
    def __init__(self, shapes: dict[str, tuple[int, ...]], env, lists, perms) -> None:
        self.env, self.lists, self.perms = env, lists, perms
        self.inputs: dict[str, np.ndarray] = {}
        self.decode: dict[int, tuple[str, tuple[int, ...]]] = {}
        next_id = 0
        for name, shape in shapes.items():
            ids = np.arange(next_id, next_id + int(np.prod(shape, dtype=int))).reshape(shape)
            for idx in itertools.product(*[range(n) for n in shape]):
                self.decode[int(ids[idx])] = (name, idx)
            next_id += ids.size
            self.inputs[name] = ids

    def run(self, n: Node) -> np.ndarray:
        if n.op == "input":
            return self.inputs[n.name]
        xs = [self.run(a) for a in n.args]
        x = xs[0]
        a = dict(n.attrs)
        need = self._need
        if n.op == "copy":
            return x.copy()
        if n.op == "transpose":
            p = _perm(a["perm"], self.perms)
            need(sorted(p) == list(range(x.ndim)))
            return np.transpose(x, p)
        if n.op == "reverse":
            return np.flip(x, axis=tuple(_ints(a["dims"], self.env, self.lists)))
        if n.op == "reshape":
            shape = _ints(a["shape"], self.env, self.lists)
            need(all(s >= 0 for s in shape) and int(np.prod(shape)) == x.size)
            return x.reshape(shape)
        if n.op == "broadcast":
            shape = _ints(a["shape"], self.env, self.lists)
            dims = _ints(a["dims"], self.env, self.lists)
            need(len(dims) == x.ndim and all(shape[d] == s for d, s in zip(dims, x.shape)))
            out = np.empty(shape, dtype=x.dtype)
            for idx in itertools.product(*[range(s) for s in shape]):
                out[idx] = x[tuple(idx[d] for d in dims)]
            return out
        if n.op == "slice":
            start = _ints(a["start"], self.env, self.lists)
            limit = _ints(a["limit"], self.env, self.lists)
            stride = _ints(a["stride"], self.env, self.lists) if "stride" in a else [1] * x.ndim
            need(all(0 <= s <= lim <= d and st >= 1
                     for s, lim, st, d in zip(start, limit, stride, x.shape)))
            return x[tuple(slice(s, lim, st) for s, lim, st in zip(start, limit, stride))]
        if n.op == "concatenate":
            need(all(y.ndim == x.ndim for y in xs))
            need(all(y.shape[k] == x.shape[k] for y in xs for k in range(x.ndim)
                     if k != a["dim"]))
            return np.concatenate(xs, axis=a["dim"])
        if n.op == "pad":
            v = xs[1]
            need(v.ndim == 0)
            low = _ints(a["low"], self.env, self.lists)
            high = _ints(a["high"], self.env, self.lists)
            inner = _ints(a["interior"], self.env, self.lists) if "interior" in a \
                else [0] * x.ndim
            shape = [lo + hi + d + max(0, d - 1) * it
                     for lo, hi, it, d in zip(low, high, inner, x.shape)]
            need(all(s >= 0 for s in shape) and all(it >= 0 for it in inner))
            out = np.full(shape, v[()], dtype=x.dtype)
            for idx in itertools.product(*[range(d) for d in x.shape]):
                pos = tuple(lo + i * (it + 1) for lo, i, it in zip(low, idx, inner))
                if all(0 <= p < s for p, s in zip(pos, shape)):
                    out[pos] = x[idx]
            return out
        raise AssertionError(n.op)

    @staticmethod
    def _need(cond: bool) -> None:
        if not cond:
            raise OracleIllFormed
