"""`python -m sharding`: look at a sharding from the command line.

    python -m sharding show '<["x"=2, "y"=4]>' '#sdy.sharding<@mesh, [{"x"}, {"y"}]>' 6x8
    python -m sharding show 'sdy.mesh @a = <["x"=4]> sdy.mesh @b = <["y"=4]>' '<@b, [{"y"}]>' 7 --svg out.svg
    python -m sharding hlo '<["x"=8]>' '#sdy.sharding<@m, [{"x":(2)2}, {"x":(1)2}]>'
    python -m sharding reshard '<["x"=2, "y"=4]>' '<@mesh, [{"x"}, {"y"}]>' '<@mesh, [{"y"}, {"x"}]>' 8192x8192 --dtype bf16

The mesh is a mesh body (`<[...]>`, `#sdy.mesh<...>`, `mesh<...>`), bound to whatever name the
sharding uses, or `sdy.mesh @name = <...>` ops looked up by name. The shape is `6x8`, `6,8`,
`[6, 8]`, `tensor<6x8xf32>` or `()` for a scalar.
"""

from __future__ import annotations

import argparse
import re
import sys

from .errors import ShardingError
from .mesh import Mesh, MeshTable
from .tensor_sharding import TensorSharding


def parse_shape(text: str) -> tuple[int, ...]:
    """`6x8`, `6,8`, `[6, 8]`, `(6, 8)`, `tensor<6x8xf32>`, `()` -> a shape."""
    body = text.strip()
    tensor = re.fullmatch(r"tensor<(.*)>", body)
    if tensor:
        body = tensor[1].rsplit("x", 1)[0] if "x" in tensor[1] else ""
    body = body.strip("()[] ")
    if not body:
        return ()
    parts = re.split(r"\s*[x,]\s*", body)
    if not all(re.fullmatch(r"[0-9]{1,19}", p) for p in parts):  # ASCII, and within int64
        raise ShardingError(f"expected a shape such as 6x8, 6,8 or tensor<6x8xf32>, got: {text!r}")
    return tuple(int(p) for p in parts)


def parse_mesh_arg(text: str) -> Mesh | MeshTable:
    if "sdy.mesh" in text and "@" in text:
        return MeshTable.parse(text)
    return Mesh.parse(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sharding", description="Look at Shardy shardings.")
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="which device holds which block (text grid; optional SVG/PNG)")
    show.add_argument("mesh")
    show.add_argument("sharding")
    show.add_argument("shape")
    show.add_argument("--svg", metavar="PATH", help="also write an SVG picture")
    show.add_argument("--png", metavar="PATH", help="also write a PNG picture (needs matplotlib)")
    hlo = sub.add_parser("hlo", help="the GSPMD HloSharding text XLA's export prints")
    hlo.add_argument("mesh")
    hlo.add_argument("sharding")
    reshard = sub.add_parser("reshard", help="the collectives Shardy emits, their traffic and cost")
    reshard.add_argument("mesh")
    reshard.add_argument("source")
    reshard.add_argument("target")
    reshard.add_argument("shape")
    reshard.add_argument("--dtype", default="f32", help="element type (bf16, f32, s8, ...; default f32)")
    reshard.add_argument("--png", metavar="PATH", help="also write a picture of bytes and time per step")
    args = parser.parse_args(argv)
    try:
        if args.command == "reshard":
            from .reshard import reshard_plan

            plan = reshard_plan(TensorSharding.parse(args.source), TensorSharding.parse(args.target),
                                parse_mesh_arg(args.mesh), parse_shape(args.shape), dtype=args.dtype)
            print("\n".join(map(str, plan.steps)) if plan.steps else "(no collectives: the reshard is a no-op)")
            print()
            print(plan.report())
            if args.png:
                plan.plot(args.png)
            return 0
        mesh = parse_mesh_arg(args.mesh)
        sharding = TensorSharding.parse(args.sharding)
        if args.command == "hlo":
            from .hlo import to_hlo_sharding

            print(to_hlo_sharding(sharding, mesh))
            return 0
        from .visualization import visualize

        picture = visualize(sharding, mesh, parse_shape(args.shape))
        print(picture.text())
        for path in (args.svg, args.png):
            if path:
                picture.save(path)
    except ShardingError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
