"""The provable audit trail, pure: event hashes, Merkle roots, signed checkpoints (the checker
that verifies them is gateway/core/audit_check.py).

- Each event's `hash` is SHA-256 of `canonical([prev, seq, approval_id, kind, actor, at,
  channel])` followed by `data`: `prev` is the approval's previous event hash (`GENESIS` for its
  first), `seq` counts the approval's events from 1, `at` is the stored epoch-seconds float,
  `data` the stored JSON text, appended as is (no re-encoding can change it, and none is paid
  for). The list's closing bracket ends the fields: no two events share a hashed text. One chain
  per approval: approvals never wait for each other, on any backend.
- Schema versions 13 to 15 hashed `data` as a JSON string, the list's last item
  (`event_hash_v1`). Their events keep those hashes, and the checker accepts either form: the
  first complete JSON value of a hashed text is a list of seven or of eight items, never both.
- The global chain is a chain of checkpoints. A checkpoint seals the heads `(approval_id, seq,
  hash)` that moved since the previous one, as a Merkle root, and links to the previous
  checkpoint's hash; an Ed25519 signature over its hash makes it unforgeable without the key.
  Deleting an approval's events, or rewriting them, no longer matches a sealed head.

docs/audit.md has the threat model and the export format; the same rules, in 40 lines that need
only `cryptography`, are its offline verifier.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from json import encoder
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from gateway.core.keys import canonical_json

__all__ = [
    "EXPORT_VERSION",
    "GENESIS",
    "ChainEvent",
    "Checkpoint",
    "Leaf",
    "checkpoint_hash",
    "event_hash",
    "event_hash_v1",
    "event_tail",
    "key_id",
    "link_hash",
    "load_private_key",
    "load_public_key",
    "merkle_root",
    "public_key_hex",
    "sign",
]

GENESIS = "0" * 64
EXPORT_VERSION = 1
# Compact JSON, UTF-8 kept: for the flat lists hashed here, the same text as json.dumps(value,
# separators=(",", ":"), ensure_ascii=False), which the offline verifier uses, through the
# prebuilt C encoder of canonical_json (a third of json.dumps's cost per event).
_ENCODE = canonical_json
_STRING = encoder.encode_basestring  # the string escape of _ENCODE's encoder (ensure_ascii=False)
_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")


def event_hash(
    prev: str, seq: int, approval_id: str, kind: str, actor: str | None, at: float, channel: str | None, data: str
) -> str:
    """The chain link of one event (a JSON list: a fixed order, no keys to sort), then its data
    text. The checker's form: `prev` as found, whatever a tamperer wrote there, encoded as JSON
    would."""
    fields = _ENCODE([prev, seq, approval_id, kind, actor, at, channel])
    return hashlib.sha256((fields + data).encode("utf-8")).hexdigest()


def event_hash_v1(
    prev: str, seq: int, approval_id: str, kind: str, actor: str | None, at: float, channel: str | None, data: str
) -> str:
    """The link of schema versions 13 to 15 (`data` a JSON string in the list): still checked,
    never written."""
    body = _ENCODE([prev, seq, approval_id, kind, actor, at, channel, data])
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def event_tail(approval_id: str, kind: str, actor: str | None, at: float, channel: str | None, data: str) -> str:
    """The hashed text of an event after its `prev` and `seq`: everything that does not depend
    on the chain, so that a store encodes it on the caller's thread and the single writer only
    links it (`link_hash`). The compact JSON of a list is `[` + its items joined by `,` + `]`;
    each item as the C encoder writes it (the same `encode_basestring`, a finite float's repr),
    item by item: a third cheaper than encoding the list (test_offline holds the two equal).
    `data` follows the list as is: escaping it as a string was a tenth of a timeout's chain cost."""
    if at - at != 0.0:  # inf or nan: what the encoder refuses (allow_nan=False)
        raise ValueError(f"an event's time must be finite, not {at!r}")
    actor_json = "null" if actor is None else _STRING(actor)
    channel_json = "null" if channel is None else _STRING(channel)
    return f"{_STRING(approval_id)},{_STRING(kind)},{actor_json},{at!r},{channel_json}]{data}"


def link_hash(prev: str, seq: int, tail: str) -> str:
    """`event_hash` from an `event_tail`: `prev` is 64 hex digits (a hash, or GENESIS), which JSON
    prints as is, so the text is exactly `canonical([prev, seq, approval_id, ..., channel]) + data`."""
    return hashlib.sha256(f'["{prev}",{seq},{tail}'.encode()).hexdigest()


def merkle_root(leaves: Iterable[tuple[str, int, str]]) -> str:
    """RFC 6962 style over `(approval_id, seq, hash)` sorted by approval id: leaf = H(0x00 ||
    canonical), node = H(0x01 || left || right), an odd node is promoted; no leaves: H("")."""
    level = [hashlib.sha256(b"\x00" + _ENCODE([a, s, h]).encode("utf-8")).digest() for a, s, h in sorted(leaves)]
    if not level:
        return hashlib.sha256(b"").hexdigest()
    while len(level) > 1:
        nxt = [hashlib.sha256(b"\x01" + level[i] + level[i + 1]).digest() for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0].hex()


def checkpoint_hash(prev: str, seq: int, at: float, root: str, heads: int) -> str:
    return hashlib.sha256(_ENCODE([prev, seq, at, root, heads]).encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- keys


def load_private_key(value: str) -> Ed25519PrivateKey:
    """`[audit] signing_key`: 64 hex digits (the 32-byte seed), a PEM PKCS#8 key, or the path of
    a file holding either. ValueError says which form was expected."""
    text = value.strip()
    if _HEX64.match(text):
        return Ed25519PrivateKey.from_private_bytes(bytes.fromhex(text))
    if text.startswith("-----BEGIN"):
        key = serialization.load_pem_private_key(text.encode(), password=None)
        if not isinstance(key, Ed25519PrivateKey):
            raise ValueError("the PEM key is not an Ed25519 key")
        return key
    path = Path(text)
    if text and path.is_file():
        return load_private_key(path.read_text(encoding="utf-8"))
    raise ValueError("expected 64 hex digits (an Ed25519 seed), a PEM private key, or a file holding one")


def load_public_key(value: str) -> Ed25519PublicKey:
    """`--public-key`: 64 hex digits (as `audit public-key` prints), a PEM public key, or a file."""
    text = value.strip()
    if _HEX64.match(text):
        return Ed25519PublicKey.from_public_bytes(bytes.fromhex(text))
    if text.startswith("-----BEGIN"):
        key = serialization.load_pem_public_key(text.encode())
        if not isinstance(key, Ed25519PublicKey):
            raise ValueError("the PEM key is not an Ed25519 key")
        return key
    path = Path(text)
    if text and path.is_file():
        return load_public_key(path.read_text(encoding="utf-8"))
    raise ValueError("expected 64 hex digits (from `hitl-gateway audit public-key`), a PEM public key, or a file")


def public_key_hex(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()


def key_id(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """A short name for a key (in each checkpoint): which key to check it with after a rotation."""
    return hashlib.sha256(bytes.fromhex(public_key_hex(key))).hexdigest()[:16]


def sign(key: Ed25519PrivateKey, digest_hex: str) -> str:
    return base64.b64encode(key.sign(digest_hex.encode("ascii"))).decode("ascii")


# ---------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class ChainEvent:
    """An events row as stored (hash None: written before the chain existed, migration 13)."""

    id: int
    approval_id: str
    seq: int | None
    kind: str
    at: float
    actor: str | None
    channel: str | None
    data: str
    hash: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "event",
            "id": self.id,
            "approval_id": self.approval_id,
            "seq": self.seq,
            "kind": self.kind,
            "at": self.at,
            "actor": self.actor,
            "channel": self.channel,
            "data": self.data,
            "hash": self.hash,
        }


@dataclass(frozen=True, slots=True, order=True)
class Leaf:
    approval_id: str
    seq: int
    hash: str


@dataclass(frozen=True, slots=True)
class Checkpoint:
    seq: int
    at: float
    prev: str
    root: str
    heads: int
    hash: str
    signature: str | None
    key_id: str | None
    leaves: tuple[Leaf, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "checkpoint",
            "seq": self.seq,
            "at": self.at,
            "prev": self.prev,
            "root": self.root,
            "heads": self.heads,
            "hash": self.hash,
            "signature": self.signature,
            "key_id": self.key_id,
            "leaves": [[lf.approval_id, lf.seq, lf.hash] for lf in self.leaves],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Checkpoint:
        """An export's checkpoint; ValueError (or TypeError) for values no gateway writes."""
        leaves = tuple(Leaf(str(a), int(s), str(h)) for a, s, h in d.get("leaves", ()))
        at = float(d["at"])
        if not math.isfinite(at):
            raise ValueError(f"checkpoint at must be epoch seconds, not {d['at']!r}")
        for name in ("signature", "key_id"):
            if not isinstance(d.get(name), str | None):
                raise ValueError(f"checkpoint {name} must be a string or null, not {d[name]!r}")
        return cls(
            int(d["seq"]),
            at,
            str(d["prev"]),
            str(d["root"]),
            int(d["heads"]),
            str(d["hash"]),
            d.get("signature"),
            d.get("key_id"),
            leaves,
        )


def new_checkpoint(
    prev: Checkpoint | None, at: float, leaves: Sequence[Leaf], key: Ed25519PrivateKey | None
) -> Checkpoint:
    """The checkpoint after `prev` sealing `leaves` (signed if there is a key)."""
    seq = 1 if prev is None else prev.seq + 1
    prev_hash = GENESIS if prev is None else prev.hash
    root = merkle_root((lf.approval_id, lf.seq, lf.hash) for lf in leaves)
    digest = checkpoint_hash(prev_hash, seq, at, root, len(leaves))
    signature = sign(key, digest) if key is not None else None
    return Checkpoint(
        seq, at, prev_hash, root, len(leaves), digest, signature, key_id(key) if key else None, tuple(leaves)
    )
