"""What matching one side of a substitution against a concrete graph has fixed so far.

Shared by the instance test of generation (`subst.instances`) and by `optimize`
(`subst.apply`): both bind the pattern's inputs, sizes, size lists and permutations the same way,
and keep the size expressions they cannot bind directly as equations checked afterwards."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from verifidx.analysis.subst.model import SizeList


@dataclass
class Binding:
    inputs: dict[str, str] = field(default_factory=dict)
    values: dict[str, int] = field(default_factory=dict)
    lists: dict[str, tuple[int, ...]] = field(default_factory=dict)
    perms: dict[str, tuple[int, ...]] = field(default_factory=dict)
    equations: list[tuple[object, object]] = field(default_factory=list)
    matched: list[str] = field(default_factory=list)  # op instructions, root last (optimize)

    def unify(self, template: SizeList, values: Sequence[int]) -> bool:
        """Binds `template`'s names to `values`; False on a contradiction. Expressions become
        equations, to be checked once every name is bound."""
        if template.variadic is not None:
            return self.lists.setdefault(template.variadic, tuple(values)) == tuple(values)
        if len(template.items) != len(values):
            return False
        for e, v in zip(template.items, values):
            if isinstance(e, str):
                if self.values.setdefault(e, v) != v:
                    return False
            elif isinstance(e, int):
                if e != v:
                    return False
            else:
                self.equations.append((e, v))
        return True

    def env(self) -> tuple[dict[str, int], dict[str, tuple[str, ...]]]:
        """Values of every bound name, size lists spelled out as `<name><k>`, and those names."""
        env = dict(self.values)
        names: dict[str, tuple[str, ...]] = {}
        for v, vals in self.lists.items():
            names[v] = tuple(f"{v}{k}" for k in range(len(vals)))
            env.update(zip(names[v], vals))
        return env, names
