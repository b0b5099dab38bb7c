"""Mutations of saved files for the fuzz of tests/reliability/test_fuzz_saved_models.py.

Two kinds, each a function ``(data or content, rng) -> (description, new data or content)``:

- *bytes*: :func:`mutate_bytes` flips bits in, truncates, inserts into or cuts out of a whole file
  (most break a zip's CRC); :func:`flip_in_member` rewrites an ``.npz`` as a valid zip whose one
  member (a ``.npy`` header, its payload, or the JSON header of an estimator file) has a changed byte;
- *structure*: :func:`mutate_arrays` changes one array of an archive (one element in or out of range,
  negative, NaN, inf or huge; its dtype or shape; drops, adds, renames, shuffles or swaps arrays) and
  :func:`mutate_json` one entry of a JSON document (a number, a string, a list, a removed or an
  unknown key), both written back as valid files.

Every mutation changes something. Deterministic for a seeded ``numpy.random.Generator``.
:func:`kind_of` names the kind of mutation a description tells (:data:`KINDS`), so that a run can
show it tried each.
"""

from __future__ import annotations

import io
import json
import math
import re
import zipfile

import numpy as np

__all__ = ["KINDS", "flip_in_member", "kind_of", "mutate_arrays", "mutate_bytes", "mutate_json", "read_npz",
           "write_npz"]

#: every kind of mutation, and the pattern of the descriptions of that kind
KINDS: dict[str, str] = {
    "bytes: flip": r"^flip bits at bytes ",
    "bytes: truncate": r"^truncate to ",
    "bytes: insert": r"^insert \d+ bytes at ",
    "bytes: delete": r"^delete \d+ bytes at ",
    "member: header byte": r"^valid zip, .* header byte ",
    "member: payload byte": r"^valid zip, .* payload byte ",
    "array: element": r"^array '.*': (element |append an element to an empty array$)",
    "array: dtype": r"^array '.*': dtype ",
    "array: shape": r"^array '.*': shape ",
    "array: dropped": r"^array '.*': dropped$",
    "array: added": r"^array '.*': added a copy as ",
    "array: renamed": r"^array '.*': renamed to ",
    "array: shuffled": r"^array '.*': elements shuffled$",
    "array: swapped": r"^array '.*': swapped with ",
    "json: removed": r"^json \[.*\] removed$",
    "json: unknown key": r"^json \[.*\] \+ unknown key beside ",
    "json: replaced": r"^json \[.*\]: ",
}


def kind_of(description: str) -> str:
    """The key of :data:`KINDS` whose pattern matches ``description``, what a function here returned."""
    found = [kind for kind, pattern in KINDS.items() if re.search(pattern, description)]
    if len(found) != 1:
        raise ValueError(f"no single kind for the mutation {description!r}: {found}")
    return found[0]


def _pick(options: list, rng: np.random.Generator):
    """One of ``options``, as it is (``rng.choice`` would turn it into a NumPy scalar)."""
    return options[int(rng.integers(0, len(options)))]


# ------------------------------------------------------------------------------------ bytes --
def mutate_bytes(data: bytes, rng: np.random.Generator) -> tuple[str, bytes]:
    """A flip of 1–3 bits, a truncation, an insertion or a deletion of the whole file ``data``."""
    kind = _pick(["flip", "flip", "truncate", "insert", "delete"], rng)
    n = len(data)
    if kind == "flip":
        out = bytearray(data)
        spots = rng.choice(n, size=int(rng.integers(1, 4)), replace=False)
        for i in spots:
            out[int(i)] ^= 1 << int(rng.integers(0, 8))
        return f"flip bits at bytes {sorted(int(i) for i in spots)}", bytes(out)
    if kind == "truncate":
        at = int(rng.integers(0, n))
        return f"truncate to {at} of {n} bytes", data[:at]
    at = int(rng.integers(0, n))
    if kind == "insert":
        extra = rng.integers(0, 256, size=int(rng.integers(1, 9)), dtype=np.uint8).tobytes()
        return f"insert {len(extra)} bytes at {at}", data[:at] + extra + data[at:]
    length = int(rng.integers(1, 17))
    return f"delete {length} bytes at {at}", data[:at] + data[at + length:]


