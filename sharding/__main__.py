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
import importlib.metadata
import importlib.util
import os
import pathlib
import re
import shutil
import sys

from ._checks import parse_mesh
from .errors import ShardingError
from .hlo import to_hlo_sharding
from .reshard import reshard_plan
from .tensor_sharding import TensorSharding
from .visualization import visualize


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sharding", description="Look at Shardy shardings.")
    parser.add_argument("--version", action="version", version=f"%(prog)s (layout-toolkit {_version()})")
    sub = parser.add_subparsers(dest="command", required=True)
    mesh_help = "the mesh: <[\"x\"=2, \"y\"=4]>, #sdy.mesh<...>, or sdy.mesh @name = <...> ops"
    sharding_help = "the sharding: #sdy.sharding<@mesh, [{\"x\"}, {}]> or its <...> body"
    show = sub.add_parser("show", help="which device holds which block (text grid; optional SVG/PNG)")
    show.add_argument("mesh", help=mesh_help)
    show.add_argument("sharding", help=sharding_help)
    show.add_argument("shape", help="the global shape: 6x8, 6,8, [6, 8], tensor<6x8xf32> or () for a scalar")
    show.add_argument("--svg", metavar="PATH", help="also write an SVG picture")
    show.add_argument("--png", metavar="PATH", help="also write a PNG picture (needs matplotlib: the [plot] extra)")
    hlo = sub.add_parser("hlo", help="the GSPMD HloSharding text XLA's export prints")
    hlo.add_argument("mesh", help=mesh_help)
    hlo.add_argument("sharding", help=sharding_help)
    reshard = sub.add_parser("reshard", help="the collectives Shardy emits, their traffic and cost")
    reshard.add_argument("mesh", help=mesh_help)
    reshard.add_argument("source", help="the sharding the array has")
    reshard.add_argument("target", help="the sharding it should get")
    reshard.add_argument("shape", help="the global shape: 6x8, 6,8, [6, 8], tensor<6x8xf32> or () for a scalar")
    reshard.add_argument("--dtype", default="f32", help="element type (bf16, f32, s8, ...; default f32)")
    reshard.add_argument("--png", metavar="PATH", help="also write a picture of bytes and time per step")
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except ShardingError as e:
        print(f"error: {e}", file=sys.stderr)
    except BrokenPipeError:
        # The reader went away (`| head`): say so once, and keep Python from complaining at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print("error: standard output was closed before everything was written", file=sys.stderr)
    except OSError as e:
        print(f"error: {e.strerror or e}: {e.filename}" if e.filename else f"error: {e}", file=sys.stderr)
    return 1


def _run(args) -> int:
    if args.command == "reshard":
        if args.png:
            _check_output(args.png, ".png")
        plan = reshard_plan(TensorSharding.parse(args.source), TensorSharding.parse(args.target),
                            parse_mesh(args.mesh), parse_shape(args.shape), dtype=args.dtype)
        print("\n".join(map(str, plan.steps)) if plan.steps else "(no collectives: the reshard is a no-op)")
        print()
        print(plan.report())
        sys.stdout.flush()
        if args.png:
            plan.plot(args.png)
        return 0
    mesh = parse_mesh(args.mesh)
    sharding = TensorSharding.parse(args.sharding)
    if args.command == "hlo":
        print(to_hlo_sharding(sharding, mesh))
        return 0
    outputs = [(path, suffix) for path, suffix in ((args.svg, ".svg"), (args.png, ".png")) if path]
    for path, suffix in outputs:  # before any output, so a bad path leaves nothing half done
        _check_output(path, suffix)
    picture = visualize(sharding, mesh, parse_shape(args.shape))
    print(picture.text(width=shutil.get_terminal_size().columns))
    sys.stdout.flush()
    for path, _ in outputs:
        picture.save(path)
    return 0


def _check_output(path: str, suffix: str) -> None:
    target = pathlib.Path(path)
    if target.suffix.lower() != suffix:
        raise ShardingError(f"expected a {suffix} file name for --{suffix[1:]}, got: {path}")
    if target.is_dir():
        raise ShardingError(f"--{suffix[1:]} {path} is a directory; give a file name")
    if not target.parent.is_dir():
        raise ShardingError(f"--{suffix[1:]} {path}: directory {target.parent} does not exist")
    if suffix == ".png" and importlib.util.find_spec("matplotlib") is None:
        raise ShardingError(f"--png needs matplotlib (pip install 'layout-toolkit[plot]'); --svg works without it")


def _version() -> str:
    try:
        return importlib.metadata.version("layout-toolkit")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


if __name__ == "__main__":
    sys.exit(main())
