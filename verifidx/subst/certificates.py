"""Certificates of substitution files (`proofs/<stem>.subst.json`) and their part of the gate.

Same contract as the rule certificates (docs/rules.md): one JSON file per substitution file,
sorted keys, no timestamps; an entry is current when the sha256 of the substitution's
normalized text, the Z3 version and the verifidx version all match. `verifidx check` calls
`gate_results` (through the hook in the check command) so that a missing, stale, refuted or
unknown substitution fails CI exactly like a rule would.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import z3

from verifidx.errors import VerifidxError
from verifidx.subst.model import Substitution
from verifidx.subst.parser import load_substitution_file, substitution_files
from verifidx.subst.prove import PROVED, SubstProof, prove
from verifidx.version import __version__

FORMAT = 1
Z3_VERSION = z3.get_version_string()


class CertificateError(VerifidxError):
    """A substitution certificate file that cannot be read."""


def _version() -> str:
    return __version__


def subst_hash(sub: Substitution) -> str:
    return hashlib.sha256(sub.normalized_text.encode("utf-8")).hexdigest()


def certificate_path(subst_file: Path, proofs: str | Path | None = None) -> Path:
    """`--proofs DIR` when given; else `proofs/` beside a `rules/` directory; else ./proofs."""
    if proofs is not None:
        base = Path(proofs)
    else:
        parent = subst_file.resolve().parent
        base = parent.parent / "proofs" if parent.name == "rules" else Path("proofs")
    return base / f"{subst_file.stem}.subst.json"


def _display(p: Path) -> str:
    try:
        return os.path.relpath(p)
    except ValueError:
        return str(p)


def load_certificates(path: Path) -> dict[str, dict[str, object]]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CertificateError(f"{_display(path)}: corrupt certificate file ({err})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or \
            not isinstance(data.get("substitutions"), dict):
        raise CertificateError(f"{_display(path)}: not a verifidx substitution certificate")
    return data["substitutions"]  # type: ignore[no-any-return]


def staleness(sub: Substitution, entry: dict[str, object] | None) -> str | None:
    if entry is None:
        return "no certificate"
    if entry.get("sha256") != subst_hash(sub):
        return "the substitution's text changed since it was proven"
    if entry.get("verifier_version") != _version():
        return f"proven by verifidx {entry.get('verifier_version')}, this is {_version()}"
    if entry.get("z3_version") != Z3_VERSION:
        return f"proven with Z3 {entry.get('z3_version')}, this is Z3 {Z3_VERSION}"
    return None


def _entry(sub: Substitution, res: SubstProof) -> dict[str, object]:
    doc = res.to_json()
    for k in ("file", "line", "name"):
        doc.pop(k)
    doc.update(sha256=subst_hash(sub), z3_version=Z3_VERSION, verifier_version=_version(),
               smtlib=res.smtlib)
    return doc


def prove_files(paths: Sequence[str | Path], proofs: str | Path | None = None,
                force: bool = False, write: bool = True, **options: int
                ) -> list[SubstProof]:
    """`verifidx subst prove`: prove what has no current certificate (all with `force`) and
    write the certificate files."""
    results: list[SubstProof] = []
    for f in substitution_files(paths):
        subs = load_substitution_file(f)
        cert = certificate_path(f, proofs)
        try:
            old = load_certificates(cert)
        except CertificateError:
            old = {}
        entries: dict[str, object] = {}
        for sub in subs:
            entry = old.get(sub.name)
            if not force and entry is not None and staleness(sub, entry) is None and \
                    entry.get("verdict") in (PROVED, "refuted"):
                results.append(_from_entry(sub, entry))
                entries[sub.name] = entry
                continue
            res = prove(sub, **options)
            results.append(res)
            entries[sub.name] = _entry(sub, res)
        if write:
            rel = os.path.relpath(f.resolve(), cert.resolve().parent.parent).replace(os.sep, "/")
            text = json.dumps({"format": FORMAT, "file": rel, "substitutions": entries},
                              indent=1, sort_keys=True) + "\n"
            if not cert.exists() or cert.read_text(encoding="utf-8") != text:
                cert.parent.mkdir(parents=True, exist_ok=True)
                cert.write_text(text, encoding="utf-8")
    return results


def _from_entry(sub: Substitution, entry: dict[str, object]) -> SubstProof:
    return SubstProof(sub.name, sub.file, sub.line, str(entry.get("verdict")),
                      strength=entry.get("strength"),  # type: ignore[arg-type]
                      message=str(entry.get("message", "")),
                      seconds=float(entry.get("seconds", 0.0)),  # type: ignore[arg-type]
                      instances=int(entry.get("instances", 0)))  # type: ignore[call-overload]


def check_files(paths: Sequence[str | Path], proofs: str | Path | None = None,
                reprove: bool = False) -> list[SubstProof]:
    """Every substitution must have a current certificate saying `proved` (or, with
    `reprove`, be proven again now)."""
    results: list[SubstProof] = []
    for f in substitution_files(paths):
        subs = load_substitution_file(f)
        if reprove:
            results += [prove(s) for s in subs]
            continue
        cert = certificate_path(f, proofs)
        try:
            entries = load_certificates(cert)
        except CertificateError as err:
            results += [SubstProof(s.name, s.file, s.line, "error", message=str(err))
                        for s in subs]
            continue
        for s in subs:
            entry = entries.get(s.name)
            why = staleness(s, entry)
            if why is None:
                assert entry is not None
                results.append(_from_entry(s, entry))
            else:
                verdict = "missing" if entry is None else "stale"
                results.append(SubstProof(s.name, s.file, s.line, verdict,
                                          message=f"{why}; run verifidx subst prove"))
    return results


def gate_results(paths: Sequence[str | Path], proofs: str | Path | None, reprove: bool
                 ) -> list[object]:
    """The substitution files among `paths` (and in its directories), checked, as the rule
    gate's ProofResult records (the hook `verifidx check` calls)."""
    from verifidx.rules.prover import ProofResult

    found = [p for p in paths if Path(p).is_dir() or str(p).endswith(".subst")]
    out: list[object] = []
    for r in check_files(found, proofs, reprove):
        out.append(ProofResult(r.name, _display(Path(r.file)), r.line, r.verdict,
                               strength=r.strength, seconds=r.seconds,
                               message="" if r.verdict == PROVED else r.message,
                               cached=not reprove, strategy="substitution"))
    return out