def flip_in_member(data: bytes, rng: np.random.Generator) -> tuple[str, bytes]:
    """The ``.npz`` ``data`` rewritten as a valid zip (correct CRCs) with one byte of one member
    changed: in its ``.npy`` header (dtype, order, shape) or in its payload."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        members = [(info.filename, z.read(info.filename)) for info in z.infolist()]
    i = int(rng.integers(0, len(members)))
    name, payload = members[i]
    header_end = payload.index(b"\n") + 1 if b"\n" in payload else len(payload)
    where = "header" if rng.random() < 0.3 or header_end >= len(payload) else "payload"
    lo, hi = (10, header_end) if where == "header" else (header_end, len(payload))
    at = int(rng.integers(lo, max(hi, lo + 1)))
    at = min(at, len(payload) - 1)
    body = bytearray(payload)
    old = body[at]
    body[at] = old ^ (1 << int(rng.integers(0, 8))) if rng.random() < 0.7 else int(rng.integers(0, 256))
    if body[at] == old:
        body[at] ^= 1
    members[i] = (name, bytes(body))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for member, content in members:
            z.writestr(member, content)
    return f"valid zip, {name} {where} byte {at}: {old:#04x} -> {body[at]:#04x}", out.getvalue()


# ------------------------------------------------------------------------------- structure --
def read_npz(data: bytes) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` held in memory (no pickle)."""
    with np.load(io.BytesIO(data), allow_pickle=False) as f:
        return {name: f[name] for name in f.files}


def write_npz(arrays: dict[str, np.ndarray]) -> bytes:
    """``arrays`` as the bytes of an uncompressed ``.npz``."""
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def _new_value(a: np.ndarray, rng: np.random.Generator):
    """A replacement element for ``a``: in range, just out of it, negative, NaN, inf or huge."""
    if a.dtype.kind == "b":
        return _pick([True, False, 2, -1], rng)
    if a.dtype.kind == "U":
        return _pick(["", "zz", "0", "nan"], rng)
    lo, hi = (float(a.min()), float(a.max())) if a.size else (0.0, 1.0)
    ints = [int(rng.integers(math.floor(lo), math.floor(hi) + 1)), int(hi) + 1, int(hi) + int(rng.integers(2, 1000)),
            -1, -int(rng.integers(2, 10 ** 6)), 0, 2 ** 31 - 1, 2 ** 62]
    floats = [math.nan, math.inf, -math.inf, 1e300, -1e300, 1e-300, -0.5, 2.0, float(rng.uniform(lo, hi)) if hi > lo else lo,
              -float(rng.uniform(0, 10)), 1e30]
    if a.dtype.kind in "iu":
        return _pick(ints, rng) if rng.random() < 0.8 else _pick(floats, rng)
    return _pick(floats, rng) if rng.random() < 0.7 else _pick(ints, rng)


def _set_element(a: np.ndarray, rng: np.random.Generator) -> tuple[str, np.ndarray]:
    if a.size == 0:
        return "append an element to an empty array", np.zeros(1, dtype=a.dtype)
    index = tuple(int(rng.integers(0, n)) for n in a.shape)
    value = _new_value(a, rng)
    out = a.copy()
    if a.dtype.kind in "iub":
        if isinstance(value, float):
            out = a.astype(np.float64)
        elif a.dtype.kind == "b" and value not in (True, False) or a.dtype.kind in "iu" and not (
                np.iinfo(a.dtype).min <= value <= np.iinfo(a.dtype).max):
            out = a.astype(np.int64)
    out[index] = value
    return f"element {index} = {value!r}", out


_DTYPES = [np.int8, np.int32, np.int64, np.uint16, np.uint64, np.float16, np.float32, np.float64, np.bool_, "<U6",
           np.complex128]


def _change_dtype(a: np.ndarray, rng: np.random.Generator) -> tuple[str, np.ndarray]:
    dtype = np.dtype(_pick(_DTYPES, rng))
    if dtype == a.dtype:
        dtype = np.dtype(np.float32 if a.dtype != np.float32 else np.int64)
    with np.errstate(all="ignore"):
        try:
            out = a.astype(dtype)
        except (ValueError, TypeError):
            out = np.zeros(a.shape, dtype=dtype)
    return f"dtype {a.dtype} -> {dtype}", out


