"""Run HLO text on XLA's CPU backend, to confirm (or not) a counterexample of `validate`.

A `differ` verdict is a claim about two programs; running both at the counterexample is the
independent check. The route through the pinned jax (0.10.2; private modules, so pinned): XLA's
HLO parser (`xla_client.hlo.hlo_module_from_text`), the proto converted to StableHLO
(`xla_client._xla.mlir.hlo_to_stablehlo`; StableHLO text is compiled as it is) and
`backend.compile_and_load` with `xla_enable_hlo_passes_only=layout-assignment,copy-insertion`:
none of XLA's optimizing passes run, so AFTER runs as written (its fusions are emitted as they
stand) and BEFORE is a reference without the passes under test. Those two cannot go: with no
pass at all the CPU backend returns a transpose's operand as its result.

The conversion to StableHLO drops layouts, and mistranslates a bitcast inside a fusion: every
`bitcast` is rewritten first into what its layouts mean. XLA ends its process on a failed
internal check, so programs run in a child process; one its emitters reject as written is run
again with its fusions written as calls (the same values). jax is imported only inside the
functions: verifidx imports without it.
"""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from verifidx.hlo import HloInstruction, Shape, parse_hlo

NO_PASSES = "layout-assignment,copy-insertion"
"""The only HLO passes run (`xla_enable_hlo_passes_only`): the ones the CPU backend needs to
emit correct code, none that optimizes."""

NO_RUNTIME = "not confirmed (no runtime)"


class CounterexampleLike(Protocol):
    """What `confirm` reads of a counterexample of `verifidx.clients.translation`."""

    @property
    def output(self) -> int: ...
    @property
    def point(self) -> Sequence[int]: ...
    @property
    def values(self) -> Mapping[str, int]: ...


def available() -> bool:
    """Whether jax (and with it XLA's CPU backend) can be imported."""
    try:
        import jax  # noqa: F401
        from jax._src.lib import xla_client  # noqa: F401
    except Exception:  # an absent or broken install: both mean no runtime
        return False
    return True


def is_stablehlo(text: str) -> bool:
    head = text.lstrip()
    return not head.startswith("HloModule") and ("func.func" in text or head.startswith("module"))


