"""`layout-toolkit-tour`: a short tour of the three packages through their command lines.

Each step runs a package's own CLI in a child process (the packages stay independent), so what
the tour prints is exactly what a user typing the same command sees. Each command is printed so
that it can be pasted into a POSIX shell as it is.
"""

import argparse
import os
import shlex
import subprocess
import sys
from importlib.resources import files

from sdy_passes.__main__ import version

EXAMPLE_MODULE = """\
module {
  sdy.mesh @mesh = <["x"=2, "y"=2]>
  func.func @main(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
    %0 = stablehlo.constant dense<1.0> : tensor<8x8xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<8x8xf32>
    %2 = sdy.sharding_constraint %1 <@mesh, [{"x"}, {"y"}]> : tensor<8x8xf32>
    %3 = stablehlo.multiply %2, %0 : tensor<8x8xf32>
    return %3 : tensor<8x8xf32>
  }
}
"""

BLOCK_64X64 = str(files("sdy_passes") / "examples" / "transformer_block_64x64.mlir")
"""JAX's transformer block lowered against a 64x64 `AbstractMesh` (shipped with the package)."""

STEPS = [
    ("tiling: where each element of a tiled bf16 array lives",
     ["-m", "tiling", "show", "bf16[4,8]{1,0:T(2,4)(2,1)}"], None),
    ("sharding: which device holds which block",
     ["-m", "sharding", "show", '<["x"=2, "y"=4]>', '#sdy.sharding<@mesh, [{"x"}, {"y"}]>', "6x8"], None),
    ("sdy_passes: jaxlib's import pipeline on a small module",
     ["-m", "sdy_passes", "--sdy-import-pipeline", "-"], EXAMPLE_MODULE),
    ("sdy_passes: the sharding rules Shardy's propagation will use",
     ["-m", "sdy_passes", "--sdy-populate-op-sharding-rules", "-"], EXAMPLE_MODULE),
    ("sdy_passes: JAX's transformer block on 4096 devices, dry: memory, bytes per mesh axis, time",
     ["-m", "sdy_passes._run_cli", BLOCK_64X64, "--dry"], None),
]


def command_line(args, stdin=None) -> str:
    """The step as a shell command (`python ...`, stdin as a here-document)."""
    line = shlex.join(["python", *args])
    if stdin is not None:
        line += " <<'EOF'\n" + stdin.rstrip("\n") + "\nEOF"
    return line


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="layout-toolkit-tour", description=__doc__.strip().splitlines()[0],
        epilog="Takes no arguments: it runs the steps one after the other, printing each command "
               "before its output.")
    parser.add_argument("--version", action="version", version=version("layout-toolkit-tour"))
    return parser


def main(argv=None) -> int:
    _parser().parse_args(argv)
    try:
        for title, args, stdin in STEPS:
            print(f"\n=== {title}\n$ {command_line(args, stdin)}", flush=True)
            proc = subprocess.run([sys.executable, *args], input=stdin, text=True,
                                  stdout=subprocess.PIPE)
            sys.stdout.write(proc.stdout)
            sys.stdout.flush()
            if proc.returncode != 0:
                print(f"layout-toolkit-tour: error: the step above exited with status "
                      f"{proc.returncode}", file=sys.stderr)
                return 1
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print("layout-toolkit-tour: error: output closed early (broken pipe)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
