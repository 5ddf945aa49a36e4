"""XLA's and JAX's own test shardings (`upstream_sharding_cases.py`) against jaxlib 0.10.2.

One child process answers everything: XLA's parser and printer (`xc.HloSharding.from_string`),
XLA's named-to-tiled conversion (`v3_to_v2_sharding`), `GSPMDSharding.devices_indices_map`, and
for each JAX spec `NamedSharding._to_sdy_sharding`, `_to_xla_hlo_sharding` and
`devices_indices_map` on up to 128 CPU devices.
"""

from __future__ import annotations

import functools
import math

import pytest

from sharding import HloSharding, Mesh, ShardingError, TensorSharding, from_hlo_sharding
from sharding import to_hlo_sharding
from sharding.simulate import DeviceMesh
from tests.jaxlib_child import run_child
from tests.sharding.test_hlo_xla import ours
from tests.sharding.upstream_sharding_cases import (HLO_PARSER_TEST_TEXTS, HLO_SHARDING_TEST_TEXTS,
                                                    HLO_SHARDING_UTIL_TEST_TEXTS, JAX_SPECS, JAX_TEST_TEXTS,
                                                    TILE_ASSIGNMENT_TEST_TEXTS, UNCONSTRAINED, V3_TO_V2)

pytestmark = pytest.mark.jaxlib
_DEVICES = 192  # CPU devices in the child: device maps for every collected text of up to 192 devices

_CODE = r"""
import numpy as np
import jax
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P
from jax._src.lib import xla_client as xc
from jax._src.sharding_impls import GSPMDSharding

DEVS = jax.devices()

def error(e):
    lines = [l for l in str(e).splitlines() if "error:" in l]
    return (lines[0] if lines else str(e))[:300]

def ranges(index_map, shape):
    return {str(dev.id): [[0 if s.start is None else s.start, d if s.stop is None else s.stop]
                          for s, d in zip(idx, shape)] for dev, idx in index_map.items()}

def parse(text):
    try:
        return [True, str(xc.HloSharding.from_string(text))]
    except Exception as e:
        return [False, error(e)]

def v3_to_v2(text):
    try:
        return [True, str(xc.HloSharding.from_string(text).v3_to_v2_sharding())]
    except Exception as e:
        return [False, error(e)]

def gspmd_map(text, shape):
    hlo = xc.HloSharding.from_string(text).v3_to_v2_sharding()
    return ranges(GSPMDSharding(DEVS[:hlo.num_devices()], hlo).devices_indices_map(tuple(shape)), shape)

def jax_spec(shape, names, types, entries, keywords, ndim):
    kwargs = {} if types is None else {"axis_types": tuple(AxisType[t] for t in types)}
    mesh = Mesh(np.array(DEVS[:int(np.prod(shape))]).reshape(shape), tuple(names), **kwargs)
    dims = [2 * (k + 1) * int(np.prod([mesh.shape[n] for n in ([e] if isinstance(e, str) else e or ())
                                      if n != "UNCONSTRAINED"])) for k, e in enumerate(entries)]
    dims += [3] * (ndim - len(dims))
    entries = [P.UNCONSTRAINED if e == "UNCONSTRAINED" else tuple(e) if isinstance(e, list) else e for e in entries]
    try:
        ns = NamedSharding(mesh, P(*entries, **{k: frozenset(v) for k, v in keywords}))
        out = {"sdy": str(ns._to_sdy_sharding(ndim).build({})), "hlo": str(ns._to_xla_hlo_sharding(ndim)),
               "shape": dims}
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"[:300]}
    if not any(k == "unreduced" for k, _ in keywords):  # (JAX has no device map for unreduced)
        out["map"] = ranges(ns.devices_indices_map(tuple(dims)), dims)
    return out

from jax._src.interpreters import mlir as jmlir
from jax._src.lib.mlir import ir
RESULT = {"texts": [parse(t) for t in PAYLOAD["texts"]], "v3": [v3_to_v2(t) for t in PAYLOAD["v3"]],
          "maps": [gspmd_map(t, s) for t, s in PAYLOAD["maps"]]}
with jmlir.make_ir_context(), ir.Location.unknown():
    RESULT["jax"] = [jax_spec(*case) for case in PAYLOAD["jax"]]
"""


def _texts() -> list[str]:
    texts = [t for t, _ in HLO_SHARDING_TEST_TEXTS + HLO_SHARDING_UTIL_TEST_TEXTS + TILE_ASSIGNMENT_TEST_TEXTS
             + JAX_TEST_TEXTS + HLO_PARSER_TEST_TEXTS]
    texts += [t for v3, v2, _ in V3_TO_V2 for t in (v3, v2)]
    return list(dict.fromkeys(texts))


def _jax_cases() -> list[tuple]:
    """Each spec at its own rank (at least 1) and with one more trailing dim, as JAX pads specs."""
    out = []
    for _, _, shape, names, types, entries, keywords in JAX_SPECS:
        for ndim in dict.fromkeys((max(len(entries), 1), len(entries) + 1)):
            out.append((shape, names, types, entries, keywords, ndim))
    return out


