"""Compile models with torch.compile on CPU and write Inductor's index simplifications as the
JSON lines `verifidx validate` reads: one record per `simplify_with_ranges` call,
`{"expr", "var_ranges", "size_ranges", "result"}` (result = Inductor's output).

    python tools/capture_inductor.py -o inductor.jsonl              # the built-in models
    python tools/capture_inductor.py -o mine.jsonl --model my_pkg.models:build
    python tools/capture_inductor.py -o dynamic.jsonl --dynamic    # size symbols s0, s53, ...
    verifidx validate inductor.jsonl

`--model MODULE:FUNCTION` names a function returning `(module, example_inputs)`. Needs torch
(`pip install 'verifidx[inductor]'`); compiles static shapes (dynamic=False, or dynamic=True
with `--dynamic`: the records then carry each size symbol's range from the shape
environment) with Inductor's caches off, so every simplification runs.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's verifidx


def _models() -> dict[str, Callable[[], tuple[Any, tuple[Any, ...]]]]:
    """Small models whose index expressions exercise Inductor's divisions and moduli."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    def conv() -> tuple[Any, tuple[Any, ...]]:
        return nn.Conv2d(3, 4, 3, stride=2, padding=1), (torch.randn(2, 3, 9, 11),)

    class PixelShuffle(nn.Module):
        def forward(self, x: Any) -> Any:
            return F.pixel_shuffle(x, 2) + 1

    class Unfold(nn.Module):
        def forward(self, x: Any) -> Any:
            patches = F.unfold(x, kernel_size=2, stride=2)
            return F.fold(patches * 2, output_size=(6, 8), kernel_size=2, stride=2)

    class Interpolate(nn.Module):
        def forward(self, x: Any) -> Any:
            return F.interpolate(x, scale_factor=2, mode="nearest") + F.interpolate(
                x, scale_factor=2, mode="bilinear", align_corners=False)

    class Heads(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(16, 48)

        def forward(self, x: Any) -> Any:
            b, t, c = x.shape
            q, k, v = self.qkv(x).reshape(b, t, 3, 4, c // 4).permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-1, -2) / 2.0, dim=-1)
            return (att @ v).transpose(1, 2).reshape(b, t, c)

    class ChannelsLast(nn.Module):
        def forward(self, x: Any) -> Any:
            y = x.contiguous(memory_format=torch.channels_last)
            return (y * 2).permute(0, 2, 3, 1).reshape(2, -1) + 1

    class Pool(nn.Module):
        def forward(self, x: Any) -> Any:
            return F.max_pool2d(x, 3, stride=2, padding=1) + F.avg_pool2d(x, 2)[..., :1, :1]

    class Roll(nn.Module):  # under dynamic=True: Where(x0 < 1, ...) in the index
        def forward(self, x: Any) -> Any:
            return (torch.roll(x, 1, -1) + torch.roll(x, (2, -1), (0, 1)) * 2).sum() + \
                torch.roll(x, 1).sum()

    class ScaleFactor(nn.Module):  # a float scale: TruncToInt(1.5*ToFloat(s0)) extents
        def forward(self, x: Any) -> Any:
            return (F.interpolate(x, scale_factor=2.0, mode="bilinear").sum()
                    + F.interpolate(x, scale_factor=1.5, mode="nearest").sum())

    return {
        "roll": lambda: (Roll(), (torch.randn(5, 7),)),
        "scale_factor": lambda: (ScaleFactor(), (torch.randn(1, 2, 5, 6),)),
        "conv": conv,
        "pixel_shuffle": lambda: (PixelShuffle(), (torch.randn(2, 8, 3, 5),)),
        "unfold": lambda: (Unfold(), (torch.randn(2, 3, 6, 8),)),
        "interpolate": lambda: (Interpolate(), (torch.randn(1, 3, 5, 7),)),
        "attention_heads": lambda: (Heads(), (torch.randn(2, 6, 16),)),
        "channels_last": lambda: (ChannelsLast(), (torch.randn(2, 3, 5, 7),)),
        "pooling": lambda: (Pool(), (torch.randn(2, 3, 9, 10),)),
    }


class _Together:
    """Every built-in model in one module (one compile instead of seven: the tests use it)."""

    @staticmethod
    def build() -> tuple[Any, tuple[Any, ...]]:
        from torch import nn

        parts = [_models()[name]() for name in MODEL_NAMES]

        class Together(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.parts = nn.ModuleList([m for m, _ in parts])

            def forward(self, *inputs: Any) -> Any:
                return tuple(m(x) for m, x in zip(self.parts, inputs))

        return Together(), tuple(x for _, (x,) in parts)


MODEL_NAMES = ("conv", "pixel_shuffle", "unfold", "interpolate", "attention_heads",
               "channels_last", "pooling")


def capture(model: Any, inputs: tuple[Any, ...], dynamic: bool = False
            ) -> list[dict[str, Any]]:
    """The records of one torch.compile of `model` on `inputs` (run once)."""
    import torch

    from verifidx.clients import inductor

    records: list[dict[str, Any]] = []
    torch._dynamo.reset()
    inductor.install("record", records=records)
    try:
        # a cached graph would skip the simplifications this records
        with torch.no_grad(), torch.compiler.config.patch(force_disable_caches=True):
            torch.compile(model, dynamic=dynamic, backend="inductor")(*inputs)
    finally:
        inductor.uninstall()
    return records


def build(name: str) -> tuple[Any, tuple[Any, ...]]:
    """A built-in model by name, or `MODULE:FUNCTION` returning (module, inputs)."""
    if ":" in name:
        module, _, function = name.partition(":")
        return getattr(importlib.import_module(module), function)()  # type: ignore[no-any-return]
    if name == "together":
        return _Together.build()
    models = _models()
    if name not in models:
        raise SystemExit(f"error: unknown model {name!r} (built in: {', '.join(models)})")
    return models[name]()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", default="-", help="JSON lines file (default: stdout)")
    p.add_argument("--model", action="append", default=[],
                   help=f"built-in ({', '.join(MODEL_NAMES)}; together: all of them in one "
                        "module; also roll and scale_factor, the forms of docs/inductor.md's "
                        "Where and float extents) or MODULE:FUNCTION; repeatable (default: "
                        "each of the first seven)")
    p.add_argument("--dynamic", action="store_true",
                   help="compile with dynamic=True (index expressions over size symbols)")
    args = p.parse_args(argv)
    seen: set[str] = set()
    lines: list[str] = []
    for name in args.model or MODEL_NAMES:
        for record in capture(*build(name), dynamic=args.dynamic):
            line = json.dumps(record)
            if line not in seen:  # Inductor asks about one expression many times
                seen.add(line)
                lines.append(line)
        print(f"{name}: {len(lines)} distinct records so far", file=sys.stderr)
    out = sys.stdout if args.output == "-" else open(args.output, "w")
    with out:
        out.write("".join(line + "\n" for line in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