def _change_shape(a: np.ndarray, rng: np.random.Generator) -> tuple[str, np.ndarray]:
    options = ["ravel", "row", "drop last", "repeat last", "extra axis", "empty", "scalar"]
    if a.ndim == 2:
        options.append("transpose")
    kind = _pick(options, rng)
    if kind == "ravel" and a.ndim == 1:
        kind = "row"
    if (a.size == 0 or a.ndim == 0) and kind in ("drop last", "repeat last", "scalar", "empty"):
        kind = "extra axis"
    out = {"ravel": lambda: a.ravel(), "row": lambda: a.reshape(1, -1), "drop last": lambda: a[:-1],
           "repeat last": lambda: np.concatenate([a, a[-1:]]), "extra axis": lambda: a[..., None],
           "empty": lambda: a[:0], "scalar": lambda: np.asarray(a.ravel()[0]), "transpose": lambda: a.T.copy()}[kind]()
    return f"shape {a.shape} -> {out.shape} ({kind})", out


def mutate_arrays(arrays: dict[str, np.ndarray], rng: np.random.Generator,
                  protected: tuple[str, ...] = ()) -> tuple[str, dict[str, np.ndarray]]:
    """One structural change of ``arrays`` (a copy); names in ``protected`` are left alone."""
    out = dict(arrays)
    names = sorted(n for n in out if n not in protected)
    name = _pick(names, rng)
    a = out[name]
    kind = _pick(["element", "element", "element", "element", "dtype", "shape", "drop", "add", "rename", "shuffle",
                  "swap"], rng)
    if kind == "element":
        what, out[name] = _set_element(a, rng)
    elif kind == "dtype":
        what, out[name] = _change_dtype(a, rng)
    elif kind == "shape":
        what, out[name] = _change_shape(a, rng)
    elif kind == "drop":
        del out[name]
        what = "dropped"
    elif kind == "add":
        extra = name + _pick([".extra", "_", "x"], rng)
        out[extra] = a.copy()
        what = f"added a copy as {extra!r}"
    elif kind == "rename":
        new = _pick(["unknown", name.upper(), name + "2"], rng)
        out[new] = out.pop(name)
        what = f"renamed to {new!r}"
    elif kind == "shuffle" and a.size > 1:
        flat = a.ravel().copy()
        rng.shuffle(flat)
        out[name] = flat.reshape(a.shape)
        what = "elements shuffled"
    else:
        other = _pick(names, rng)
        out[name], out[other] = out[other], out[name]
        what = f"swapped with {other!r}"
    return f"array {name!r}: {what}", out


# ------------------------------------------------------------------------------------- JSON --
def _leaves(node, path=()):
    """Every (path, value) of a JSON document, containers included."""
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, (*path, i))


def _replacement(value, rng: np.random.Generator):
    if isinstance(value, bool):
        options = [not value, 0, 1, None, "true"]
    elif isinstance(value, int):
        options = [value + 1, value - 1, 0, -1, -value, 10 ** 6, 10 ** 30, 2 ** 63, value + 0.5, str(value), None,
                   math.nan, [value], True]
    elif isinstance(value, float):
        options = [value * 2, -value, 0.0, math.nan, math.inf, -math.inf, 1e300, -1e300, 1e-300, int(value) if
                   math.isfinite(value) else 0, str(value), None]
    elif isinstance(value, str):
        options = ["", "x", value + "x", value[:-1], 1, None, "parameters.npz", "../model.json", "os:system"]
    elif isinstance(value, list):
        options = [[], value[:-1], value + value[-1:], None, {}, list(reversed(value)), [None] * len(value)]
    elif isinstance(value, dict):
        options = [{}, None, [], {**value, "unknown": 1}]
    else:
        options = [0, 1.5, "x", [], -1, {"unknown": 1}]
    return _pick(options, rng)


def mutate_json(doc, rng: np.random.Generator, roots: tuple = ()) -> tuple[str, object]:
    """One changed entry of the JSON document ``doc`` (a copy): replaced, removed, or an unknown key
    added beside it; only entries under one of the paths ``roots`` (all when empty)."""
    doc = json.loads(json.dumps(doc))
    leaves = [(p, v) for p, v in _leaves(doc) if p and (not roots or any(p[:len(r)] == r for r in roots))]
    path, value = _pick(leaves, rng)
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    key = path[-1]
    kind = rng.random()
    if kind < 0.15 and isinstance(parent, dict):
        del parent[key]
        return f"json {list(path)} removed", doc
    if kind < 0.25 and isinstance(parent, dict):
        parent["unknown_" + str(key)] = value
        return f"json {list(path[:-1])} + unknown key beside {key!r}", doc
    new = _replacement(value, rng)
    if json.dumps(new) == json.dumps(value):
        new = {"unknown": value}
    parent[key] = new
    return f"json {list(path)}: {value!r:.40} -> {new!r:.40}", doc