def compile_program(text: str, *, passes: bool = False) -> Any:
    """An executable for HLO or StableHLO text on the first CPU device; `passes=False` runs
    only `NO_PASSES` (the program runs as written)."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from jax._src.lib import xla_client as xc
    from jax.extend import backend as jax_backend

    if is_stablehlo(text):
        mlir: str | bytes = text
    else:
        module = xc.hlo.hlo_module_from_text(logical_bitcasts(text))
        mlir = xc._xla.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
    options = xc.CompileOptions()
    if not passes:
        options.executable_build_options.debug_options.xla_enable_hlo_passes_only = NO_PASSES
    backend = jax_backend.get_backend("cpu")
    return backend.compile_and_load(mlir, backend.local_devices()[:1], options)


NUMPY_TYPES = {"f16": "float16", "bf16": "float32", "f32": "float32", "f64": "float64",
               "s8": "int8", "s16": "int16", "s32": "int32", "s64": "int64", "u8": "uint8",
               "u16": "uint16", "u32": "uint32", "u64": "uint64", "pred": "bool"}


def distinct_inputs(text: str, values: Mapping[str, int] | None = None) -> list[Any]:
    """One input per entry parameter: every element of an array is its flat index + 1, plus,
    for floating-point ones, the sizes of the floating-point parameters before it (so the
    elements a counterexample names hold distinct values); a scalar integer parameter named in
    `values` (`arg1`) takes that value, an element `arg1[2,0]` of an integer array likewise."""
    import numpy as np

    values = values or {}
    out = []
    offset = 0  # floating-point parameters continue each other's numbering
    for p in _entry_parameters(text):
        key = f"arg{p.parameter_number}"
        dtype = np.dtype(NUMPY_TYPES[p.shape.element_type])
        size = int(np.prod(p.shape.dims)) if p.shape.dims else 1
        if dtype == np.bool_:
            x = (np.arange(size) % 2 == 1).reshape(p.shape.dims)
        elif np.issubdtype(dtype, np.floating):
            x = (np.arange(size) + 1 + offset).astype(dtype).reshape(p.shape.dims)
            offset += size
        else:  # integers (indices, starts): small, so most stay in range
            x = (np.arange(size) + 1).astype(dtype).reshape(p.shape.dims)
        if not p.shape.dims and key in values:
            x = np.asarray(values[key]).astype(dtype)
        for name, v in values.items():
            if name.startswith(key + "[") and name.endswith("]") and p.shape.dims:
                index = tuple(int(i) for i in name[len(key) + 1:-1].split(","))
                x[index] = v
        out.append(x)
    return out


def _entry_parameters(text: str) -> list[HloInstruction]:
    if is_stablehlo(text):
        raise ValueError("distinct inputs are built from the HLO program's entry")
    params = [p for p in parse_hlo(text).entry.parameters if p.parameter_number is not None]
    return sorted(params, key=lambda p: p.parameter_number or 0)


def _format(x: Any) -> str:
    import numpy as np

    if np.issubdtype(np.asarray(x).dtype, np.floating):
        return repr(float(x))
    return str(x.item() if hasattr(x, "item") else x)


def run_jobs(jobs: Sequence[tuple[str, Sequence[Sequence[Any]]]], *,
             timeout_s: float = 300.0) -> list[list[list[Any]] | str]:
    """Each program compiled once and run on each of its input sets, in one child process:
    per program the output leaves per input set, or why it could not run."""
    with tempfile.TemporaryDirectory(prefix="verifidx-xla-") as tmp:
        job, out = os.path.join(tmp, "job.pkl"), os.path.join(tmp, "out.pkl")
        with open(job, "wb") as f:
            pickle.dump([(t, list(sets)) for t, sets in jobs], f)
        env = dict(os.environ, JAX_PLATFORMS="cpu")
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        code = "import sys; from verifidx.clients.xla_runtime import _child; _child(*sys.argv[1:])"
        try:
            run = subprocess.run([sys.executable, "-c", code, job, out], env=env, check=False,
                                 capture_output=True, text=True, timeout=timeout_s)
            crash = _crash_line(run.stderr) if run.returncode else ""
        except subprocess.TimeoutExpired:
            crash = f"no result within {timeout_s:.0f} s"
        done: list[list[list[Any]] | str] = []
        if os.path.exists(out):
            with open(out, "rb") as f:
                done = pickle.load(f)
    if len(done) < len(jobs):
        done.append(f"XLA stopped: {crash or 'no reason given'}")
        if len(done) < len(jobs):  # the rest, in a child of their own
            done.extend(run_jobs(jobs[len(done):], timeout_s=timeout_s))
    return done


def run_faithful(jobs: Sequence[tuple[str, Sequence[Sequence[Any]]]]
                 ) -> list[tuple[list[list[Any]] | str, bool]]:
    """`run_jobs`, with a program XLA cannot run as written run again with its fusions as
    calls; each result says whether that was needed."""
    first = run_jobs(jobs)
    retry = [i for i, r in enumerate(first) if isinstance(r, str) and "fusion(" in jobs[i][0]]
    again = run_jobs([(fusions_as_calls(jobs[i][0]), jobs[i][1]) for i in retry]) \
        if retry else []
    results: list[tuple[list[list[Any]] | str, bool]] = [(r, False) for r in first]
    for i, r in zip(retry, again):
        if not isinstance(r, str):
            results[i] = (r, True)
    return results


def fusions_as_calls(text: str) -> str:
    """`text` with every fusion written as a call of its fused computation: the same values
    (a fusion means its computation), for the modules whose fusions XLA's emitters reject once
    the StableHLO route has dropped their layouts."""
    out = []
    for line in text.splitlines():
        if re.search(r"\sfusion\(", line):
            line = re.sub(r"\sfusion\(", " call(", line, count=1)
            line = re.sub(r",\s*kind=k\w+", "", line)
            line = re.sub(r"\bcalls=", "to_apply=", line)
        out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def _crash_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if "Check failed" in ln or "Error" in ln or "error:" in ln:
            return re.sub(r"^[FEW]\d{4} [\d:.]+\s+\d+ ", "", ln)[:200]
    return lines[-1][:200] if lines else ""


def _child(job: str, out: str) -> None:
    """The child of `run_jobs`: results are saved after every program, so a program that
    ends the process leaves the earlier results readable."""
    import jax
    import numpy as np

    with open(job, "rb") as f:
        jobs = pickle.load(f)
    done: list[list[list[Any]] | str] = []
    for text, sets in jobs:
        try:
            exe = compile_program(text)
            device = exe.local_devices()[0]
            done.append([[np.asarray(r) for r in
                          exe.execute([jax.device_put(x, device) for x in inputs])]
                         for inputs in sets])
        except Exception as e:  # XLA's own error: reported, one line
            done.append(_first_line(e))
        with open(out + ".tmp", "wb") as f:
            pickle.dump(done, f)
        os.replace(out + ".tmp", out)


def confirm(before_text: str, after_text: str, cx: CounterexampleLike) -> str:
    """Run both programs where the counterexample's elements hold distinct values and compare
    output leaf `cx.output` at `cx.point`. BEFORE is the reference. "not confirmed" means
    execution does not show the difference, and then the verdict must not be reported as a
    miscompile."""
    return confirm_many([(before_text, after_text, cx)])[0]


def confirm_many(items: Sequence[tuple[str, str, CounterexampleLike]]) -> list[str]:
    """`confirm` for many counterexamples, run in one child process (plus one per program
    that ends it)."""
    if not available():
        return [NO_RUNTIME] * len(items)
    import numpy as np

    answers: list[str | None] = [None] * len(items)
    jobs: list[tuple[str, Sequence[Sequence[Any]]]] = []
    for k, (before_text, after_text, cx) in enumerate(items):
        try:
            inputs = distinct_inputs(after_text if is_stablehlo(before_text) else before_text,
                                     cx.values)
        except Exception as e:  # a parameter type without a numpy twin, or no HLO entry
            answers[k] = f"not confirmed (no inputs: {_first_line(e)})"
            continue
        jobs += [(before_text, [inputs]), (after_text, [inputs])]
    runs = iter(run_faithful(jobs))
    for k, (_, _, cx) in enumerate(items):
        if answers[k] is not None:
            continue
        pair = [next(runs), next(runs)]
        point = tuple(int(i) for i in cx.point)
        where = f"output {cx.output} element ({', '.join(map(str, point))})"
        note = " (fusions run as calls)" if any(as_calls for _, as_calls in pair) else ""
        results = []
        for role, (sets, _) in zip(("reference", "compiled program"), pair):
            if isinstance(sets, str):
                answers[k] = f"not confirmed (the runtime cannot run the {role}: {sets})"
                break
            try:
                results.append(np.asarray(sets[0][cx.output])[point])
            except (IndexError, ValueError) as e:
                answers[k] = f"not confirmed (the {role} has no {where}: {_first_line(e)})"
                break
        if answers[k] is not None:
            continue
        ref, got = results
        answers[k] = (f"not confirmed: both give {_format(got)} at {where}{note}"
                      if _equal(ref, got) else
                      f"confirmed: {where} is {_format(got)}, the reference gives "
                      f"{_format(ref)}{note}")
    return [a or NO_RUNTIME for a in answers]


def _equal(a: Any, b: Any) -> bool:
    import numpy as np

    if np.issubdtype(np.asarray(a).dtype, np.floating) and np.isnan(a) and np.isnan(b):
        return True
    return bool(a == b)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:200]


# -- layouts: the one op whose meaning the StableHLO route would lose --------------------------


def _default_order(shape: Shape) -> bool:
    rank = len(shape.dims)
    return shape.layout is None or shape.layout.minor_to_major == tuple(range(rank - 1, -1, -1))


def logical_bitcasts(text: str) -> str:
    """`text` with every bitcast written as the logical ops it stands for: a reshape between
    default layouts; otherwise transpose the operand into its physical (major-to-minor) order,
    reshape to the result's physical dimensions, transpose into the result's logical order.
    (XLA's StableHLO import mistranslates a bitcast inside a fusion.) Other lines are kept."""
    if "bitcast(" not in text:
        return text
    module = parse_hlo(text)
    lines = text.splitlines()
    for comp in module.computations.values():
        for inst in comp.instructions:
            if inst.opcode != "bitcast" or len(inst.operands) != 1:
                continue
            src = comp.instruction(inst.operands[0]).shape
            dst = inst.shape
            if src.tuple_shapes or dst.tuple_shapes:
                continue
            if _default_order(src) and _default_order(dst):  # a reshape: say so
                lines[inst.line - 1] = re.sub(
                    rf"((?:ROOT\s+)?%?{re.escape(inst.name)}\s*=.*?)bitcast\(", r"\1reshape(",
                    lines[inst.line - 1], count=1)
                continue
            lines[inst.line - 1] = _bitcast_lines(inst, inst.operands[0], src, dst,
                                                  lines[inst.line - 1])
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def _major_to_minor(shape: Shape) -> tuple[int, ...]:
    rank = len(shape.dims)
    m2m = shape.layout.minor_to_major if shape.layout else tuple(range(rank - 1, -1, -1))
    return tuple(reversed(m2m))


def _bitcast_lines(inst: HloInstruction, operand: str, src: Shape, dst: Shape, line: str) -> str:
    """`line` with the bitcast's text (name through its last attribute) replaced."""
    found = re.search(rf"(ROOT\s+)?%?{re.escape(inst.name)}\s*=.*?bitcast\([^)]*\)", line)
    if found is None:
        raise ValueError(f"line {inst.line}: bitcast {inst.name} not found")
    end = _attributes_end(line, found.end())
    src_perm, dst_perm = _major_to_minor(src), _major_to_minor(dst)
    inverse = [dst_perm.index(i) for i in range(len(dst_perm))]

    def shape(dims: Sequence[int]) -> str:
        order = ",".join(str(i) for i in range(len(dims) - 1, -1, -1))
        return f"{dst.element_type}[{','.join(map(str, dims))}]{{{order}}}"

    a, b = f"{inst.name}.vx_physical", f"{inst.name}.vx_reshaped"
    root = "ROOT " if inst.is_root else ""
    new = (f"{a} = {shape([src.dims[d] for d in src_perm])} transpose({operand}), "
           f"dimensions={{{','.join(map(str, src_perm))}}}\n"
           f"{b} = {shape([dst.dims[d] for d in dst_perm])} reshape({a})\n"
           f"{root}{inst.name} = {shape(dst.dims)} transpose({b}), "
           f"dimensions={{{','.join(map(str, inverse))}}}")
    return line[:found.start()] + new + line[end:]


def _attributes_end(line: str, i: int) -> int:
    """Where the `, name=value` attributes after position `i` end (values may nest braces and
    hold quoted strings)."""
    while True:
        j = i
        while j < len(line) and line[j] == " ":
            j += 1
        if j >= len(line) or line[j] != ",":
            return i
        depth, quoted, j = 0, False, j + 1
        while j < len(line):
            c = line[j]
            if quoted:
                quoted = c != '"' or line[j - 1] == "\\"
            elif c == '"':
                quoted = True
            elif c == "{":
                depth += 1
            elif c == "}":
                if depth == 0:
                    break
                depth -= 1
            elif c in ",\n" and depth == 0:
                break
            j += 1
        i = j