def _map_cases() -> list[tuple[str, list[int]]]:
    """Tiled and mesh-form texts XLA can give a device map for: a permutation of at most `_DEVICES`
    devices, nothing manual or unreduced. Tensor dims get 2 elements per tile."""
    out = []
    parsed = []
    for text in _texts():
        try:
            hlo = HloSharding.parse(text)
        except ShardingError:
            continue
        parsed += hlo.elements if hlo.kind == "tuple" else [hlo]  # a tuple's elements one by one
    for hlo in parsed:
        text = str(hlo)
        if hlo.kind == "named" and not hlo.manual_axes and hlo.named.rank and hlo.mesh.total_size <= _DEVICES:
            mesh, sharding = from_hlo_sharding(hlo)
            if not sharding.unreduced_axes:
                out.append((text, [2 * math.prod(r.size(mesh) for r in d.axes) for d in sharding.dim_shardings]))
            continue
        if hlo.kind != "tiled" or hlo.num_devices > _DEVICES or set(hlo.subgroups) - {"replicated"}:
            continue
        if hlo.device_list and sorted(hlo.device_list) != list(range(hlo.num_devices)):
            continue
        out.append((text, [2 * d for d in hlo.tile_dims[: hlo.rank]]))
    return out


@functools.lru_cache(maxsize=None)
def oracle() -> dict:
    payload = {"texts": _texts(), "v3": [v3 for v3, _, _ in V3_TO_V2], "maps": _map_cases(), "jax": _jax_cases()}
    return run_child(_CODE, payload, env={"XLA_FLAGS": f"--xla_force_host_platform_device_count={_DEVICES}"})


def test_upstream_texts_parse_and_print_as_xla():
    bad = []
    for text, (ok, printed) in zip(_texts(), oracle()["texts"]):
        mine = ours(text)
        if mine[0] != ok or (ok and mine[1] != printed):
            bad.append(f"{text!r}: XLA {'prints ' + printed if ok else 'rejects: ' + printed}; here {mine}")
    assert not bad, f"{len(bad)} of {len(_texts())}:\n" + "\n".join(bad)


def test_named_shardings_convert_to_tiled_as_xla():
    bad = []
    for (v3, expected, name), (ok, printed) in zip(V3_TO_V2, oracle()["v3"]):
        assert ok, f"{name}: XLA refuses {v3}: {printed}"
        mine = str(HloSharding.parse(v3).v3_to_v2_sharding())
        if mine != printed:
            bad.append(f"{name}: {v3} -> XLA {printed} (test expects {expected}); here {mine}")
    assert not bad, "\n".join(bad)


def _index_ranges(mesh: Mesh, sharding: TensorSharding, shape) -> dict[str, list[list[int]]]:
    index_map = DeviceMesh(mesh).index_map(sharding, tuple(shape))
    return {str(dev): [[s.start, s.stop] for s in slices] for dev, slices in index_map.items()}


def test_upstream_texts_place_devices_as_gspmd():
    bad = []
    for (text, shape), theirs in zip(_map_cases(), oracle()["maps"]):
        mesh, sharding = from_hlo_sharding(text)
        if _index_ranges(mesh, sharding, shape) != theirs:
            bad.append(f"{text} on {shape}")
    assert not bad, "\n".join(bad)


def _sdy_text(shape, names, entries, keywords, ndim) -> str:
    """The Shardy sharding a JAX user means by `NamedSharding(mesh, P(*entries, **keywords))`."""
    mesh = ", ".join(f'"{n}"={s}' for n, s in zip(names, shape))
    dims = []
    for e in list(entries) + [None] * (ndim - len(entries)):
        refs = [e] if isinstance(e, str) and e != UNCONSTRAINED else list(e or ()) if e != UNCONSTRAINED else []
        dims.append("{" + ", ".join(f'"{r}"' for r in refs) + ("?" if e == UNCONSTRAINED else "") + "}")
    text = f"#sdy.sharding<mesh<[{mesh}]>, [{', '.join(dims)}]"
    for word, axes in keywords:
        if word == "unreduced":  # (`reduced` has no Shardy attribute in jaxlib 0.10.2)
            text += ", unreduced={" + ", ".join(f'"{n}"' for n in names if n in axes) + "}"
    return text + ">"


def test_jax_specs_convert_and_place_as_jax():
    bad, refused = [], 0
    for (shape, names, types, entries, keywords, ndim), theirs in zip(_jax_cases(), oracle()["jax"]):
        case = f"mesh {dict(zip(names, shape))} {types or ''} P{tuple(entries)} {dict(keywords)} rank {ndim}"
        if "error" in theirs:  # JAX refuses the spec: unreduced on Auto axes, UNCONSTRAINED on Explicit ones
            assert theirs["error"].startswith("ValueError: "), f"{case}: {theirs['error']}"
            refused += 1
            continue
        mine = _sdy_text(shape, names, entries, keywords, ndim)
        sharding = TensorSharding.parse(theirs["sdy"])
        mesh = sharding.mesh_or_ref
        got = (mine, str(sharding), to_hlo_sharding(sharding))
        want = (theirs["sdy"], theirs["sdy"], theirs["hlo"])
        if "map" in theirs:
            got, want = got + (_index_ranges(mesh, sharding, theirs["shape"]),), want + (theirs["map"],)
        for what, g, w in zip(("spec -> sdy", "sdy printed", "HloSharding", "device map"), got, want):
            if g != w:
                bad.append(f"{case}: {what}: JAX {w}; here {g}")
    assert refused < 20
    assert not bad, f"{len(bad)} of {len(_jax_cases())}:\n" + "\n".join(bad[:20])

