"""The proof cache: which certificate queries a run holding the cache's secret (this user's,
or any that shares the directory) has already seen Z3 answer `unsat`.

`verifidx check` takes no verdict from the repository: it rebuilds each rule's query from the
rule's text, compares it with the certificate, and runs it. A cache entry stands in for that
run, and only for it: to keep a warm check fast it remembers, outside the repository, the
queries that re-checked, keyed by the sha256 of everything the answer depends on: the exact
query text, the rule's text, the resource limit, and the Z3 and verifidx versions (no date).
Only `unsat` answers are remembered; anything else is re-run next time. The directory is
`$VERIFIDX_CACHE_DIR`, else `$XDG_CACHE_HOME/verifidx`, else `~/.cache/verifidx`; deleting it
is always safe.

A key is public (anyone can compute the sha256 of a query), so an entry is not its file's
existence: it holds an HMAC of the key under a secret of the cache's owner (`secret`, 32
random bytes created with mode 0600 on first use). A file dropped into the directory by anyone
who cannot read the secret does not verify, and is ignored. The secret is refused, and the
cache is off, when it is not a regular file of this user that only this user can read: then
every query runs again (docs/contracts.md, Proof certificates, says what the cache is trusted
for).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from pathlib import Path

SECRET = "secret"


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


def _private(info: os.stat_result) -> str | None:
    """Why a secret file with this status cannot be trusted (None: it can)."""
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    if os.name == "posix":
        if info.st_uid != os.getuid():
            return "it belongs to another user"
        if info.st_mode & 0o077:
            return "other users may read or write it (it must be mode 0600)"
    return None


def _load_secret(root: Path) -> tuple[bytes | None, str | None]:
    """The cache's secret, created on first use: (secret, None) or (None, why not)."""
    path = root / SECRET
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "wb") as f:
                f.write(os.urandom(32))
        fd = os.open(path, os.O_RDONLY | nofollow)
        with os.fdopen(fd, "rb") as f:
            why = _private(os.fstat(f.fileno()))
            secret = f.read()
    except OSError as err:
        return None, f"{path}: {err.strerror or err}"
    if why is None and len(secret) < 32:
        why = "it is shorter than 32 bytes"
    return (None, f"{path}: {why}") if why else (secret, None)


class ProofCache:
    """Keys of queries this user's own runs re-checked. A missing or unwritable directory, or a
    secret that is not private, is an empty cache (`problem` says why); nothing in it can make
    an unchecked query pass."""

    def __init__(self, root: Path | None = None) -> None:
        top = root or cache_dir()
        self.root = top / "rechecked"
        self._secret, self.problem = _load_secret(top)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / key

    def _tag(self, key: str) -> str:
        assert self._secret is not None
        return hmac.new(self._secret, key.encode("ascii"), hashlib.sha256).hexdigest()

    def __contains__(self, key: str) -> bool:
        if self._secret is None:
            return False
        try:
            stored = self._path(key).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            return False
        return hmac.compare_digest(stored, self._tag(key))

    def add(self, key: str) -> None:
        if self._secret is None:
            return
        path = self._path(key)
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            path.write_text(self._tag(key) + "\n", encoding="ascii")
        except OSError:
            pass  # a read-only home only costs speed
