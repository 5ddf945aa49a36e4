"""Parse + verify + print of 10k Shardy shardings (sub-axes, priorities, open dims, replicated).

`impl`: "sharding" is this library; "jaxlib" parses and prints the same attributes with jaxlib's
MLIR (`ir.Attribute.parse` + `str`, no verifier: a bare attribute has no mesh to verify against;
skipped without jax). Divide by 10 000 for the time per sharding.
"""

import pathlib
import random
import sys

try:
    from ._common import SkipNotImplemented
except ImportError:  # imported as a top-level module (tests/ put this folder on sys.path)
    from _common import SkipNotImplemented

try:
    import sharding
except ImportError:  # `asv run --python=same` from a checkout that is not installed
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
    import sharding

from sharding.syntax import parse_tensor_sharding  # noqa: E402

N = 10_000
MESH = '<["x"=8, "y"=4, "z"=2, "w"=3]>'


def _texts(n, seed=0):
    """Seeded valid shardings on MESH: every axis full, split into sub-axes, or unused."""
    rng = random.Random(seed)
    mesh = sharding.Mesh.parse(MESH)
    splits = {"x": [[8], [2, 4], [4, 2], [2, 2, 2]], "y": [[4], [2, 2]], "z": [[2]], "w": [[3]]}
    out = []
    for _ in range(n):
        rank = rng.randint(1, 4)
        lists = [[] for _ in range(rank + 1)]
        for axis in mesh.axes:
            pre, previous = 1, None
            for size in rng.choice(splits[axis.name]):
                piece = f'"{axis.name}"' if size == axis.size else f'"{axis.name}":({pre}){size}'
                pre *= size
                where = rng.randint(-1, rank)
                # Two consecutive sub-axes side by side in one list would be merged by Shardy.
                if where >= 0 and not (lists[where] and lists[where][-1] == previous):
                    lists[where].append(piece)
                previous = piece
        dims = []
        for axes in lists[:rank]:
            text = ", ".join(axes)  # in mesh order: adjacent sub-axes never merge across a gap
            text = "{" + (text + ", ?" if text and rng.random() < 0.3 else text) + "}"
            dims.append(text + (f"p{rng.randint(0, 5)}" if axes and rng.random() < 0.5 else ""))
        text = f"#sdy.sharding<@mesh, [{', '.join(dims)}]"
        if lists[rank]:
            text += ", replicated={" + ", ".join(lists[rank]) + "}"
        out.append(text + ">")
    return out


class ParseSharding:
    """Parse + print 10k attributes: this library vs jaxlib's MLIR."""

    params = [["sharding", "jaxlib"]]
    param_names = ["impl"]

    def setup(self, impl):
        self.texts = _texts(N)
        if impl == "jaxlib":
            try:
                from jax._src.interpreters import mlir as jmlir
                from jax._src.lib.mlir import ir
            except ImportError:
                raise SkipNotImplemented("jax is not installed") from None
            self.ctx = jmlir.make_ir_context()
            self.ir = ir
            with self.ctx:
                assert [str(ir.Attribute.parse(t)) for t in self.texts] == self.texts
        else:
            assert [str(parse_tensor_sharding(t)) for t in self.texts] == self.texts

    def time_parse_print(self, impl):
        if impl == "jaxlib":
            with self.ctx:
                for t in self.texts:
                    str(self.ir.Attribute.parse(t))
        else:
            for t in self.texts:
                str(parse_tensor_sharding(t))


class ParseVerifyPrint:
    """This library's parse + verify + print of 10k shardings, and each step alone."""

    def setup(self):
        self.texts = _texts(N)
        self.mesh = sharding.Mesh.parse(MESH)
        self.parsed = [parse_tensor_sharding(t) for t in self.texts]
        for s in self.parsed:
            sharding.verify(s, mesh=self.mesh, shape=(8,) * s.rank)

    def time_parse_verify_print(self):
        mesh = self.mesh
        for t in self.texts:
            s = parse_tensor_sharding(t)
            sharding.verify(s, mesh=mesh)
            str(s)

    def time_parse(self):
        for t in self.texts:
            parse_tensor_sharding(t)

    def time_verify(self):
        mesh = self.mesh
        for s in self.parsed:
            sharding.verify(s, mesh=mesh)

    def time_print(self):
        for s in self.parsed:
            str(s)


class HloShardingText:
    """Parse + print of 10k GSPMD HloSharding texts (XLA's export of the shardings above):
    this library vs jaxlib's `xla_client.HloSharding.from_string` + `str`."""

    params = [["sharding", "jaxlib"]]
    param_names = ["impl"]

    def setup_cache(self):
        """The texts, converted once for both rows."""
        mesh = sharding.Mesh.parse(MESH)
        return [sharding.to_hlo_sharding(parse_tensor_sharding(t), mesh) for t in _texts(N)]

    def setup(self, texts, impl):
        self.texts = texts
        if impl == "jaxlib":
            try:
                from jax._src.lib import xla_client
            except ImportError:
                raise SkipNotImplemented("jax is not installed") from None
            self.parse = xla_client.HloSharding.from_string
        else:
            self.parse = sharding.HloSharding.parse
        assert [str(self.parse(t)) for t in self.texts] == self.texts

    def time_parse_print(self, texts, impl):
        parse = self.parse
        for t in self.texts:
            str(parse(t))
