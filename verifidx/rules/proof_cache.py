"""The proof cache: which certificate queries this machine has already seen Z3 answer `unsat`.

`verifidx check` trusts nothing in the repository: it rebuilds each rule's query from the rule's
text, and runs it. To keep a warm check fast it remembers, outside the repository, the queries
that re-checked, keyed by the sha256 of everything the answer depends on: the exact query text,
the rule's text, the resource limit, and the Z3 and verifidx versions. Only `unsat` answers are
remembered; anything else is re-run next time. The directory is `$VERIFIDX_CACHE_DIR`, else
`$XDG_CACHE_HOME/verifidx`, else `~/.cache/verifidx`; deleting it is always safe.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_dir() -> Path:
    explicit = os.environ.get("VERIFIDX_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "verifidx"


def cache_key(query: str, rule_text: str, rlimit: int, z3_version: str,
              verifier_version: str) -> str:
    h = hashlib.sha256()
    for part in (query, rule_text, str(rlimit), z3_version, verifier_version):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


class ProofCache:
    """Keys of queries known to re-check; a missing or unwritable directory is an empty cache."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = (root or cache_dir()) / "rechecked"

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / key

    def __contains__(self, key: str) -> bool:
        return self._path(key).is_file()

    def add(self, key: str) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("unsat\n", encoding="utf-8")
        except OSError:
            pass  # a read-only home only costs speed
